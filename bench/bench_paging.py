"""Widget-call benchmark: the library calls behind the results, review and compare widgets at 100k cases.

Builds, once, a store of 100,000 cases × 3 rounds × 2 arms (600,000 runs) with a real `abbench run`
of a `python` agent that answers at once (cached under /tmp/abbench-bench-paging, reused after), then
times each call a widget makes, in this process, beside the 2 s target, and the same call on the
whole list (what the widgets did before paging) as the baseline measured in the same run:

    python bench/bench_paging.py                 # 100,000 cases
    python bench/bench_paging.py --cases 10000   # another size (its own cached store)
    python bench/bench_paging.py --rebuild       # build the store again
    python bench/bench_paging.py --before /path/to/older/checkout   # each cold call, both trees
    python bench/bench_paging.py --store /tmp/copy/store   # a store of your own (experiment "paging")

With ``--before``, each call is also timed cold (a fresh process that opens the store and makes that
call first) with this tree's code and with the older checkout's, in turns, so both meet the same load;
the medians of wall and CPU time are printed side by side with their ratio.

The agent is wrong in arm B on case ids ending in 7 (gold and arms disagreements), wrong in arm A's
second round on ids ending in 3 (flaky), and unsure (confidence 0.3) on ids ending in 5.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent
ROOT = Path("/tmp/abbench-bench-paging")
LABELS = ("fast", "slow")
TARGET_S = 2.0


async def answer(task: Any) -> dict[str, Any]:
    """The python agent: instant, right on most cases; wrong, flaky or unsure on a few (see above)."""
    case = task.case
    right, wrong = case.expected, LABELS[1 - LABELS.index(case.expected)]
    tail = case.case_id[-1]
    prediction = right
    if task.arm == "B" and tail == "7":
        prediction = wrong
    if task.arm == "A" and tail == "3" and task.round == 1:
        prediction = wrong
    return {"prediction": prediction, "confidence": 0.3 if tail == "5" else 0.9}


def write_csv(path: Path, n: int) -> None:
    """The generated dataset: input, expected (two labels), domain (20 of them)."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["case_id", "input", "expected", "domain"])
        for i in range(n):
            w.writerow(
                [f"c{i:06d}", f"请 query number {i} about topic {i % 97}", LABELS[i % 2], f"d{i % 20:02d}"]
            )


def build(n: int, rebuild: bool = False) -> Path:
    """The store of `n` cases, run for real once and kept under /tmp (a ``done`` file marks it complete)."""
    root = ROOT / f"n{n}"
    done = root / "done"
    if done.exists() and not rebuild:
        return root / "store"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    write_csv(root / "cases.csv", n)
    arm = f"{{agent: python, function: '{HERE}:answer', sees_gold: true}}"
    (root / "exp.yaml").write_text(
        f"name: paging\ndataset: paging\nrounds: 3\nconcurrency: 100\n"
        f"arms:\n  A: {arm}\n  B: {arm}\ndecision: {{baseline: A, candidate: B}}\n",
        encoding="utf-8",
    )
    ab = [sys.executable, "-m", "abbench", "--store", str(root / "store")]
    env = {**os.environ, "PYTHONPATH": str(REPO), "TQDM_DISABLE": "1"}
    for argv in (
        [*ab, "import", str(root / "cases.csv"), "--name", "paging"],
        [*ab, "create", str(root / "exp.yaml")],
        [*ab, "run", "paging", "-q"],
    ):
        t0 = time.perf_counter()
        subprocess.run(argv, cwd=root, env=env, check=True, stdout=subprocess.DEVNULL)
        print(f"  built: {argv[5]} in {time.perf_counter() - t0:.1f} s", flush=True)
    done.write_text("ok", encoding="utf-8")
    return root / "store"


def timed(label: str, fn: Callable[[], Any], baseline: float | None = None) -> tuple[float, Any]:
    """Run `fn` once; print its time beside the target (and its ratio to `baseline`), and the CPU time this
    process spent (on a loaded machine the wall time waits for the cores; the CPU time says what the call
    costs)."""
    t0, c0 = time.perf_counter(), time.process_time()
    value = fn()
    took, cpu = time.perf_counter() - t0, time.process_time() - c0
    mark = "ok" if took < TARGET_S else "SLOW"
    ratio = f"  ({baseline / took:5.1f}× faster than the unpaged call)" if baseline else ""
    print(
        f"  {label:<58} {took:7.3f} s (cpu {cpu:6.3f} s)  target < {TARGET_S:g} s  {mark}{ratio}", flush=True
    )
    return took, value


def main() -> None:
    """Build (or reuse) the store, then time each widget call."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--no-baseline", action="store_true", help="skip the unpaged calls (slow at 100k)")
    parser.add_argument("--before", type=Path, help="an older checkout: time each cold call with both trees")
    parser.add_argument("--repeat", type=int, default=3, help="cold processes per call and tree (--before)")
    parser.add_argument(
        "--store", type=Path, help="time this store instead (its experiment named paging; a copy, say)"
    )
    args = parser.parse_args()
    store_dir = args.store.resolve() if args.store else build(args.cases, args.rebuild)
    if args.before:
        cold_against(store_dir, args.before.resolve(), args.repeat)
        return
    sys.path.insert(0, str(REPO))
    measure(store_dir, baseline=not args.no_baseline)
    print(
        f"  machine load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f} (1/5/15 min)"
    )


def measure(store_dir: Path, *, baseline: bool) -> None:
    """Each call a widget makes, then each widget opened and paged, timed on a freshly opened store."""
    from abbench.compare import compare_arms
    from abbench.metrics import experiment_metrics
    from abbench.review import case_detail, case_page, disagreement_page, disagreements
    from abbench.store import open_store

    t0 = time.perf_counter()
    import plotly.io  # noqa: F401  (pulls nbformat and jsonschema: a one-time cost, not the data's)

    import abbench.widgets  # noqa: F401

    print(
        f"  imports (widgets, plotly.io), once per kernel: {time.perf_counter() - t0:.2f} s, not counted below"
    )
    store = open_store(store_dir, create=False)
    exp = store.experiments.get("paging")
    total = store.runs.page(exp.id, limit=1).total
    print(f"store {store_dir} · experiment {exp.name} · {total:,} runs · {len(exp.arms)} arms")
    print("library calls:")
    whole = None
    if baseline:
        whole, listed = timed(
            'disagreements("all"): every case view (the widget before)',
            lambda: disagreements(exp.id, "all", store=store),
        )
        print(f"    {len(listed):,} cases listed")
    _, page = timed(
        "disagreement_page(all) page 1 (first call: reads the runs)",
        lambda: disagreement_page(exp.id, "all", limit=100, store=store),
        whole,
    )
    print(f"    page 1 of {page.pages:,}: {len(page.items)} of {page.total:,} cases")
    timed(
        "disagreement_page(all) the middle page",
        lambda: disagreement_page(exp.id, "all", offset=page.total // 2, limit=100, store=store),
        whole,
    )
    timed(
        "disagreement_page(flaky, arm A, not reviewed)",
        lambda: disagreement_page(exp.id, "flaky", arm="A", reviewed=False, limit=100, store=store),
        whole,
    )
    timed(
        "disagreement_page(all, search 'TOPIC 42', most wrong first)",
        lambda: disagreement_page(exp.id, "all", search="TOPIC 42", sort="wrong", limit=100, store=store),
        whole,
    )
    timed("case_detail(one case)", lambda: case_detail(exp.id, "c054327", store=store))
    timed("case_page (All cases) the middle page", lambda: case_page(exp.id, offset=50_000, store=store))
    timed(
        "case_page(outcome wrong, arm B), the last page",
        lambda: case_page(exp.id, outcome="fail", arm="B", offset=9_950, store=store),
    )
    timed(
        "case_page(most wrong runs first), page 200",
        lambda: case_page(exp.id, sort="wrong", offset=10_000, store=store),
    )
    timed("case_page(search 'TOPIC 42')", lambda: case_page(exp.id, search="TOPIC 42", store=store))
    timed("experiment_metrics (results widget)", lambda: experiment_metrics(exp.id, store=store))
    timed(
        "compare_arms(A, B, details=True) (compare widget)",
        lambda: compare_arms(exp.id, "A", "B", store=store, details=True),
    )
    timed(
        "Store.run_page: runs 300,000-300,100 and the total",
        lambda: store.runs.page(exp.id, offset=total // 2, limit=100),
    )
    first, late, n = _chunk_times(store, exp.id)
    mark = "ok" if max(first, late) < TARGET_S else "SLOW"
    label = f"Store.iter_run_pages: chunk 1 and chunk {n} of 2,000 runs"
    print(f"  {label:<58} {first:7.3f} s, {late:.3f} s  target < {TARGET_S:g} s each  {mark}")
    print("widgets (each opened on the experiment, then its pager or selection used):")
    _widgets(store, exp)


def _chunk_times(store: Any, exp_id: int) -> tuple[float, float, int]:
    """Seconds for the first chunk of 2,000 runs and for the 150th (keyset paging: the same), chunks read."""
    times, t0, n = [], time.perf_counter(), 0
    for n, _chunk in enumerate(store.runs.pages(exp_id, chunk=2000), 1):
        now = time.perf_counter()
        times.append(now - t0)
        t0 = now
        if n == 150:
            break
    return times[0], times[-1], n


def _widgets(store: Any, exp: Any) -> None:
    from abbench.widgets import DiffWidget, ResultsWidget, ReviewWidget

    _, review = timed(
        "ReviewWidget(kind='all'): list page 1 and open nothing",
        lambda: ReviewWidget(store, experiment=exp.id, kind="all"),
    )
    print(f"    {review.page_html.value}")
    timed("ReviewWidget: next page", review.next_page)
    timed(
        "ReviewWidget: open a case on page 300 (turns the page)",
        lambda: review.select_case(review.page.case_ids[29_950]),
    )
    timed("ReviewWidget: kind flaky, arm A (filters in the store)", lambda: _set(review, "flaky", "A"))
    timed("ReviewWidget: j (next case)", lambda: review.shortcuts.press("j"))
    timed("ResultsWidget: open the experiment", lambda: ResultsWidget(store, experiment=exp.id))
    timed("DiffWidget: compare A and B", lambda: DiffWidget(store, a=exp.id))


COLD_CALLS = {
    "disagreement_page(all) page 1": "disagreement_page(exp.id, 'all', limit=100, store=store)",
    "disagreement_page(all) page 1, lowest confidence first": (
        "disagreement_page(exp.id, 'all', limit=100, sort='confidence', store=store)"
    ),
    "experiment_metrics": "experiment_metrics(exp.id, store=store)",
    "compare_arms(A, B, details=True)": "compare_arms(exp.id, 'A', 'B', store=store, details=True)",
    "ReviewWidget(kind='all')": "ReviewWidget(store, experiment=exp.id, kind='all')",
    "ResultsWidget: open the experiment": "ResultsWidget(store, experiment=exp.id)",
    "DiffWidget: compare A and B": "DiffWidget(store, a=exp.id)",
}
"""The calls `cold_against` times, each the first call of a fresh process on the opened store."""

_COLD = """
import json, sys, time
import plotly.io, pandas, scipy.stats
from abbench.compare import compare_arms
from abbench.metrics import experiment_metrics
from abbench.review import disagreement_page
from abbench.store import open_store
from abbench.widgets import DiffWidget, ResultsWidget, ReviewWidget
store = open_store(sys.argv[1], create=False)
exp = store.experiments.get("paging")
t0, c0 = time.perf_counter(), time.process_time()
{call}
print(json.dumps([time.perf_counter() - t0, time.process_time() - c0]))
"""


def _cold(tree: Path, store_dir: Path, call: str) -> tuple[float, float]:
    """Wall and CPU seconds of `call`, the first call of a fresh process running `tree`'s code."""
    import json

    env = {**os.environ, "PYTHONPATH": str(tree)}
    out = subprocess.run(
        [sys.executable, "-c", _COLD.format(call=call), str(store_dir)],
        env=env, cwd=tree, check=True, capture_output=True, text=True,
    )  # fmt: skip
    wall, cpu = json.loads(out.stdout.strip().splitlines()[-1])
    return float(wall), float(cpu)


def cold_against(store_dir: Path, before: Path, repeat: int) -> None:
    """Each call of `COLD_CALLS` timed cold with the older checkout `before` and with this tree, in turns."""
    import statistics

    print(f"cold calls, median of {repeat} fresh processes each; before: {before}, after: {REPO}")
    print(f"  {'call':<56} {'before wall/cpu':>17} {'after wall/cpu':>17}  cpu ratio")
    for label, call in COLD_CALLS.items():
        times: dict[Path, list[tuple[float, float]]] = {before: [], REPO: []}
        for _ in range(repeat):
            for tree in (before, REPO):
                times[tree].append(_cold(tree, store_dir, call))
        (bw, bc), (aw, ac) = (
            (statistics.median(t[0] for t in times[tree]), statistics.median(t[1] for t in times[tree]))
            for tree in (before, REPO)
        )
        print(f"  {label:<56} {bw:7.3f} / {bc:6.3f} s {aw:7.3f} / {ac:6.3f} s  {bc / ac:5.2f}×", flush=True)
    load = os.getloadavg()
    print(f"  machine load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1/5/15 min)")


def _set(review: Any, kind: str, arm: str) -> None:
    review.kind.value = kind
    review.arm.select(arm)


if __name__ == "__main__":
    main()

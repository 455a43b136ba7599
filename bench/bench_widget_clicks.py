"""The Python side of the workbench's slow clicks at 100k cases: each widget built cold, median of 3.

Issue 40 item 15 measured in the browser (click to drawn) at 100,000 cases × 3 rounds × 2 arms:
opening 03 4.7 s, *Draw random sample* 3.8 s, opening 04 and 05 about 2.5 s; the target is under 2 s
a click. This bench times what the kernel does for each of those clicks (the widget's Python, store
reads included; not the browser's drawing), each in a fresh process as a notebook opening is, with
the median of ``--repeat`` runs and the CPU time beside the wall time (on a loaded machine the wall
time waits for the cores; the CPU time is what the click costs):

    python bench/bench_widget_clicks.py                    # the 100,000-case store of bench_paging.py
    python bench/bench_widget_clicks.py --before /path/to/older/checkout   # both trees, in turns
    python bench/bench_widget_clicks.py --profile "open 04"                # cProfile of one click

The store is bench_paging.py's (built once by a real ``abbench run``, cached under /tmp); each run
works on a copy so that *Draw random sample* does not pile samples up in it. A bench that drives the
browser for these clicks is not written yet (see bench_review.py for one that does, for 04's keys).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

from bench_paging import TARGET_S, build  # noqa: E402

CLICKS = {
    "open 03": "ResultsWidget(store, experiment=exp.id)",
    "open 04": "ReviewWidget(store, experiment=exp.id)",
    "open 05": "DiffWidget(store, a=exp.id)",
    "04: draw random sample": "ready.draw_sample()",
    "04: sort by lowest confidence": "ready.sort.__setattr__('value', 'confidence')",
}
"""Each click as the kernel runs it (``ready`` is an open 04, built before the clock starts)."""

_CLICK = """
import json, sys, time
import pandas, scipy.stats, plotly.graph_objects, plotly.io, plotly.io._renderers, nbformat
from abbench.store import open_store
from abbench.widgets import DiffWidget, ResultsWidget, ReviewWidget
store = open_store(sys.argv[1], create=False)
exp = store.experiments.get("paging")
ready = ReviewWidget(store, experiment=exp.id) if {needs_ready} else None
profile = None
if {profile}:
    import cProfile
    profile = cProfile.Profile()
    profile.enable()
t0, c0 = time.perf_counter(), time.process_time()
{call}
wall, cpu = time.perf_counter() - t0, time.process_time() - c0
if profile is not None:
    import pstats
    profile.disable()
    pstats.Stats(profile, stream=sys.stderr).sort_stats("cumulative").print_stats(30)
print(json.dumps([wall, cpu]))
"""


def click(tree: Path, store_dir: Path, name: str, *, profile: bool = False) -> tuple[float, float]:
    """Wall and CPU seconds of one click, in a fresh process running `tree`'s code on a copy of the store."""
    call = CLICKS[name]
    with tempfile.TemporaryDirectory(prefix="bench-clicks-") as tmp:
        copy = Path(tmp) / "store"
        shutil.copytree(store_dir, copy)
        code = _CLICK.format(call=call, needs_ready="ready." in call, profile=profile)
        out = subprocess.run(
            [sys.executable, "-c", code, str(copy)], env={**os.environ, "PYTHONPATH": str(tree)}, cwd=tree,
            check=True, capture_output=True, text=True,
        )  # fmt: skip
    if profile:
        print(out.stderr)
    wall, cpu = json.loads(out.stdout.strip().splitlines()[-1])
    return float(wall), float(cpu)


def main() -> None:
    """Time each click cold, `--repeat` times per tree, and print the medians beside the target."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--store", type=Path, help="a store of your own (experiment named paging)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--before", type=Path, help="an older checkout, timed in turns with this one")
    parser.add_argument("--only", action="append", choices=list(CLICKS), help="these clicks only")
    parser.add_argument("--profile", choices=list(CLICKS), help="print cProfile's top of one click")
    args = parser.parse_args()
    store_dir = args.store.resolve() if args.store else build(args.cases)
    if args.profile:
        click(REPO, store_dir, args.profile, profile=True)
        return
    trees = {"this tree": REPO, **({"before": args.before.resolve()} if args.before else {})}
    print(f"{args.cases:,} cases; median of {args.repeat} cold processes; target < {TARGET_S:g} s a click")
    for name in args.only or list(CLICKS):
        times: dict[str, list[tuple[float, float]]] = {label: [] for label in trees}
        for _ in range(args.repeat):
            for label, tree in trees.items():  # in turns, so both meet the same load
                times[label].append(click(tree, store_dir, name))
        cells = []
        for label, runs in times.items():
            wall, cpu = statistics.median(w for w, _ in runs), statistics.median(c for _, c in runs)
            cells.append(f"{label}: {wall:6.2f} s (cpu {cpu:6.2f} s) {'ok' if wall < TARGET_S else 'SLOW'}")
        print(f"  {name:<32} " + "   ".join(cells), flush=True)
    load = os.getloadavg()
    print(f"  machine load: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} (1/5/15 min)")


if __name__ == "__main__":
    main()

"""Scale benchmark: whole `abbench` processes on a generated dataset, time and peak RSS beside targets.

Generates a CSV (input, expected, 20 domains, two labels), an experiment of 2 arms × 3 rounds with a
`python` agent answering at once, and runs each analyst step as its own process:
import, run, metrics, compare, report, export (xlsx, csv). Prints one table per size (1k and 10k cases;
100k with --big, slow on a small machine), each figure beside its target, and the ratio to the 10k row;
exports also in rows per second beside their targets and against the floor measured in the same run
(plain sqlite3 reading the same rows, nothing converted: no export in Python can be faster).

Before each step the machine's dirty pages are written out (``sync``, not timed): an export of 738 MB
that starts while the kernel is still writing the 260 MB of the exports before it spends ~2 s more in
the kernel on ext4 (measured: JSONL 4.5 s vs 3.5 s), which is the disk's state, not the step's work.

Also prints the peers' workload: the plain-asyncio-plus-SQLite floor (bench/floor_asyncio.py) against
`abbench run` whole process, `python -X importtime`'s top entries for `abbench --help` and `abbench run`,
and the start-up figures of bench/bench_startup.py (beside a baseline checkout's with --baseline DIR).

    python bench/bench_scale.py            # 1k and 10k
    python bench/bench_scale.py --big      # and 100k (600,000 runs)
    python bench/bench_scale.py --sizes 100000 --against ../before --repeat 3   # after / before

With --against DIR, every step runs with this checkout's abbench and with DIR's, interleaved (the order
flips each round, each round in fresh stores) --repeat times; the table gives each side's median wall and
CPU seconds and their ratios, so a change is held against its baseline under the same load.
"""

from __future__ import annotations

import argparse
import csv
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent
LABELS = ("fast", "slow")
# step -> (seconds target or None, peak RSS target in MB or None)
TARGETS: dict[str, tuple[float | None, float | None]] = {
    "import": (None, None),
    "run": (None, 500.0),
    "metrics": (30.0, None),
    "compare": (30.0, None),
    "report": (20.0, 500.0),
    "export xlsx": (None, 500.0),
    "export csv": (None, 500.0),
    "export jsonl": (None, 500.0),
}
RATE_TARGETS = {"export xlsx": 50_000, "export csv": 150_000, "export jsonl": 150_000}
"""Rows per second (whole process) each export must reach; a run of the 6 × n rows it writes."""


_FIRST: list[bool] = []
ARGS: dict[str, Path] = {}
"""`--repo`: the checkout whose abbench the processes run (default: this one)."""


async def instant(task):
    """The python agent: answers at once (right on most cases, so the arms differ a little).

    The first call writes the time it happened (and the process's CPU seconds by then) to $BENCH_FIRST_CALL:
    the run's start-up is measured to it.
    """
    if not _FIRST:  # $BENCH_FIRST_CALL is asked once: an environment lookup per run cost 5% of a run
        _FIRST.append(True)
        mark = os.environ.get("BENCH_FIRST_CALL")
        if mark:
            # when (wall clock), and the CPU seconds the process had used by then (load hardly changes those)
            Path(mark).write_text(f"{time.time()!r} {time.process_time()!r}", encoding="utf-8")
    case = task.case
    if task.arm == "B" and case.case_id.endswith("7"):
        return LABELS[1 - LABELS.index(case.expected)]
    return case.expected


def write_csv(path: Path, n: int) -> None:
    """The generated dataset: input, expected (two labels), domain (20 of them)."""
    with path.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["case_id", "input", "expected", "domain"])
        for i in range(n):
            w.writerow(
                [f"c{i:06d}", f"请 query number {i} about topic {i % 97}", LABELS[i % 2], f"d{i % 20:02d}"]
            )


def experiment_yaml(path: Path, dataset: str, name: str) -> None:
    """Two arms of the instant agent, three rounds."""
    arm = f"{{agent: python, function: '{HERE}:instant', sees_gold: true}}"
    path.write_text(
        f"name: {name}\ndataset: {dataset}\nrounds: 3\nconcurrency: 100\n"
        f"arms:\n  A: {arm}\n  B: {arm}\ndecision: {{baseline: A, candidate: B}}\n",
        encoding="utf-8",
    )


STEP_CPU: dict[str, float] = {}
"""The CPU seconds of each step of the last `bench_size`."""

CPU: dict[str, float] = {}
"""The CPU seconds (user + system) of the last process `timed` ran, under "last": the figure load
hardly changes, where wall time on a shared machine does."""


def timed(argv: list[str], cwd: Path, **extra: str) -> tuple[float, float]:
    """Run one whole process; return (wall seconds, peak RSS in MB) of that process alone (its CPU
    seconds in `CPU`)."""
    env = {**os.environ, "PYTHONPATH": str(ARGS.get("repo", REPO)), "TQDM_DISABLE": "1", **extra}
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    CPU["last"] = usage.ru_utime + usage.ru_stime
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode() if proc.stderr else ""
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{err}")
    return wall, usage.ru_maxrss / 1024


def bench_size(
    n: int, root: Path, reuse: bool = False, only: list[str] | None = None
) -> dict[str, tuple[float, float]]:
    """Every step at n cases, each its own process (with `reuse` and a store already in `root`, the
    analyst steps only: import, create and run are not repeated; with `only`, those steps alone)."""
    root.mkdir(parents=True, exist_ok=True)
    store = root / "store"
    data = root / f"scale{n}.csv"
    reused = reuse and (store / "abbench.db").exists()
    if not reused:
        write_csv(data, n)
    ab = [sys.executable, "-m", "abbench", "--store", str(store)]
    experiment_yaml(root / "exp.yaml", f"scale{n}", f"scale{n}")
    steps: dict[str, list[str]] = {
        "import": [*ab, "import", str(data), "--name", f"scale{n}"],
        "create": [*ab, "create", str(root / "exp.yaml")],
        "run": [*ab, "run", f"scale{n}", "-q"],
        "metrics": [*ab, "metrics", f"scale{n}"],
        "compare": [*ab, "compare", f"scale{n}", "--arms", "A", "B"],
        "report": [*ab, "report", f"scale{n}", "--out", str(root / "report.html")],
        "export xlsx": [
            *ab,
            "export",
            f"scale{n}",
            "--what",
            "runs",
            "--format",
            "xlsx",
            "--out",
            str(root / "runs.xlsx"),
        ],
        **{
            f"export {fmt}": [
                *ab,
                "export",
                f"scale{n}",
                "--what",
                "runs",
                "--format",
                fmt,
                "--out",
                str(root / f"runs.{fmt}"),
            ]
            for fmt in ("csv", "jsonl")
        },
    }
    out: dict[str, tuple[float, float]] = {}
    first = root / "first-call"
    for step, argv in steps.items():
        if reused and step in ("import", "create", "run"):
            continue
        if only and step not in only and not (step == "create" and "run" in only):
            continue
        os.sync()  # each step starts with the steps before it on disk (see the module docstring)
        started = time.time()
        out[step] = timed(argv, root, BENCH_FIRST_CALL=str(first))
        STEP_CPU[step] = CPU["last"]
        if step == "run" and first.exists():
            startup = float(first.read_text(encoding="utf-8").split()[0]) - started
            print(f"  {n:>7,} run: first agent call after {startup:.2f} s (target < 0.4 s); "
                  f"{6 * n / out[step][0]:,.0f} runs/s whole process")  # fmt: skip
        if step != "create":
            print(f"  {n:>7,} {step:<12} {out[step][0]:7.2f} s {out[step][1]:7.0f} MB "
                  f"({CPU['last']:.2f} s CPU)", flush=True)  # fmt: skip
    if only and not any(s.startswith("export") for s in only):
        return out
    floor = fetch_floor(store / "abbench.db")
    print(f"  {n:>7,} floor: SQLite hands the runs' export columns to Python at {floor:,.0f} rows/s")
    out["floor"] = (floor, 0.0)
    return out


def fetch_floor(db: Path) -> float:
    """Rows per second at which plain sqlite3 reads every run with its case and grade (the columns a
    runs export writes, as plain tuples, nothing converted): the ceiling of any export in Python."""
    import sqlite3

    conn = sqlite3.connect(db)
    sql = (
        "SELECT r.*, c.*, g.status, g.passed, g.score FROM runs r JOIN experiments e ON e.id = r.experiment_id "
        "LEFT JOIN cases c ON c.dataset_id = e.dataset_id AND c.idx = r.case_idx "
        "LEFT JOIN grades g ON g.id = (SELECT MAX(id) FROM grades WHERE run_id = r.id)"
    )
    t0 = time.perf_counter()
    cursor = conn.execute(sql)
    n = 0
    while rows := cursor.fetchmany(5000):
        n += len(rows)
    conn.close()
    return n / (time.perf_counter() - t0)


def peers(root: Path) -> None:
    """The peers' workload, whole processes: the plain asyncio floor against `abbench run`."""
    print("\npeers' workload (whole process; floor: bench/floor_asyncio.py)")
    for n, c, sleep_ms in ((5000, 100, 50), (20000, 100, 0)):
        folder = root / f"peer{n}"
        folder.mkdir(parents=True, exist_ok=True)
        floor, floor_rss = timed([sys.executable, str(HERE.parent / "floor_asyncio.py"), str(n), str(c), str(sleep_ms),
                                  str(folder / "floor.db")], folder)  # fmt: skip
        write_csv(folder / "cases.csv", n)
        ab = [sys.executable, "-m", "abbench", "--store", str(folder / "store")]
        timed([*ab, "import", str(folder / "cases.csv"), "--name", f"peer{n}"], folder)
        arm = f"{{agent: python, function: '{HERE}:{'sleepy' if sleep_ms else 'instant'}', sees_gold: true}}"
        (folder / "exp.yaml").write_text(
            f"name: peer{n}\ndataset: peer{n}\nrounds: 1\nconcurrency: {c}\narms:\n  A: {arm}\n",
            encoding="utf-8",
        )
        timed([*ab, "create", str(folder / "exp.yaml")], folder)
        wall, rss = timed([*ab, "run", f"peer{n}", "-q"], folder)
        cpu = CPU["last"]
        what = f"{n:,} runs sleeping {sleep_ms} ms at {c}" if sleep_ms else f"{n:,} instant runs"
        print(
            f"  {what:<32} floor {floor:6.2f} s {floor_rss:4.0f} MB · abbench {wall:6.2f} s {rss:4.0f} MB · "
            f"ratio {wall / floor:.2f} (target ≤ 1.2) · abbench {n / wall:,.0f} runs/s (target ≥ 10,000 instant; "
            f"{n / cpu:,.0f} per CPU second)"
        )


async def sleepy(task):
    """The peers' sleeping agent: 50 ms, then the gold label."""
    import asyncio

    await asyncio.sleep(0.05)
    return task.case.expected


def importtime(argv: list[str], top: int = 12) -> None:
    """`python -X importtime`'s slowest top-level imports of a command, and its wall time."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "abbench", *argv], env=env,
                          capture_output=True, text=True, cwd=REPO)  # fmt: skip
    wall = time.perf_counter() - t0
    rows = []
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            rows.append((int(parts[1]), parts[2].rstrip()))
    print(
        f"\nabbench {' '.join(argv)}: {wall:.2f} s whole process (target < 0.25 s for --help); slowest imports:"
    )
    for us, name in sorted(rows, reverse=True)[:top]:
        print(f"  {us / 1e6:6.3f} s {name}")


def against(n: int, baseline: Path, repeats: int, root: Path, only: list[str] | None) -> None:
    """Every step with this checkout and with `baseline`, interleaved `repeats` times: medians and ratios."""
    import statistics

    sides = {"after": ARGS.get("repo", REPO), "before": baseline.resolve()}
    for repo in sides.values():  # stale bytecode, never rewritten under PYTHONDONTWRITEBYTECODE, would be
        # compiled again by every process of the side just edited (measured: +0.3 s a command)
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(repo / "abbench")], check=True)
    walls: dict[tuple[str, str], list[float]] = {}
    cpus: dict[tuple[str, str], list[float]] = {}
    for r in range(repeats):
        order = list(sides) if r % 2 == 0 else list(reversed(sides))
        for side in order:
            ARGS["repo"] = sides[side]
            print(f"round {r + 1}/{repeats}: {side} ({sides[side]})", flush=True)
            res = bench_size(n, root / f"{side}{r}", only=only)
            for step, (wall, _rss) in res.items():
                if step in TARGETS:
                    walls.setdefault((step, side), []).append(wall)
                    cpus.setdefault((step, side), []).append(STEP_CPU[step])
    ARGS["repo"] = sides["after"]
    print(f"\n{n:,} cases, {repeats} interleaved rounds; medians (after / before)")
    print(
        f"{'step':<12} {'wall after':>10} {'before':>8} {'ratio':>6}   {'CPU after':>9} {'before':>8} {'ratio':>6}"
    )
    for step in TARGETS:
        if (step, "after") not in walls:
            continue
        wa, wb = (statistics.median(walls[step, s]) for s in ("after", "before"))
        ca, cb = (statistics.median(cpus[step, s]) for s in ("after", "before"))
        print(
            f"{step:<12} {wa:>8.2f} s {wb:>6.2f} s {wa / wb:>6.3f}   {ca:>7.2f} s {cb:>6.2f} s {ca / cb:>6.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--big", action="store_true", help="also 100,000 cases (600,000 runs; slow)")
    parser.add_argument("--sizes", type=int, nargs="*", help="case counts to run instead of 1k/10k")
    parser.add_argument("--keep", type=Path, help="keep the stores in this folder")
    parser.add_argument(
        "--reuse", action="store_true", help="with --keep: reuse the stores already there (no import or run)"
    )
    parser.add_argument("--no-peers", action="store_true", help="skip the peers' workload")
    parser.add_argument("--repo", type=Path, help="run the abbench of this checkout (before/after)")
    parser.add_argument(
        "--steps", nargs="*", choices=list(TARGETS), help="only these steps (run needs import: name both)"
    )
    parser.add_argument(
        "--baseline", type=Path, help="another checkout whose start-up to measure beside this one"
    )
    parser.add_argument(
        "--against", type=Path, help="another checkout: every step with both, interleaved (after / before)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="with --against: rounds (default 3)")
    args = parser.parse_args()
    if args.repo:
        ARGS["repo"] = args.repo.resolve()
    sizes = args.sizes or [1000, 10000] + ([100000] if args.big else [])
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        if args.against:
            for n in sizes:
                against(n, args.against, args.repeat, base / f"n{n}", args.steps)
            return
        results = {n: bench_size(n, base / f"n{n}", args.reuse, args.steps) for n in sizes}
        print_table(results)
        if args.steps:
            return  # a subset: the start-up figures and the peers belong to the whole bench
        importtime(["--help"])
        from bench_startup import startup  # beside this file

        print()
        startup(args.baseline, repeats=3)
        if not args.no_peers:
            peers(base)


def print_table(results: dict[int, dict[str, tuple[float, float]]]) -> None:
    """One row per step and size: time and RSS beside targets, ratios to the 10k row."""
    ref = results.get(10000)
    print(
        f"\n{'step':<12} {'cases':>8} {'time':>9} {'target':>8} {'peak RSS':>9} {'target':>8} {'×10k t':>7} {'×10k mem':>8}"
    )
    for step in TARGETS:
        for n, res in results.items():
            if step not in res:
                continue
            wall, rss = res[step]
            t_target, m_target = TARGETS[step]
            rt = f"{wall / ref[step][0]:.2f}" if ref and step in ref else "-"
            rm = f"{rss / ref[step][1]:.2f}" if ref and step in ref else "-"
            tt = f"<{t_target:g} s" if t_target else "-"
            mt = f"<{m_target:g} MB" if m_target else "-"
            rate = ""
            if step in RATE_TARGETS:
                rows = 6 * n / wall
                rate = (f"  {rows:>9,.0f} rows/s (target ≥ {RATE_TARGETS[step]:,}; "
                        f"{rows / res['floor'][0]:.2f} × the SQLite floor)")  # fmt: skip
            print(f"{step:<12} {n:>8,} {wall:>7.2f} s {tt:>8} {rss:>6.0f} MB {mt:>8} {rt:>7} {rm:>8}{rate}")


if __name__ == "__main__":
    main()

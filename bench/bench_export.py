"""Runs exports, whole processes, of an existing store: this checkout against a baseline, same run.

Each export is `abbench export EXP --what runs --format F --out PATH --store DIR` in its own process
(start-up included), timed on the wall clock and in CPU seconds (user + system, the figure a shared
machine's load changes least), with its peak RSS. With
``--baseline DIR`` (a checkout, e.g. a worktree of main) the same exports run from there too,
alternating, and the outputs are compared byte for byte.

    python bench/bench_export.py --store /tmp/x/store --experiment scale10000 --baseline /work/main

Without ``--store`` (as ``make bench`` runs it) it builds its own first: bench/bench_scale.py's generated
experiment of ``--cases`` cases (default 10,000) × 2 arms × 3 rounds, imported and run by whole processes.
"""

from __future__ import annotations

import argparse
import contextlib
import filecmp
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS = {"xlsx": 50_000, "csv": 150_000, "jsonl": 150_000}
"""Rows per second (whole process) each runs export must reach."""


def timed(repo: Path, argv: list[str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one whole process run from `repo`."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        err = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{' '.join(argv)} failed:\n{err}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--store", type=Path, help="an existing store (default: one built first, see --cases)"
    )
    parser.add_argument("--experiment", help="the experiment to export (with --store)")
    parser.add_argument("--rows", type=int, help="runs in the experiment (with --store)")
    parser.add_argument(
        "--cases",
        type=int,
        default=10_000,
        help="without --store: cases of the experiment built (× 2 arms × 3 rounds)",
    )
    parser.add_argument("--baseline", type=Path, help="another checkout to time beside this one")
    parser.add_argument("--formats", default="csv,jsonl,xlsx")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench_export"))
    args = parser.parse_args()
    if args.store is not None and (args.experiment is None or args.rows is None):
        parser.error("--store needs --experiment and --rows")
    with contextlib.ExitStack() as stack:
        if args.store is None:
            root = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="abbench-bench-export-")))
            args.store, args.experiment, args.rows = built_store(root, args.cases)
        export_all(args)


def built_store(root: Path, cases: int) -> tuple[Path, str, int]:
    """bench_scale's generated experiment of `cases` cases, imported and run: (store, experiment, runs)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench_scale import bench_size  # beside this file

    print(f"building a store of {cases:,} cases × 2 arms × 3 rounds (not timed below)", flush=True)
    bench_size(cases, root, only=["import", "run"])
    return root / "store", f"scale{cases}", 6 * cases


def export_all(args: argparse.Namespace) -> None:
    """Each format's export, from this checkout and the baseline, alternating; the best of --repeat."""
    args.out.mkdir(parents=True, exist_ok=True)
    repos = [("this", REPO)] + ([("baseline", args.baseline)] if args.baseline else [])
    for fmt in args.formats.split(","):
        best: dict[str, tuple[float, float, float]] = {}
        for _ in range(args.repeat):
            for label, repo in repos:
                out = args.out / f"{label}.{fmt}"
                argv = [
                    sys.executable,
                    "-m",
                    "abbench",
                    "--store",
                    str(args.store),
                    "export",
                    args.experiment,
                    "--what",
                    "runs",
                ]
                argv += ["--format", fmt, "--out", str(out)]
                got = timed(repo, argv)
                if label not in best or got[0] < best[label][0]:
                    best[label] = got
        line = []
        for label, (wall, cpu, rss) in best.items():
            line.append(
                f"{label} {wall:6.2f} s ({cpu:5.2f} CPU s) {args.rows / wall:9,.0f} rows/s {rss:5.0f} MB"
            )
        same = ""
        if args.baseline:
            equal = filecmp.cmp(args.out / f"this.{fmt}", args.out / f"baseline.{fmt}", shallow=False)
            speedup = best["baseline"][0] / best["this"][0]
            same = f" · {speedup:.2f}× · {'byte-identical' if equal else 'DIFFERENT'}"
        print(f"{fmt:<5} " + " | ".join(line) + f" (target {TARGETS[fmt]:,}){same}", flush=True)


if __name__ == "__main__":
    main()

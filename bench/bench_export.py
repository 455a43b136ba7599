"""Runs exports, whole processes, of an existing store: this checkout against a baseline, same run.

Each export is `abbench export EXP --what runs --format F --out PATH --store DIR` in its own process
(start-up included), timed on the wall clock and in CPU seconds (user + system, the figure a shared
machine's load changes least), with its peak RSS. With
``--baseline DIR`` (a checkout, e.g. a worktree of main) the same exports run from there too,
alternating, and the outputs are compared byte for byte.

    python bench/bench_export.py --store /tmp/x/store --experiment scale10000 --baseline /work/main
"""

from __future__ import annotations

import argparse
import filecmp
import os
import subprocess
import sys
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
    parser.add_argument("--store", type=Path, required=True)
    parser.add_argument("--experiment", required=True)
    parser.add_argument("--rows", type=int, required=True, help="runs in the experiment")
    parser.add_argument("--baseline", type=Path, help="another checkout to time beside this one")
    parser.add_argument("--formats", default="csv,jsonl,xlsx")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("/tmp/bench_export"))
    args = parser.parse_args()
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

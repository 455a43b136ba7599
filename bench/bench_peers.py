"""The peers' workload, whole processes: `abbench run` against the plain-asyncio-plus-SQLite floor, in one run.

Two workloads (issue 17), each a fresh store and a fresh floor database, one process per measurement:

  (a) 5,000 runs whose agent waits 50 ms, at concurrency 100   target: abbench ≤ 1.2 × the floor's wall
  (b) 20,000 runs whose agent answers at once                  target: abbench ≥ 10,000 runs/s whole process

The floor (bench/floor_asyncio.py) persists each run's four transitions and its grade in batches, as a
careful hand-written harness would; `abbench run` persists every transition, attempt, grade and event.
Each measurement is repeated (--reps, default 3) alternating floor and abbench, and the median printed
with the CPU time (user + system) of each process: on a shared machine the CPU ratio moves less than
the wall ratio. The machine's load (`uptime`) is printed before and after.

    python bench/bench_peers.py            # both workloads, 3 reps
    python bench/bench_peers.py --only b   # the instant one
    python bench/bench_peers.py --repo ../main   # another checkout, for before/after
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parent.parent
SCALE = HERE.parent / "bench_scale.py"
sys.path.insert(0, str(HERE.parent))

from bench_scale import write_csv  # noqa: E402  (the scale bench's generated dataset)

WORKLOADS = {"a": (5000, 100, 50), "b": (20000, 100, 0)}
"""Workload -> (runs, concurrency, agent wait in ms)."""


def measure(argv: list[str], cwd: Path, repo: Path = REPO) -> tuple[float, float]:
    """One whole process of the abbench in `repo`: (wall seconds, CPU seconds user + system)."""
    env = {**os.environ, "PYTHONPATH": str(repo), "TQDM_DISABLE": "1"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # measure what users run: compiled modules cached
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{err}")
    return wall, usage.ru_utime + usage.ru_stime


def prepare(folder: Path, n: int, c: int, sleep_ms: int) -> list[str]:
    """A store with the experiment created and nothing run; returns the `abbench run` command."""
    folder.mkdir(parents=True, exist_ok=True)
    write_csv(folder / "cases.csv", n)
    ab = [sys.executable, "-m", "abbench", "--store", str(folder / "store")]
    measure([*ab, "import", str(folder / "cases.csv"), "--name", f"peer{n}"], folder)
    agent = "sleepy" if sleep_ms else "instant"
    arm = f"{{agent: python, function: '{SCALE}:{agent}', sees_gold: true}}"
    (folder / "exp.yaml").write_text(
        f"name: peer{n}\ndataset: peer{n}\nrounds: 1\nconcurrency: {c}\narms:\n  A: {arm}\n",
        encoding="utf-8",
    )
    measure([*ab, "create", str(folder / "exp.yaml")], folder)
    shutil.copytree(folder / "store", folder / "fresh")
    return [*ab, "run", f"peer{n}", "-q"]


def workload(root: Path, key: str, reps: int, repo: Path = REPO) -> None:
    """Floor and abbench alternately, `reps` times each; medians and their ratios."""
    n, c, sleep_ms = WORKLOADS[key]
    folder = root / f"peer-{key}"
    run = prepare(folder, n, c, sleep_ms)
    floor_argv = [sys.executable, str(HERE.parent / "floor_asyncio.py"), str(n), str(c), str(sleep_ms)]
    floors, abbench = [], []
    for _ in range(reps):
        db = folder / "floor.db"
        for p in folder.glob("floor.db*"):
            p.unlink()
        floors.append(measure([*floor_argv, str(db)], folder))
        shutil.rmtree(folder / "store")
        shutil.copytree(folder / "fresh", folder / "store")
        abbench.append(measure(run, folder, repo))
    fw, fc = (statistics.median(x) for x in zip(*floors, strict=True))
    aw, ac = (statistics.median(x) for x in zip(*abbench, strict=True))
    what = f"({key}) {n:,} runs waiting {sleep_ms} ms at {c}" if sleep_ms else f"({key}) {n:,} instant runs"
    target = "target ≤ 1.2" if sleep_ms else f"{n / aw:,.0f} runs/s, target ≥ 10,000"
    print(
        f"{what}: floor {fw:.2f} s wall {fc:.2f} s CPU · abbench {aw:.2f} s wall {ac:.2f} s CPU · "
        f"ratio {aw / fw:.2f} wall, {ac / fc:.2f} CPU ({target}); median of {reps}",
        flush=True,
    )


def uptime() -> str:
    """The machine's load, as `uptime` says it."""
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--only", choices=sorted(WORKLOADS), help="one workload only")
    parser.add_argument("--reps", type=int, default=3, help="measurements of each (median printed)")
    parser.add_argument(
        "--repo", type=Path, default=REPO, help="time `abbench run` of another checkout (before/after)"
    )
    args = parser.parse_args()
    print("load before:", uptime(), f"· abbench of {args.repo}")
    with tempfile.TemporaryDirectory() as tmp:
        for key in [args.only] if args.only else sorted(WORKLOADS):
            workload(Path(tmp), key, args.reps, args.repo)
    print("load after: ", uptime())


if __name__ == "__main__":
    main()

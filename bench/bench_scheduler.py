"""Scheduler benchmark: wall time vs the ideal, persisted runs per second, and peak memory.

Prints, measured in one run:
  1. 5,000 runs of an agent that sleeps 50 ms at concurrency 100: wall time / ideal ceil(N/C) × 50 ms
     (target ≤ 1.15);
  2. 20,000 runs of an agent that returns at once, every state transition persisted: runs/s (target ≥ 5,000);
  3. peak memory of (2) (target < 200 MB).
"""

from __future__ import annotations

import asyncio
import math
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from abbench.runner import create_experiment, run_experiment
from abbench.store import open_store
from abbench.types import Case


async def sleepy(task):
    """The python agent of part 1: sleeps, then answers with the gold label."""
    await asyncio.sleep(task.params.get("sleep_ms", 50) / 1000)
    return task.case.expected


async def instant(task):
    """The python agent of part 2: answers at once."""
    return task.case.expected


HERE = Path(__file__).resolve()


def make_store(root: Path, n_cases: int):
    store = open_store(root)
    cases = [
        Case(f"c{i:06d}", f"query number {i}", "fast" if i % 2 else "slow", domain=f"d{i % 7}")
        for i in range(n_cases)
    ]
    return store, store.save_dataset("bench", cases, label_set=["fast", "slow"])


def bench_sleep(root: Path, n: int = 5000, c: int = 100, sleep_ms: int = 50) -> float:
    store, ds = make_store(root, n)
    exp = create_experiment(
        {
            "name": "sleep",
            "dataset": ds.fingerprint,
            "concurrency": c,
            "arms": {
                "a": {
                    "agent": "python",
                    "function": f"{HERE}:sleepy",
                    "sleep_ms": sleep_ms,
                    "sees_gold": True,
                }
            },
        },
        store=store,
    )
    t0 = time.perf_counter()
    summary = run_experiment(exp.id, store=store)
    wall = time.perf_counter() - t0
    ideal = math.ceil(n / c) * sleep_ms / 1000
    assert summary.progress.done == n, summary
    print(
        f"1. {n} runs sleeping {sleep_ms} ms at concurrency {c}: wall {wall:.3f} s, ideal {ideal:.3f} s, "
        f"ratio {wall / ideal:.3f} (target ≤ 1.15)"
    )
    store.close()
    return wall / ideal


def bench_instant(root: Path, n: int = 20000) -> float:
    store, ds = make_store(root, n)
    exp = create_experiment(
        {
            "name": "instant",
            "dataset": ds.fingerprint,
            "concurrency": 100,
            "arms": {"a": {"agent": "python", "function": f"{HERE}:instant", "sees_gold": True}},
        },
        store=store,
    )
    base_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    summary = run_experiment(exp.id, store=store)
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    events = store.query_one("SELECT COUNT(*) FROM run_events")[0]
    grades = store.query_one("SELECT COUNT(*) FROM grades")[0]
    assert summary.progress.done == n and events == 4 * n and grades == n, (events, grades)
    rate = n / wall
    print(
        f"2. {n} instant runs, {events} state transitions and {grades} grades persisted: {wall:.3f} s, "
        f"{rate:,.0f} runs/s (target ≥ 5,000; ratio {rate / 5000:.2f})"
    )
    print(
        f"3. peak memory (max RSS of the process running (2)): {rss:.0f} MB, of which {base_rss:.0f} MB before "
        f"the run started (target < 200 MB)"
    )
    store.close()
    return rate


if __name__ == "__main__":
    # Each part runs in a fresh process, so the peak memory printed is that part's own.
    part = sys.argv[1] if len(sys.argv) > 1 else None
    if part is None:
        import subprocess

        for name in ("sleep", "instant"):
            subprocess.run([sys.executable, __file__, name], check=True)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            if part == "sleep":
                bench_sleep(Path(tmp) / "sleep")
            else:
                bench_instant(Path(tmp) / "instant")

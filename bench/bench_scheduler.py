"""Scheduler benchmark: wall time vs the ideal, persisted runs per second, and peak memory.

Prints, measured in one run:
  1. 5,000 runs of an agent that sleeps 50 ms at concurrency 100: wall time / ideal ceil(N/C) × 50 ms
     (target ≤ 1.15);
  2. 20,000 runs of an agent that returns at once, every state transition persisted: runs/s (target ≥ 5,000);
  3. peak memory of (2) (target < 200 MB);
  4. control latency: pause asked from another store connection until the runner says paused (target
     ≤ 1 s), and cancel asked while every worker waits on a 30 s agent until the run has ended (target ≤ 1 s).
     (The tests check that pause and cancel work by holding agents at a gate; how fast is measured here.)
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

from abbench.runner import (
    cancel_experiment,
    create_experiment,
    pause_experiment,
    run_experiment,
    start_experiment,
)
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
    return store, store.datasets.save("bench", cases, label_set=["fast", "slow"])


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


def bench_control(root: Path, sleep_ms: int = 30_000) -> tuple[float, float]:
    store, ds = make_store(root, 200)
    exp = create_experiment(
        {
            "name": "control",
            "dataset": ds.fingerprint,
            "concurrency": 4,
            "arms": {"a": {"agent": "python", "function": f"{HERE}:sleepy", "sleep_ms": sleep_ms}},
        },
        store=store,
    )
    handle = start_experiment(exp.id, store=store)
    other = open_store(store.path)  # what another process sees and writes

    def until(predicate, limit=60.0):
        deadline = time.perf_counter() + limit
        while not predicate():
            if time.perf_counter() > deadline:
                raise SystemExit("the runner never got there")
            time.sleep(0.001)

    until(lambda: store.query_one("SELECT COUNT(*) FROM runs WHERE state='running'")[0] == 4)
    t0 = time.perf_counter()
    pause_experiment(exp.id, store=other)
    until(lambda: handle.progress.status == "paused")
    pause_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    cancel_experiment(exp.id, store=other)
    summary = handle.wait(60)
    cancel_s = time.perf_counter() - t0
    assert summary.status == "cancelled", summary
    print(
        f"4. pause noticed after {pause_s:.3f} s (target ≤ 1 s); cancel with 4 runs in flight on "
        f"{sleep_ms / 1000:g} s agents ended the run after {cancel_s:.3f} s (target ≤ 1 s)"
    )
    other.close()
    store.close()
    return pause_s, cancel_s


if __name__ == "__main__":
    # Each part runs in a fresh process, so the peak memory printed is that part's own.
    part = sys.argv[1] if len(sys.argv) > 1 else None
    if part is None:
        import subprocess

        for name in ("sleep", "instant", "control"):
            subprocess.run([sys.executable, __file__, name], check=True)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            if part == "sleep":
                bench_sleep(Path(tmp) / "sleep")
            elif part == "control":
                bench_control(Path(tmp) / "control")
            else:
                bench_instant(Path(tmp) / "instant")

"""Budget benchmark: what a budget costs the scheduler, as a ratio in one run.

Prints, measured in one run:
  1. 10,000 runs of a python agent that answers at once with a cost, at concurrency 50, without a
     budget and with one too high to be reached: best-of-three wall time with / without (target ≤ 1.10 — the guard
     is a few additions per attempt);
  2. the same with a budget reached half way: runs executed (target: the budget's 5,000 exactly, no
     run past it).
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from abbench.runner import create_experiment, run_experiment
from abbench.store import open_store
from abbench.types import AgentOutput, Case, Usage


async def priced(task):
    """The python agent: answers at once, having cost 0.001 and 12 tokens."""
    return AgentOutput(prediction="fast", usage=Usage(10, 2), cost=0.001)


def run(root: Path, n: int, budget: dict | None) -> tuple[float, int]:
    store = open_store(root)
    cases = [Case(f"c{i:06d}", f"query {i}", "fast" if i % 2 else "slow") for i in range(n)]
    ds = store.datasets.save("bench", cases, label_set=["fast", "slow"])
    spec = {
        "name": "budget",
        "dataset": ds.fingerprint,
        "arms": {"a": {"agent": "python", "function": f"{Path(__file__).resolve()}:priced"}},
        "concurrency": 50,
    }
    if budget:
        spec["budget"] = budget
    exp = create_experiment(spec, store=store)
    began = time.perf_counter()
    summary = run_experiment(exp.id, store=store)
    return time.perf_counter() - began, summary.executed


def main() -> None:
    n = 10_000
    with tempfile.TemporaryDirectory() as tmp:
        # alternated and the best of three each: the machine's noise is larger than the guard's cost
        plain = guarded = float("inf")
        for rep in range(3):
            plain = min(plain, run(Path(tmp) / f"plain{rep}", n, None)[0])
            high = {"max_cost": 1e6, "max_tokens": 10**12}
            guarded = min(guarded, run(Path(tmp) / f"guarded{rep}", n, high)[0])
        _, executed = run(Path(tmp) / "half", n, {"max_cost": n * 0.001 / 2})
    print(
        f"1. {n:,} runs: {plain:.2f} s without a budget, {guarded:.2f} s with one: ratio {guarded / plain:.2f}"
    )
    print(f"2. a budget of {n // 2:,} runs' cost: {executed:,} runs executed")


if __name__ == "__main__":
    main()

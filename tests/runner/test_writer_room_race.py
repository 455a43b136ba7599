"""Workers that waited for the store writer re-check the queue: the last items are not taken twice.

A worker that sees an item left, then waits for the writer to catch up, may find the item taken by
another worker when it wakes. It must go round its loop again, not take from an empty queue (the
demo failed so in CI with `IndexError: no work left` on a slower disk).
"""

from __future__ import annotations

import asyncio

from abbench.runner import ExperimentRunner, StoreWriter, create_experiment
from abbench.store import open_store

from .conftest import make_cases


async def gold(task):
    """Answers with the gold label at once."""
    return task.case.expected


def test_workers_woken_by_the_writer_leave_no_work_undone(tmp_path):
    store = open_store(tmp_path / "store")
    ds = store.datasets.save("room-race", make_cases(6), label_set=["fast", "slow"])
    arm = {"agent": "python", "function": "tests.runner.test_writer_room_race:gold", "sees_gold": True}
    exp = create_experiment(
        {"name": "room-race", "dataset": ds.fingerprint, "rounds": 1, "concurrency": 8, "arms": {"a": arm}},
        store=store,
    )
    writer = StoreWriter(store, max_pending=1)  # behind after every run: every worker waits each time
    runner = ExperimentRunner(store, store.experiments.get(exp.id), writer=writer)
    try:
        status = asyncio.run(runner.run())
    finally:
        writer.close()
    assert status.status == "finished"
    states = store.query("SELECT state, COUNT(*) FROM runs WHERE experiment_id=? GROUP BY state", (exp.id,))
    assert dict(states) == {"pass": 6}

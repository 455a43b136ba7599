"""A child process for the writer crash test: runs an experiment with a small-bounded store writer.

    python -m tests.runner.writer_child STORE EXPERIMENT_ID MAX_PENDING MARKER

The agent (`instant`) answers at once and appends one line per execution to $CRASH_LOG (one
``os.write`` on an O_APPEND descriptor: whole lines, kept by the kernel through a SIGKILL). A thread
touches MARKER once the writer has held the workers back (it was behind), so the test kills the
process while the writer is loaded.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
from pathlib import Path

from abbench.runner import ExperimentRunner, StoreWriter
from abbench.store import open_store

_LOG_FD: int | None = None


async def instant(task):
    """Answers with the gold label at once; logs (case, round, arm) to $CRASH_LOG."""
    global _LOG_FD
    if _LOG_FD is None:
        _LOG_FD = os.open(os.environ["CRASH_LOG"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    os.write(_LOG_FD, f"{task.case.case_id}\t{task.round}\t{task.arm}\n".encode())
    return task.case.expected


def _watch(writer: StoreWriter, marker: Path, stop: threading.Event) -> None:
    """Touch `marker` once the writer has been behind (the workers waited for it)."""
    while not stop.wait(0.001):
        if writer.waits:
            marker.touch()
            return


def main(store_dir: str, experiment_id: str, max_pending: str, marker: str) -> None:
    """Run the experiment to its end with a writer bounded at `max_pending` changes."""
    store = open_store(store_dir)
    writer = StoreWriter(store, max_pending=int(max_pending))
    stop = threading.Event()
    threading.Thread(target=_watch, args=(writer, Path(marker), stop), daemon=True).start()
    runner = ExperimentRunner(store, store.experiments.get(int(experiment_id)), writer=writer)
    try:
        asyncio.run(runner.run())
    finally:
        stop.set()
        writer.close()


if __name__ == "__main__":
    main(*sys.argv[1:5])

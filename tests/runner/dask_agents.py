"""Agents and worker preloads for the Dask executor's tests (imported on the Dask workers too)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.blocking import pass_gate_sync


def pid_gated(task):
    """A synchronous agent that leaves its process id in ``<gate>/pids`` and waits at the arm's gate,
    then answers the gold label (the arm says ``sees_gold: true``), so a test can kill the worker holding it."""
    pids = Path(task.params["gate"]) / "pids"
    pids.mkdir(exist_ok=True)
    (pids / str(os.getpid())).touch()
    pass_gate_sync(task.params)
    return task.case.expected


def running_keys() -> list[str]:
    """Run on a worker (`Client.run`): the agent calls running there now."""
    from abbench.runner import _dask

    return sorted(_dask._RUNNING)

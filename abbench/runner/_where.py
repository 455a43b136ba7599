"""Where a runner pass executes its agents: here (the local executor) or on a Dask cluster.

Split from `abbench.runner._dask` so that a local run never imports the Dask executor: `dask_settings`
reads the caller's and the definition's choice, `run_coroutine` starts the pass (importing the executor
only when the pass goes to Dask).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from abbench.agents import Agent
from abbench.errors import UnknownName, UsageError
from abbench.store import Arm, Experiment

if TYPE_CHECKING:  # DaskSpec is a pydantic model: a local run never loads pydantic
    from abbench.runner._scheduler import ExperimentRunner, RunSummary
    from abbench.store import DaskSpec

EXECUTORS = ("local", "dask")
"""Where an experiment's agents can run."""


def dask_settings(
    experiment: Experiment,
    *,
    executor: str | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
) -> DaskSpec | None:
    """Where this pass runs the agents: None for the local executor, else the Dask cluster to use.

    What the caller gives (``--executor``, ``--scheduler``, ``--dask-local``) wins over the definition's
    ``executor:`` and ``dask:``; a scheduler or a LocalCluster size alone implies ``dask``. A definition
    that says ``executor: dask`` with no cluster gets a LocalCluster of one worker process per core.

    Raises:
        UsageError: an unknown executor, both a scheduler and a LocalCluster, or a cluster asked for
            with ``executor=local``.
    """
    if executor is not None and executor not in EXECUTORS:
        raise UnknownName("executor", executor, EXECUTORS)
    if scheduler is not None and dask_local is not None:
        raise UsageError("give --scheduler (an existing Dask cluster) or --dask-local N, not both")
    if executor == "local":
        if scheduler is not None or dask_local is not None:
            raise UsageError("--scheduler and --dask-local need --executor dask (or no --executor)")
        return None
    # settings, not spec: a local run never validates the definition (start-up stays fast)
    stored = experiment.settings.executor
    asked = executor or ("dask" if scheduler is not None or dask_local is not None else stored)
    if asked != "dask":
        return None
    spec = experiment.spec
    from abbench.store import DaskSpec  # pydantic: only an experiment that names a cluster

    base = spec.dask or DaskSpec.model_validate({})
    if scheduler is not None:
        return base.model_copy(update={"scheduler": scheduler, "local": None})
    if dask_local is not None:
        if dask_local < 1:
            raise UsageError(f"--dask-local needs at least one worker process, not {dask_local}")
        return base.model_copy(update={"local": dask_local, "scheduler": None})
    if base.scheduler is None and base.local is None:
        return base.model_copy(update={"local": os.cpu_count() or 1})
    return base


def run_coroutine(runner: ExperimentRunner, settings: DaskSpec | None) -> Awaitable[RunSummary]:
    """The pass to await: on the local executor, or on Dask (recording which, for `abbench status`)."""
    if settings is None:
        return _run_local(runner)
    from abbench.runner._dask import run_on_dask  # dask loads only for a cluster

    return run_on_dask(runner, settings)


async def _run_local(runner: ExperimentRunner) -> RunSummary:
    store, exp_id = runner.store, runner.exp.id

    def wrap(agents: dict[int, Agent], arms: dict[int, Arm]) -> dict[int, Agent]:
        if runner.exp.executor is not None and not runner.grade_only:
            store.experiments.set_executor(
                exp_id, None
            )  # this pass executes here, not where the last one did
        return agents

    runner.wrap_agents = wrap
    return await runner.run()


AgentWrapper = Callable[[dict[int, Agent], dict[int, Arm]], dict[int, Agent]]
"""What turns a pass's agents into the ones it calls (the Dask executor's proxies)."""

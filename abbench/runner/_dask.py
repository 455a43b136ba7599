"""The Dask executor: each run's agent call becomes a task on a Dask cluster; this process stays the single writer.

``executor: dask`` (``abbench run EXP --executor dask --scheduler tcp://HOST:8786`` or ``--dask-local N``)
changes one thing in a runner pass: the arms' agents are wrapped in `DaskAgent` proxies whose
``run(task)`` submits the agent call to the cluster and awaits its answer. Everything else stays in the
coordinator, the process that runs the experiment: the state machine, reconciliation, retries, budgets,
grading, the store writer and the progress observers. So nothing on a worker ever opens the store.

- **Snapshots travel by content.** A task names its skills by hash; the coordinator scatters each
  snapshot's bytes once (`SnapshotPayload`), a worker checks the hash and builds the snapshot folder once
  (or reads it from a shared path, ``dask: {shared_store: ...}``, and checks the hash there), and the
  adapter makes its fresh per-run workspace from it as on one machine.
- **Keys** reach workers only as the environment-variable names in the arm's settings: the worker's own
  environment supplies the values, and the task carries none.
- **Limits.** The coordinator is the only submitter, and each of its runner workers awaits one task at a
  time, so ``concurrency`` (and the loop-wide `PriorityLimiter`) bound the tasks in flight over the whole
  cluster with no Dask semaphore: one counter in one process, no lease to lose when a worker dies. The
  per-endpoint limits of model calls are the servers' own (429 with Retry-After, honoured on the worker).
- **Control.** Pause stops submitting (in-flight tasks finish and count); cancel and the per-run
  timeout cancel the future and ask the worker running it to stop (`stop_run`, sent with `Client.run`
  so it reaches the worker at once, not through its task queue).
- **Faults.** A worker that dies under a run fails that attempt with ``worker_lost`` (retryable): the
  attempt and the event are recorded, and the run is tried again as one more attempt. A result that
  reaches no live coordinator (it was killed) is discarded with its futures; on restart reconciliation
  turns the run into ``interrupted`` and it runs again, so no execution is recorded twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import shutil
import sys
import tempfile
import threading
import traceback
import uuid
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import abbench
from abbench.agents import Agent, PythonAgent, Spending, Task, make_agent
from abbench.errors import AgentError, ExperimentError
from abbench.snapshot import Snapshot, content_hash
from abbench.store import Arm, Store
from abbench.types import FailureType

if TYPE_CHECKING:  # DaskSpec is a pydantic model: a local run never loads pydantic
    from abbench.runner._scheduler import ExperimentRunner, RunSummary
    from abbench.store import DaskSpec

log = logging.getLogger(__name__)

WORKER_GRACE_S = 1.0
"""A worker gives up on an agent this long after the run's timeout: the coordinator's watchdog,
which records the timeout, acts first."""
WORKER_LOST = FailureType.WORKER_LOST
"""The failure type of an attempt whose Dask worker died under it (retryable)."""


# -- settings ----------------------------------------------------------------------------------------------


# -- what travels --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SnapshotPayload:
    """A skill snapshot as a worker receives it: its description and either its files' bytes or the
    folder a shared file system shows them in (the worker checks the hash either way)."""

    snapshot: Snapshot
    files: tuple[tuple[str, bytes], ...] | None
    shared: str | None = None


@dataclass(frozen=True)
class _Recipe:
    """An arm's adapter as a worker builds it (made once per arm and pass; ``name`` keys the worker's
    cache of built adapters, so a worker does not serialise the parameters again for every call)."""

    name: str
    agent: str
    model: str | None
    params: dict[str, Any]

    @classmethod
    def of(cls, arm: Arm) -> _Recipe:
        params = dict(arm.params or {})
        name = json.dumps([arm.agent, arm.model, params], sort_keys=True, default=str)
        return cls(name, arm.agent, arm.model, params)


@dataclass(frozen=True)
class _Call:
    """One agent call as a task: the arm's recipe, the task without its snapshots, their hashes.

    The recipe (an adapter name, a model and a few parameters) goes with each call: a scattered one
    would make every task depend on it at the scheduler, which costs more than its bytes.
    """

    key: str
    recipe: _Recipe
    task: Task
    skill: str | None
    skills: tuple[str, ...]


@dataclass(frozen=True)
class _Failure:
    """What an agent raised on a worker, in the terms the runner records (exceptions do not all pickle)."""

    message: str
    failure_type: str
    retryable: bool
    traceback: str
    raw_output: str | None = None
    transcript: tuple[dict[str, Any], ...] = ()
    retry_after: float | None = None

    @classmethod
    def of(cls, exc: BaseException) -> _Failure:
        """The failure `exc` stands for, classified as the runner classifies a local agent's."""
        tb = "".join(traceback.format_exception(exc))
        if isinstance(exc, AgentError):
            return cls(
                str(exc),
                exc.failure_type,
                bool(exc.retryable),
                tb,
                exc.raw_output,
                exc.transcript,
                exc.retry_after,
            )
        if isinstance(exc, TimeoutError):
            return cls(f"timed out: {exc or 'no answer in time'}", FailureType.TIMEOUT, True, tb)
        retryable = isinstance(exc, (OSError, ConnectionError))
        return cls(f"{type(exc).__name__}: {exc}", FailureType.AGENT_ERROR, retryable, tb)

    def error(self, worker: str, spent: Spending | None) -> AgentError:
        """The `AgentError` the coordinator raises for it (the traceback names the worker)."""
        err = AgentError(
            self.message,
            self.failure_type,
            self.retryable,
            raw_output=self.raw_output,
            transcript=self.transcript,
            retry_after=self.retry_after,
            spent=spent,
        )
        err.add_note(f"on Dask worker {worker}:\n{self.traceback}")
        return err


@dataclass(frozen=True)
class _Answer:
    """What a worker sends back: the output or the failure, what the attempt spent, where it ran."""

    output: Any
    failure: _Failure | None
    spending: Spending | None
    worker: str


# -- the worker's side -------------------------------------------------------------------------------------

_AGENTS: dict[str, Agent] = {}
_SNAPSHOTS: dict[str, Snapshot] = {}
_RUNNING: dict[str, tuple[asyncio.AbstractEventLoop, asyncio.Future[Any]]] = {}
_STOPPED: set[str] = set()
_LOCK = threading.Lock()


def worker_versions() -> dict[str, str]:
    """What a worker runs (checked against the coordinator's before any run starts)."""
    import distributed

    return {
        "abbench": abbench.__version__,
        "python": ".".join(map(str, sys.version_info[:2])),
        "distributed": distributed.__version__,
    }


def stop_run(key: str) -> bool:
    """Run on every worker by the coordinator (`Client.run`): stop the agent call `key` if it runs here,
    and refuse it if it has not started yet. True when it was running here."""
    with _LOCK:
        _STOPPED.add(key)
        running = _RUNNING.get(key)
    if running is None:
        return False
    loop, work = running
    loop.call_soon_threadsafe(work.cancel)
    return True


def _materialise(payload: SnapshotPayload) -> Snapshot:
    """The snapshot as a folder on this worker, its content checked against its hash (once per worker)."""
    want = payload.snapshot.hash
    with _LOCK:
        ready = _SNAPSHOTS.get(want)
    if ready is not None:
        return ready
    if payload.shared is not None:
        root = Path(payload.shared)
        files = [(f.path, (root / f.path).read_bytes()) for f in payload.snapshot.files]
    else:
        files = list(payload.files or ())
    got = content_hash(files)
    if got != want:
        where = payload.shared or "the bytes the coordinator sent"
        raise AgentError(
            f"skill snapshot {want[:12]}: the content in {where} hashes to {got[:12]}; the shared copy "
            "differs from the store's (copy the store's snapshots/ folder again)",
            FailureType.SNAPSHOT_MISMATCH,
            retryable=False,
        )
    if payload.shared is None:
        root = Path(tempfile.gettempdir()) / "abbench-dask-snapshots" / want
        if not root.is_dir():
            building = root.with_name(f"{want}.{uuid.uuid4().hex}")
            for path, data in files:
                target = building / path
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
            try:
                building.rename(root)
            except OSError:  # another worker process of this machine built it first
                shutil.rmtree(building, ignore_errors=True)
    snapshot = replace(payload.snapshot, root=root)
    with _LOCK:
        _SNAPSHOTS[want] = snapshot
    return snapshot


def _agent(call: _Call) -> Agent:
    """The arm's adapter on this worker, built once per worker and arm (keys read here, from names)."""
    recipe = call.recipe
    with _LOCK:
        agent = _AGENTS.get(recipe.name)
    if agent is None:
        agent = make_agent(recipe.agent, model=recipe.model, **recipe.params)
        if isinstance(agent, PythonAgent):
            agent.inline = True  # this task thread is the call's own: no hop to a pool thread and back
        with _LOCK:
            _AGENTS[recipe.name] = agent
    return agent


def run_on_worker(call: _Call, payloads: list[SnapshotPayload]) -> _Answer:
    """The task: build the run's snapshots and agent here, run the agent, send its answer back."""
    from distributed import get_worker

    try:
        worker = str(get_worker().address)
    except ValueError:  # called outside a worker (a test calling it directly)
        worker = "(no worker)"
    spending = call.task.spending
    try:
        snapshots = {p.snapshot.hash: _materialise(p) for p in payloads}
        task = replace(
            call.task,
            skill=snapshots[call.skill] if call.skill is not None else None,
            skills=tuple(snapshots[h] for h in call.skills),
        )
        agent = _agent(call)
    except Exception as exc:
        return _Answer(None, _Failure.of(exc), spending, worker)
    return _thread_loop().run_until_complete(_answer(agent, task, call.key, worker))


_LOOPS = threading.local()


def _thread_loop() -> asyncio.AbstractEventLoop:
    """This worker thread's event loop, made once: a new loop per task (``asyncio.run``) costs a
    selector, a self-pipe and a shutdown each time, which a 50 ms agent call pays in full."""
    loop: asyncio.AbstractEventLoop | None = getattr(_LOOPS, "loop", None)
    if loop is None or loop.is_closed():
        loop = _LOOPS.loop = asyncio.new_event_loop()
    return loop


async def _answer(agent: Agent, task: Task, key: str, worker: str) -> _Answer:
    """Run the agent under the run's timeout (plus `WORKER_GRACE_S`), stoppable by `stop_run`."""
    work = asyncio.ensure_future(agent.run(task))
    with _LOCK:
        if key in _STOPPED:
            work.cancel()
        _RUNNING[key] = (asyncio.get_running_loop(), work)
    try:
        timeout = None if task.timeout_s is None else task.timeout_s + WORKER_GRACE_S
        output = await asyncio.wait_for(work, timeout)
        return _Answer(output, None, task.spending, worker)
    except asyncio.CancelledError:
        stopped = _Failure(
            "cancelled while running (asked by the coordinator)", FailureType.CANCELLED, False, ""
        )
        return _Answer(None, stopped, task.spending, worker)
    except Exception as exc:
        return _Answer(None, _Failure.of(exc), task.spending, worker)
    finally:
        with _LOCK:
            _RUNNING.pop(key, None)
            _STOPPED.discard(key)


# -- the coordinator's side --------------------------------------------------------------------------------


class DaskAgent:
    """An arm's agent as the runner sees it under ``executor: dask``: ``run`` is a task on the cluster.

    Args:
        executor: The connected executor that submits the calls.
        arm: The stored arm (its adapter, model and settings are rebuilt on the worker).
        local: The adapter as built here (kept for what the runner reads besides ``run``).
    """

    def __init__(self, executor: DaskExecutor, arm: Arm, local: Agent):
        self.executor = executor
        self.arm = arm
        self.local = local
        self.name = local.name

    def __getattr__(self, name: str) -> Any:
        return getattr(self.local, name)

    async def run(self, task: Task) -> Any:
        """Submit the call to the cluster and wait for its answer (see `DaskExecutor.call`)."""
        return await self.executor.call(self.arm, task)


class DaskExecutor:
    """A connection to a Dask cluster (an existing scheduler, or a LocalCluster made here) for one pass.

    Args:
        settings: The cluster (`dask_settings`).
        store: The store (where snapshots are read from, and where the pass records where it executes).
    """

    def __init__(self, settings: DaskSpec, store: Store):
        self.settings = settings
        self.store = store
        self.client: Any = None
        self.cluster: Any = None
        self.workers: dict[str, dict[str, Any]] = {}
        self._payloads: dict[str, asyncio.Future[Any]] = {}
        self._recipes: dict[int, _Recipe] = {}
        self._stops: set[asyncio.Task[Any]] = set()
        self.lost = 0
        """Attempts whose worker died under them in this pass."""

    @property
    def dashboard(self) -> str | None:
        """The Dask dashboard's address (None without bokeh on the scheduler)."""
        try:
            link = self.client.dashboard_link if self.client is not None else None
        except Exception:  # no dashboard service
            return None
        return str(link) if link else None

    def where(self) -> dict[str, Any]:
        """Where the pass executes, as `abbench status` and the run widget show it."""
        return {
            "executor": "dask",
            "scheduler": str(self.client.scheduler.address) if self.client is not None else None,
            "local": self.settings.local,
            "dashboard": self.dashboard,
            "workers": len(self.workers),
            "worker_addresses": sorted(self.workers),
        }

    async def start(self) -> None:
        """Connect (or start the LocalCluster) and check the workers; nothing has run yet.

        Raises:
            ExperimentError: distributed is not installed, the scheduler cannot be reached or has no
                worker in time, or a worker's abbench, Python or distributed differs from this process's.
        """
        try:
            import distributed
        except ImportError:
            raise ExperimentError(
                "executor: dask needs Dask distributed: pip install 'abbench[dask]'"
            ) from None
        timeout = self.settings.connect_timeout_s
        client: Any = distributed.Client  # untyped
        try:
            if self.settings.local is not None:
                self.cluster = await _local_cluster(distributed, self.settings.local)
                self.client = await client(
                    self.cluster, asynchronous=True, timeout=timeout, direct_to_workers=True
                )
            else:
                address = self.settings.scheduler
                direct = _on_this_machine(address)
                self.client = await client(
                    address, asynchronous=True, timeout=timeout, direct_to_workers=direct
                )
            await self.client.wait_for_workers(1, timeout=timeout)
        except (OSError, TimeoutError) as exc:
            await self.close()
            where = self.settings.scheduler or f"a LocalCluster of {self.settings.local} processes"
            raise ExperimentError(
                f"cannot reach the Dask scheduler at {where} (or it has no worker) within {timeout:g} s: "
                f"{type(exc).__name__}: {exc}. Start one with `dask scheduler` and `dask worker "
                "tcp://HOST:8786`, check the address, or run with --dask-local N"
            ) from None
        await self._check_versions()

    async def _check_versions(self) -> None:
        """Refuse workers whose abbench, Python or distributed differs from this process's."""
        found = await self.client.run(worker_versions)
        here = worker_versions()
        wrong = {addr: v for addr, v in found.items() if v != here}
        if wrong:
            addr, theirs = next(iter(sorted(wrong.items())))
            await self.close()
            diff = ", ".join(f"{k} {theirs.get(k)} (here {v})" for k, v in here.items() if theirs.get(k) != v)
            raise ExperimentError(
                f"{len(wrong)} of {len(found)} Dask workers run a different version than this process: "
                f"{addr} has {diff}. Install the same abbench (pip install abbench[dask]=={abbench.__version__}) "
                "and Python on every worker, then start again"
            )
        self.workers = {addr: dict(v) for addr, v in found.items()}

    def wrap(self, agents: dict[int, Agent], arms: dict[int, Arm]) -> dict[int, Agent]:
        """Each arm's agent as a `DaskAgent`."""
        return {arm_id: DaskAgent(self, arms[arm_id], agent) for arm_id, agent in agents.items()}

    async def call(self, arm: Arm, task: Task) -> Any:
        """Run `task` with `arm`'s agent on a worker; its output, or the `AgentError` it failed with.

        A cancel (a person's, the timeout's, the runner stopping) cancels the future and asks the
        worker to stop; what the attempt spent on the worker is copied into ``task.spending``.
        """
        from distributed.scheduler import KilledWorker

        skills = {s.hash: s for s in (*task.skills, *((task.skill,) if task.skill else ()))}
        payloads = [await self._payload(s) for s in skills.values()] if skills else []
        key = f"abbench-run-{task.run_id}-{uuid.uuid4().hex[:12]}"
        recipe = self._recipes.get(arm.id)
        if recipe is None:
            recipe = self._recipes[arm.id] = _Recipe.of(arm)
        call = _Call(
            key,
            recipe,
            replace(task, skill=None, skills=(), cache=None),
            task.skill.hash if task.skill is not None else None,
            tuple(s.hash for s in task.skills),
        )
        future = self.client.submit(run_on_worker, call, payloads, key=key, pure=False)
        try:
            answer: _Answer = await future
        except asyncio.CancelledError:
            self._stop(key, future)
            raise
        except KilledWorker as exc:
            self.lost += 1
            raise AgentError(
                f"the Dask worker running it died ({exc}); the run is tried again on another worker",
                WORKER_LOST,
                retryable=True,
            ) from None
        _copy_spending(answer.spending, task.spending)
        if answer.failure is not None:
            raise answer.failure.error(answer.worker, task.spending)
        return answer.output

    async def _payload(self, snapshot: Snapshot) -> Any:
        """The scattered payload of `snapshot` (scattered once per pass; workers fetch it once)."""
        pending = self._payloads.get(snapshot.hash)
        if pending is None:
            pending = self._payloads[snapshot.hash] = asyncio.ensure_future(self._scatter(snapshot))
        elif pending.done():
            return pending.result()  # no shield (a future, a task) per call once it is there
        return await asyncio.shield(pending)

    async def _scatter(self, snapshot: Snapshot) -> Any:
        shared = self.settings.shared_store
        if shared is not None:
            folder = Path(shared) / Path(snapshot.root).resolve().relative_to(self.store.path.resolve())
            payload = SnapshotPayload(snapshot, None, str(folder))
        else:
            root = Path(snapshot.root)
            payload = SnapshotPayload(
                snapshot, tuple((f.path, (root / f.path).read_bytes()) for f in snapshot.files)
            )
        # on every worker at once: a task needing it then never waits for a copy from another worker
        return await self.client.scatter(payload, hash=False, broadcast=True)

    def _stop(self, key: str, future: Any) -> None:
        """Cancel the future and ask every worker to stop `key` (without waiting: the caller is cancelled)."""

        async def stop() -> None:
            with contextlib.suppress(Exception):
                await self.client.run(stop_run, key)
            with contextlib.suppress(Exception):
                await self.client.cancel([future])

        task = asyncio.ensure_future(stop())
        self._stops.add(task)
        task.add_done_callback(self._stops.discard)

    async def close(self) -> None:
        """Wait for the stops asked, then close the client (and the LocalCluster made here)."""
        if self._stops:
            await asyncio.gather(*self._stops, return_exceptions=True)
        self._payloads.clear()
        if self.client is not None:
            with contextlib.suppress(Exception):
                await self.client.close()
            self.client = None
        if self.cluster is not None:
            with contextlib.suppress(Exception):
                await self.cluster.close()
            self.cluster = None


LOCAL_CLUSTER_CONFIG: dict[str, Any] = {
    "distributed.scheduler.allowed-failures": 0,
    # Every periodic callback of the scheduler, its nannies and the workers takes the GIL of a process
    # that a python agent holds, and CPU from the cores the workers share with the coordinator (idle, a
    # LocalCluster of 2 used a tenth of a core at Dask's defaults, a fiftieth with these):
    "distributed.worker.profile.enabled": False,  # the sampling profiler: every 10 ms in each worker
    "distributed.admin.tick.interval": "500ms",  # the loops' blocked-loop probe: every 20 ms each
    "distributed.admin.system-monitor.interval": "2s",  # psutil reads for the dashboard: every 500 ms
    "distributed.worker.memory.monitor-interval": "1s",  # each nanny's memory check: every 100 ms
    "distributed.admin.system-monitor.gil.enabled": False,  # with gilknocker: a GIL probe every 1 ms
    # one submitter, one task per worker thread plus one queued: nothing to steal, only the polling
    "distributed.scheduler.work-stealing": False,
}
"""The Dask configuration of the LocalCluster that ``--dask-local`` makes (and `bench/bench_dask.py`)."""


async def _local_cluster(distributed: Any, n: int) -> Any:
    """A LocalCluster of `n` single-threaded worker processes (one run at a time each, no shared GIL).

    Its scheduler lives in this process, so it is told to give up on a task at the first worker that
    dies under it: the runner then records the lost attempt and tries the run again (a dying worker
    takes the run it executes, and the one it may hold ready next, with it). Dask's own logging is
    kept to errors: the CLI's progress bar is the run's output.
    """
    import dask

    logging.getLogger("distributed").setLevel(logging.ERROR)
    with dask.config.set(LOCAL_CLUSTER_CONFIG):
        return await distributed.LocalCluster(
            n_workers=n,
            threads_per_worker=1,
            processes=True,
            asynchronous=True,
            dashboard_address="127.0.0.1:0",
            host="127.0.0.1",
            silence_logs=logging.ERROR,
        )


def _on_this_machine(address: str | None) -> bool:
    """Whether a scheduler listens on this machine's loopback (its workers are then reachable from here).

    The coordinator then fetches each answer from the worker that holds it (`direct_to_workers`)
    instead of asking the scheduler to relay it: one hop less, and no scheduler CPU per answer. A remote
    scheduler keeps Dask's default, since its workers may be out of the coordinator's reach.
    """
    if not address:
        return False
    host = address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def _copy_spending(remote: Spending | None, local: Spending | None) -> None:
    """What the attempt spent on the worker, into the coordinator's `Spending` for the attempt."""
    if remote is None or local is None or remote is local:
        return
    for f in fields(Spending):
        setattr(local, f.name, getattr(remote, f.name))


async def run_on_dask(runner: ExperimentRunner, settings: DaskSpec) -> RunSummary:
    """Run `runner`'s pass with its agents on the Dask cluster `settings` names.

    The connection and the version check come first, so a cluster that cannot serve fails before any
    run starts (nothing is claimed or changed in the store); the cluster made for the pass is closed
    after it, however it ends.
    """
    executor = DaskExecutor(settings, runner.store)
    await executor.start()
    exp_id = runner.exp.id

    def wrap(agents: dict[int, Agent], arms: dict[int, Arm]) -> dict[int, Agent]:
        runner.store.experiments.set_executor(exp_id, executor.where())  # the pass holds the experiment now
        return executor.wrap(agents, arms)

    runner.wrap_agents = wrap
    runner.executor = executor
    try:
        return await runner.run()
    finally:
        await executor.close()

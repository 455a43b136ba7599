"""Running experiments from Python: in the foreground, in the background with a handle, or by signal from elsewhere."""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import threading
from collections.abc import Awaitable, Iterable, Sequence
from dataclasses import replace
from typing import Any

from abbench.errors import ExperimentError
from abbench.runner._budget import budget_notes
from abbench.runner._grading import advisory_names, build_graders
from abbench.runner._halt import halt_of, paused_unstarted
from abbench.runner._pause import PauseReason
from abbench.runner._progress import ArmProgress, Observer, Progress, by_count
from abbench.runner._queued import QueuedWork
from abbench.runner._retry import RetrySelection, select_retry
from abbench.runner._scheduler import ExperimentRunner, RunSummary
from abbench.runner._stopping import StopReason
from abbench.runner._where import dask_settings, run_coroutine
from abbench.store import Experiment, Store, StoreLike, open_store
from abbench.types import Control, ExperimentStatus, RunState

log = logging.getLogger(__name__)


class _LoopThread:
    """One background event loop per process, where experiments started with a handle run."""

    _lock = threading.Lock()
    _instance: _LoopThread | None = None

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="abbench-runner", daemon=True)
        self.thread.start()

    @classmethod
    def get(cls) -> _LoopThread:
        with cls._lock:
            if cls._instance is None or not cls._instance.thread.is_alive():
                cls._instance = cls()
            return cls._instance

    def submit(self, coro: Awaitable[RunSummary]) -> concurrent.futures.Future[RunSummary]:
        return asyncio.run_coroutine_threadsafe(_awaited(coro), self.loop)


async def _awaited(awaitable: Awaitable[RunSummary]) -> RunSummary:
    return await awaitable


class _Latest:
    """Keeps the last progress seen, for handles and status calls."""

    def __init__(self) -> None:
        self.progress: Progress | None = None

    def on_progress(self, progress: Progress) -> None:
        self.progress = progress


class RunHandle:
    """A running experiment started with `start_experiment`: watch it, pause, resume or cancel it.

    The run happens on a background thread, so a notebook kernel stays responsive while it goes.
    """

    def __init__(
        self,
        store: Store,
        experiment: Experiment,
        runner: ExperimentRunner,
        future: concurrent.futures.Future[RunSummary],
        latest: _Latest,
        loop: asyncio.AbstractEventLoop,
    ):
        self.store = store
        self.experiment = experiment
        self._runner = runner
        self._future = future
        self._latest = latest
        self._loop = loop

    @property
    def progress(self) -> Progress:
        """The latest progress (from the store when the run has not reported yet)."""
        return self._latest.progress or experiment_status(self.experiment.id, store=self.store)

    @property
    def where(self) -> dict[str, Any] | None:
        """Where the agents run: None on this process's own loop (or until the Dask cluster is
        connected), else the Dask executor's scheduler, dashboard link and workers."""
        executor = self._runner.executor
        return None if executor is None or executor.client is None else dict(executor.where())

    def done(self) -> bool:
        """Whether the run has ended (finished, cancelled or failed)."""
        return self._future.done()

    def wait(self, timeout: float | None = None) -> RunSummary:
        """Block until the run ends; returns its summary (re-raises what stopped it)."""
        return self._future.result(timeout)

    def exception(self) -> BaseException | None:
        """What stopped the run, if it ended with an error."""
        return self._future.exception() if self._future.done() else None

    def _signal(self, control: str) -> None:
        self.store.experiments.set_control(self.experiment.id, control)
        self._loop.call_soon_threadsafe(self._runner.control.wake.set)

    def pause(self) -> None:
        """Let running runs finish and start no new ones."""
        self._signal(Control.PAUSE)

    def resume(self) -> None:
        """Start new runs again after a pause."""
        self._signal(Control.RUN)

    def cancel(self) -> None:
        """Stop: runs in flight are cancelled and pending ones marked cancelled."""
        self._signal(Control.CANCEL)


def _runner(
    store: Store, ref: int | str | Experiment, observers: Iterable[Observer] | None, **options: Any
) -> ExperimentRunner:
    exp = store.experiments.get(ref)
    return ExperimentRunner(store, exp, observers=list(observers or []), **options)


def run_experiment(
    ref: int | str | Experiment,
    *,
    store: StoreLike = None,
    observers: Sequence[Observer] = (),
    concurrency: int | None = None,
    run_ids: list[int] | None = None,
    started_by: str | None = None,
    executor: str | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    regrade_ids: Sequence[int] | None = None,
) -> RunSummary:
    """Run an experiment's remaining work in the foreground and return when it is done.

    An interrupted experiment continues where it stopped: start-up reconciliation first turns the
    leftovers of a crash into actionable states (docs/ARCHITECTURE.md, "Run states").

    Args:
        ref: The experiment (id, name, or Experiment).
        store: The store.
        observers: Told about progress (e.g. a progress bar).
        concurrency: Overrides the experiment's concurrency.
        run_ids: Only these runs.
        started_by: Recorded on every run (default: the OS user).
        executor: Where the agents run: ``local`` (this process) or ``dask`` (default: the
            definition's ``executor:``, else local). This process stays the one that writes the store.
        scheduler: A running Dask scheduler's address (``tcp://HOST:8786``); implies ``dask``.
        dask_local: Start a LocalCluster of this many worker processes for the run; implies ``dask``.
        regrade_ids: Runs whose grading failed, to grade again from their stored executions in this
            pass (never executed): what `retry_runs` asks of grading failures.

    Raises:
        ExperimentError: the Dask cluster cannot be reached or runs other versions (before any run starts).
    """
    store = open_store(store)
    runner = _runner(
        store,
        ref,
        observers,
        concurrency=concurrency,
        run_ids=run_ids,
        started_by=started_by,
        regrade_ids=list(regrade_ids) if regrade_ids else None,
    )
    where = dask_settings(runner.exp, executor=executor, scheduler=scheduler, dask_local=dask_local)
    return _run_sync(runner, run_coroutine(runner, where))


def _run_sync(runner: ExperimentRunner, work: Awaitable[RunSummary] | None = None) -> RunSummary:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        in_loop = False
    else:
        in_loop = True
    if in_loop:
        # Called from inside a running loop (a notebook cell): run on the background loop and wait.
        return _LoopThread.get().submit(work or runner.run()).result()
    # Not inside the `except`: every error raised while the experiment runs would otherwise be
    # chained to "no running event loop", and open each stored traceback with it.
    return asyncio.run(_awaited(work or runner.run()))


async def arun_experiment(
    ref: int | str | Experiment,
    *,
    store: StoreLike = None,
    observers: Sequence[Observer] = (),
    executor: str | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    **options: Any,
) -> RunSummary:
    """`run_experiment` for callers already inside an event loop."""
    store = open_store(store)
    runner = _runner(store, ref, observers, **options)
    where = dask_settings(runner.exp, executor=executor, scheduler=scheduler, dask_local=dask_local)
    return await run_coroutine(runner, where)


def start_experiment(
    ref: int | str | Experiment,
    *,
    store: StoreLike = None,
    observers: Sequence[Observer] = (),
    concurrency: int | None = None,
    run_ids: list[int] | None = None,
    started_by: str | None = None,
    regrade: bool = False,
    executor: str | None = None,
    scheduler: str | None = None,
    dask_local: int | None = None,
    retry: RetrySelection | None = None,
) -> RunHandle:
    """Start running an experiment in the background; returns a handle to watch and control it.

    `executor`, `scheduler` and `dask_local` are `run_experiment`'s: with Dask, the handle's
    `RunHandle.where` says where it executes (the dashboard's address, the workers) once connected.
    `retry` (what `select_retry` chose) makes the pass `retry_runs`'s, off the caller's thread: its
    runs to re-run go back to pending, its grading failures are graded again, and nothing else runs.

    Raises:
        ExperimentError: with `retry`, the experiment is running elsewhere (nothing is reset).
    """
    store = open_store(store)
    latest = _Latest()
    regrade_ids: list[int] | None = None
    if retry is not None:
        exp = store.experiments.get(ref)
        _take_up(store, exp, retry)
        run_ids, regrade_ids = [*retry.rerun, *retry.regrade], list(retry.regrade) or None
    runner = _runner(
        store,
        ref,
        [latest, *observers],
        concurrency=concurrency,
        run_ids=run_ids,
        started_by=started_by,
        regrade=regrade,
        regrade_ids=regrade_ids,
    )
    where = dask_settings(runner.exp, executor=executor, scheduler=scheduler, dask_local=dask_local)
    background = _LoopThread.get()
    future = background.submit(run_coroutine(runner, where))
    return RunHandle(store, runner.exp, runner, future, latest, background.loop)


def pause_experiment(ref: int | str | Experiment, *, store: StoreLike = None) -> bool:
    """Ask the process running the experiment to pause (seen within a second). True if one is running.

    When none is, work a server accepted for it and has not started is never started on its own
    (its status says it was paused before it started).
    """
    store = open_store(store)
    exp = store.experiments.get(ref)
    if exp.status in (ExperimentStatus.FINISHED, ExperimentStatus.CANCELLED) and not exp.runner_alive:
        return False  # nothing to pause; a later re-run must not start paused
    store.experiments.set_control(exp.id, Control.PAUSE)
    alive = store.experiments.get(exp.id).runner_alive
    if not alive:
        store.experiments.set_status(exp.id, ExperimentStatus.PAUSED)
        store.experiments.leave_queued(
            exp.id, "paused before it started"
        )  # no server starts it on its own now
    return alive


def resume_experiment(
    ref: int | str | Experiment,
    *,
    store: StoreLike = None,
    budget: float | None = None,
    max_tokens: int | None = None,
    arm: str | None = None,
    run: bool = False,
    observers: Sequence[Observer] = (),
) -> bool | RunSummary:
    """Ask a paused experiment to go on, optionally with a higher budget.

    An experiment paused by its budget (``paused: budget reached``) has no process left running it:
    raise the limit that was reached (`budget`, `max_tokens`; `arm` for that arm's own budget) and
    run the rest, here with ``run=True`` or later with `run_experiment`.

    Args:
        ref: The experiment.
        store: The store.
        budget: The new cost limit (``budget.max_cost``).
        max_tokens: The new token limit (``budget.max_tokens``).
        arm: Raise this arm's budget instead of the experiment's.
        run: When no process is running the experiment, run the rest in the foreground and return
            its `RunSummary`.
        observers: Told about progress, with ``run=True``.

    Returns:
        True if a process is running it (it goes on there), else False — or, with ``run=True`` and
        no process running it, the summary of running the rest.

    Raises:
        ExperimentError: a limit is not a positive number, or `arm` names no arm.
    """
    store = open_store(store)
    exp = store.experiments.get(ref)
    if budget is not None or max_tokens is not None:
        set_budget(exp, max_cost=budget, max_tokens=max_tokens, arm=arm, store=store)
    store.experiments.set_control(exp.id, Control.RUN)
    alive = store.experiments.get(exp.id).runner_alive
    if alive or not run:
        return alive
    return run_experiment(exp.id, store=store, observers=observers)


def set_budget(
    ref: int | str | Experiment,
    *,
    max_cost: float | None = None,
    max_tokens: int | None = None,
    arm: str | None = None,
    store: StoreLike = None,
) -> Experiment:
    """Set (raise or lower) an experiment's budget, or one arm's; the limits not given stay as they were.

    A running experiment reads the new limits when it is resumed; the next run reads them at start.

    Raises:
        ExperimentError: a limit is not a positive number, or `arm` names no arm.
    """
    store = open_store(store)
    exp = store.experiments.get(ref)
    for name, value in (("budget", max_cost), ("max_tokens", max_tokens)):
        if value is not None and not value > 0:
            raise ExperimentError(f"{name} must be a positive number, not {value!r}")
    spec = exp.spec.as_json()
    if arm is not None:
        exp.arm(arm)  # an unknown arm is refused, with the arms listed
        arms = {k: dict(v) for k, v in (spec.get("arms") or {}).items()}
        target = arms.setdefault(arm, {})
    else:
        target = spec
    limits = dict(target.get("budget") or {})
    if max_cost is not None:
        limits["max_cost"] = float(max_cost)
    if max_tokens is not None:
        limits["max_tokens"] = int(max_tokens)
    target["budget"] = limits
    if arm is not None:
        spec["arms"] = arms
    store.experiments.set_spec(exp.id, spec)
    log.info("experiment %s: budget%s now %s", exp.ref, f" of arm {arm}" if arm else "", limits)
    return store.experiments.get(exp.id)


def cancel_experiment(ref: int | str | Experiment, *, store: StoreLike = None) -> int | None:
    """Cancel an experiment: its runner stops and pending runs become cancelled.

    Returns how many pending runs were cancelled here when no process is running it, else None (the
    running process cancels them within a second). Work a server accepted for it and has not started
    is never started then (its status says it was cancelled before it started).
    """
    store = open_store(store)
    exp = store.experiments.get(ref)
    store.experiments.set_control(exp.id, Control.CANCEL)
    if store.experiments.get(exp.id).runner_alive:
        return None
    n = store.runs.cancel_pending(exp.id)
    store.experiments.set_status(exp.id, ExperimentStatus.CANCELLED)
    store.experiments.leave_queued(exp.id, "cancelled before it started")
    return n


def retry_runs(
    ref: int | str | Experiment,
    *,
    store: StoreLike = None,
    failed: bool = False,
    execution_failed: bool = False,
    grading_failed: bool = False,
    cancelled: bool = False,
    disagreements: bool = False,
    cases: Sequence[str] | None = None,
    arms: Sequence[str] | None = None,
    observers: Sequence[Observer] = (),
    run: bool = True,
) -> RunSummary | int:
    """Retry selected runs: execution failures (and the other runs chosen) execute again, grading
    failures are graded again from their stored executions — the agent never runs again for a grader's
    failure. Old grades stay readable.

    Args:
        failed: Runs that failed: execution failures are re-run, grading failures re-graded (a wrong
            answer is not a failure: `disagreements` re-runs those).
        execution_failed: Runs whose execution failed (the agent gave no usable answer): re-run.
        grading_failed: Runs that no grader reached a verdict on: re-graded, never re-run.
        cancelled: Runs that were cancelled: re-run.
        disagreements: Runs whose prediction disagrees with the gold label: re-run.
        cases: Only these case ids (alone: every run of them is re-run).
        arms: Only these arms.
        run: Do it now (default); False only resets the runs to re-run and returns how many (grading
            failures are re-graded by `run_experiment`'s ``regrade_ids``).

    Returns:
        The summary of the pass, its `RunSummary.retried` saying what it re-ran and re-graded; with
        ``run=False``, how many runs were reset.

    Raises:
        ExperimentError: nothing was selected, or the experiment is running elsewhere.
    """
    store = open_store(store)
    exp = store.experiments.get(ref)
    if exp.runner_alive:
        raise ExperimentError(*exp.busy_message())  # said before a selection that may find nothing
    chosen = select_retry(
        exp,
        store=store,
        failed=failed,
        execution_failed=execution_failed,
        grading_failed=grading_failed,
        cancelled=cancelled,
        disagreements=disagreements,
        cases=cases,
        arms=arms,
    )
    _take_up(store, exp, chosen)
    if not run:
        return len(chosen.rerun)
    summary = run_experiment(
        exp.id,
        store=store,
        observers=observers,
        run_ids=[*chosen.rerun, *chosen.regrade],
        regrade_ids=chosen.regrade,
    )
    return replace(summary, retried=chosen)


def _take_up(store: Store, exp: Experiment, chosen: RetrySelection) -> None:
    """Reset `chosen`'s runs to re-run (its grading failures keep their executions), unless a
    process runs `exp` (as just read)."""
    if exp.runner_alive:
        raise ExperimentError(*exp.busy_message())
    log.info("experiment %s: %s", exp.ref, chosen.text)
    if chosen.rerun:
        store.runs.reset(list(chosen.rerun), "re-run requested")


def regrade_experiment(
    ref: int | str | Experiment,
    *,
    store: StoreLike = None,
    graders: Sequence[str] | None = None,
    failed: bool = False,
    cases: Sequence[str] | None = None,
    observers: Sequence[Observer] = (),
) -> RunSummary:
    """Grade an experiment's runs again from their stored executions (the agent never runs again).

    Every selected run is graded again, even when it already has a grade; the new grades are appended
    to the experiment's one batch.

    Args:
        graders: Only these graders (default: all of the experiment's).
        failed: Only runs that failed grading or were graded as failing.
        cases: Only these case ids.
    """
    store = open_store(store)
    exp = store.experiments.get(ref)
    ids = None
    if failed or cases:
        ids = store.runs.select(exp.id, failed=failed, cases=cases)
    runner = ExperimentRunner(
        store,
        exp,
        observers=list(observers),
        regrade=True,
        graders=list(graders) if graders else None,
        run_ids=ids,
    )
    return _run_sync(runner)


def _canonical(spec: Any) -> Any:
    return {"type": spec} if isinstance(spec, str) else spec


def add_graders(
    ref: int | str | Experiment, graders: Sequence[str | dict[str, Any]], *, store: StoreLike = None
) -> Experiment:
    """Add graders to an experiment's definition (its runs and grades stay as they are).

    A grader already there with the same definition is left alone, so adding twice is harmless.

    Raises:
        UsageError: a definition is invalid (unknown grader or option; the message lists the valid ones).
        ExperimentError: a grader of that name is already there with a different definition.
    """
    store = open_store(store)
    exp = store.experiments.get(ref)
    specs = list(exp.spec.graders)
    arms = [a.name for a in exp.arms]
    existing = {g.name: spec for g, spec in zip(build_graders(specs, exp.name, arms), specs, strict=True)}
    added = []
    for spec in graders:
        spec = dict(spec) if isinstance(spec, dict) else str(spec)
        (grader,) = build_graders([spec], exp.name, arms)
        if grader.name in existing:
            if _canonical(existing[grader.name]) == _canonical(spec):
                continue
            raise ExperimentError(
                f"experiment {exp.name!r} already has a grader named {grader.name!r} "
                f"({existing[grader.name]!r}); give the new one another `name:`, or re-grade the old one"
            )
        existing[grader.name] = spec
        specs.append(spec)
        added.append(grader.name)
    if added:
        store.experiments.set_spec(exp.id, exp.spec.model_copy(update={"graders": specs}))
        log.info("experiment %s: added graders %s", exp.ref, ", ".join(added))
    return store.experiments.get(exp.id)


def grade_experiment(
    ref: int | str | Experiment,
    *,
    graders: Sequence[str | dict[str, Any]] | None = None,
    store: StoreLike = None,
    observers: Sequence[Observer] = (),
    concurrency: int | None = None,
) -> RunSummary:
    """Grade an experiment's stored executions that its graders have not graded yet (never executes).

    Ordinary grading: a (run, grader) that already has a grade of the run's current execution is
    skipped, and a run with nothing new to grade keeps its state and grades untouched ("nothing new
    to grade" is not a failure). A grading failure is tried again only when it is retryable and the
    run's grade attempts are within the experiment's ``retries``; otherwise it stays failed until a
    re-grade (`regrade_experiment`). Pairwise graders judge the pairs they have not judged. Every
    grade is appended to the experiment's one batch.

    Args:
        ref: The experiment (id, name, or Experiment).
        graders: New grader definitions to add first (recorded in the experiment's definition), e.g.
            ``["read_skill", {"type": "llm_judge", "model": "gpt-4o-mini", "rubric": {...}}]``.
        store: The store.
        observers: Told about progress.
        concurrency: Overrides the experiment's concurrency.

    Raises:
        UsageError: a new grader definition is invalid.
        ExperimentError: a new grader's name is taken, or the experiment is running elsewhere.
    """
    store = open_store(store)
    exp = store.experiments.get(ref)
    if exp.runner_alive:
        raise ExperimentError(*exp.busy_message())
    if graders:
        exp = add_graders(exp, graders, store=store)
    runner = ExperimentRunner(store, exp, observers=list(observers), grade_only=True, concurrency=concurrency)
    return _run_sync(runner)


def experiment_status(ref: int | str | Experiment, *, store: StoreLike = None) -> Progress:
    """Where an experiment stands, read from the store (reading never starts or reconciles anything)."""
    store = open_store(store)
    with store.reading():  # the status and the counts from one state of the store
        exp = store.experiments.get(ref)
        counts = store.runs.counts(exp.id)
        error_runs = store.runs.errors(exp.id)
        # which graders made runs wrong: read only when a run is in fail (~1 s at 40,000 wrong runs)
        any_fail = any(c.get(RunState.FAIL) for c in counts.values())
        wrong_by = (
            store.runs.wrong_by(exp.id, advisory=advisory_names(exp.settings.graders), grouped=True)
            if any_fail
            else {}
        )
    status = exp.status
    reason = PauseReason.from_dict(exp.pause_reason) if status == ExperimentStatus.PAUSED else None
    if (
        status in (ExperimentStatus.RUNNING, ExperimentStatus.PAUSED)
        and not exp.runner_alive
        and reason is None
        and not paused_unstarted(exp)
    ):
        status = (
            ExperimentStatus.INTERRUPTED
        )  # a budget's pause outlives its runner: it waits for a higher budget
    errors: dict[str, dict[str, int]] = {}
    for arm, kind in error_runs.values():
        errors.setdefault(arm, {}).setdefault(kind, 0)
        errors[arm][kind] += 1
    arms = tuple(
        ArmProgress(a, c, errors.get(a, {}), by_count(wrong_by.get(a, {}))) for a, c in counts.items()
    )
    stopped = StopReason.from_dict(exp.stop_reason)
    return Progress(
        exp.name,
        exp.id,
        status,
        arms,
        pause_reason=reason,
        notes=budget_notes(exp, store),
        stop_reason=stopped,
        halt_reason=halt_of(exp) if status == ExperimentStatus.INTERRUPTED else None,
        queued=QueuedWork.from_dict(exp.queued),
    )

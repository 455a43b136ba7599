"""The scheduler: runs one experiment's runs on an event loop, with pause, resume, cancel, retries and grading.

Every state change goes through `_move`, which updates the in-memory progress and submits the change
to the store writer; nothing else writes run states while a run is in progress. The states and their
order are docs/ARCHITECTURE.md's ("Run states").
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import sys
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from abbench._result import Result
from abbench.agents import Agent, make_agent
from abbench.errors import ExperimentError
from abbench.runner._budget import RunBudget
from abbench.runner._cache import RunCaches
from abbench.runner._control import PassParts, RunControl, RunInputs, RunMoves, Tally
from abbench.runner._execution import (
    BACKOFF_BASE_S,
    BACKOFF_MAX_S,
    MAX_RETRY_AFTER_S,
    Execution,
    ExecutionOptions,
    backoff_s,
    loop_time,
    retry_wait_s,
)
from abbench.runner._grading import Grading, GradingOptions, GradingPlan, advisory_names, combine_verdicts
from abbench.runner._halt import HaltReason, halt_of, last_signal, process_origin, signals_asked
from abbench.runner._heartbeat import Heartbeat
from abbench.runner._limiter import loop_limiter
from abbench.runner._pause import PauseReason
from abbench.runner._progress import Observer, Progress, Tracker
from abbench.runner._stopping import Stopping, StopReason
from abbench.runner._work import PAGE_CASES, CasePages, WorkQueue
from abbench.runner._writer import StoreWriter
from abbench.store import (
    INTERRUPTED,
    Arm,
    Experiment,
    RunChange,
    RunRecord,
    Store,
    WorkItem,
    current_user,
    now_iso,
)
from abbench.types import AgentOutput, Control, ExperimentStatus, Halt, Phase, RunState

if TYPE_CHECKING:
    from abbench.runner._retry import RetrySelection

log = logging.getLogger(__name__)

__all__ = [
    "BACKOFF_BASE_S",
    "BACKOFF_MAX_S",
    "MAX_RETRY_AFTER_S",
    "ExperimentRunner",
    "RunSummary",
    "backoff_s",
    "combine_verdicts",
    "retry_wait_s",
]

POLL_S = 0.25
"""How often the runner looks for pause / resume / cancel asked by another process."""
_PENDING, _FAIL = str(RunState.PENDING), str(RunState.FAIL)
"""The states a work item executes from (the others are graded only; a failed one is re-graded
instead when a retry asked: `ExperimentRunner.regrade_ids`)."""


@dataclass(frozen=True)
class RunSummary(Result):
    """What one call to run an experiment did, and where the experiment stands after it.

    Attributes:
        experiment: The experiment's name.
        experiment_id: Its id.
        status: finished, cancelled, paused or interrupted.
        executed: Runs executed successfully in this call.
        graded: Runs graded in this call.
        failed: Runs that failed in this call (execution or grading: no verdict, not wrong answers).
        cancelled: Runs cancelled in this call.
        elapsed_s: Wall time of the call.
        progress: The final counts per arm and state.
        up_to_date: Runs that had nothing new to grade and were left as they were.
        pairs_judged: Pairs of runs a pairwise grader judged in this call.
        pairs_failed: Pairs whose pairwise grading failed in this call.
        execution_failed: Of `failed`, runs whose agent gave no usable answer.
        grading_failed: Of `failed`, runs that no grader reached a verdict on.
        pause_reason: Why the runner paused by itself (a budget reached), with the figures; None
            otherwise.
        notes: Warnings about the budget (a cost budget over runs of unknown cost).
        stop_reason: Where the stopping rule decided (``decided after 120 of 500 cases: better …``);
            None without ``stopping:``.
        retried: With `abbench.runner.retry_runs`, the runs it re-ran and the grading failures it
            re-graded; None otherwise.
    """

    experiment: str
    experiment_id: int
    status: str
    executed: int
    graded: int
    failed: int
    cancelled: int
    elapsed_s: float
    progress: Progress
    up_to_date: int = 0
    pairs_judged: int = 0
    pairs_failed: int = 0
    execution_failed: int = 0
    grading_failed: int = 0
    pause_reason: PauseReason | None = None
    notes: tuple[str, ...] = ()
    stop_reason: StopReason | None = None
    retried: RetrySelection | None = None

    _keys = """experiment experiment_id status executed graded failed cancelled elapsed_s throughput
        up_to_date pairs_judged pairs_failed execution_failed grading_failed pause_reason stop_reason notes
        progress retried"""

    @property
    def status_text(self) -> str:
        """The status, with the reason when the runner paused by itself (``paused: budget reached — …``)
        or the stopping rule decided (``finished: decided after 120 of 500 cases: better …``)."""
        if self.pause_reason is not None:
            return f"{self.status}: {self.pause_reason.text}"
        return f"{self.status}: {self.stop_reason.text}" if self.stop_reason is not None else self.status

    @property
    def retried_text(self) -> str | None:
        """What a retry did (None: not a retry): ``re-ran 5 runs`` when it ran to the end; when it did not
        (paused, cancelled, interrupted, or the stopping rule left runs unneeded), what it set out to do
        and how far it got: ``re-running 5 runs, but the experiment was cancelled part-way (3 ran, 2
        cancelled)``. A run counts once however it ended (a grading failure was executed too)."""
        retried = self.retried
        if retried is None:
            return None
        finished = self.status == ExperimentStatus.FINISHED
        if finished and not self.cancelled:
            return retried.done_text
        ran = self.executed + self.execution_failed
        if finished:
            return f"{retried.text}, but the stopping rule decided part-way ({ran:,} ran, {self.cancelled:,} not needed)"
        return f"{retried.text}, but the experiment was {self.status} part-way ({ran:,} ran, {self.cancelled:,} cancelled)"

    @property
    def throughput(self) -> float:
        """Runs finished per second in this call."""
        return (self.graded + self.failed + self.cancelled) / self.elapsed_s if self.elapsed_s else 0.0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view (`_keys`): times rounded, a retry as the counts it re-ran and re-graded."""
        retried = self.retried
        return Result.as_dict(self) | {
            "elapsed_s": round(self.elapsed_s, 3),
            "throughput": round(self.throughput, 1),
            "retried": retried and {"rerun": len(retried.rerun), "regraded": len(retried.regrade)},
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RunSummary:
        """The summary `as_dict` wrote (a server's answer); a retry's selection, written as counts, is not
        read back (`retried` None)."""
        read: dict[str, Any] = {f.name: data[f.name] for f in fields(cls) if f.name in data}
        read.update(progress=Progress.from_dict(data["progress"]), notes=tuple(read.get("notes") or ()),
                    pause_reason=PauseReason.from_dict(data.get("pause_reason")),
                    stop_reason=StopReason.from_dict(data.get("stop_reason")), retried=None)  # fmt: skip
        return cls(**read)


class ExperimentRunner:
    """Runs the work of one experiment on the current event loop.

    Three kinds of pass: running (execute what is pending or interrupted, grade what is executed),
    grading only (``grade_only``: grade stored executions that some grader has not graded yet,
    never executing), and re-grading (``regrade``: grade the selected stored executions again,
    never executing). The work is done by collaborators made for the pass and handed what they use:
    `Execution` (one run's attempts), `Grading` (grades and pairs), `RunBudget` and `RunCaches`.

    Args:
        store: The open store.
        experiment: The experiment to run.
        observers: Told about progress.
        run_ids: Only these runs (default: every run with work left).
        regrade: Grade the selected runs again even when they already have grades, without executing.
        grade_only: Grade stored executions that still lack a grade, without executing.
        graders: Only these grader names grade (the run's verdict still combines every grader's latest).
        concurrency: Overrides the experiment's concurrency.
        started_by: Recorded on every run (default: the OS user).
        writer: A writer to use (default: one made and closed by this runner).
        regrade_ids: Runs whose grading failed, graded again from their stored executions in this
            pass (never executed again): a retry of grading failures beside the runs it executes.

    Attributes:
        sleep: Awaited with the wait in seconds between two attempts of a run (`asyncio.sleep`);
            replace it to watch the waits asked for without spending them.
    """

    sleep: Callable[[float], Awaitable[Any]] = staticmethod(asyncio.sleep)
    wrap_agents: Callable[[dict[int, Agent], dict[int, Arm]], dict[int, Agent]] | None = None
    """Turns the arms' agents into the ones the pass calls, once the pass holds the experiment (the
    Dask executor's proxies: `abbench.runner._dask`)."""
    executor: Any = None
    """The executor the agents run on (a `DaskExecutor`; None: this process's own event loop)."""
    page_runs: int = 10_000
    """A pass with more runs to do than this reads its work items from the store a page at a time
    (`store.runs.work_pages`) instead of holding them all (a pass of selected runs, a grading pass and one
    under a stopping rule hold theirs)."""

    def __init__(
        self,
        store: Store,
        experiment: Experiment,
        *,
        observers: list[Observer] | None = None,
        run_ids: list[int] | None = None,
        regrade: bool = False,
        grade_only: bool = False,
        graders: list[str] | None = None,
        concurrency: int | None = None,
        started_by: str | None = None,
        writer: StoreWriter | None = None,
        regrade_ids: list[int] | None = None,
    ):
        self.store = store
        self.exp = experiment
        spec = experiment.settings  # read without pydantic: start-up stays fast
        self.concurrency = int(concurrency or spec.concurrency)
        self.timeout_s = float(spec.timeout_s)
        self.retries = int(spec.retries)
        self.priority = int(experiment.priority)
        self.seed = int(spec.seed)
        self.started_by = started_by or current_user()
        self.run_ids = run_ids
        self.regrade_ids = frozenset(regrade_ids or ())
        self.regrade = regrade
        self.grade_only = grade_only or regrade
        self.only_graders = set(graders) if graders else None
        self.observers = list(observers or [])
        self._own_writer = writer is None
        self.writer = writer
        self.control = RunControl()
        self.tally = Tally()
        self.budget = RunBudget(
            store, experiment, self.control, concurrency=self.concurrency, grade_only=self.grade_only
        )
        self.tracker: Tracker | None = None
        self._stored_outputs: dict[int, RunRecord] = {}
        self._execution: Execution | None = None
        self._moves: RunMoves | None = None
        self.stopping: Stopping | None = None
        self._signals_before = 0
        self._prior_halt: dict[str, Any] | None = None

    # -- the run ---------------------------------------------------------------------------------------

    async def run(self) -> RunSummary:
        """Do the work; returns when everything selected is done, or the experiment is cancelled."""
        store, exp = self.store, self.exp
        # A pass that executes takes the experiment over (who runs it, no halt yet); a grading pass
        # leaves the last execution's halt, which still says why its runs are unfinished.
        self._signals_before = signals_asked()
        prior = halt_of(exp)  # as read when this runner was made, just before: recorded, or killed
        self._prior_halt = exp.halt if prior is None else prior.as_dict()
        origin = None if self.grade_only else process_origin()
        if not store.experiments.claim_runner(exp.id, origin=origin, takes_queued=True):
            raise ExperimentError(*store.experiments.get(exp.id).busy_message())
        started = time.monotonic()
        heartbeat = Heartbeat(store, exp.id).start()
        quiet = contextlib.ExitStack()
        try:
            quiet.enter_context(_tuned_interpreter())
            # before anything is paid for: a store that cannot record what the agents do (a full
            # disk) is refused here, not after the first runs were paid and lost
            store.check_room()
            prior_status = self._reconcile()
            self._prepare()
            queue, count = self._select_items()
            self.budget.start()
            store.experiments.set_pause_reason(exp.id, None)
            if self.stopping is not None:
                store.experiments.set_stop_reason(exp.id, None)
            store.experiments.set_control(exp.id, Control.RUN)
            store.experiments.set_status(exp.id, ExperimentStatus.RUNNING)
            if self.writer is None:
                self.writer = StoreWriter(store)
            self.tracker = Tracker(
                exp.name,
                exp.id,
                store.runs.counts(exp.id),
                {a.id: a.name for a in exp.arms},
                self.observers,
                errors=store.runs.errors(exp.id),
            )
            self.tracker.set_wrong(store.runs.wrong_by(exp.id, advisory=advisory_names(exp.settings.graders)))
            self.tracker.maybe_emit(force=True)
            gc.freeze()  # what the pass loaded lives as long as it: not walked by the collector either
            status = await self._work(queue, count, self.writer, self.tracker)
        except BaseException as exc:
            await self._interrupt(exc)
            raise
        finally:
            quiet.close()
            heartbeat.stop()
            try:
                if self.writer is not None and self._own_writer:
                    self.writer.close()
            finally:
                # even when the writer failed: a claim left behind would block the next run
                store.experiments.release_runner(exp.id)
        return self._finish(status, prior_status, self.tracker, time.monotonic() - started)

    def _reconcile(self) -> str:
        """Turn what a crashed runner left into actionable states; the experiment's status before."""
        reconciled = self.store.runs.reconcile(self.exp.id)
        if reconciled.interrupted or reconciled.waiting_for_grading:
            log.info(
                "experiment %s: %d interrupted runs will run again, %d wait for grading",
                self.exp.name,
                reconciled.interrupted,
                reconciled.waiting_for_grading,
            )
        return self.store.experiments.get(self.exp.id).status

    def _halt(self, exc: BaseException) -> HaltReason:
        """Why this pass is stopping before its work is done: the signal this process received, a
        cancel from outside (Ctrl-C), or the error."""
        if signals_asked() > self._signals_before:
            asked = last_signal()
            assert asked is not None
            return HaltReason.here(asked[1], signum=asked[0])
        if isinstance(exc, (asyncio.CancelledError, KeyboardInterrupt)):
            return HaltReason.here(Halt.STOPPED)
        return HaltReason.here(Halt.ERROR, error=str(exc) or type(exc).__name__)

    def _finish(self, status: str, prior_status: str, tracker: Tracker, elapsed_s: float) -> RunSummary:
        """Record where the experiment stands after the work, and say what this pass did."""
        store, exp = self.store, self.exp
        if status == ExperimentStatus.FINISHED and self.grade_only:
            status = self._status_after_grading(prior_status)
        counts = store.runs.counts(exp.id)
        paused_by = self.budget.pause_reason(counts) if status == ExperimentStatus.FINISHED else None
        some_runs = self.run_ids is not None and not self.grade_only
        if paused_by is None and status == ExperimentStatus.FINISHED and some_runs and _work_left(counts):
            # some runs only (a pilot, a re-run): the experiment is finished only when nothing is left
            status = (
                prior_status
                if prior_status not in (ExperimentStatus.RUNNING, ExperimentStatus.PAUSED)
                else ExperimentStatus.INTERRUPTED
            )
        stopped_by = self.stopping.reason if self.stopping is not None else None
        if stopped_by is not None:
            paused_by = None  # the runs a budget held back are not needed: the rule decided
            store.experiments.set_stop_reason(exp.id, stopped_by.as_dict())
            log.info("experiment %s: %s", exp.name, stopped_by.text)
        if paused_by is not None:
            status = ExperimentStatus.PAUSED
            store.experiments.set_pause_reason(exp.id, paused_by.as_dict())
            log.warning("experiment %s paused: %s", exp.name, paused_by.text)
        if status == ExperimentStatus.INTERRUPTED and not self.grade_only:
            # some runs only, the rest still unfinished: why they are is what stopped them before
            store.experiments.set_halt(exp.id, self._prior_halt)
        store.experiments.set_status(exp.id, status)
        tracker.status = status
        tracker.pause_reason = paused_by
        tracker.stop_reason = stopped_by
        tracker.notes = self.budget.warnings()
        tracker.counts = counts
        tracker.set_errors(store.runs.errors(exp.id))
        tracker.set_wrong(store.runs.wrong_by(exp.id, advisory=advisory_names(exp.settings.graders)))
        tracker.maybe_emit(force=True)
        return RunSummary(
            experiment=exp.name,
            experiment_id=exp.id,
            status=status,
            elapsed_s=elapsed_s,
            progress=tracker.snapshot(),
            pause_reason=paused_by,
            notes=tracker.notes,
            stop_reason=stopped_by,
            **asdict(self.tally),
        )

    def _status_after_grading(self, prior: str) -> str:
        """A grading pass finishes the experiment only when no run has execution work left."""
        if _work_left(self.store.runs.counts(self.exp.id)) or prior == ExperimentStatus.CANCELLED:
            return (
                prior
                if prior not in (ExperimentStatus.RUNNING, ExperimentStatus.PAUSED)
                else ExperimentStatus.INTERRUPTED
            )
        return ExperimentStatus.FINISHED

    def _prepare(self) -> None:
        """Read what the runs are made of, and set up the graders and the response cache."""
        store, exp = self.store, self.exp
        dataset = store.datasets.get(exp.dataset_id)
        self.inputs = RunInputs(
            cases=CasePages(store, exp.dataset_id),
            skills={
                a.id: store.snapshots.get(a.snapshot) if a.snapshot and not a.offered else None
                for a in exp.arms
            },
            label_map=dict(dataset.label_map or {}),
            label_set=tuple(dataset.label_set) if dataset.label_set else None,
            arms={a.id: a for a in exp.arms},
            agents={a.id: make_agent(a.agent, model=a.model, **(a.params or {})) for a in exp.arms},
            offered={a.id: tuple(store.snapshots.get(h) for h in a.snapshots) for a in exp.arms if a.offered},
        )
        if self.wrap_agents is not None:
            self.inputs.agents.update(self.wrap_agents(self.inputs.agents, self.inputs.arms))
        self.plan = GradingPlan(store, exp, only=self.only_graders, retries=self.retries)
        self.caches = RunCaches(store, exp, lambda: self.writer)

    def _select_items(self) -> tuple[WorkQueue, int]:
        """The work of this pass in the order it is done, and how many items it holds."""
        store, exp = self.store, self.exp
        if self.grade_only:
            items = store.runs.work_items(
                exp.id, (RunState.EXECUTED, RunState.PASS, RunState.FAIL), run_ids=self.run_ids
            )
            # only runs whose execution succeeded can be graded (again)
            failed_exec = set(store.runs.select(exp.id, execution_failed=True))
            items = [i for i in items if i.run_id not in failed_exec]
            self._stored_outputs = self.plan.load_outputs(items)
            if self.regrade:
                self.plan.preload_latest()  # graders not re-graded still count in the verdict
            else:
                items = self.plan.select(items, self._stored_outputs, self.tally)
            return WorkQueue([items]), len(items)
        stopping = self.exp.settings.stopping is not None and self.run_ids is None
        if self.run_ids is None and not stopping and not self.regrade_ids:
            # counted only as far as the pass asks: whether to page, how many workers to start
            count = store.runs.count_work(exp.id, at_most=max(self.page_runs, self.concurrency) + 1)
            if count > self.page_runs:
                return WorkQueue(store.runs.work_pages(exp.id, page_cases=PAGE_CASES), self._took), count
        items = store.runs.work_items(exp.id, (RunState.PENDING, RunState.EXECUTED), run_ids=self.run_ids)
        items += [
            i
            for i in store.runs.interrupted_items(exp.id)
            if self.run_ids is None or i.run_id in self.run_ids
        ]
        if self.regrade_ids:  # grading failures to grade again: their execution is kept
            again = store.runs.work_items(exp.id, (RunState.FAIL,), run_ids=list(self.regrade_ids))
            seen = {i.run_id for i in items}
            items += [i for i in again if i.run_id not in seen]
        items.sort(key=lambda i: (i.round, i.case_idx, i.arm_id))
        if stopping:
            # sequential stopping: a seeded case order, each case's arms and rounds together
            self.stopping = Stopping(store, exp, items, self._stopped)
            items = self.stopping.ordered(items)
            self.stopping.advance()  # what earlier passes finished may decide already
        return WorkQueue([items], self._took), len(items)

    def _took(self, page: list[WorkItem]) -> None:
        """A page of work taken in: read the stored outputs its executed runs are graded on."""
        executed = [i for i in page if i.state == RunState.EXECUTED or i.run_id in self.regrade_ids]
        if executed:
            self._stored_outputs.update(self.plan.load_outputs(executed))

    def _forget(self, run_id: int) -> None:
        """A run is through this pass: drop what the pass kept about it (its memory stays flat in N)."""
        if self._moves is not None:
            self._moves.states.pop(run_id, None)
        self.plan.attempts.pop(run_id, None)
        self._stored_outputs.pop(run_id, None)

    def _collaborators(self, writer: StoreWriter, tracker: Tracker) -> tuple[Execution, Grading]:
        """The execution and grading halves of this pass, handed what they use."""
        moves = self._moves = RunMoves(writer, tracker)
        if self.stopping is not None:
            moves.on_finished = self.stopping.finished
        parts = PassParts(self.inputs, writer, moves, self.control, self.tally, self.caches)
        execution = Execution(
            parts,
            store_path=self.store.path,
            budget=self.budget,
            attempts=self.plan.attempts,
            options=ExecutionOptions(self.timeout_s, self.retries, self.started_by, self.sleep),
        )
        grading = Grading(
            self.plan,
            parts,
            store=self.store,
            exp=self.exp,
            options=GradingOptions(
                retries=self.retries,
                regrade=self.regrade,
                run_ids=self.run_ids,
                priority=self.priority,
                concurrency=self.concurrency,
                seed=self.seed,
                backoff=backoff_s,
                regrade_ids=self.regrade_ids,
            ),
        )
        return execution, grading

    async def _work(self, queue: WorkQueue, count: int, writer: StoreWriter, tracker: Tracker) -> str:
        execution, grading = self._collaborators(writer, tracker)
        self._execution, moves = execution, grading.parts.moves
        poller = asyncio.create_task(self._poll(writer, tracker), name=f"abbench-poll-{self.exp.id}")
        watchdog = asyncio.create_task(self._watchdog(), name=f"abbench-watchdog-{self.exp.id}")
        workers = [
            asyncio.create_task(
                self._worker(queue, execution, grading), name=f"abbench-worker-{self.exp.id}-{n}"
            )
            for n in range(min(self.concurrency, max(1, count)))
        ]
        try:
            await asyncio.gather(*workers)
            if self.plan.pairwise and not self.control.cancelling:
                await grading.grade_pairs()
        finally:
            poller.cancel()
            watchdog.cancel()
            for w in workers:
                w.cancel()
        if self.control.halted is not None:
            writer.flush()  # the runs in flight are recorded; those not started stay pending
            raise self.control.halted
        if self.control.stopped and not self.control.cancelling:
            self._skip_left([*queue.drain(), *self.budget.over_budget], moves)
        if self.control.cancelling:
            self._cancel_left(queue, moves)
            writer.flush()
            self.store.runs.cancel_pending(self.exp.id)
            return ExperimentStatus.CANCELLED
        writer.flush()
        return ExperimentStatus.FINISHED

    async def _worker(self, queue: WorkQueue, execution: Execution, grading: Grading) -> None:
        limiter = loop_limiter()
        control, budget = self.control, self.budget
        writer = execution.parts.writer
        worker = asyncio.current_task()  # asked once: the runs this worker does are awaited in it
        assert worker is not None
        while queue and not control.cancelling and not control.stopped:
            if control.paused:
                await control.resume.wait()
                continue
            if self.stopping is not None and not self._may_start(queue.peek()):
                # sequential stopping: wait for the finished prefix to catch up (or a cancel)
                await control.wait_unless_cancelled(asyncio.ensure_future(self.stopping.moved.wait()))
                continue
            if writer.behind:  # back-pressure: the store writer commits before more work starts
                await writer.room()
                if writer.room_error is not None:  # its store is nearly full: record, start nothing
                    control.halt(writer.room_error)
                    break
                continue  # while it waited, other workers may have taken what was left
            item = queue.popleft()
            executes = self._executes(item)
            # without a budget `admit` always says yes: not awaiting it saves a coroutine per run
            if executes and budget.guard is not None and not await budget.admit(item):
                budget.over_budget.append(item)  # left pending: a resume with a higher budget runs it
                continue
            if not limiter.try_acquire():
                await limiter.acquire(self.priority)
            try:
                await self._process(item, execution, grading, worker, executes)
            finally:
                limiter.release()
                if executes:
                    budget.release(item)
            self._forget(item.run_id)  # not when it raised: an interrupted pass records its runs in flight

    async def _process(
        self,
        item: WorkItem,
        execution: Execution,
        grading: Grading,
        worker: asyncio.Task[Any],
        executes: bool,
    ) -> None:
        output: AgentOutput | None = None
        record = self._stored_outputs.get(item.run_id)
        if executes:
            output = await execution.execute(item, worker)
            if output is None:
                return
        elif record is not None:
            output = record.output
        if output is None:
            return
        if not self.plan.grades_anything:
            return  # an experiment without graders leaves its runs executed
        await grading.grade(item, output, record, worker)

    def _executes(self, item: WorkItem) -> bool:
        """Whether this pass runs `item`'s agent (else it grades its stored execution)."""
        if self.grade_only:
            return False
        state = item.state
        return state == _PENDING or (state == _FAIL and item.run_id not in self.regrade_ids)

    # -- control, shutdown -----------------------------------------------------------------------------

    async def _watchdog(self) -> None:
        """Cancel agents that overrun the per-run timeout (checked every 50 ms at most)."""
        interval = min(0.05, self.timeout_s / 4)
        control = self.control
        while True:
            await asyncio.sleep(interval)
            control.time_out(loop_time())

    async def _poll(self, writer: StoreWriter, tracker: Tracker) -> None:
        # The heartbeat is not written here but by `Heartbeat`'s thread: a blocked loop must not
        # make this runner look dead to other processes.
        control = self.control
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(control.wake.wait(), POLL_S)
            control.wake.clear()
            asked = self.store.experiments.get_control(self.exp.id)
            if asked == Control.CANCEL and not control.cancelling:
                log.info("experiment %s: cancel asked", self.exp.name)
                control.cancel_all()
                tracker.status = Phase.CANCELLING
            elif asked == Control.PAUSE and not control.paused:
                log.info("experiment %s: pause asked; running runs finish, no new ones start", self.exp.name)
                control.paused = True
                control.resume.clear()
                tracker.status = ExperimentStatus.PAUSED
                writer.experiment(self.exp.id, status=ExperimentStatus.PAUSED, updated_at=now_iso())
            elif asked == Control.RUN and control.paused:
                log.info("experiment %s: resumed", self.exp.name)
                control.paused = False
                self.budget.reload()
                control.resume.set()
                tracker.status = ExperimentStatus.RUNNING
                writer.experiment(self.exp.id, status=ExperimentStatus.RUNNING, updated_at=now_iso())
            tracker.maybe_emit(force=True)

    def _cancel_left(self, queue: WorkQueue, moves: RunMoves) -> None:
        for item in queue.drain():
            if moves.state(item) == RunState.PENDING:
                fields: RunChange = {"finished_at": now_iso()}
                moves.move(item, RunState.CANCELLED, fields, "cancelled before it started")
                self.tally.cancelled += 1

    def _may_start(self, item: WorkItem) -> bool:
        """Whether the stopping rule lets `item` start now (always without one, or with nothing in flight)."""
        stopping, control = self.stopping, self.control
        if stopping is None or stopping.may_start(item) or self.budget.over_budget:
            return True
        return not control.in_flight

    def _stopped(self) -> None:
        """The stopping rule decided: start no new run, and tell the views where it decided."""
        self.control.stop()
        if self.stopping is not None:
            self.stopping.wake()
        if self.tracker is not None and self.stopping is not None:
            self.tracker.stop_reason = self.stopping.reason
            self.tracker.maybe_emit(force=True)

    def _skip_left(self, left: list[WorkItem], moves: RunMoves) -> None:
        """The stopping rule decided: the runs not started are not needed (cancelled, not failed)."""
        stopping = self.stopping
        reason = stopping.reason if stopping is not None else None
        why = f"not run: {reason.text}" if reason is not None else "not run: the stopping rule decided"
        skipped: dict[str, int] = {}
        for item in left:
            if moves.state(item) == RunState.PENDING:
                moves.move(item, RunState.CANCELLED, {"finished_at": now_iso(), "error": why}, why)
                self.tally.cancelled += 1
                name = self.inputs.arms[item.arm_id].name
                skipped[name] = skipped.get(name, 0) + 1
        self.budget.over_budget.clear()
        if stopping is not None and reason is not None:
            # A pass after the one that decided finds those runs cancelled already: they still were not needed.
            before = StopReason.from_dict(self.exp.stop_reason)
            if before is not None and (before.cases, before.seed) == (reason.cases, reason.seed):
                for name, n in before.skipped.items():
                    skipped[name] = skipped.get(name, 0) + n
            stopping.reason = replace(reason, skipped=skipped)

    async def _interrupt(self, exc: BaseException) -> None:
        """The runner is stopping abnormally: record runs in flight as interrupted, commit what we have,
        and why it stopped (the experiment's halt).

        Never raises: the error that stopped the runner is the one to report. When the writer itself
        failed (a full disk, a read-only store), what it could not commit is left to start-up
        reconciliation, which turns it into actionable states on the next run.
        """
        self.control.stop_agents()
        if self.writer is None or self.tracker is None:
            # Stopped before any run started: a refusal (a cluster out of reach) leaves the experiment
            # as it was, its last halt included; a signal or an error says why all the same.
            refused = isinstance(exc, ExperimentError)
            with contextlib.suppress(Exception):
                self.store.experiments.set_halt(
                    self.exp.id, self._prior_halt if refused else self._halt(exc).as_dict()
                )
                if not (refused or self.grade_only):  # it was to run, and stopped: say so everywhere
                    self.store.experiments.set_status(self.exp.id, ExperimentStatus.INTERRUPTED)
            return
        try:
            if self.writer.error is None:
                if self._execution is not None:
                    self._execution.record_interrupted()
                self._interrupt_states(self.writer)
                self.writer.flush()
            self.store.experiments.set_status(self.exp.id, ExperimentStatus.INTERRUPTED)
            self.store.experiments.set_halt(self.exp.id, self._halt(exc).as_dict())
        except Exception as error:  # the original error matters more
            log.warning("experiment %s: could not record the interruption (%s)", self.exp.name, error)

    def _interrupt_states(self, writer: StoreWriter) -> None:
        """Runs running go to fail (interrupted, retryable); runs being graded wait for grading again."""
        states = self._moves.states if self._moves is not None else {}
        for run_id, state in list(states.items()):
            if state == RunState.RUNNING:
                writer.transition(
                    run_id,
                    RunState.RUNNING,
                    RunState.FAIL,
                    {
                        "failure_type": INTERRUPTED,
                        "retryable": 1,
                        "error": "interrupted: the run was stopped before its execution finished",
                    },
                    "interrupted",
                )
            elif state == RunState.EVALUATING:
                writer.transition(
                    run_id, RunState.EVALUATING, RunState.EXECUTED, None, "interrupted while grading"
                )


class _Tuning:
    """Passes running in this process, and the interpreter's settings before the first of them began."""

    passes = 0
    thresholds: tuple[int, ...] = (700, 10, 10)
    switch_s = 0.005


GC_YOUNG = 100_000
"""The collector's youngest-generation threshold while a pass runs (Python's default is 700)."""
SWITCH_S = 0.001
"""The interpreter's switch interval while a pass runs (Python's default is 5 ms)."""


@contextlib.contextmanager
def _tuned_interpreter() -> Iterator[None]:
    """Tune the interpreter for moving runs, and put it back as it was after the last pass.

    The garbage collector: a run's bookkeeping allocates a few dozen short-lived objects; at Python's
    default threshold the collector ran every ~15 runs, promoted what the writer had not committed yet,
    and every full collection walked every object loaded (modules, cases, work items). Those are frozen
    (`gc.freeze`: the collector stops walking them), and the youngest generation is collected less
    often, so most of a run's objects are freed by reference counting before a collection sees them.

    The switch interval: the store writer's thread gives up the interpreter's lock while SQLite works
    and queues for it again after each statement, behind an event loop that never waits when agents
    answer at once — up to the switch interval each time. At the default 5 ms it fell behind, and the
    runs waited for it (`StoreWriter.room`) hundreds of times a pass, so the two threads took turns
    instead of working side by side. At 1 ms it keeps up.
    """
    if _Tuning.passes == 0:
        _Tuning.thresholds = gc.get_threshold()
        young, *older = _Tuning.thresholds
        gc.set_threshold(max(young, GC_YOUNG), *older)
        gc.freeze()
        _Tuning.switch_s = sys.getswitchinterval()
        sys.setswitchinterval(min(_Tuning.switch_s, SWITCH_S))
    _Tuning.passes += 1
    try:
        yield
    finally:
        _Tuning.passes -= 1
        if _Tuning.passes == 0:
            gc.unfreeze()
            gc.set_threshold(*_Tuning.thresholds)
            sys.setswitchinterval(_Tuning.switch_s)


def _work_left(counts: dict[str, dict[str, int]]) -> int:
    """Runs of `counts` (arm -> state -> runs) with execution work left."""
    open_states = (RunState.PENDING, RunState.RUNNING, RunState.EXECUTED)
    return sum(c.get(s, 0) for c in counts.values() for s in open_states)

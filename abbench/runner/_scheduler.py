"""The scheduler: runs one experiment's runs on an event loop, with pause, resume, cancel, retries and grading.

Every state change goes through `_move`, which updates the in-memory progress and submits the change
to the store writer; nothing else writes run states while a run is in progress. The states and their
order are docs/ARCHITECTURE.md's ("Run states").
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import traceback
from collections import deque
from dataclasses import dataclass
from typing import Any

from abbench.agents import Agent, Spending, Task, check_output, make_agent
from abbench.errors import AgentError, ExperimentError
from abbench.llm import RetryPolicy
from abbench.runner._budget import BudgetMixin, PauseReason
from abbench.runner._cache import CacheMixin, attempt_cache_spend, run_cache_fields
from abbench.runner._grading import GradingMixin, combine_verdicts
from abbench.runner._heartbeat import Heartbeat
from abbench.runner._limiter import loop_limiter
from abbench.runner._progress import Observer, Progress, Tracker
from abbench.runner._writer import StoreWriter
from abbench.store import INTERRUPTED, Experiment, Store, WorkItem, current_user, dumps, now_iso
from abbench.types import AgentOutput, Case, run_outcome

log = logging.getLogger(__name__)

__all__ = ["ExperimentRunner", "RunSummary", "backoff_s", "combine_verdicts", "retry_wait_s"]

POLL_S = 0.25
"""How often the runner looks for pause / resume / cancel asked by another process."""
BACKOFF_BASE_S = 0.5
"""The first wait before a failed run is tried again; it doubles with every retry."""
BACKOFF_MAX_S = 30.0
"""The longest backoff between two attempts of a run."""
MAX_RETRY_AFTER_S = RetryPolicy().max_retry_after_s
"""The longest ``Retry-After`` a run waits for, as at the request level; a server asking for more
fails the run (``abbench retry EXP --failed`` tries it again later)."""


@dataclass(frozen=True)
class RunSummary:
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

    @property
    def status_text(self) -> str:
        """The status, with the reason when the runner paused by itself: ``paused: budget reached — …``."""
        return f"{self.status}: {self.pause_reason.text}" if self.pause_reason is not None else self.status

    @property
    def throughput(self) -> float:
        """Runs finished per second in this call."""
        return (self.graded + self.failed + self.cancelled) / self.elapsed_s if self.elapsed_s else 0.0

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "experiment": self.experiment,
            "experiment_id": self.experiment_id,
            "status": self.status,
            "executed": self.executed,
            "graded": self.graded,
            "failed": self.failed,
            "cancelled": self.cancelled,
            "elapsed_s": round(self.elapsed_s, 3),
            "throughput": round(self.throughput, 1),
            "up_to_date": self.up_to_date,
            "pairs_judged": self.pairs_judged,
            "pairs_failed": self.pairs_failed,
            "execution_failed": self.execution_failed,
            "grading_failed": self.grading_failed,
            "pause_reason": None if self.pause_reason is None else self.pause_reason.as_dict(),
            "notes": list(self.notes),
            "progress": self.progress.as_dict(),
        }


def loop_time() -> float:
    """The running event loop's clock."""
    return asyncio.get_running_loop().time()


def backoff_s(attempt: int, rng: random.Random | None = None) -> float:
    """The wait before retry number `attempt` (1-based) of a run: exponential with "equal jitter",
    as at the request level (`abbench.llm.RetryPolicy.backoff_s`): half of
    min(max, base × 2^(attempt-1)) fixed, half random."""
    policy = RetryPolicy(base_delay_s=BACKOFF_BASE_S, max_delay_s=BACKOFF_MAX_S)
    return policy.backoff_s(max(0, attempt - 1), rng)


def retry_wait_s(error: AgentError, attempt: int, rng: random.Random | None = None) -> float | None:
    """How long to wait before retry number `attempt` of a run that failed with `error`: the
    server's ``Retry-After`` when it sent one, else `backoff_s`. None when the server asked for
    more than `MAX_RETRY_AFTER_S` (the run then fails, and can be retried later)."""
    asked = getattr(error, "retry_after", None)
    if asked is not None:
        return float(asked) if asked <= MAX_RETRY_AFTER_S else None
    return backoff_s(attempt, rng)


class ExperimentRunner(CacheMixin, BudgetMixin, GradingMixin):
    """Runs the work of one experiment on the current event loop.

    Three kinds of pass: running (execute what is pending or interrupted, grade what is executed),
    grading only (``grade_only``: grade stored executions that some grader has not graded yet,
    never executing), and re-grading (``regrade``: grade the selected stored executions again,
    never executing).

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

    Attributes:
        sleep: Awaited with the wait in seconds between two attempts of a run (`asyncio.sleep`);
            replace it to watch the waits asked for without spending them.
    """

    sleep = staticmethod(asyncio.sleep)

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
    ):
        self.store = store
        self.exp = experiment
        spec = experiment.spec
        self.concurrency = int(concurrency or spec.get("concurrency") or 8)
        self.timeout_s = float(spec.get("timeout_s") or 120.0)
        self.retries = int(spec.get("retries", 2))
        self.priority = int(experiment.priority)
        self.seed = int(spec.get("seed", 0))
        self.started_by = started_by or current_user()
        self.run_ids = run_ids
        self.regrade = regrade
        self.grade_only = grade_only or regrade
        self.only_graders = set(graders) if graders else None
        self.observers = list(observers or [])
        self._own_writer = writer is None
        self.writer = writer
        self.arms = {a.id: a for a in experiment.arms}
        self.tracker: Tracker | None = None
        self._paused = False
        self._cancelling = False
        self._cancel_event = asyncio.Event()  # wakes runs waiting to be retried
        self._resume = asyncio.Event()
        self._resume.set()
        self._wake = asyncio.Event()
        self._inflight: dict[int, asyncio.Task] = {}  # run id -> the worker task waiting on its agent
        self._cancel_asked: set[int] = set()
        self._grading: dict[int, asyncio.Task] = {}  # run id -> the worker task waiting on its graders
        self._pair_judging: asyncio.Future | None = None
        self._deadlines: dict[int, float] = {}  # run id -> loop time its agent must answer by
        self._timed_out: set[int] = set()
        self._states: dict[int, str] = {}
        self._executed = self._graded = self._failed = self._cancelled = 0
        self._up_to_date = self._pairs_judged = self._pairs_failed = 0
        self._execution_failed = self._grading_failed = 0
        self._stored_outputs: dict = {}
        # run id -> the attempt running now (item, number, started_at, began, spending): what an
        # interrupted attempt spent is stored from here
        self._live: dict[int, tuple] = {}

    # -- control from this process (other processes write the control column) -------------------------

    def request(self, control: str) -> None:
        """Ask for ``run``, ``pause`` or ``cancel`` (recorded in the store, so every process agrees)."""
        self.store.set_control(self.exp.id, control)
        self._wake.set()

    # -- the run ---------------------------------------------------------------------------------------

    async def run(self) -> RunSummary:
        """Do the work; returns when everything selected is done, or the experiment is cancelled."""
        store, exp = self.store, self.exp
        if not store.claim_runner(exp.id):
            raise ExperimentError(store.get_experiment(exp.id).busy_message())
        started = time.monotonic()
        heartbeat = Heartbeat(store, exp.id).start()
        try:
            reconciled = store.reconcile_runs(exp.id)
            if reconciled.interrupted or reconciled.waiting_for_grading:
                log.info(
                    "experiment %s: %d interrupted runs will run again, %d wait for grading",
                    exp.name,
                    reconciled.interrupted,
                    reconciled.waiting_for_grading,
                )
            prior_status = store.get_experiment(exp.id).status
            self._prepare()
            items = self._select_items()
            self._start_budget()
            store.set_pause_reason(exp.id, None)
            store.set_control(exp.id, "run")
            store.set_status(exp.id, "running")
            if self.writer is None:
                self.writer = StoreWriter(store)
            self.tracker = Tracker(
                exp.name,
                exp.id,
                store.run_counts(exp.id),
                {a.id: a.name for a in exp.arms},
                self.observers,
                errors=store.error_runs(exp.id),
            )
            self.tracker.maybe_emit(force=True)
            status = await self._work(items)
        except BaseException:
            await self._interrupt()
            raise
        finally:
            heartbeat.stop()
            try:
                if self.writer is not None and self._own_writer:
                    self.writer.close()
            finally:
                # even when the writer failed: a claim left behind would block the next run
                store.release_runner(exp.id)
        if status == "finished" and self.grade_only:
            status = self._status_after_grading(prior_status)
        counts = store.run_counts(exp.id)
        paused_by = self._budget_pause(counts) if status == "finished" else None
        if paused_by is None and status == "finished" and self.run_ids is not None and not self.grade_only:
            # some runs only (a pilot, a re-run): the experiment is finished only when nothing is left
            left = sum(c.get(s, 0) for c in counts.values() for s in ("pending", "running", "executed"))
            if left:
                status = prior_status if prior_status not in ("running", "paused") else "interrupted"
        if paused_by is not None:
            status = "paused"
            store.set_pause_reason(exp.id, paused_by.as_dict())
            log.warning("experiment %s paused: %s", exp.name, paused_by.text)
        store.set_status(exp.id, status)
        self.tracker.status = status
        self.tracker.pause_reason = paused_by
        self.tracker.notes = self.budget.warnings() if self.budget is not None else ()
        self.tracker.counts = counts
        self.tracker.set_errors(store.error_runs(exp.id))
        self.tracker.maybe_emit(force=True)
        return RunSummary(
            exp.name,
            exp.id,
            status,
            self._executed,
            self._graded,
            self._failed,
            self._cancelled,
            time.monotonic() - started,
            self.tracker.snapshot(),
            self._up_to_date,
            self._pairs_judged,
            self._pairs_failed,
            self._execution_failed,
            self._grading_failed,
            paused_by,
            self.tracker.notes,
        )

    def _status_after_grading(self, prior: str) -> str:
        """A grading pass finishes the experiment only when no run has execution work left."""
        counts = self.store.run_counts(self.exp.id)
        left = sum(c.get(s, 0) for c in counts.values() for s in ("pending", "running", "executed"))
        if left or prior == "cancelled":
            return prior if prior not in ("running", "paused") else "interrupted"
        return "finished"

    def _backoff(self, tries: int) -> float:
        return backoff_s(tries)

    def _prepare(self) -> None:
        store, exp = self.store, self.exp
        dataset = store.get_dataset(exp.dataset_id)
        self.label_map = dict(dataset.label_map or {})
        self.label_set = tuple(dataset.label_set) if dataset.label_set else None
        self.cases: dict[int, Case] = dict(enumerate(store.load_cases(exp.dataset_id)))
        self.skills = {a.id: store.get_snapshot(a.snapshot) if a.snapshot else None for a in exp.arms}
        self.agents: dict[int, Agent] = {
            a.id: make_agent(a.agent, model=a.model, **(a.params or {})) for a in exp.arms
        }
        self._prepare_graders()
        self._prepare_cache()

    def _select_items(self) -> list[WorkItem]:
        store, exp = self.store, self.exp
        if self.grade_only:
            items = store.work_items(exp.id, ("executed", "pass", "fail"), run_ids=self.run_ids)
            # only runs whose execution succeeded can be graded (again)
            failed_exec = set(store.select_runs(exp.id, execution_failed=True))
            items = [i for i in items if i.run_id not in failed_exec]
            self._stored_outputs = self._load_outputs(items)
            if self.regrade:
                self._preload_latest()  # graders not re-graded still count in the verdict
            else:
                items = self._select_for_grading(items, self._stored_outputs)
            return items
        items = store.work_items(exp.id, ("pending", "executed"), run_ids=self.run_ids)
        items += [
            i for i in store.interrupted_items(exp.id) if self.run_ids is None or i.run_id in self.run_ids
        ]
        items.sort(key=lambda i: (i.round, i.case_idx, i.arm_id))
        return items

    async def _work(self, items: list[WorkItem]) -> str:
        queue: deque[WorkItem] = deque(items)
        for item in items:
            self._states[item.run_id] = item.state
        if not self.grade_only:
            self._stored_outputs = self._load_outputs([i for i in items if i.state == "executed"])
        poller = asyncio.create_task(self._poll(), name=f"abbench-poll-{self.exp.id}")
        watchdog = asyncio.create_task(self._watchdog(), name=f"abbench-watchdog-{self.exp.id}")
        workers = [
            asyncio.create_task(self._worker(queue), name=f"abbench-worker-{self.exp.id}-{n}")
            for n in range(min(self.concurrency, max(1, len(items))))
        ]
        try:
            await asyncio.gather(*workers)
            if self.pairwise and not self._cancelling:
                await self._grade_pairs()
        finally:
            poller.cancel()
            watchdog.cancel()
            for w in workers:
                w.cancel()
        if self._cancelling:
            self._cancel_left(queue)
            self.writer.flush()
            self.store.cancel_pending(self.exp.id)
            return "cancelled"
        self.writer.flush()
        return "finished"

    async def _worker(self, queue: deque[WorkItem]) -> None:
        limiter = loop_limiter()
        while queue and not self._cancelling:
            if self._paused:
                await self._resume.wait()
                continue
            item = queue.popleft()
            executes = item.state in ("pending", "fail") and not self.grade_only
            if executes and not await self._admit(item):
                self._over_budget.append(item)  # left pending: a resume with a higher budget runs it
                continue
            await limiter.acquire(self.priority)
            try:
                await self._process(item)
            finally:
                limiter.release()
                if executes:
                    self._release(item)

    async def _process(self, item: WorkItem) -> None:
        output: AgentOutput | None = None
        record = self._stored_outputs.get(item.run_id)
        if item.state in ("pending", "fail") and not self.grade_only:
            output = await self._execute(item)
            if output is None:
                return
        elif record is not None:
            output = record.output
        if output is None:
            return
        if not self.all_pointwise and not self.pairwise:
            return  # an experiment without graders leaves its runs executed
        await self._grade(item, output, record)

    # -- execution -------------------------------------------------------------------------------------

    async def _execute(self, item: WorkItem) -> AgentOutput | None:
        arm = self.arms[item.arm_id]
        case = self.cases[item.case_idx]
        attempts = item.attempts
        tries = 0
        while True:
            attempts += 1
            tries += 1
            fields: dict[str, Any] = {
                "attempts": attempts,
                "started_at": now_iso(),
                "started_by": self.started_by,
            }
            if self._states[item.run_id] == "fail":
                fields.update(failure_type=None, error=None, traceback=None, retryable=None)
            if self._states[item.run_id] != "running":
                self._move(item, "running", fields)
            spending = Spending()
            task = Task(
                case=case,
                skill=self.skills[item.arm_id],
                arm=arm.name,
                model=arm.model,
                params=arm.params or {},
                round=item.round,
                session_id=f"{random.getrandbits(64):016x}",
                run_id=item.run_id,
                label_set=self.label_set,
                timeout_s=self.timeout_s,
                spending=spending,
                cache=self._run_cache(item.arm_id, item.round),
            )
            began = time.perf_counter()
            error: AgentError | None = None
            tb = None
            # The agent runs in this worker's own task (a task per run costs more than the bookkeeping);
            # a cancel asked for by a person cancels the worker while it waits here, and only here.
            # The per-run timeout is enforced by `_watchdog` the same way, so no timer is set per run.
            worker = asyncio.current_task()
            self._inflight[item.run_id] = worker
            self._live[item.run_id] = (item, attempts, fields["started_at"], began, spending)
            self._deadlines[item.run_id] = loop_time() + self.timeout_s
            try:
                output = await self.agents[item.arm_id].run(task)
                if item.run_id in self._timed_out or item.run_id in self._cancel_asked:
                    # the adapter swallowed the cancellation and answered anyway: keep the task clean
                    self._timed_out.discard(item.run_id)
                    worker.uncancel()
                    if item.run_id in self._cancel_asked:
                        raise asyncio.CancelledError
            except asyncio.CancelledError:
                if item.run_id in self._timed_out:
                    self._timed_out.discard(item.run_id)
                    worker.uncancel()
                    error = AgentError(
                        f"no answer within {self.timeout_s:g} s (timeout_s)", "timeout", retryable=True
                    )
                elif item.run_id in self._cancel_asked:
                    if worker.cancelling():
                        worker.uncancel()
                    self._failed_attempt(item, attempts, fields["started_at"], began, spending, None)
                    self._move(
                        item, "cancelled", {"finished_at": now_iso(), "error": "cancelled while running"}
                    )
                    self._cancelled += 1
                    return None
                else:
                    # the runner itself is stopping: _interrupt() records the run; what the attempt
                    # spent is stored here, while its spending is at hand
                    if self._live.pop(item.run_id, None) is not None:
                        self._failed_attempt(
                            item, attempts, fields["started_at"], began, spending, _interrupted()
                        )
                    raise
            except TimeoutError as exc:  # an adapter's own timeout (an HTTP request, a subprocess)
                error = AgentError(f"timed out: {exc or 'no answer in time'}", "timeout", retryable=True)
            except AgentError as exc:
                error, tb = exc, traceback.format_exc()
            except Exception as exc:
                error = AgentError(
                    f"{type(exc).__name__}: {exc}",
                    "agent_error",
                    retryable=isinstance(exc, (OSError, ConnectionError)),
                )
                tb = traceback.format_exc()
            finally:
                self._inflight.pop(item.run_id, None)
                self._live.pop(item.run_id, None)
                self._deadlines.pop(item.run_id, None)
            if error is None:
                if not isinstance(output, AgentOutput):
                    error = AgentError(
                        f"agent {arm.agent!r} returned {type(output).__name__}, not an AgentOutput",
                        "bad_output",
                        retryable=False,
                    )
                else:
                    try:
                        # what a person's adapter returns is checked before it reaches the store
                        output = check_output(output)
                    except AgentError as exc:
                        error = AgentError(
                            f"{exc} (case {case.case_id})",
                            exc.failure_type,
                            exc.retryable,
                            raw_output=exc.raw_output,
                        )
            if error is None:
                started_at = fields["started_at"]
                fields = self._execution_fields(item, output, began, attempts)
                fields["attempts"] = attempts
                fields.update(run_cache_fields(spending))
                self._attempts[item.run_id] = attempts  # grades record which execution they judged
                # What the attempt paid: a call the response cache answered is saved, not spent.
                paid = {**{k: fields[k] for k in _ATTEMPT_SPEND}, **attempt_cache_spend(spending)}
                self._count_spend(
                    item, paid["cost"], paid["input_tokens"], paid["output_tokens"], fields["model"]
                )
                self.writer.attempt(
                    item.run_id,
                    attempt=attempts,
                    outcome="executed",
                    started_at=started_at,
                    ended_at=fields["executed_at"],
                    model_calls=spending.calls or None,
                    **paid,
                )
                self._move(item, "executed", fields)
                self._executed += 1
                return output
            # what the failed attempt spent is kept, whether or not it is tried again
            self._failed_attempt(item, attempts, fields["started_at"], began, spending, error)
            wait = retry_wait_s(error, tries) if error.retryable else None
            if wait is not None and tries <= self.retries and not self._cancelling:
                asked = " (the server's Retry-After)" if error.retry_after is not None else ""
                self.writer.transition(
                    item.run_id,
                    "running",
                    "running",
                    {"attempts": attempts},
                    f"attempt {attempts} failed ({error.failure_type}: {error}); retry in {wait:.1f} s{asked}",
                )
                await self._wait_to_retry(wait)
                if self._cancelling:
                    self._move(
                        item,
                        "cancelled",
                        {"finished_at": now_iso(), "error": "cancelled while waiting to retry"},
                    )
                    self._cancelled += 1
                    return None
                continue
            self._move(
                item,
                "fail",
                {
                    "attempts": attempts,
                    "failure_type": error.failure_type,
                    "error": str(error),
                    "traceback": tb,
                    "retryable": int(bool(error.retryable)),
                    "finished_at": now_iso(),
                    "raw_output": getattr(error, "raw_output", None),
                },
            )
            self._failed += 1
            self._execution_failed += 1
            return None

    async def _wait_to_retry(self, wait: float) -> None:
        """Wait `wait` seconds (through `sleep`) before a run's next attempt; a cancel ends the wait."""
        sleeping = asyncio.ensure_future(self.sleep(wait))
        cancelled = asyncio.ensure_future(self._cancel_event.wait())
        try:
            await asyncio.wait((sleeping, cancelled), return_when=asyncio.FIRST_COMPLETED)
        finally:
            sleeping.cancel()
            cancelled.cancel()

    def _failed_attempt(
        self,
        item: WorkItem,
        attempt: int,
        started_at: str,
        began: float,
        spending: Spending,
        error: AgentError | None,
    ) -> None:
        """Store one failed (or cancelled, when `error` is None) attempt with what it spent before."""
        spent = error.spent if error is not None and isinstance(error.spent, Spending) else spending
        transcript = list(spent.transcript) or list(error.transcript if error is not None else ())
        transcript_path = None
        if transcript:
            transcript_path = _transcript_name(item.run_id, attempt)
            self.writer.transcript(self.store.path / transcript_path, transcript)
        usage = spent.usage
        self._count_spend(
            item,
            spent.cost,
            usage.input_tokens if usage is not None else None,
            usage.output_tokens if usage is not None else None,
            spent.model,
        )
        self.writer.attempt(
            item.run_id,
            attempt=attempt,
            outcome="cancelled" if error is None else "failed",
            failure_type=None if error is None else error.failure_type,
            error="cancelled while running" if error is None else str(error),
            started_at=started_at,
            ended_at=now_iso(),
            model=spent.model,
            input_tokens=usage.input_tokens if usage is not None else None,
            output_tokens=usage.output_tokens if usage is not None else None,
            cost=spent.cost,
            latency_ms=(time.perf_counter() - began) * 1000.0,
            model_calls=spent.calls or None,
            files_read=_json_list(spent.files_read),
            sections_read=_json_list(spent.sections_read),
            transcript_path=transcript_path,
            transcript_summary=_summary(transcript, spent.files_read, spent.sections_read),
            cached_calls=getattr(spent, "cached_calls", 0) or None,
            cost_saved=getattr(spent, "cost_saved", None),
        )

    def _execution_fields(
        self, item: WorkItem, out: AgentOutput, began: float, attempt: int = 1
    ) -> dict[str, Any]:
        latency = out.latency_ms or (time.perf_counter() - began) * 1000.0
        transcript_path = None
        tool_calls = sum(len(m.get("tool_calls") or ()) for m in out.transcript if isinstance(m, dict))
        if out.transcript:
            transcript_path = _transcript_name(item.run_id, attempt)
            self.writer.transcript(self.store.path / transcript_path, out.transcript)
        summary = None  # NULL, like the empty lists below: smaller rows are cheaper to update
        if out.transcript or out.files_read or out.sections_read:
            summary = dumps(
                {
                    "messages": len(out.transcript),
                    "tool_calls": tool_calls,
                    "files_read": len(out.files_read),
                    "sections_read": len(out.sections_read),
                    "read_skill": bool(out.files_read or out.sections_read),
                }
            )
        return {
            "prediction": out.prediction,
            "reason": out.reason,
            "confidence": out.confidence,
            "evidence_refs": _json_list(out.evidence_refs),
            "raw_output": out.raw_output,
            "files_read": _json_list(out.files_read),
            "sections_read": _json_list(out.sections_read),
            "input_tokens": out.usage.input_tokens if out.usage is not None else None,
            "output_tokens": out.usage.output_tokens if out.usage is not None else None,
            "cost": out.cost,
            "latency_ms": latency,
            "session_id": out.session_id,
            "model": out.model,
            "transcript_path": transcript_path,
            "transcript_summary": summary,
            "executed_at": now_iso(),
        }

    # -- state changes, control, shutdown --------------------------------------------------------------

    def _move(
        self, item: WorkItem, to_state: str, fields: dict[str, Any] | None = None, detail: str | None = None
    ) -> None:
        from_state = self._states.get(item.run_id, item.state)
        self._states[item.run_id] = to_state
        self.writer.transition(item.run_id, from_state, to_state, fields, detail)
        fields = fields or {}
        outcome = run_outcome(to_state, fields.get("failure_type"), fields.get("passed", 0))
        self.tracker.move(item.arm_id, from_state, to_state, run_id=item.run_id, outcome=outcome)

    async def _watchdog(self) -> None:
        """Cancel agents that overrun the per-run timeout (checked every 50 ms at most)."""
        interval = min(0.05, self.timeout_s / 4)
        while True:
            await asyncio.sleep(interval)
            now = loop_time()
            for run_id, deadline in list(self._deadlines.items()):
                if now >= deadline and run_id not in self._timed_out:
                    worker = self._inflight.get(run_id)
                    if worker is not None:
                        self._timed_out.add(run_id)
                        worker.cancel()

    async def _poll(self) -> None:
        # The heartbeat is not written here but by `Heartbeat`'s thread: a blocked loop must not
        # make this runner look dead to other processes.
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), POLL_S)
            self._wake.clear()
            control = self.store.get_control(self.exp.id)
            if control == "cancel" and not self._cancelling:
                log.info("experiment %s: cancel asked", self.exp.name)
                self._cancelling = True
                self._cancel_event.set()
                self._resume.set()
                for run_id, worker in list(self._inflight.items()):
                    self._cancel_asked.add(run_id)
                    worker.cancel()
                # Grading in flight stops too (a slow judge must not hold a cancel for minutes); those
                # runs go back to executed, waiting for grading, their execution kept.
                for run_id, worker in list(self._grading.items()):
                    self._cancel_asked.add(run_id)
                    worker.cancel()
                if self._pair_judging is not None:
                    self._pair_judging.cancel()
                self.tracker.status = "cancelling"
            elif control == "pause" and not self._paused:
                log.info("experiment %s: pause asked; running runs finish, no new ones start", self.exp.name)
                self._paused = True
                self._resume.clear()
                self.tracker.status = "paused"
                self.writer.experiment(self.exp.id, status="paused", updated_at=now_iso())
            elif control == "run" and self._paused:
                log.info("experiment %s: resumed", self.exp.name)
                self._paused = False
                self._reload_budget()
                self._resume.set()
                self.tracker.status = "running"
                self.writer.experiment(self.exp.id, status="running", updated_at=now_iso())
            self.tracker.maybe_emit(force=True)

    def _cancel_left(self, queue: deque[WorkItem]) -> None:
        for item in queue:
            if self._states.get(item.run_id) == "pending":
                self._move(item, "cancelled", {"finished_at": now_iso()}, "cancelled before it started")
                self._cancelled += 1

    async def _interrupt(self) -> None:
        """The runner is stopping abnormally: record runs in flight as interrupted, commit what we have.

        Never raises: the error that stopped the runner is the one to report. When the writer itself
        failed (a full disk, a read-only store), what it could not commit is left to start-up
        reconciliation, which turns it into actionable states on the next run.
        """
        for task in list(self._inflight.values()):
            task.cancel()
        if self.writer is None or self.tracker is None:
            return
        try:
            if self.writer.error is None:
                for item, attempt, started_at, began, spending in list(self._live.values()):
                    self._failed_attempt(item, attempt, started_at, began, spending, _interrupted())
                self._live.clear()
                for run_id, state in list(self._states.items()):
                    if state == "running":
                        self.writer.transition(
                            run_id,
                            "running",
                            "fail",
                            {
                                "failure_type": INTERRUPTED,
                                "retryable": 1,
                                "error": "interrupted: the run was stopped before its execution finished",
                            },
                            "interrupted",
                        )
                    elif state == "evaluating":
                        self.writer.transition(
                            run_id, "evaluating", "executed", None, "interrupted while grading"
                        )
                self.writer.flush()
            self.store.set_status(self.exp.id, "interrupted")
        except Exception as exc:  # the original error matters more
            log.warning("experiment %s: could not record the interruption (%s)", self.exp.name, exc)


_ATTEMPT_SPEND = (
    "model",
    "input_tokens",
    "output_tokens",
    "cost",
    "latency_ms",
    "files_read",
    "sections_read",
    "transcript_path",
    "transcript_summary",
)


def _interrupted() -> AgentError:
    return AgentError("interrupted: the run was stopped before its execution finished", INTERRUPTED)


def _transcript_name(run_id: int, attempt: int) -> str:
    """Where an attempt's transcript goes, relative to the store: one file per attempt, so a retry
    never overwrites what an earlier attempt did (the first keeps the plain ``<run id>.jsonl``)."""
    return f"transcripts/{run_id}.jsonl" if attempt <= 1 else f"transcripts/{run_id}-{attempt}.jsonl"


def _summary(transcript: list, files_read, sections_read) -> str | None:
    if not (transcript or files_read or sections_read):
        return None
    return dumps(
        {
            "messages": len(transcript),
            "tool_calls": sum(len(m.get("tool_calls") or ()) for m in transcript if isinstance(m, dict)),
            "files_read": len(files_read),
            "sections_read": len(sections_read),
            "read_skill": bool(files_read or sections_read),
        }
    )


def _json_list(values) -> str | None:
    """JSON for a non-empty list; NULL for an empty one (every reader takes NULL as empty)."""
    return dumps(list(values)) if values else None

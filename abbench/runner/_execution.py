"""Executing one run inside a runner pass: its attempts, their spend, retries with backoff, the agent's answer.

Every attempt is stored with what it spent (failed, cancelled and interrupted ones too), so a budget
and the spend reports count what was really used. A retryable failure is tried again after a backoff
(or the server's ``Retry-After``) while retries remain; a cancel ends the wait.
"""

from __future__ import annotations

import asyncio
import random
import time
import traceback
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any, cast

from abbench.agents import Spending, Task, answer_format, check_output
from abbench.errors import AgentError
from abbench.llm import RetryPolicy, timed_by
from abbench.runner._budget import RunBudget
from abbench.runner._cache import attempt_cache_spend, run_cache_fields
from abbench.runner._control import PassParts
from abbench.runner._flight import FlightEnd, RunClock
from abbench.runner._frozen import make_frozen
from abbench.runner._states import EXECUTED, FAIL, PENDING, RUNNING
from abbench.snapshot import Snapshot
from abbench.store import INTERRUPTED, Arm, AttemptWrite, RunChange, WorkItem, dumps, now_iso
from abbench.transcript import last_answer, requested_calls
from abbench.types import AgentOutput, AttemptOutcome, FailureType, RunState

MAX_STORED_INT = 2**63 - 1
"""The largest integer SQLite stores: a token count beyond it is not one."""
BACKOFF_BASE_S = 0.5
"""The first wait before a failed run is tried again; it doubles with every retry."""
BACKOFF_MAX_S = 30.0
"""The longest backoff between two attempts of a run."""
MAX_RETRY_AFTER_S = RetryPolicy().max_retry_after_s
"""The longest ``Retry-After`` a run waits for, as at the request level; a server asking for more
fails the run (``abbench retry EXP --failed`` tries it again later)."""


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


@dataclass(frozen=True)
class ExecutionOptions:
    """How one pass executes runs.

    Attributes:
        timeout_s: The per-run timeout.
        retries: Extra attempts for retryable failures.
        started_by: Recorded on every run.
        sleep: Awaited with the wait in seconds between two attempts of a run.
    """

    timeout_s: float
    retries: int
    started_by: str
    sleep: Callable[[float], Awaitable[Any]]


@dataclass(slots=True)
class _Attempt:
    """One attempt of a run now under way: what its failure or interruption stores (never changed;
    not frozen, which would set each field through ``object.__setattr__``, once an attempt)."""

    item: WorkItem
    number: int
    started_at: str
    began: float
    spending: Spending


@dataclass(eq=False)
class Execution:
    """The execution half of a runner pass: run one item's agent, with retries, and store each attempt.

    Attributes:
        parts: What the pass's two halves share (inputs, writer, moves, control, tally, caches).
        store_path: The store folder (transcripts are written under it).
        budget: Counts each attempt's spend.
        attempts: Run id -> the execution its grades will judge (filled in here).
        options: How this pass executes.
        live: Run id -> its attempt running now.
    """

    parts: PassParts
    _: KW_ONLY
    store_path: Path
    budget: RunBudget
    attempts: dict[int, int]
    options: ExecutionOptions
    live: dict[int, _Attempt] = field(default_factory=dict, init=False)
    _arm_task: dict[int, dict[str, Any]] = field(default_factory=dict, init=False)
    """Arm id -> what every task of the arm shares."""

    async def execute(self, item: WorkItem, worker: asyncio.Task[Any] | None = None) -> AgentOutput | None:
        """Run `item`'s agent until it answers, fails for good or is cancelled; its output, or None.

        `worker` is the task this is awaited in (default: the current one), which a cancel cancels.
        """
        if worker is None:
            worker = asyncio.current_task()
            assert worker is not None  # executed inside a worker task
        number = item.attempts
        tries = 0
        while True:
            number += 1
            tries += 1
            attempt, task = self._start(item, number)
            answered = await self._call_agent(item, attempt, task, worker)
            if answered is None:
                return None  # cancelled by a person
            output, error, tb = answered
            if error is None:
                output, error = self._checked(item, output)
            if error is None:
                assert isinstance(output, AgentOutput)
                self._executed(attempt, output)
                return output
            # what the failed attempt spent is kept, whether or not it is tried again
            self.failed_attempt(attempt, error)
            retry = await self._retry(item, number, tries, error)
            if retry:
                continue
            if retry is None:
                self._fail(item, number, error, tb, attempt.spending)
            return None

    def _shared(self, arm_id: int) -> dict[str, Any]:
        """The fields of a `Task` that every run of the arm has alike, made once per arm."""
        inputs = self.parts.inputs
        return arm_task_fields(
            inputs.arms[arm_id],
            inputs.skills[arm_id],
            inputs.offered.get(arm_id, ()),
            inputs.label_set,
            self.options.timeout_s,
        )

    def _start(self, item: WorkItem, number: int) -> tuple[_Attempt, Task]:
        """Move the run to running (once) and make the attempt's task."""
        started_at = now_iso()
        fields: RunChange = {
            "attempts": number,
            "started_at": started_at,
            "started_by": self.options.started_by,
        }
        state = self.parts.moves.states.get(item.run_id, item.state)
        if state == FAIL:
            fields.update({"failure_type": None, "error": None, "traceback": None, "retryable": None})
        spending = Spending()
        offered = self.parts.inputs.offered.get(item.arm_id, ())
        # what this attempt offered and loads (a re-run starts again from nothing loaded)
        if offered:
            spending.offer([s.skill_name for s in offered])
            fields.update(_activation_fields(spending.activation()))
        elif state != PENDING:  # a pending run's activation columns are NULL already
            fields.update(_NO_ACTIVATION)
        if state != RUNNING:  # after `fields` is whole: the writer's thread owns it from here on
            self.parts.moves.move(item, RUNNING, fields)  # which also says its attempt started
        else:  # a retry: the run is running already, its new attempt starts now
            self.parts.writer.attempt_started(item.run_id, number, started_at)
        shared = self._arm_task.get(item.arm_id)
        if shared is None:
            shared = self._arm_task[item.arm_id] = self._shared(item.arm_id)
        values = shared.copy()
        if not values["params"]:
            values["params"] = {}
        values["case"] = self.parts.inputs.cases[item.case_idx]
        values["round"] = item.round
        values["session_id"] = f"{random.getrandbits(64):016x}"
        values["run_id"] = item.run_id
        values["spending"] = spending
        values["cache"] = self.parts.caches.for_run(item.arm_id, item.round)
        task = make_frozen(Task, values)
        return _Attempt(item, number, started_at, time.perf_counter(), spending), task

    async def _call_agent(
        self, item: WorkItem, attempt: _Attempt, task: Task, worker: asyncio.Task[Any]
    ) -> tuple[Any, AgentError | None, str | None] | None:
        """The agent's answer, or the error it failed with (and its traceback); None when cancelled.

        The agent runs in this worker's own task (a task per run costs more than the bookkeeping);
        a cancel asked for by a person cancels the worker while it waits here, and only here. The
        per-run timeout is enforced by the scheduler's watchdog the same way, so no timer is set per run.
        """
        run_id = item.run_id
        self.live[run_id] = attempt
        output: Any = None
        error: AgentError | None = None
        tb = None
        try:
            flying = self.parts.control.flight(run_id, worker, timeout_s=self.options.timeout_s)
            with flying as flight, timed_by(RunClock(flight)):  # its calls' waits are not its work
                output = await self.parts.inputs.agents[item.arm_id].run(task)
        except asyncio.CancelledError:
            # the runner itself is stopping (`FlightEnd.STOP`): the scheduler records the run as
            # interrupted; what the attempt spent is stored here, while its spending is at hand
            if self.live.pop(run_id, None) is not None:
                self.failed_attempt(attempt, interrupted())
            raise
        except TimeoutError as exc:  # an adapter's own timeout (an HTTP request, a subprocess)
            error = AgentError(
                f"timed out: {exc or 'no answer in time'}", FailureType.TIMEOUT, retryable=True
            )
        except AgentError as exc:
            error, tb = exc, traceback.format_exc()
        except (Exception, SystemExit, KeyboardInterrupt) as exc:
            # An agent that raises SystemExit or KeyboardInterrupt fails its run; it does not stop the
            # experiment (a signal stops it by cancelling the pass, never by raising inside an agent).
            error = AgentError(
                f"{type(exc).__name__}: {exc}",
                FailureType.AGENT_ERROR,
                retryable=isinstance(exc, (OSError, ConnectionError)),
            )
            tb = traceback.format_exc()
        finally:
            self.live.pop(run_id, None)
        if flight.ended is FlightEnd.TIMEOUT:
            timeout = self.options.timeout_s
            error = AgentError(
                f"no answer within {timeout:g} s of work (timeout_s; waits for rate limits not counted)",
                FailureType.TIMEOUT,
                retryable=True,
            )
        elif flight.ended is FlightEnd.CANCEL:
            self.failed_attempt(attempt, None)
            self.parts.moves.move(
                item, RunState.CANCELLED, {"finished_at": now_iso(), "error": "cancelled while running"}
            )
            self.parts.tally.cancelled += 1
            return None
        return output, error, tb

    def _checked(self, item: WorkItem, output: Any) -> tuple[AgentOutput | None, AgentError | None]:
        """The answer as checked before it reaches the store, or why it cannot be stored."""
        if not isinstance(output, AgentOutput):
            arm = self.parts.inputs.arms[item.arm_id]
            message = f"agent {arm.agent!r} returned {type(output).__name__}, not an AgentOutput"
            return None, AgentError(message, FailureType.BAD_OUTPUT, retryable=False)
        try:
            # what a person's adapter returns is checked before it reaches the store
            checked = check_output(output)
            usage = checked.usage
            if usage is not None and not (
                0 <= usage.input_tokens <= MAX_STORED_INT and 0 <= usage.output_tokens <= MAX_STORED_INT
            ):
                raise ValueError(
                    f"usage {usage.input_tokens}, {usage.output_tokens} is not a count of tokens"
                )
            return checked, None
        except AgentError as exc:
            case = self.parts.inputs.cases[item.case_idx]
            return None, AgentError(
                f"{exc} (case {case.case_id})", exc.failure_type, exc.retryable, raw_output=exc.raw_output
            )
        except Exception as exc:  # a value no check foresaw (a confidence of 10**400): the run's fault
            case = self.parts.inputs.cases[item.case_idx]
            message = f"the agent returned an answer that cannot be stored ({type(exc).__name__}: {exc})"
            return None, AgentError(
                f"{message} (case {case.case_id})", FailureType.BAD_OUTPUT, retryable=False
            )

    def _executed(self, attempt: _Attempt, output: AgentOutput) -> None:
        """Store the answer: the run moves to executed, the attempt records what it paid."""
        item, number, spending = attempt.item, attempt.number, attempt.spending
        # What the attempt paid: a call the response cache answered is saved, not spent.
        paid = self._paid(attempt, output)
        fields = executed_fields(paid, output)
        fields.update(run_cache_fields(spending))
        self.attempts[item.run_id] = number  # grades record which execution they judged
        activation = self._activation(item, output, spending)
        if item.state == PENDING:
            fields = without_nulls(fields)
            if activation is not _NO_ACTIVATION:  # else NULL already, as `without_nulls` says
                fields.update(activation)
        else:
            fields.update(activation)
        fields["attempts"] = number
        if spending.cached_calls:
            paid = attempt_cache_spend(paid, spending)
        if self.budget.guard is not None:
            self.budget.count_spend(
                item, paid.cost, paid.input_tokens, paid.output_tokens, fields.get("model")
            )
        self.parts.writer.attempt(paid)
        self.parts.moves.move(item, EXECUTED, fields)
        self.parts.tally.executed += 1

    def _activation(self, item: WorkItem, output: AgentOutput, spending: Spending) -> RunChange:
        """What an offered arm's run offered and loaded: the agent's account, else what it recorded as
        it went; NULL for an arm that offers nothing, whatever its agent says."""
        if not self.parts.inputs.offered.get(item.arm_id):
            return _NO_ACTIVATION
        recorded = spending.activation()
        said = {
            "skills_offered": output.skills_offered,
            "skills_loaded": output.skills_loaded,
            "first_load_turn": output.first_load_turn,
        }
        return _activation_fields({k: recorded[k] if v is None else v for k, v in said.items()})

    async def _retry(self, item: WorkItem, number: int, tries: int, error: AgentError) -> bool | None:
        """Wait to try a failed run again: True to try, False when a cancel ended the wait (the run
        is then cancelled), None when it is not tried again."""
        wait = retry_wait_s(error, tries) if error.retryable else None
        if wait is None or tries > self.options.retries or self.parts.control.cancelling:
            return None
        asked = " (the server's Retry-After)" if error.retry_after is not None else ""
        self.parts.writer.transition(
            item.run_id,
            RunState.RUNNING,
            RunState.RUNNING,
            {"attempts": number},
            f"attempt {number} failed ({error.failure_type}: {error}); retry in {wait:.1f} s{asked}",
        )
        await self.parts.control.wait_unless_cancelled(asyncio.ensure_future(self.options.sleep(wait)))
        if self.parts.control.cancelling:
            fields = {"finished_at": now_iso(), "error": "cancelled while waiting to retry"}
            self.parts.moves.move(item, RunState.CANCELLED, fields)
            self.parts.tally.cancelled += 1
            return False
        return True

    def _fail(
        self, item: WorkItem, number: int, error: AgentError, tb: str | None, spending: Spending
    ) -> None:
        """The run failed for good: no usable answer. What it offered and loaded before the error is
        kept as recorded so far; the run is an execution failure, never a correct non-activation."""
        spent = error.spent if isinstance(error.spent, Spending) else spending
        self.parts.moves.move(
            item,
            RunState.FAIL,
            {
                **_activation_fields(spent.activation() if spent.skills_offered is not None else {}),
                "attempts": number,
                "failure_type": error.failure_type,
                "error": str(error),
                "traceback": tb,
                "retryable": int(bool(error.retryable)),
                "finished_at": now_iso(),
                "raw_output": getattr(error, "raw_output", None),
            },
        )
        self.parts.tally.failed += 1
        self.parts.tally.execution_failed += 1

    def record_interrupted(self) -> None:
        """The runner is stopping: store every attempt under way as interrupted, with what it spent."""
        for attempt in list(self.live.values()):
            self.failed_attempt(attempt, interrupted())
        self.live.clear()

    def failed_attempt(self, attempt: _Attempt, error: AgentError | None) -> None:
        """Store one failed (or cancelled, when `error` is None) attempt with what it spent before."""
        item, spending = attempt.item, attempt.spending
        spent = error.spent if error is not None and isinstance(error.spent, Spending) else spending
        transcript = list(spent.transcript) or list(error.transcript if error is not None else ())
        transcript_path = None
        if transcript:
            transcript_path = _transcript_name(item.run_id, attempt.number)
            self.parts.writer.transcript(self.store_path / transcript_path, transcript)
        usage = spent.usage
        input_tokens = usage.input_tokens if usage is not None else None
        output_tokens = usage.output_tokens if usage is not None else None
        self.budget.count_spend(item, spent.cost, input_tokens, output_tokens, spent.model)
        self.parts.writer.attempt(
            AttemptWrite(
                item.run_id,
                attempt.number,
                AttemptOutcome.CANCELLED if error is None else AttemptOutcome.FAILED,
                failure_type=None if error is None else error.failure_type,
                error="cancelled while running" if error is None else str(error),
                started_at=attempt.started_at,
                ended_at=now_iso(),
                model=spent.model,
                input_tokens=input_tokens,
                output_tokens=output_tokens,
                cost=spent.cost,
                latency_ms=(time.perf_counter() - attempt.began) * 1000.0,
                model_calls=spent.calls or None,
                files_read=_json_list(spent.files_read),
                sections_read=_json_list(spent.sections_read),
                transcript_path=transcript_path,
                transcript_summary=_summary(transcript, spent.files_read, spent.sections_read),
                cached_calls=getattr(spent, "cached_calls", 0) or None,
                cost_saved=getattr(spent, "cost_saved", None),
            )
        )

    def _paid(self, attempt: _Attempt, out: AgentOutput) -> AttemptWrite:
        """The attempt that answered, to store: what it paid and read, and its transcript (written here)."""
        item, number = attempt.item, attempt.number
        transcript_path = None
        if out.transcript:
            transcript_path = _transcript_name(item.run_id, number)
            self.parts.writer.transcript(self.store_path / transcript_path, out.transcript)
        usage = out.usage
        return AttemptWrite(
            item.run_id,
            number,
            _EXECUTED,
            started_at=attempt.started_at,
            ended_at=now_iso(),
            model=out.model,
            input_tokens=usage.input_tokens if usage is not None else None,
            output_tokens=usage.output_tokens if usage is not None else None,
            cost=out.cost,
            latency_ms=out.latency_ms or (time.perf_counter() - attempt.began) * 1000.0,
            model_calls=attempt.spending.calls or None,
            files_read=_json_list(out.files_read) if out.files_read else None,
            sections_read=_json_list(out.sections_read) if out.sections_read else None,
            transcript_path=transcript_path,
            # NULL, like the empty lists: smaller rows are cheaper to update
            transcript_summary=(
                _summary(list(out.transcript), out.files_read, out.sections_read)
                if out.transcript or out.files_read or out.sections_read
                else None
            ),
        )


def arm_task_fields(
    arm: Arm,
    skill: Snapshot | None,
    offered: tuple[Snapshot, ...],
    label_set: tuple[str, ...] | None,
    timeout_s: float,
) -> dict[str, Any]:
    """The fields of a `Task` that every run of `arm` has alike (`abbench.runner.preview_prompt` too)."""
    return {
        "skill": None if offered else skill,
        "skills": offered or ((skill,) if skill is not None else ()),
        "skill_mode": "offered" if offered else "injected",
        "arm": arm.name,
        "model": arm.model,
        "params": arm.params,  # or a dict of the task's own (`Execution._start`)
        "label_set": label_set,
        "timeout_s": timeout_s,
    }


def executed_fields(paid: AttemptWrite, out: AgentOutput) -> RunChange:
    """The run's columns once the attempt `paid` answered `out`: the answer, and what the attempt paid
    and read with its transcript (the run keeps its executed attempt's figures beside its own)."""
    return {
        "prediction": out.prediction,
        "reason": out.reason,
        "confidence": out.confidence,
        "evidence_refs": _json_list(out.evidence_refs) if out.evidence_refs else None,
        "raw_output": out.raw_output,
        "session_id": out.session_id,
        "model": paid.model,
        "input_tokens": paid.input_tokens,
        "output_tokens": paid.output_tokens,
        "cost": paid.cost,
        "latency_ms": paid.latency_ms,
        "files_read": paid.files_read,
        "sections_read": paid.sections_read,
        "transcript_path": paid.transcript_path,
        "transcript_summary": paid.transcript_summary,
        "executed_at": paid.ended_at,
    }


def without_nulls(fields: RunChange) -> RunChange:
    """`fields` without its NULLs, for a run that entered the pass ``pending``.

    A pending run's execution and verdict columns are NULL (a new run's are; `store.runs.reset` sets
    them so), and nothing in the pass sets them before its execution is stored: setting NULL again
    would change nothing, and a narrower update of the row costs half as much.
    """
    return cast("RunChange", {k: v for k, v in fields.items() if v is not None})


_EXECUTED = str(AttemptOutcome.EXECUTED)
_NO_ACTIVATION: RunChange = {"skills_offered": None, "skills_loaded": None, "first_load_turn": None}
"""The activation columns of a run whose arm offers nothing (as `_activation_fields({})`; never mutated)."""


def _activation_fields(values: dict[str, Any]) -> RunChange:
    """The runs columns of `Spending.activation`-shaped values (missing ones NULL); [] stays []."""
    offered, loaded = values.get("skills_offered"), values.get("skills_loaded")
    return {
        "skills_offered": None if offered is None else dumps(list(offered)),
        "skills_loaded": None if loaded is None else dumps(list(loaded)),
        "first_load_turn": values.get("first_load_turn"),
    }


def interrupted() -> AgentError:
    """The error an attempt the runner stopped under carries."""
    return AgentError("interrupted: the run was stopped before its execution finished", INTERRUPTED)


def _transcript_name(run_id: int, attempt: int) -> str:
    """Where an attempt's transcript goes, relative to the store: one file per attempt, so a retry
    never overwrites what an earlier attempt did (the first keeps the plain ``<run id>.jsonl``)."""
    return f"transcripts/{run_id}.jsonl" if attempt <= 1 else f"transcripts/{run_id}-{attempt}.jsonl"


def _summary(
    transcript: Sequence[Any], files_read: Iterable[str], sections_read: Iterable[str]
) -> str | None:
    """A run's transcript summary (JSON): its entries, the tool calls its messages asked for, what it
    read and how its answer was read. `transcript` holds typed events or the dicts written for them."""
    files, sections = list(files_read), list(sections_read)
    if not (transcript or files or sections):
        return None
    summary: dict[str, Any] = {
        "messages": len(transcript),
        "tool_calls": requested_calls(transcript),
        "files_read": len(files),
        "sections_read": len(sections),
        "read_skill": bool(files or sections),
    }
    read = _answer_format(transcript)
    if read is not None:
        summary["answer_format"] = read
    return dumps(summary)


def _answer_format(transcript: Sequence[Any]) -> str | None:
    """How the session's final answer was read (`abbench.agents.ANSWER_FORMATS`, or the failure that
    left none: ``bad_output``, ``truncated``), from its last ``answer`` event; None when it has none."""
    answer = last_answer(transcript)
    if answer is None:
        return None
    if answer.format:
        return answer.format
    return answer_format(answer.method) if answer.method else None


def _json_list(values: Iterable[Any]) -> str | None:
    """JSON for a non-empty list; NULL for an empty one (every reader takes NULL as empty)."""
    values = list(values)
    return dumps(values) if values else None

"""Recording runs made elsewhere: `record_runs` stores submitted outcomes as runs, then grades them.

The caller's own code (a CI job's agent, another evaluation tool) executed the runs; abbench records,
grades and analyses them. Outcomes go through the store's normal write path (`StoreWriter`) and state
machine — ``pending → running → executed`` (or ``fail`` for an execution failure), each attempt in
``run_attempts`` — and then through an ordinary grading pass with the experiment's graders, so they end
``pass``/``fail`` like agent runs and every view (metrics, compare, gate, report) reads them unchanged.

Idempotent per (arm, case, round, attempt): an outcome already recorded with the same content is a
no-op; a different one for a recorded key is refused, as is any invalid outcome — all problems of a
submission in one message, before anything is stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from abbench._result import Result
from abbench.agents import NOT_RECORDED
from abbench.errors import ExperimentError
from abbench.runner._api import _run_sync
from abbench.runner._execution import (
    _activation_fields,
    _json_list,
    _summary,
    _transcript_name,
    executed_fields,
)
from abbench.runner._outcomes import Outcome, read_outcome, where_of
from abbench.runner._scheduler import ExperimentRunner, RunSummary
from abbench.runner._writer import StoreWriter
from abbench.store import (
    INTERRUPTED,
    AttemptWrite,
    Experiment,
    RunChange,
    RunRecord,
    Store,
    current_user,
    dumps,
    now_iso,
    open_store,
)
from abbench.transcript import VerdictEvent, to_events
from abbench.types import AttemptOutcome, RunState

MAX_PROBLEMS_SHOWN = 50
"""How many problems a refused submission lists (the count says how many more there were)."""

_REPLACEABLE = (NOT_RECORDED, INTERRUPTED)
"""Execution failures a recorded outcome may replace: `abbench run` found nothing to execute, or was
stopped before it did."""


class RecordError(ExperimentError):
    """A submission of outcomes was refused; `problems` holds each as ``where: what``."""

    def __init__(self, message: str, problems: list[str]):
        super().__init__(message)
        self.problems = problems


@dataclass(frozen=True)
class RecordSummary(Result):
    """What `record_runs` did.

    Attributes:
        experiment: The experiment's name.
        experiment_id: Its id.
        recorded: Attempts stored by this call.
        unchanged: Outcomes already recorded with the same content (no-ops).
        runs: The runs this call recorded attempts of.
        grading: The grading pass over them (None when nothing new was recorded).
    """

    experiment: str
    experiment_id: int
    recorded: int
    unchanged: int
    runs: tuple[int, ...] = ()
    grading: RunSummary | None = field(default=None, compare=False)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordSummary:
        """The summary `as_dict` wrote (a server's answer)."""
        grading = data.get("grading")
        read: dict[str, Any] = {
            **data,
            "runs": tuple(data.get("runs") or ()),
            "grading": RunSummary.from_dict(grading) if grading is not None else None,
        }
        return cls(**read)


def record_runs(
    store: str | Path | Store | None,
    experiment: int | str | Experiment,
    outcomes: Iterable[Mapping[str, Any]],
    *,
    recorded_by: str | None = None,
) -> RecordSummary:
    """Record outcomes of runs executed elsewhere on a created experiment, then grade them.

    Each outcome is a mapping: ``case_id``, ``arm``, ``round`` (1-based, default 1), ``attempt``
    (the external runner's, default 1), then either what the attempt answered — ``prediction``,
    ``reason``, ``confidence``, ``evidence_refs``, ``raw_output``, ``usage`` ({input_tokens,
    output_tokens}), ``cost``, ``latency_ms``, ``model``, ``session_id``, ``transcript`` (messages)
    or ``transcript_summary``, ``files_read``, ``sections_read``, ``skills_offered``,
    ``skills_loaded`` — or ``error`` (with ``failure_type``) when it gave no usable answer; and
    ``grades`` ({grader name: {passed, score, comment}}): the external tool's verdicts, read by the
    experiment's ``recorded`` graders.

    Args:
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).
        experiment: The experiment (id, name, or Experiment).
        outcomes: The outcomes.
        recorded_by: Recorded on every run as who started it (default: the OS user).

    Returns:
        What was recorded, and the grading pass's summary.

    Raises:
        RecordError: an outcome is invalid, conflicts with a recorded one, or names a run that its
            agent already executed here (nothing is stored then).
        ExperimentError: the experiment is running in another process.
    """
    st = open_store(store)
    exp = st.experiments.get(experiment)
    raws = list(outcomes)
    checked, problems = _check_all(exp, raws)
    runs = {(r.arm, r.case_id, r.round): r for r in st.runs.records(exp.id)}
    fresh, unchanged = _new_attempts(st, exp, checked, runs, problems)
    _refuse(exp, problems, len(raws))
    if not fresh:
        return RecordSummary(exp.name, exp.id, 0, unchanged)
    if not st.experiments.claim_runner(exp.id):
        raise ExperimentError(*st.experiments.get(exp.id).busy_message())
    try:
        _write(st, exp, fresh, recorded_by or current_user())
    finally:
        st.experiments.release_runner(exp.id)
    ids = sorted({r.id for r, _ in fresh})
    grading = _grade(st, exp, ids)
    return RecordSummary(exp.name, exp.id, len(fresh), unchanged, tuple(ids), grading)


def _check_all(exp: Experiment, raws: list[Any]) -> tuple[list[Outcome], list[str]]:
    """Every outcome read and checked, and the problems of those that are not valid."""
    rounds = {a.name: int(exp.spec.rounds) for a in exp.arms}
    recorded = {
        g.get("name") or "recorded"
        for g in (g if isinstance(g, dict) else {"type": g} for g in exp.spec.graders)
        if g.get("type") == "recorded"
    }
    problems: list[str] = []
    checked: list[Outcome] = []
    for index, raw in enumerate(raws):
        outcome, found = read_outcome(raw, index, rounds, recorded)
        if outcome is None:
            where = where_of(raw, index) if isinstance(raw, Mapping) else f"outcome {index + 1}"
            problems.extend(f"{where}: {p}" for p in found)
        else:
            checked.append(outcome)
    if not raws:
        problems.append("no outcome was submitted")
    return checked, problems


def _refuse(exp: Experiment, problems: list[str], submitted: int) -> None:
    """Raise `RecordError` listing `problems` (the first `MAX_PROBLEMS_SHOWN`), if there are any."""
    if not problems:
        return
    shown = problems[:MAX_PROBLEMS_SHOWN]
    more = f"\n  … and {len(problems) - len(shown)} more" if len(problems) > len(shown) else ""
    raise RecordError(
        f"{len(problems)} problem(s) in {submitted} outcome(s) for experiment {exp.name!r}; nothing was "
        "recorded. Correct them and submit again (outcomes already recorded are skipped):\n  "
        + "\n  ".join(shown)
        + more,
        problems,
    )


def _new_attempts(
    store: Store,
    exp: Experiment,
    checked: list[Outcome],
    runs: dict[tuple[str, str, int], RunRecord],
    problems: list[str],
) -> tuple[list[tuple[RunRecord, Outcome]], int]:
    """The outcomes still to record, with their runs (in attempt order), and how many were no-ops;
    conflicts are added to `problems`."""
    done = store.attempts.recorded(exp.id)
    seen: dict[tuple[str, str, int, int], Outcome] = {}
    fresh: list[tuple[RunRecord, Outcome]] = []
    unchanged = 0
    for o in checked:
        run = runs.get((o.arm, o.case_id, o.round))
        if run is None:
            problems.append(
                f"{o.where}: the experiment has no run for this case (is it in its dataset and cases?)"
            )
            continue
        twin = seen.setdefault(o.key, o)
        if twin is not o:
            if twin.digest != o.digest:
                problems.append(f"{o.where}: submitted twice with different content")
            continue
        prior = done.get(run.id, {})
        if o.attempt in prior:
            if prior[o.attempt] == o.digest:
                unchanged += 1
            else:
                problems.append(
                    f"{o.where}: already recorded with different content; a new outcome for this run is "
                    f"a new attempt (attempt {max(prior) + 1})"
                )
            continue
        problem = _recordable(run, o, prior)
        if problem:
            problems.append(f"{o.where}: {problem}")
            continue
        fresh.append((run, o))
    fresh.sort(key=lambda ro: (ro[0].id, ro[1].attempt))
    return fresh, unchanged


def _recordable(run: RunRecord, o: Outcome, prior: dict[int, str]) -> str | None:
    """Why this run cannot take the outcome as a new attempt; None when it can."""
    if prior and o.attempt < max(prior):
        return f"attempt {max(prior)} is already recorded; an earlier attempt cannot follow it"
    if run.state == RunState.PENDING or prior:
        if run.state in (RunState.RUNNING, RunState.EVALUATING):
            return f"the run is {run.state} in a runner; wait for it or cancel the experiment"
        return None
    if run.state == RunState.FAIL and run.failure_type in _REPLACEABLE:
        return None
    if run.state == RunState.CANCELLED:
        return None
    return (
        f"run {run.id} was executed here by its agent (state {run.state}); record outcomes only for runs "
        "that are pending, or of an arm with `agent: external`"
    )


def _write(store: Store, exp: Experiment, fresh: list[tuple[RunRecord, Outcome]], started_by: str) -> None:
    """Store every new attempt through the runner's writer, in one batch per commit."""
    reset = sorted({run.id for run, _ in fresh if run.state != RunState.PENDING})
    if reset:
        store.runs.reset(reset, "recorded from elsewhere: a new attempt")
    writer = StoreWriter(store)
    try:
        by_run: dict[int, list[Outcome]] = {}
        records = {}
        for run, o in fresh:
            by_run.setdefault(run.id, []).append(o)
            records[run.id] = run
        for run_id, attempts in by_run.items():
            _write_run(writer, store.path, records[run_id], attempts, started_by)
    finally:
        writer.close()


def _write_run(
    writer: StoreWriter, store_path: Path, run: RunRecord, attempts: list[Outcome], started_by: str
) -> None:
    """One run's new attempts: pending → running, each attempt, then executed or fail (the last one's)."""
    number = run.attempts
    state: str = RunState.PENDING
    for i, o in enumerate(attempts):
        number += 1
        last = i == len(attempts) - 1
        started = o.started_at or now_iso()
        if state != RunState.RUNNING:
            fields: RunChange = {"attempts": number, "started_at": started, "started_by": started_by}
            fields.update({"failure_type": None, "error": None, "traceback": None, "retryable": None})
            writer.transition(run.id, state, RunState.RUNNING, fields, f"recorded attempt {o.attempt}")
            state = RunState.RUNNING
        if o.output is not None:
            _executed(writer, store_path, run, o, number, started)
            state = RunState.EXECUTED
            if not last:  # a later attempt replaces this execution
                writer.transition(
                    run.id, state, RunState.RUNNING, {"attempts": number + 1}, "recorded re-run"
                )
                state = RunState.RUNNING
        else:
            _failed(writer, run, o, number, started, last)
            if last:
                state = RunState.FAIL


def _executed(
    writer: StoreWriter, store_path: Path, run: RunRecord, o: Outcome, number: int, started: str
) -> None:
    out = o.output
    assert out is not None
    transcript_path = None
    if out.transcript:
        transcript_path = _transcript_name(run.id, number)
        writer.transcript(store_path / transcript_path, out.transcript)
    summary_text = (
        _summary(
            [e for e in to_events(out.transcript, errors="keep") if not isinstance(e, VerdictEvent)],
            out.files_read,
            out.sections_read,
        )
        if o.summary is None
        else dumps(o.summary)
    )
    ended = o.ended_at or now_iso()
    paid = AttemptWrite(
        run.id,
        number,
        AttemptOutcome.EXECUTED,
        started_at=started,
        ended_at=ended,
        model=out.model,
        input_tokens=out.usage.input_tokens if out.usage is not None else None,
        output_tokens=out.usage.output_tokens if out.usage is not None else None,
        cost=out.cost,
        latency_ms=out.latency_ms,
        files_read=_json_list(out.files_read),
        sections_read=_json_list(out.sections_read),
        transcript_path=transcript_path,
        transcript_summary=summary_text,
        recorded_attempt=o.attempt,
        recorded_digest=o.digest,
    )
    fields: RunChange = {
        **executed_fields(paid, out),
        "attempts": number,
        "failure_type": None,
        "error": None,
        **_activation_fields(
            {
                "skills_offered": out.skills_offered,
                "skills_loaded": out.skills_loaded,
                "first_load_turn": out.first_load_turn,
            }
        ),
    }
    writer.attempt(paid)
    writer.transition(run.id, RunState.RUNNING, RunState.EXECUTED, fields, f"recorded attempt {o.attempt}")


def _failed(writer: StoreWriter, run: RunRecord, o: Outcome, number: int, started: str, last: bool) -> None:
    ended = o.ended_at or now_iso()
    writer.attempt(
        AttemptWrite(
            run.id,
            number,
            AttemptOutcome.FAILED,
            failure_type=o.failure_type,
            error=o.error,
            started_at=started,
            ended_at=ended,
            recorded_attempt=o.attempt,
            recorded_digest=o.digest,
        )
    )
    if not last:
        detail = f"recorded attempt {o.attempt} failed ({o.failure_type}: {o.error})"
        writer.transition(run.id, RunState.RUNNING, RunState.RUNNING, {"attempts": number + 1}, detail)
        return
    fields: RunChange = {
        "attempts": number,
        "failure_type": o.failure_type,
        "error": o.error,
        "retryable": 0,
        "finished_at": ended,
    }
    writer.transition(run.id, RunState.RUNNING, RunState.FAIL, fields, f"recorded attempt {o.attempt} failed")


def _grade(store: Store, exp: Experiment, run_ids: list[int]) -> RunSummary:
    """An ordinary grading pass over the runs just recorded, with the experiment's graders."""
    runner = ExperimentRunner(store, store.experiments.get(exp.id), grade_only=True, run_ids=run_ids)
    return _run_sync(runner)

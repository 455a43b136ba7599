"""Plain values shared by every layer: cases, skill sections, agent outputs, run and experiment states."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

CASE_FIELDS = (
    "case_id",
    "input",
    "expected",
    "history",
    "context",
    "domain",
    "request_id",
    "metadata",
    "expected_skill",
)
"""The fields a mapping profile can fill, in the order they are shown and hashed."""

NO_SKILL = "none"
"""A case's `expected_skill` when no skill may activate on it (a must-not-trigger case)."""

SKILL_MODES = ("injected", "offered")
"""How an arm gives the agent its skills: put into the task, or offered in a catalogue to load from."""

REVIEW_VERDICTS = ("gold_correct", "model_correct", "ambiguous_standard", "missing_capability_info", "unsure")
"""What a person may say about a disagreement between gold and prediction."""


@dataclass(frozen=True, slots=True)
class Case:
    """One item of a dataset.

    Attributes:
        case_id: Stable identity within the dataset (from the file, or generated from the content).
        input: The query the agent answers, as text.
        expected: Gold label or reference answer; None when the dataset carries no gold.
        history: Earlier conversation turns (list of ``{"role", "content"}``) or None.
        context: Any extra context the agent is given (text or JSON value) or None.
        domain: The case's domain (垂域), used for per-domain metrics and clustered errors.
        request_id: The id of the production request the case came from, if any.
        metadata: Free-form JSON object kept with the case.
        source_row: The raw row as read from the file (always kept, never hashed into the case identity).
        source_line: Where the row sits in its file: ``"line 12"``, ``"Sheet1!row 5"``, ``"split test #3"``.
        expected_skill: The skill that should activate on this case in an offered arm, or ``"none"``
            (`NO_SKILL`) when no skill may; None when activation is not assessed on it. Gold, like
            `expected`: no agent sees it.
    """

    case_id: str
    input: str
    expected: str | None = None
    history: Any = None
    context: Any = None
    domain: str | None = None
    request_id: str | None = None
    metadata: dict[str, Any] | None = None
    source_row: Any = None
    source_line: str | None = None
    expected_skill: str | None = None

    def canonical(self) -> dict[str, Any]:
        """The case fields that define the dataset's identity (everything but the source row).

        ``expected_skill`` is left out when it is None, so datasets that never say it keep the
        fingerprints they had before the field existed.
        """
        out = {name: getattr(self, name) for name in CASE_FIELDS}
        if out["expected_skill"] is None:
            del out["expected_skill"]
        return out


@dataclass(frozen=True, slots=True)
class Section:
    """One Markdown heading of a skill file and the text under it, addressable as ``path#anchor``.

    Attributes:
        ref: The stable reference, e.g. ``"knowledge/车控.md#空调"`` or ``"SKILL.md#rules-2"``.
        path: File path relative to the skill folder, with forward slashes.
        heading: The heading text as written (CJK kept as is).
        level: 1 for ``#``, 2 for ``##`` ... ; 0 for the preamble before the first heading.
        text: The section's own text: from its heading line up to the next heading of any level.
        start_line: First line (1-based) of the section in its file.
        end_line: Last line (1-based, inclusive).
        parents: Headings of the enclosing sections, outermost first.
    """

    ref: str
    path: str
    heading: str
    level: int
    text: str
    start_line: int
    end_line: int
    parents: tuple[str, ...] = ()


class RunState(StrEnum):
    """The states of a run (see docs/ARCHITECTURE.md, "Run states")."""

    PENDING = "pending"
    RUNNING = "running"
    EXECUTED = "executed"
    EVALUATING = "evaluating"
    PASS = "pass"
    FAIL = "fail"
    CANCELLED = "cancelled"

    @property
    def terminal(self) -> bool:
        """Whether nothing more happens to a run in this state without a person asking."""
        return self in (RunState.PASS, RunState.FAIL, RunState.CANCELLED)


class ExperimentStatus(StrEnum):
    """The states of an experiment (docs/ARCHITECTURE.md, "Experiment status and control").

    ``created`` (nothing run yet) → ``running`` → ``finished``; ``paused`` by a person or a budget,
    ``cancelled`` by a person; ``interrupted`` when its runner stopped without saying why (a crash, a
    closed kernel): `run_experiment` picks it up again.
    """

    CREATED = "created"
    RUNNING = "running"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    FINISHED = "finished"
    INTERRUPTED = "interrupted"


class Control(StrEnum):
    """What someone asked of an experiment (the ``experiments.control`` column): any process may write
    it (CLI, widget, another notebook) and the runner obeys it between runs."""

    RUN = "run"
    PAUSE = "pause"
    CANCEL = "cancel"


class Phase(StrEnum):
    """An experiment between a `Control` asked and the runner's answer, as views show it beside its
    `ExperimentStatus`: ``pausing`` (runs in flight finishing), ``resuming``, ``cancelling``.

    Never stored: a view derives it from the status and the control (the runner's own tracker says
    ``cancelling`` while it cancels the runs in flight).
    """

    PAUSING = "pausing"
    RESUMING = "resuming"
    CANCELLING = "cancelling"


class Halt(StrEnum):
    """Why an experiment's execution stopped before it was done (the ``experiments.halt`` column, with
    the process and the signal): what every view says beside ``interrupted``, and what decides whether
    anything but a person may resume it.
    """

    KILLED = "killed"
    """Its process died without a word: SIGKILL, out of memory, a lost machine (never written: it is
    what a dead runner that recorded nothing means)."""
    STOPPED = "stopped"
    """Stopped on purpose: Ctrl-C, SIGTERM or SIGHUP to the process running it. Only a person resumes it."""
    SERVER_STOPPED = "server stopped"
    """The server running it in its pool shut down; that server resumes it when it starts again."""
    ERROR = "error"
    """Its runner stopped on an error (a store it could not write, a full disk); a person resumes it."""


class GradeStatus(StrEnum):
    """Whether a grader reached a verdict (the ``grades.status`` column)."""

    OK = "ok"
    ERROR = "error"
    """The grader could not reach a verdict: a grading failure, with its error (and maybe retryable)."""


class AttemptOutcome(StrEnum):
    """How one execution attempt of a run ended (the ``run_attempts.outcome`` column)."""

    EXECUTED = "executed"
    """It produced an answer."""
    FAILED = "failed"
    """It gave no usable answer (its ``failure_type`` says why)."""
    CANCELLED = "cancelled"
    """It was stopped while it ran."""
    RUNNING = "running"
    """It is under way (recorded when it starts, so a process killed under it still leaves its attempt:
    reconciliation then records it ``failed``, ``interrupted``)."""


class FailureType(StrEnum):
    """Why a run's execution gave no usable answer: the ``failure_type`` of an execution failure
    (`abbench.errors.AgentError.failure_type`, the ``runs.failure_type`` column, stored as its text).

    A `StrEnum`, so ``FailureType.TIMEOUT == "timeout"`` and the store keeps the words. These are the
    types abbench itself gives; an outcome recorded from elsewhere (`record_runs`) may name its own.
    """

    AGENT_ERROR = "agent_error"
    """An agent failed in a way no other type names (the default of `AgentError`)."""
    TIMEOUT = "timeout"
    """No answer within the arm's ``timeout_s`` (or the model call's own)."""
    BAD_OUTPUT = "bad_output"
    """The agent answered, but not in the contract: not the answer schema, not an `AgentOutput`, an
    unreadable reply. Its raw text is kept."""
    TRUNCATED = "truncated"
    """The model's reply was cut at ``max_tokens`` (``finish_reason: length``) and is not one whole
    JSON answer: never read loosely."""
    MAX_TURNS = "max_turns"
    """The agent's model was still calling tools after its last turn."""
    BAD_TASK = "bad_task"
    """The case cannot be asked of the agent (the built-in agent found no labels to choose from)."""
    AUTH = "auth"
    """The endpoint refused the key (401/403)."""
    QUOTA = "quota"
    """The account behind the key has no quota left."""
    RATE_LIMITED = "rate_limited"
    """The endpoint asked to slow down (429) more often than the retries allow."""
    SERVER_ERROR = "server_error"
    """The endpoint failed (5xx, 409)."""
    CONNECTION_ERROR = "connection_error"
    """The endpoint could not be reached."""
    NOT_FOUND = "not_found"
    """The endpoint or model does not exist (404)."""
    BAD_REQUEST = "bad_request"
    """The endpoint rejected the request (a model name, a setting, a prompt past its context)."""
    STREAM_INTERRUPTED = "stream_interrupted"
    """The answer's stream broke off before its end."""
    INTERRUPTED = "interrupted"
    """The run was stopped before its execution finished (a stop, a crash): run it again."""
    CANCELLED = "cancelled"
    """A Dask worker's run was cancelled by its coordinator."""
    WORKER_LOST = "worker_lost"
    """The Dask worker running it died; the run is tried again on another."""
    SNAPSHOT_MISMATCH = "snapshot_mismatch"
    """A Dask worker's shared copy of the skill differs from the store's snapshot."""
    NOT_RECORDED = "not_recorded"
    """An ``external`` arm's run that nobody recorded (abbench does not run those itself)."""
    EXTERNAL_ERROR = "external_error"
    """A recorded outcome's failure that named no type of its own."""
    NOT_GRADED = "not_graded"
    """An imported skill-creator result that was never graded."""


class RunOutcome(StrEnum):
    """What became of a run (`run_outcome`), in the order of the store's outcome codes
    (`abbench.store.OUTCOMES`); ``pass``, ``fail`` and ``cancelled`` are also `RunState` names."""

    UNFINISHED = "unfinished"
    """Pending, running, executed (waiting for grading) or evaluating."""
    PASS = "pass"
    """Graded right."""
    FAIL = "fail"
    """Graded wrong: a real answer that disagrees with the gold or the judge."""
    EXECUTION_FAILED = "execution_failed"
    """The agent gave no usable answer (``failure_type`` says why)."""
    GRADING_FAILED = "grading_failed"
    """The answer exists but no grader reached a verdict."""
    CANCELLED = "cancelled"
    """Cancelled before or while it ran."""
    SCORED = "scored"
    """Graded with a score and no verdict: every grader that answered only scored it (a judge without a
    threshold, a recorded score without ``passed``). Neither right nor wrong; the mean score counts it."""


OUTCOME_WORDS: dict[str, str] = {
    RunOutcome.PASS: "right",
    RunOutcome.FAIL: "wrong",
    RunOutcome.EXECUTION_FAILED: "execution failed",
    RunOutcome.GRADING_FAILED: "grading failed",
    RunOutcome.CANCELLED: "cancelled",
    RunOutcome.SCORED: "scored",
    RunOutcome.UNFINISHED: "unfinished",
    "pending": "pending",
    "running": "running",
    "executed": "waiting for grading",
    "evaluating": "grading",
}
"""The word every view uses for a run's outcome (`run_outcome`) or open state.

The store's state names stay ``pass``/``fail``; people read *right* and *wrong* for graded answers,
and *execution failed* / *grading failed* for runs that never got a verdict — never a bare "failed"
for a wrong answer, nor one "fail" count that mixes the two.
"""

OUTCOME_COLOURS: dict[str, str] = {
    RunOutcome.PASS: "#54a24b",
    RunOutcome.FAIL: "#e45756",
    RunOutcome.SCORED: "#9d755d",
    RunOutcome.EXECUTION_FAILED: "#f58518",
    RunOutcome.GRADING_FAILED: "#eeca3b",
    RunOutcome.CANCELLED: "#9d9d9d",
    "pending": "#d0d7de",
    "running": "#4c78a8",
    "executed": "#72b7b2",
    "evaluating": "#b279a2",
}
"""The colour every view draws an outcome (`run_outcome`) or open state in, in the order bars stack and
legends list them: the report's figures and tables, the widgets' progress bars."""


def run_outcome(state: str, failure_type: str | None = None, passed: Any = None) -> str:
    """What became of a run, as a key of `OUTCOME_WORDS`.

    ``pass`` (graded right), ``fail`` (graded wrong), ``execution_failed`` (`failure_type` set: the
    agent gave no usable answer), ``grading_failed`` (state ``fail`` without a verdict), ``scored``
    (state ``pass`` without a verdict: graded with a score only), ``cancelled``; an open run (pending,
    running, executed, evaluating) keeps its state's name. `passed` is the run's verdict column: pass it
    for a run in ``pass`` or ``fail``.
    """
    state = str(state)
    if state == RunState.FAIL:
        if failure_type is not None:
            return RunOutcome.EXECUTION_FAILED
        return RunOutcome.GRADING_FAILED if passed is None else RunOutcome.FAIL
    if state == RunState.PASS and passed is None:
        return RunOutcome.SCORED
    return state


def outcome_word(outcome: str) -> str:
    """The word for people of an outcome key (`run_outcome`) or open state: ``fail`` reads *wrong*."""
    return OUTCOME_WORDS.get(str(outcome), str(outcome))


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens an agent or judge spent on one run."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True, slots=True)
class AgentOutput:
    """What an agent adapter returns for one (case, round, arm).

    Attributes:
        prediction: The label or answer.
        reason: The agent's stated reason.
        confidence: 0..1, or None when the agent gives none.
        evidence_refs: Snapshot references (``path#anchor``) the agent cites.
        raw_output: The final raw text the agent produced.
        transcript: Every message, tool call and tool result of the session, in order: the JSON objects
            written to its transcript file, one per event (`abbench.transcript` types abbench's own,
            `abbench.transcript.to_events` reads them; other entries are kept as they are).
        files_read: Skill files the agent actually opened (relative paths).
        sections_read: Skill sections (references) the agent actually opened.
        usage: Tokens spent; None when the agent reported none (unknown, not zero).
        cost: Money spent, in the price table's currency (USD by default); None when unknown (the
            agent reported none, or the model has no price).
        latency_ms: Wall time of the run (an adapter's 0.0: the runner measures it); None when unknown
            (a run recorded from elsewhere that reported none): unknown is not 0 ms.
        session_id: The isolated session this run used.
        model: The model that answered, as the endpoint reported it.
        skills_offered: The names of the skills an offered arm's catalogue showed; None when the
            skill was injected (or the arm has none).
        skills_loaded: The names of the offered skills the agent loaded, in load order (``()``:
            offered, nothing loaded); None when nothing was offered.
        first_load_turn: The 1-based model turn (the builtin agent: step) at which the first skill
            was loaded; None when none was.
    """

    prediction: str | None
    reason: str | None = None
    confidence: float | None = None
    evidence_refs: tuple[str, ...] = ()
    raw_output: str | None = None
    transcript: tuple[dict[str, Any], ...] = ()
    files_read: tuple[str, ...] = ()
    sections_read: tuple[str, ...] = ()
    usage: Usage | None = None
    cost: float | None = None
    latency_ms: float | None = 0.0
    session_id: str | None = None
    model: str | None = None
    skills_offered: tuple[str, ...] | None = None
    skills_loaded: tuple[str, ...] | None = None
    first_load_turn: int | None = None

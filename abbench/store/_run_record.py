"""The records of runs: a run as stored (`RunRecord`), a piece of work for the runner (`WorkItem`), a reconciliation."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abbench.store._base import loads
from abbench.types import AgentOutput, RunState

INTERRUPTED = "interrupted"
"""failure_type of a run whose process stopped before its execution finished."""


EXECUTION_FIELDS = (
    "prediction",
    "reason",
    "confidence",
    "evidence_refs",
    "raw_output",
    "files_read",
    "sections_read",
    "input_tokens",
    "output_tokens",
    "cost",
    "latency_ms",
    "session_id",
    "model",
    "transcript_path",
    "transcript_summary",
    "executed_at",
    "skills_offered",
    "skills_loaded",
    "first_load_turn",
)


class CachedCalls:
    """The `cached` flag of a record that counts the model calls the response cache answered."""

    __slots__ = ()
    cached_calls: int | None

    @property
    def cached(self) -> bool:
        """True when the response cache answered its model calls (some or all: see `cached_calls`);
        their cost was then saved, not spent (`cost_saved`)."""
        return bool(self.cached_calls)


@dataclass(frozen=True)
class WorkItem:
    """A run the scheduler still has to execute or grade."""

    run_id: int
    arm_id: int
    case_idx: int
    case_id: str
    round: int
    state: str
    attempts: int
    grade_attempts: int


@dataclass(frozen=True)
class RunRecord(CachedCalls):
    """A stored run with its execution (what graders, reviews and exports read)."""

    id: int
    experiment_id: int
    arm_id: int
    arm: str
    case_idx: int
    case_id: str
    round: int
    state: str
    failure_type: str | None
    error: str | None
    retryable: bool | None
    attempts: int
    grade_attempts: int
    output: AgentOutput | None
    transcript_path: Path | None
    transcript_summary: dict[str, Any]
    passed: bool | None
    score: float | None
    started_by: str | None
    started_at: str | None
    executed_at: str | None
    finished_at: str | None
    cached_calls: int | None = None
    cost_saved: float | None = None
    skills_offered: tuple[str, ...] | None = None
    """The names of the skills the run's catalogue offered; None when injected (or no skill)."""
    skills_loaded: tuple[str, ...] | None = None
    """The offered skills the agent loaded, in load order (``()``: none); None when nothing was offered."""
    first_load_turn: int | None = None
    """The model turn (1-based) of the first load; None when no skill was loaded."""

    @property
    def activated(self) -> bool | None:
        """Whether the agent loaded an offered skill: None when nothing was offered or the execution
        failed (not assessed: an error is never a correct non-activation)."""
        if self.skills_loaded is None or self.execution_failed:
            return None
        return bool(self.skills_loaded)

    @property
    def execution_failed(self) -> bool:
        """True for an execution failure (re-run it); False for a grading failure (re-grade it)."""
        return self.state == RunState.FAIL and self.failure_type is not None

    @property
    def grading_failed(self) -> bool:
        """True when the execution succeeded but grading could not reach a verdict."""
        return self.state == RunState.FAIL and self.failure_type is None and self.passed is None


@dataclass(frozen=True)
class Reconciled:
    """What start-up reconciliation changed."""

    interrupted: int
    waiting_for_grading: int


_RECORD_COLUMNS = (
    "r.id, r.experiment_id, r.arm_id, a.name, r.case_idx, r.case_id, r.round, r.state, r.failure_type, r.error, "
    "r.retryable, r.attempts, r.grade_attempts, r.prediction, r.reason, r.confidence, r.evidence_refs, "
    "r.raw_output, r.files_read, r.sections_read, r.input_tokens, r.output_tokens, r.cost, r.latency_ms, "
    "r.session_id, r.model, r.transcript_path, r.transcript_summary, r.passed, r.score, r.started_by, "
    "r.started_at, r.executed_at, r.finished_at, r.cached_calls, r.cost_saved, r.skills_offered, "
    "r.skills_loaded, r.first_load_turn"
)


def _names(stored: str | None) -> tuple[str, ...] | None:
    """A stored JSON array of skill names; None stays None (not offered), ``[]`` is ``()``."""
    if stored is None:
        return None
    return tuple(str(n) for n in loads(stored) or ())


_RESET = (
    *EXECUTION_FIELDS,
    "failure_type",
    "error",
    "traceback",
    "retryable",
    "passed",
    "score",
    "finished_at",
)


_COUNTS_SQL = (
    "SELECT arm_id, state, COUNT(*) FROM runs WHERE experiment_id=:e AND state IN ('pass','fail','cancelled') "
    "GROUP BY arm_id, state "
    "UNION ALL SELECT arm_id, state, COUNT(*) FROM runs INDEXED BY runs_experiment_state "
    "WHERE experiment_id=:e AND state IN ('running','executed','evaluating') GROUP BY arm_id, state "
    "UNION ALL SELECT arm_id, '', COUNT(*) FROM runs WHERE experiment_id=:e GROUP BY arm_id"
)
"""Finished and in-flight runs per arm and state, and each arm's total (the state ``''``)."""

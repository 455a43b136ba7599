"""What became of each case's runs in each arm, summed: the record the comparisons read."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class CaseOutcomes:
    """Sums per (arm, case) of one experiment's runs: what a paired comparison needs, and no more.

    Every array has one entry per (arm, case) that has at least one run, ordered by arm id and case.

    Attributes:
        arm_id: The arm's id in the store.
        case_idx: Position of the case in the dataset.
        runs: Runs of the case in that arm (its rounds).
        passed: Runs graded as right (a run graded with a score and no verdict is in none of these
            counts: see `scored`).
        failed: Runs graded as wrong.
        execution_failed: Runs whose execution failed.
        grading_failed: Runs whose grading failed.
        cancelled: Runs cancelled.
        executed: Runs with a finished execution (an answer stored: `EXECUTED_SQL`).
        cost: Sum of the agent's cost over the runs that reported one (NaN when none did).
        latency_ms: Sum of latencies over the runs that reported one.
        tokens: Sum of input plus output tokens over the runs that reported both (NaN when none did).
        scored: Graded runs with a score.
        score: Sum of those scores, as SQLite adds floats (its last bit depends on the order: a
            comparison takes each case's mean from the scores themselves, `abbench.stats.exact_means`).
        score_sq: Sum of their squares.
        cost_runs: Runs that reported a cost: a case's mean cost is ``cost / cost_runs`` (unknown is not
            $0, so a run without a cost is left out, never counted as free).
        latency_runs: Runs that reported a latency (a run recorded from elsewhere may not).
        token_runs: Runs that reported input and output tokens.
    """

    arm_id: np.ndarray
    case_idx: np.ndarray
    runs: np.ndarray
    passed: np.ndarray
    failed: np.ndarray
    execution_failed: np.ndarray
    grading_failed: np.ndarray
    cancelled: np.ndarray
    executed: np.ndarray
    cost: np.ndarray
    latency_ms: np.ndarray
    tokens: np.ndarray
    scored: np.ndarray
    score: np.ndarray
    score_sq: np.ndarray
    cost_runs: np.ndarray
    latency_runs: np.ndarray
    token_runs: np.ndarray

    @property
    def graded(self) -> np.ndarray:
        """Runs with a verdict: passed plus failed."""
        graded: np.ndarray = self.passed + self.failed
        return graded

    def for_arm(self, arm_id: int) -> CaseOutcomes:
        """The entries of one arm."""
        mask = self.arm_id == arm_id
        return CaseOutcomes(**{f.name: getattr(self, f.name)[mask] for f in fields(self)})

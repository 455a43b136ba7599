"""One grader's verdicts on an experiment's runs (`GraderVerdicts`): the figures as that grader alone saw them.

A run's own verdict (``runs.passed``, its state) combines every deciding grader's latest grade
(`abbench.runner.combine_verdicts`). An analyst who asks how `label_match` alone, or the judge alone,
judged the arms reads each run's latest grade by that grader instead, of the run's current execution
only (a grade of an earlier execution judged another answer). Runs that never answered keep their
outcome (execution failed, cancelled, unfinished); an answered run the grader did not grade is *not
graded* by it, and one it failed on (an error, or neither a verdict nor a score) is a grading failure:
neither is assessed, and both are counted.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from abbench.store._noun import Noun
from abbench.store._run_columns import _MISSING, FAILED, GRADING_FAILED, PASSED, SCORED, UNFINISHED
from abbench.store._run_reader import _nan_missing, _plain_cursor
from abbench.store._run_table import RunTable
from abbench.store.bulk._case_outcomes import CaseOutcomes
from abbench.store.bulk._outcomes import EXECUTED_SQL
from abbench.types import GradeStatus, RunState

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np

_NOT_GRADED = 7
"""The code the query gives an answered run the grader has no grade of its current execution for."""

# A run's outcome as one grader saw it: the codes of `abbench.store.OUTCOMES`, and `_NOT_GRADED`. The
# grade joined is the grader's latest on the run (the grades_run_grader index: one seek a run).
_VERDICT_SQL = (
    f"CASE WHEN r.state = '{RunState.CANCELLED}' THEN 5 "
    f"WHEN r.state = '{RunState.FAIL}' AND r.failure_type IS NOT NULL THEN 3 "
    f"WHEN NOT {EXECUTED_SQL} THEN 0 "  # (its columns are the run's: grades have none of those names)
    f"WHEN g.id IS NULL OR g.run_attempt <> r.attempts THEN {_NOT_GRADED} "
    f"WHEN g.status <> '{GradeStatus.OK}' THEN 4 "
    "WHEN g.passed IS NOT NULL THEN 2 - g.passed "
    "WHEN g.score IS NOT NULL THEN 6 ELSE 4 END"
)
_SCORE_SQL = (
    f"CASE WHEN g.status = '{GradeStatus.OK}' AND (g.run_attempt IS NULL OR g.run_attempt = r.attempts) "
    f"THEN IFNULL(g.score, {_MISSING}) ELSE {_MISSING} END"
)


@dataclass(frozen=True)
class GraderVerdicts:
    """One grader's verdict on each run of some arms of an experiment, ordered by arm id, case and round.

    Attributes:
        grader: The grader's name.
        arm_id: Each run's arm id.
        case_idx: Its case position.
        round: Its round (from 0).
        outcome: Its outcome by this grader's grade alone (codes of `abbench.store.OUTCOMES`): right,
            wrong, scored, grading failed (the grader failed, or gave neither a verdict nor a score);
            execution failed, cancelled and unfinished as the run is. A run the grader has not graded is
            ``unfinished`` here, and marked in `not_graded`.
        not_graded: Whether the run answered and the grader has no grade of its current execution.
        score: The grader's score of the run (NaN: none).
    """

    grader: str
    arm_id: np.ndarray
    case_idx: np.ndarray
    round: np.ndarray
    outcome: np.ndarray
    not_graded: np.ndarray
    score: np.ndarray

    def on(self, table: RunTable) -> RunTable:
        """`table` with each run's outcome, verdict and score this grader's (the rest as it is). A run
        of the table this read does not have (written between the two reads) is not graded by it."""
        import numpy as np

        executed = table.executed
        n = len(table)
        at, found = self._positions(table.arm_id, table.case_idx, table.round)
        outcome = np.full(n, UNFINISHED, dtype=np.int8)
        outcome[found] = self.outcome[at[found]]
        score = np.full(n, np.nan)
        score[found] = self.score[at[found]]
        passed = np.where(outcome == PASSED, 1.0, np.where(outcome == FAILED, 0.0, np.nan))
        return replace(table, outcome=outcome, passed=passed, score=score, execution_done=executed)

    def _positions(
        self, arm_id: np.ndarray, case_idx: np.ndarray, rnd: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Where each (arm, case, round) sits in these runs, and whether it is there at all."""
        import numpy as np

        if not self.arm_id.size or not arm_id.size:
            return np.zeros(arm_id.size, dtype=np.int64), np.zeros(arm_id.size, dtype=bool)
        cases = int(max(self.case_idx.max(), case_idx.max())) + 1
        rounds = int(max(self.round.max(), rnd.max())) + 1
        mine = (self.arm_id.astype(np.int64) * cases + self.case_idx) * rounds + self.round
        theirs = (arm_id.astype(np.int64) * cases + case_idx) * rounds + rnd
        at = np.minimum(np.searchsorted(mine, theirs), mine.size - 1)
        return at, mine[at] == theirs

    def case_outcomes(self, sums: CaseOutcomes) -> CaseOutcomes:
        """`sums` (`store.runs.case_outcomes` of these arms) with the verdicts and scores this grader's: right,
        wrong, grading failed, and the scores, counted per (arm, case); runs, failures of execution,
        cancellations, cost, latency and tokens as they are."""
        import numpy as np

        size = int(sums.arm_id.size)
        if not size or not self.arm_id.size:
            zero = np.zeros(size, dtype=np.int64)
            return replace(sums, passed=zero, failed=zero, grading_failed=zero, scored=zero,
                           score=np.zeros(size), score_sq=np.zeros(size))  # fmt: skip
        cases = int(max(sums.case_idx.max(), self.case_idx.max())) + 1
        keys = sums.arm_id.astype(np.int64) * cases + sums.case_idx
        mine = self.arm_id.astype(np.int64) * cases + self.case_idx
        at = np.minimum(np.searchsorted(keys, mine), size - 1)
        found = keys[at] == mine

        def count(mask: np.ndarray) -> np.ndarray:
            counted: np.ndarray = np.bincount(at[found & mask], minlength=size).astype(np.int64)
            return counted

        o = self.outcome
        scored = found & ~np.isnan(self.score) & np.isin(o, (PASSED, FAILED, SCORED))
        values = np.where(scored, self.score, 0.0)
        return replace(
            sums,
            passed=count(o == PASSED),
            failed=count(o == FAILED),
            grading_failed=count(o == GRADING_FAILED),
            scored=count(scored),
            score=np.bincount(at[scored], weights=values[scored], minlength=size),
            score_sq=np.bincount(at[scored], weights=values[scored] ** 2, minlength=size),
        )

    def graded_scores(self, arm_id: int) -> list[tuple[int, float]]:
        """``(case position, score)`` of the arm's runs this grader graded with a score (right, wrong or
        scored), by case and round: `store.analysis.graded_scores` as this grader saw them."""
        import numpy as np

        keep = (
            (self.arm_id == arm_id) & ~np.isnan(self.score) & np.isin(self.outcome, (PASSED, FAILED, SCORED))
        )
        return [(int(c), float(s)) for c, s in zip(self.case_idx[keep], self.score[keep], strict=True)]


class GraderVerdictReads(Noun):
    """One grader's verdicts on an experiment's runs (part of ``store.grades``)."""

    def verdicts(self, exp_id: int, grader: str, arm_ids: Sequence[int]) -> GraderVerdicts:
        """The latest grade by `grader` of each run of these arms, as `GraderVerdicts`.

        Args:
            exp_id: The experiment's id.
            grader: A pointwise grader's name (a pairwise judge grades pairs, not runs).
            arm_ids: The arms.
        """
        import numpy as np

        ids = list(arm_ids)
        marks = ",".join("?" * len(ids)) or "NULL"
        rows = _plain_cursor(self._store.conn).execute(
            f"SELECT r.arm_id, r.case_idx, r.round, {_VERDICT_SQL}, {_SCORE_SQL} FROM runs r "
            "LEFT JOIN grades g ON g.id = (SELECT MAX(id) FROM grades WHERE run_id = r.id AND grader = ? "
            f"AND other_run_id IS NULL) WHERE r.experiment_id = ? AND r.arm_id IN ({marks}) "
            "ORDER BY r.arm_id, r.case_idx, r.round",
            (grader, exp_id, *ids),
        )
        read = np.fromiter(
            rows, dtype=np.dtype([("a", "i8"), ("c", "i8"), ("r", "i8"), ("o", "i1"), ("s", "f8")])
        )
        code = np.ascontiguousarray(read["o"])
        not_graded = code == _NOT_GRADED
        code[not_graded] = UNFINISHED
        return GraderVerdicts(
            grader=grader,
            arm_id=np.ascontiguousarray(read["a"]),
            case_idx=np.ascontiguousarray(read["c"]),
            round=np.ascontiguousarray(read["r"]),
            outcome=code,
            not_graded=not_graded,
            score=_nan_missing(np.ascontiguousarray(read["s"])),
        )

"""Per (arm, case) sums of an experiment's runs (`CaseOutcomes`), built from the store's sums query."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from abbench.errors import UsageError

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
        passed: Runs graded as right.
        failed: Runs graded as wrong.
        execution_failed: Runs whose execution failed.
        grading_failed: Runs whose grading failed.
        cancelled: Runs cancelled.
        executed: Runs with a finished execution (a latency recorded).
        cost: Sum of the agent's cost over executed runs.
        latency_ms: Sum of latencies over executed runs.
        tokens: Sum of input plus output tokens over executed runs.
        scored: Graded runs with a score.
        score: Sum of those scores.
        score_sq: Sum of their squares.
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

    @property
    def graded(self) -> np.ndarray:
        """Runs with a verdict: passed plus failed."""
        graded: np.ndarray = self.passed + self.failed
        return graded

    def for_arm(self, arm_id: int) -> CaseOutcomes:
        """The entries of one arm."""
        mask = self.arm_id == arm_id
        return CaseOutcomes(**{f.name: getattr(self, f.name)[mask] for f in fields(self)})


def _nan_sums(groups: Any, values: Any, size: int) -> Any:
    """Sums per group skipping NaN; NaN where every value of the group is NaN (unknown stays unknown)."""
    import numpy as np

    known = ~np.isnan(values)
    sums = np.bincount(groups, weights=np.where(known, values, 0.0), minlength=size)
    return np.where(np.bincount(groups, weights=known, minlength=size) > 0, sums, np.nan)


_SUMS_FIELDS = (
    ("arm_id", "i8"), ("case_idx", "i8"), ("runs", "i8"), ("packed", "i8"), ("executed", "i8"), ("cost", "f8"),
    ("latency", "f8"), ("tokens", "f8"), ("scored", "i8"), ("score", "f8"), ("score_sq", "f8"),
)  # fmt: skip
"""The columns of `Store.case_outcomes`' sums query, in its order, with the type each is read as."""


def _sums_table(rows: Iterable[tuple[Any, ...]]) -> np.ndarray:
    """The rows of `Store.case_outcomes`' sums query as a record array, straight from the cursor: one
    pass (each field converted as its own column would be), a third of the time of splitting the rows
    into columns first, and no list of a few hundred thousand tuples held beside it."""
    import numpy as np

    return np.fromiter(rows, dtype=np.dtype(list(_SUMS_FIELDS)))


def _case_sums(exp_id: int, finished: np.ndarray, rest: np.ndarray) -> CaseOutcomes:
    """`CaseOutcomes` from the per-(arm, case) sums of finished runs plus those of open runs
    (`_sums_table` records)."""
    import numpy as np

    table = np.concatenate([finished, rest]) if rest.size else finished
    arm_id, case_idx = np.ascontiguousarray(table["arm_id"]), np.ascontiguousarray(table["case_idx"])
    ints = np.stack([table[name] for name in ("runs", "packed", "executed", "scored")])
    floats = np.stack([table[name] for name in ("cost", "latency", "tokens", "score", "score_sq")])
    for unknown in (0, 2):  # cost, tokens: -1 is "no run of the case reported it"
        floats[unknown][floats[unknown] < 0] = np.nan
    if rest.size:  # a case with finished and open runs has two rows: add them up
        keys = arm_id * (int(case_idx.max()) + 1) + case_idx
        unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        if unique.size < keys.size:
            ints = np.stack(
                [np.bincount(inverse, weights=row, minlength=unique.size) for row in ints]
            ).astype(np.int64)
            floats = np.stack([_nan_sums(inverse, row, unique.size) for row in floats])
            arm_id, case_idx = arm_id[first], case_idx[first]
        else:
            order = np.argsort(keys, kind="stable")
            arm_id, case_idx, ints, floats = arm_id[order], case_idx[order], ints[:, order], floats[:, order]
    runs = ints[0]
    if runs.size and runs.max() > 4095:
        raise UsageError(
            f"experiment #{exp_id} has {int(runs.max())} runs of one case in one arm; analysis supports at most "
            "4095 rounds"
        )
    packed = ints[1]
    field_of = [(packed >> shift) & 0xFFF for shift in (0, 12, 24, 36, 48)]
    return CaseOutcomes(
        arm_id=arm_id,
        case_idx=case_idx,
        runs=runs,
        passed=field_of[0],
        failed=field_of[1],
        execution_failed=field_of[2],
        grading_failed=field_of[3],
        cancelled=field_of[4],
        executed=ints[2],
        cost=floats[0],
        latency_ms=floats[1],
        tokens=floats[2],
        scored=ints[3],
        score=floats[3],
        score_sq=floats[4],
    )

"""Per (arm, case) sums of an experiment's runs (`CaseOutcomes`), built from the store's sums query, or
from the counts worked out of the runs' codes (`CaseCounts`) and the sums no code carries."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, overload

from abbench._memo import Memo
from abbench.errors import UsageError
from abbench.store.bulk._case_outcomes import CaseOutcomes
from abbench.types import RunState

if TYPE_CHECKING:
    import numpy as np


def _sql_states(*states: RunState) -> str:
    return "(" + ", ".join(f"'{s}'" for s in states) + ")"


FINISHED_STATES = _sql_states(RunState.PASS, RunState.FAIL, RunState.CANCELLED)
"""The states the partial ``runs_results`` index covers (its WHERE clause, written the same way)."""
OPEN_STATES = _sql_states(RunState.PENDING, RunState.RUNNING, RunState.EXECUTED, RunState.EVALUATING)


def _nan_sums(groups: Any, values: Any, size: int) -> Any:
    """Sums per group skipping NaN; NaN where every value of the group is NaN (unknown stays unknown)."""
    import numpy as np

    known = ~np.isnan(values)
    sums = np.bincount(groups, weights=np.where(known, values, 0.0), minlength=size)
    return np.where(np.bincount(groups, weights=known, minlength=size) > 0, sums, np.nan)


_SUMS_FIELDS = (
    ("arm_id", "i8"), ("case_idx", "i8"), ("runs", "i8"), ("packed", "i8"), ("executed", "i8"), ("cost", "f8"),
    ("cost_runs", "i8"), ("latency", "f8"), ("latency_runs", "i8"), ("tokens", "f8"), ("token_runs", "i8"),
    ("scored", "i8"), ("score", "f8"), ("score_sq", "f8"),
)  # fmt: skip
"""The columns of `store.runs.case_outcomes`' sums query, in its order, with the type each is read as."""


_NO_VALUE = {"cost": -1.0, "tokens": -1.0}
"""What the sums query gives for a case none of whose runs has a cost, or tokens (0 for the others)."""


@overload
def _sums_table(rows: Iterable[tuple[Any, ...]], names: Sequence[str] | None = None) -> np.ndarray: ...
@overload
def _sums_table(
    rows: Iterable[tuple[Any, ...]], names: Sequence[str] | None, keys: tuple[np.ndarray, np.ndarray] | None
) -> np.ndarray | None: ...
def _sums_table(
    rows: Iterable[tuple[Any, ...]],
    names: Sequence[str] | None = None,
    keys: tuple[np.ndarray, np.ndarray] | None = None,
) -> np.ndarray | None:
    """The rows of `store.runs.case_outcomes`' sums query as a record array, straight from the cursor: one
    pass (each field converted as its own column would be), a third of the time of splitting the rows
    into columns first, and no list of a few hundred thousand tuples held beside it.

    With `names`, the rows hold the arm, the case and these fields only; each other field is what the
    query gives when no run has a value for it (`_NO_VALUE`). With `keys` too, the rows hold no arm and
    case: `keys` are theirs, in order (None when the rows are not as many)."""
    import numpy as np

    every = np.dtype(list(_SUMS_FIELDS))
    if names is None:
        return np.fromiter(rows, dtype=every)
    types = dict(_SUMS_FIELDS)
    read = np.fromiter(
        rows,
        dtype=np.dtype(
            [(n, types[n]) for n in (() if keys is not None else ("arm_id", "case_idx")) + tuple(names)]
        ),
    )
    if keys is not None and read.size != keys[0].size:
        return None
    table = np.zeros(read.size, dtype=every)
    for name, value in _NO_VALUE.items():
        table[name] = value
    if keys is not None:
        table["arm_id"], table["case_idx"] = keys
    for name in read.dtype.names or ():
        table[name] = read[name]
    return table


def _case_sums(exp_id: int, finished: np.ndarray, rest: np.ndarray) -> CaseOutcomes:
    """`CaseOutcomes` from the per-(arm, case) sums of finished runs plus those of open runs
    (`_sums_table` records)."""
    import numpy as np

    table = np.concatenate([finished, rest]) if rest.size else finished
    arm_id, case_idx = np.ascontiguousarray(table["arm_id"]), np.ascontiguousarray(table["case_idx"])
    ints = np.stack(
        [
            table[name]
            for name in ("runs", "packed", "executed", "scored", "cost_runs", "latency_runs", "token_runs")
        ]
    )
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
    _check_rounds(exp_id, runs)
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
        cost_runs=ints[4],
        latency_runs=ints[5],
        token_runs=ints[6],
    )


def _check_rounds(exp_id: int, runs: np.ndarray) -> None:
    """Refuse more runs of one case in one arm than the sums query packs (12 bits an outcome)."""
    if runs.size and runs.max() > 4095:
        raise UsageError(
            f"experiment #{exp_id} has {int(runs.max())} runs of one case in one arm; analysis supports at most "
            "4095 rounds"
        )


@dataclass(frozen=True)
class CaseCounts:
    """What `CaseOutcomes` counts of each (arm, case), worked out from the runs' codes that
    `store.runs.load_run_flags` read (`RunCodes.counts`), ordered by arm id and case as it is: with them,
    `store.runs.case_outcomes` reads only the sums no code carries (cost, latency and tokens, and scores
    other than 0 and 1), and only those some run has.

    Attributes:
        arm_ids: The arms whose runs were read.
        arm_id: Each (arm, case)'s arm id.
        case_idx: Its case position.
        runs: Its runs.
        passed: Its runs graded as right (the outcome codes of `abbench.store.OUTCOMES`, as
            `CaseOutcomes` counts them).
        failed: Graded as wrong.
        execution_failed: Whose execution failed.
        grading_failed: Whose grading failed.
        cancelled: Cancelled.
        no_verdict: Graded with a score and no verdict (outcome ``scored``): finished, in none of the
            counts above.
        executed: Its runs with a latency recorded.
        scored: Its runs with a score.
        ones: Its runs with a score of 1.
        fractional: Whether a run of the arms read has a score other than 0 and 1.
        cost_known: Whether a run of the arms read has a cost.
        tokens_known: Whether a run of the arms read has input and output tokens.
    """

    arm_ids: frozenset[int]
    arm_id: np.ndarray
    case_idx: np.ndarray
    runs: np.ndarray
    passed: np.ndarray
    failed: np.ndarray
    execution_failed: np.ndarray
    grading_failed: np.ndarray
    cancelled: np.ndarray
    no_verdict: np.ndarray
    executed: np.ndarray
    scored: np.ndarray
    ones: np.ndarray
    fractional: bool
    cost_known: bool
    tokens_known: bool

    @classmethod
    def of(
        cls,
        arm_ids: Iterable[int],
        arm_id: np.ndarray,
        case_idx: np.ndarray,
        outcome: np.ndarray,
        executed: np.ndarray,
        score_code: np.ndarray,
        known: tuple[int, int],
    ) -> CaseCounts:
        """The counts of runs ordered by arm id, case and round (`score_code`: 0 no score, 1 a score
        of 0, 2 of 1, 3 another; `known`: how many runs have a cost, and tokens)."""
        import numpy as np

        from abbench.store._run_columns import (
            CANCELLED,
            EXECUTION_FAILED,
            FAILED,
            GRADING_FAILED,
            OUTCOMES,
            PASSED,
            SCORED,
        )

        n = int(arm_id.size)
        first = np.ones(n, dtype=bool)
        first[1:] = (arm_id[1:] != arm_id[:-1]) | (case_idx[1:] != case_idx[:-1])
        starts = np.flatnonzero(first)
        group = np.cumsum(first) - 1
        size = int(starts.size)
        codes = len(OUTCOMES)
        # One pass for every outcome: (case, outcome) pairs counted, a row a case.
        outcomes = np.bincount(group * codes + outcome, minlength=size * codes).reshape(size, codes)

        def kept(counts: np.ndarray) -> np.ndarray:
            return counts.astype(np.int32)  # half the memory while kept

        return cls(
            arm_ids=frozenset(int(a) for a in arm_ids),
            arm_id=arm_id[starts].astype(np.int64),  # (kept in 32 bits: handed on as the store reads them)
            case_idx=case_idx[starts].astype(np.int64),
            runs=kept(np.diff(starts, append=n)),
            passed=kept(outcomes[:, PASSED]),
            failed=kept(outcomes[:, FAILED]),
            execution_failed=kept(outcomes[:, EXECUTION_FAILED]),
            grading_failed=kept(outcomes[:, GRADING_FAILED]),
            cancelled=kept(outcomes[:, CANCELLED]),
            no_verdict=kept(outcomes[:, SCORED]),
            executed=kept(np.bincount(group[executed.astype(bool)], minlength=size)),
            scored=kept(np.bincount(group[score_code != 0], minlength=size)),
            ones=kept(np.bincount(group[score_code == 2], minlength=size)),
            fractional=bool((score_code == 3).any()),
            cost_known=known[0] > 0,
            tokens_known=known[1] > 0,
        )

    def groups(self) -> tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
        """The (arm id, case) pairs with a finished run, then those with an open run, in order: the
        rows of `store.runs.case_outcomes`' two sums queries."""
        finished = (
            self.passed
            + self.failed
            + self.execution_failed
            + self.grading_failed
            + self.cancelled
            + self.no_verdict
        )
        some, open_ = finished > 0, self.runs > finished
        return (self.arm_id[some], self.case_idx[some]), (self.arm_id[open_], self.case_idx[open_])

    def for_arms(self, arm_ids: Sequence[int]) -> CaseCounts | None:
        """The counts of these arms' cases, None when any of them was not read."""
        import numpy as np

        wanted = frozenset(int(a) for a in arm_ids)
        if not wanted <= self.arm_ids:
            return None
        if wanted == self.arm_ids:
            return self
        keep = np.isin(self.arm_id, list(wanted))
        return replace(
            self,
            arm_ids=wanted,
            **{name: getattr(self, name)[keep] for name in _PER_CASE},
        )

    def outcomes_with(self, exp_id: int, sums: CaseOutcomes | None, scores: bool) -> CaseOutcomes | None:
        """`CaseOutcomes` of these counts and the sums read beside them (`sums`, its counts unread; None
        when no sum had to be read: every one is what the query gives when no run has it). None when
        `sums` are not of the same (arm, case) pairs."""
        import numpy as np

        size = int(self.runs.size)
        if sums is None:
            none: dict[str, Any] = {f.name: np.zeros(size, dtype=np.int64) for f in fields(CaseOutcomes)}
            none |= {name: np.zeros(size) for name in ("latency_ms", "score", "score_sq")}
            none |= {name: np.full(size, np.nan) for name in ("cost", "tokens")}  # `_NO_VALUE`, read back
            sums = CaseOutcomes(**(none | {"arm_id": self.arm_id, "case_idx": self.case_idx}))
        elif not (np.array_equal(sums.arm_id, self.arm_id) and np.array_equal(sums.case_idx, self.case_idx)):
            return None
        _check_rounds(exp_id, self.runs)
        counted: dict[str, Any] = {name: getattr(self, name).astype(np.int64) for name in _COUNTED}
        if scores and not self.fractional:  # scores of 0 and 1 only: their sums are counts
            ones = self.ones.astype(float)
            counted |= {"scored": self.scored.astype(np.int64), "score": ones, "score_sq": ones.copy()}
        return replace(sums, **counted)


_COUNTED = ("runs", "passed", "failed", "execution_failed", "grading_failed", "cancelled", "executed")
"""The fields of `CaseOutcomes` that `CaseCounts` has as they are."""
_PER_CASE = ("arm_id", "case_idx", *_COUNTED, "no_verdict", "scored", "ones")
"""The attributes of `CaseCounts` with a value per (arm, case)."""


@dataclass(frozen=True)
class RunCodes:
    """What `store.runs.load_run_flags` read of each run that `CaseOutcomes` counts, in its order (arm id,
    case, round). Kept in `KEPT_CODES` while nothing is written, so that `store.runs.case_outcomes` after the
    figures (the results widget's gate compares the pair the figures were read for) need not sum every
    run's outcome again; counted per case only then (`counts`), so a read nobody compares after pays
    nothing for it.

    Attributes:
        arm_ids: The arms whose runs were read.
        arm_id: Each run's arm id.
        case_idx: Its case position.
        outcome: Its outcome code (`abbench.store.OUTCOMES`).
        executed: Whether it has a latency.
        score_code: 0 no score, 1 a score of 0, 2 of 1, 3 another.
        known: How many of the runs have a cost, and how many input and output tokens.
    """

    arm_ids: frozenset[int]
    arm_id: np.ndarray
    case_idx: np.ndarray
    outcome: np.ndarray
    executed: np.ndarray
    score_code: np.ndarray
    known: tuple[int, int]

    @cached_property
    def counts(self) -> CaseCounts:
        """The runs counted per (arm, case)."""
        return CaseCounts.of(
            self.arm_ids, self.arm_id, self.case_idx, self.outcome, self.executed, self.score_code, self.known
        )


KEPT_CODES: Memo[RunCodes] = Memo(2)
"""The latest experiments' `RunCodes` by store and experiment, each with the store's state it was read in."""


EXECUTED_SQL = (
    f"(state IN ('{RunState.EXECUTED}', '{RunState.EVALUATING}', '{RunState.PASS}') "
    f"OR (state = '{RunState.FAIL}' AND failure_type IS NULL))"
)
"""Whether a run's execution finished with an answer, from its state alone (columns of the ``runs_results``
index): executed, being graded, graded, or failed without a failure type (a wrong answer, a grading
failure). Its latency may still be unknown: a run recorded from elsewhere may not say it."""


_SUM_SQL = {
    "runs": "count(*)",
    # Outcome counts are packed 12 bits each into one integer sum: one aggregate instead of five keeps
    # the query fast. A case has at most 1000 rounds (4095 fit), checked by `_case_sums`.
    # A run in pass without a verdict (scored) is counted in none of them, as `CaseCounts` does.
    "packed": f"sum(CASE state WHEN '{RunState.PASS}' THEN passed IS NOT NULL WHEN '{RunState.FAIL}' THEN "
    "CASE WHEN failure_type IS NOT NULL THEN 16777216 WHEN passed IS NULL THEN 68719476736 ELSE 4096 END "
    f"WHEN '{RunState.CANCELLED}' THEN 281474976710656 ELSE 0 END)",
    "executed": f"total({EXECUTED_SQL})",
    # cost and tokens an agent did not report stay unknown (-1, read back as NaN), not zero; each is
    # counted where reported, so a case's mean is over the runs that reported it
    "cost": "ifnull(sum(cost), -1)",
    "cost_runs": "count(cost)",
    "latency": "total(latency_ms)",
    "latency_runs": "count(latency_ms)",
    "tokens": "ifnull(sum(input_tokens + output_tokens), -1)",
    "token_runs": "count(input_tokens + output_tokens)",
    "scored": "count(score)",
    "score": "total(score)",
    "score_sq": "total(score * score)",
}
"""Each sum of `case_outcomes`' query by its field of `_sums_table`'s records."""
_SUM_NAMES = tuple(_SUM_SQL)


@overload
def _read_sums(
    cursor: sqlite3.Cursor, exp_id: int, arm_ids: Sequence[int] | None, names: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]: ...
@overload
def _read_sums(
    cursor: sqlite3.Cursor,
    exp_id: int,
    arm_ids: Sequence[int] | None,
    names: Sequence[str],
    groups: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]],
) -> tuple[np.ndarray | None, np.ndarray | None]: ...
def _read_sums(
    cursor: sqlite3.Cursor,
    exp_id: int,
    arm_ids: Sequence[int] | None,
    names: Sequence[str],
    groups: tuple[tuple[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """`case_outcomes`' sums `names` per (arm, case) of the finished runs, then of the open ones, as
    `_sums_table` records. With `groups` (each query's (arm, case) pairs, in order: `CaseCounts.groups`),
    the arms and cases are not read (a third of the time of a sum's rows), and a query whose rows are
    not as many gives None."""
    where, params = "experiment_id=?", [exp_id]
    if arm_ids is not None:
        where += " AND arm_id IN ({})".format(",".join("?" * len(arm_ids)))
        params.extend(arm_ids)
    keys = "" if groups is not None else "arm_id, case_idx, "
    sql = (
        f"SELECT {keys}{{2}} FROM runs {{0}} WHERE {where} "
        "AND state IN {1} GROUP BY arm_id, case_idx ORDER BY arm_id, case_idx"
    )
    found = []
    # Runs still open are usually few (none once an experiment is done): found by state.
    for i, (hint, states) in enumerate(
        (("", FINISHED_STATES), ("INDEXED BY runs_experiment_state", OPEN_STATES))
    ):
        derived = i == 0 and set(names) >= _EXECUTED_OF_FINISHED
        asked = [n for n in names if n != "executed"] if derived else list(names)
        every = None if groups is None and tuple(asked) == _SUM_NAMES else asked
        rows = cursor.execute(sql.format(hint, states, ", ".join(_SUM_SQL[n] for n in asked)), params)
        table = _sums_table(rows, every, None if groups is None else groups[i])
        if derived and table is not None:
            table["executed"] = _executed_of_finished(table)
        found.append(table)
    return found[0], found[1]


_EXECUTED_OF_FINISHED = {"runs", "packed", "executed"}
"""The sums a finished run's `executed` is worked out of (`_executed_of_finished`) instead of summed."""


def _executed_of_finished(table: np.ndarray) -> np.ndarray:
    """`EXECUTED_SQL`'s sum over finished runs from their counts: a finished run (pass, fail, cancelled)
    executed unless it was cancelled or failed with a failure type (an execution failure). Its own
    aggregate was a fifth of the sums query's time at a million runs."""
    packed = table["packed"]
    executed: np.ndarray = table["runs"] - ((packed >> 24) & 0xFFF) - ((packed >> 48) & 0xFFF)
    return executed

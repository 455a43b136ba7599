"""Store methods that read an experiment's runs for metrics and the review listing without their numbers.

store.runs.table` reads every column of every run. At 600,000 runs the costly part is Python
objects: a float per number, a string per answer. Metrics and the review listing look at each run's
outcome, answer and a few yes/no questions (executed? a confidence given, below the threshold?
evidence cited? skill read?); the numbers whose order matters to floating-point sums (cost, tokens,
latency) are used by the usage figures only. So store.runs.load_run_flags` has SQLite write one
character per run that packs the outcome, the state, the flags and a 0/1 score, and a second one
that numbers the answer among the experiment's distinct answers; numpy unpacks both. The runs come
in `load_runs`' order, so every figure computed from them is the same; `executed_usage` reads the
usage numbers of one arm in that order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from abbench.store._noun import Noun
from abbench.store._reads import in_asked_order, keep_read, read_in_snapshot
from abbench.store._run_columns import (
    _MISSING,
    CANCELLED,
    EXECUTION_FAILED,
    FAILED,
    GRADING_FAILED,
    PASSED,
    SCORED,
    STATE_SQL,
    STATES,
    UNFINISHED,
)
from abbench.store._run_reader import _nan_missing, _objects, _plain_cursor, _RunReader
from abbench.store._run_table import CaseFields, RunTable, _empty_table
from abbench.store.bulk._outcomes import EXECUTED_SQL, KEPT_CODES, RunCodes
from abbench.types import RunState

if TYPE_CHECKING:
    import numpy as np


MAX_ANSWER_CODES = 256
"""Above this many distinct answers, `load_run_flags` reads the answers as text (free-text answers)."""

_EMPTY_VALUES = ("", "[]")
"""What an empty list column holds (`abbench.store._results`' ``_EMPTY_LIST``, as values)."""
_INJECTED_VALUES = ("", "[]", '["SKILL.md"]')
"""A ``files_read`` that is no reading (``_INJECTED_ONLY``, as values): SKILL.md alone is injected."""


def _none_of(column: str, values: tuple[str, ...]) -> str:
    """``column <> v1 AND column <> v2 ...``: for a value that is not NULL, what ``column NOT IN (...)``
    says, in a third of the time per run (SQLite probes an ephemeral table for an IN list)."""
    return " AND ".join(f"{column} <> '{v}'" for v in values)


# Bits of a run's code (`_code`): its outcome (`OUTCOME_SQL`, 3 bits), its state (`STATE_SQL`, 3 bits), then
# its flags: executed (an answer stored: `EXECUTED_SQL`), a confidence given, below the threshold, cited
# evidence, read a skill file, read a skill section; then the score (0: none, 1: 0.0, 2: 1.0, 3: other),
# then whether a failure type is stored (the failure types are read only when one is).
#
# SQLite writes what the code is made of (`_RAW_SQL`): the state once, and plain NULL tests. The outcome
# and "executed" are worked out of the state, the failure type and the verdict by numpy (`_code`): each
# asked in SQL compares the state's text again, a third of the pass's time at 600,000 runs.
_RAW_SQL = (
    f"({STATE_SQL}) + 8 * (failure_type IS NOT NULL) + 16 * (passed IS NULL) + 32 * (confidence IS NOT NULL) "
    "+ 64 * IFNULL(confidence < ?, 0) "
    f"+ 128 * (evidence_refs IS NOT NULL AND {_none_of('evidence_refs', _EMPTY_VALUES)}) "
    f"+ 256 * (files_read IS NOT NULL AND {_none_of('files_read', _INJECTED_VALUES)}) "
    f"+ 512 * (sections_read IS NOT NULL AND {_none_of('sections_read', _EMPTY_VALUES)}) "
    "+ 1024 * (CASE WHEN score IS NULL THEN 0 WHEN score = 0 THEN 1 WHEN score = 1 THEN 2 ELSE 3 END)"
)
# The largest, 4095, stays below the surrogates (U+D800) that char() cannot give back as text.


def _outcome_table() -> list[int]:
    """`OUTCOME_SQL` as a table: the outcome of state code s, a failure type stored (t) and no verdict (v)
    at ``4 * s + 2 * t + v``."""
    table = []
    for state in STATES:
        for typed in (0, 1):
            for no_verdict in (0, 1):
                if state == RunState.PASS:
                    table.append(SCORED if no_verdict else PASSED)
                elif state == RunState.FAIL:
                    table.append(EXECUTION_FAILED if typed else GRADING_FAILED if no_verdict else FAILED)
                else:
                    table.append(CANCELLED if state == RunState.CANCELLED else UNFINISHED)
    return table


_OUTCOME_OF = _outcome_table()
_EXECUTED_STATES = tuple(STATES.index(s) for s in (RunState.EXECUTED, RunState.EVALUATING, RunState.PASS))


def _code(raw: np.ndarray) -> np.ndarray:
    """Each run's code (the bits above) from what `_RAW_SQL` gave (16-bit integers, in place of `raw`)."""
    import numpy as np

    state, typed, no_verdict = raw & 7, (raw >> 3) & 1, (raw >> 4) & 1
    outcome = np.asarray(_OUTCOME_OF, dtype=np.uint16)[4 * state + 2 * typed + no_verdict]
    # `EXECUTED_SQL`: executed, evaluating or graded right, or graded wrong with no failure type.
    executed = np.isin(state, _EXECUTED_STATES) | ((state == STATES.index(RunState.FAIL)) & (typed == 0))
    flags = executed.astype(np.uint16) | (((raw >> 5) & 31) << 1)
    code: np.ndarray = outcome | (state << 3) | (flags << 6) | (((raw >> 10) & 3) << 12) | (typed << 14)
    return code


def _wide_codes(text: str | None) -> np.ndarray:
    """One code per character of `text` (characters from SQLite's ``char(48 + code)``), as 16-bit
    integers: every character is below the surrogates, so UTF-16 gives each in one unit, a quarter
    of the memory of 64-bit codes."""
    import numpy as np

    codes = np.frombuffer((text or "").encode("utf-16-le"), dtype=np.uint16).copy()
    codes -= 48
    return codes


class RunFlags(Noun):
    """Runs read as packed codes (no numbers), and the usage numbers apart (part of ``store.runs``)."""

    def load_run_flags(
        self, exp_id: int, *, arms: Sequence[str] | None = None, threshold: float = 0.5
    ) -> RunTable:
        """An experiment's runs as `load_runs` gives them, in the same order, without the numbers.

        Every column is `load_runs`' except:

        - ``confidence`` says only how the run's confidence compares with `threshold`: NaN when none
          was given, -inf when below it, +inf otherwise (so ``confidence < threshold`` is the run's own);
        - ``latency_ms`` is 0.0 for an executed run (NaN otherwise); ``cost`` and the token columns are
          NaN: `executed_usage` reads them in this order;
        - ``outcome``, ``state``, ``arm_index`` and ``round`` are the narrowest integers that hold
          them (8 bits for up to 128 arms or rounds), and the columns of one value (``run_id``, -1: not
          read; ``cost`` and the tokens; ``failure_type`` when no run has one) are read-only views of
          that value: at a million runs each 64-bit column is 8 MB.

        Raises:
            NotFoundError: no such experiment or arm.
        """

        arm_ids, names = self._store.runs._arm_ids(exp_id, arms)
        if not arm_ids:
            return _empty_table(exp_id, tuple(names), False)
        table = read_in_snapshot(
            self._store.conn,
            lambda c: self._read_flags(c, exp_id, arm_ids, tuple(names), float(threshold)),
            self._store.state_stamp,
        )
        if table is None:
            return _empty_table(exp_id, tuple(names), False)
        return in_asked_order(table, arm_ids)

    def _read_flags(
        self,
        cursor: sqlite3.Cursor,
        exp_id: int,
        arm_ids: list[int],
        names: tuple[str, ...],
        threshold: float,
    ) -> RunTable | None:
        import numpy as np

        reader = _RunReader(cursor, exp_id, arm_ids)
        select = f"FROM runs WHERE {reader.where} {reader.order}"
        # The codes first: the same pass counts the runs and finds their first and last round.
        code, prediction, first_round, last_round, known = _codes_and_answers(
            cursor, select, reader.params, threshold
        )
        n = int(code.size)
        if not n:
            return None
        cases = self._store.runs.case_fields(exp_id)
        arm_id, case_idx, rnd = _keys(reader, n, cases, first_round, last_round)
        by_id = sorted(arm_ids)
        position = {a: i for i, a in enumerate(arm_ids)}
        arm_index = np.asarray([position[a] for a in by_id], dtype=_small(len(names)))[
            np.searchsorted(by_id, arm_id)
        ]
        outcome, state = (code & 7).astype(np.int8), ((code >> 3) & 7).astype(np.int8)
        flags, score_code = (code >> 6) & 63, (code >> 12) & 3
        typed = (code >> 14).astype(bool)
        del code
        # What a comparison of these runs counts per case, kept for `case_outcomes` (see `RunCodes`);
        # copies of the table's own columns, which its reader may change, in the smallest integers
        # that hold them (kept beside the table: at 600,000 runs 64-bit copies cost 10 MB).
        keep_read(
            KEPT_CODES,
            (str(self._store.db_path), exp_id),
            lambda: RunCodes(
                frozenset(arm_ids), _compact(arm_id), _compact(case_idx), outcome.copy(),
                (flags & 1).astype(bool), score_code.astype(np.int8), known,
            ),
        )  # fmt: skip
        score = _scores(cursor, select, reader.params, score_code)
        at = cases.positions(case_idx)
        given, low = (flags & 2).astype(bool), (flags & 4).astype(bool)
        # Columns of one value are one element seen n times (read-only): no memory per run.
        nan = np.broadcast_to(np.nan, n)
        return RunTable(
            experiment_id=exp_id,
            arms=names,
            run_id=np.broadcast_to(np.int64(-1), n),
            arm_index=arm_index,
            arm_id=arm_id,
            case_idx=case_idx,
            case_id=cases.case_id[at],
            round=rnd.astype(_small(last_round + 1), copy=False),
            domain=cases.domain[at],
            expected=cases.expected[at],
            outcome=outcome,
            state=state,
            failure_type=reader.failure_types(n, arm_id, case_idx, rnd)
            if typed.any()
            else np.broadcast_to(np.full(1, None, dtype=object), n),
            passed=np.where(outcome == PASSED, 1.0, np.where(outcome == FAILED, 0.0, np.nan)),
            score=score,
            prediction=prediction,
            confidence=np.where(given, np.where(low, -np.inf, np.inf), np.nan),
            cost=nan,
            input_tokens=nan,
            output_tokens=nan,
            tokens=nan,
            latency_ms=np.where(flags & 1, 0.0, np.nan),
            evidence_cited=(flags & 8).astype(bool),
            read_file=(flags & 16).astype(bool),
            read_section=(flags & 32).astype(bool),
            read_skill=(flags & 48).astype(bool),
            text={},
        )

    def executed_usage(
        self, exp_id: int, arm_id: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Cost, input tokens, output tokens and latency of an arm's executed runs (`EXECUTED_SQL`), in
        `load_runs`' order (case, round); NaN where unknown (a run recorded from elsewhere may report no
        latency: unknown, not 0 ms). A column no run reported is not read."""
        import numpy as np

        where = f"experiment_id=? AND arm_id=? AND {EXECUTED_SQL}"
        cursor = _plain_cursor(self._store.conn)
        n, *known = cursor.execute(
            "SELECT count(*), count(cost), count(input_tokens), count(output_tokens), count(latency_ms) "
            f"FROM runs WHERE {where}",
            (exp_id, arm_id),
        ).fetchone()
        every = ("cost", "input_tokens", "output_tokens", "latency_ms")
        names = [c for c, k in zip(every, known, strict=True) if k]
        if not names:
            read: dict[str, np.ndarray] = {}
        elif (
            names == ["latency_ms"] and known[-1] == n
        ):  # latency alone, every run's: plain floats convert faster
            rows = cursor.execute(
                f"SELECT latency_ms FROM runs WHERE {where} ORDER BY case_idx, round", (exp_id, arm_id)
            )
            read = {"latency_ms": np.fromiter((r[0] for r in rows), dtype=float, count=n)}
        else:
            columns = [f"IFNULL({c}, {_MISSING})" for c in names]
            rows = cursor.execute(
                f"SELECT {', '.join(columns)} FROM runs WHERE {where} ORDER BY case_idx, round",
                (exp_id, arm_id),
            )
            values = np.fromiter(
                rows, dtype=np.dtype([(f"f{i}", "f8") for i in range(len(columns))]), count=n
            )
            read = {name: _nan_missing(np.ascontiguousarray(values[f"f{i}"])) for i, name in enumerate(names)}
        unknown = np.broadcast_to(np.nan, n)  # a column no run reported: one NaN seen n times (read-only)
        cost, tin, tout, latency = (read.get(c, unknown) for c in every)
        return cost, tin, tout, latency

    def lowest_confidence(
        self, exp_id: int, arm_ids: Sequence[int] | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The case positions whose runs (of these arms) stated a confidence, in order, and the lowest
        confidence stated for each."""
        import numpy as np

        where, params = "experiment_id=? AND confidence IS NOT NULL", [exp_id]
        if arm_ids is not None:
            where += " AND arm_id IN ({})".format(",".join("?" * len(arm_ids)))
            params.extend(arm_ids)
        rows = _plain_cursor(self._store.conn).execute(
            f"SELECT case_idx, min(confidence) FROM runs WHERE {where} GROUP BY case_idx ORDER BY case_idx",
            params,
        )
        found = np.fromiter(rows, dtype=np.dtype([("c", "i8"), ("v", "f8")]))
        return np.ascontiguousarray(found["c"]), np.ascontiguousarray(found["v"])


def _small(count: int) -> type[np.signedinteger[Any]]:
    """The narrowest integer type that numbers `count` things from 0: a byte a run for arms, rounds,
    outcomes and states (eight for int64)."""
    import numpy as np

    for dtype in (np.int8, np.int16, np.int32):
        if count - 1 <= np.iinfo(dtype).max:
            return dtype
    return np.int64


def _compact(values: np.ndarray) -> np.ndarray:
    """A copy of integer `values` in 32 bits when they fit (else as they are)."""
    import numpy as np

    if values.size and (int(values.min()) < -(2**31) or int(values.max()) >= 2**31):
        return values.copy()
    return values.astype(np.int32)


def _scores(cursor: sqlite3.Cursor, select: str, params: Sequence[Any], score_code: np.ndarray) -> np.ndarray:
    """Each run's score: 0 or 1 from its code, NaN without one; when a judge gave a number, the scores
    themselves, read along the same runs (`select` and `params`, in the codes' order)."""
    import numpy as np

    if not (score_code == 3).any():
        known: np.ndarray = np.array([np.nan, 0.0, 1.0, np.nan])[score_code]
        return known
    rows = cursor.execute(f"SELECT IFNULL(score, {_MISSING}) {select}", params)
    return _nan_missing(np.fromiter((r[0] for r in rows), dtype=float, count=int(score_code.size)))


def _keys(
    reader: _RunReader, n: int, cases: CaseFields, first_round: int, last_round: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Arm id, case position and round of every run (not read when every combination exists)."""
    import numpy as np

    grid = reader.full_grid(n, cases, first_round, last_round)
    if grid is not None:
        return grid
    rows = reader.conn.execute(
        f"SELECT arm_id, case_idx, round FROM runs WHERE {reader.where} {reader.order}", reader.params
    )
    keys = np.fromiter(rows, dtype=np.dtype([("a", "i8"), ("c", "i8"), ("r", "i8")]), count=n)
    arm_id, case_idx, rnd = (np.ascontiguousarray(keys[k]) for k in "acr")
    return arm_id, case_idx, rnd


def _distinct_answers(cursor: sqlite3.Cursor, select: str, params: tuple[Any, ...]) -> list[Any] | None:
    """The distinct answers as stored and as text (`load_runs` reads them as text), None when there are
    more than `MAX_ANSWER_CODES` of them.

    (An index on the answers served this by seeks, 0.2 s at 600,000 runs, but writing it made
    `abbench run` 18 % slower there: measured, and not kept.)"""
    distinct = cursor.execute(
        f"SELECT DISTINCT prediction, CAST(prediction AS TEXT) {select.split(' ORDER BY ')[0]} "
        f"AND prediction IS NOT NULL LIMIT {MAX_ANSWER_CODES + 1}",
        params,
    ).fetchall()
    return None if len(distinct) > MAX_ANSWER_CODES else distinct


# Beside the codes, the same pass counts the runs with a cost and with tokens (`RunCodes`): sums
# of a column no run has need not be read.
_KNOWN_SQL = ("count(k), count(t)", "cost AS k, input_tokens + output_tokens AS t")


def _codes_and_answers(
    cursor: sqlite3.Cursor, select: str, params: tuple[Any, ...], threshold: float
) -> tuple[np.ndarray, np.ndarray, int, int, tuple[int, int]]:
    """Each run's packed code (`_code`) and its answer, in one pass over the runs: two characters a
    run, its code and its answer numbered among the distinct answers. With more distinct answers than
    `MAX_ANSWER_CODES`, the answers are read as text in a second pass. Also the runs' first and last
    round (0 and -1 without runs), and how many runs have a cost and how many tokens."""
    import numpy as np

    counts, columns = _KNOWN_SQL
    distinct = _distinct_answers(cursor, select, params)
    if not distinct:  # none, or too many to number
        text, first, last, costs, tokens = cursor.execute(
            f"SELECT group_concat(char(48 + c), ''), min(r), max(r), {counts} FROM (SELECT {_RAW_SQL} AS c, "
            f"round AS r, {columns} {select})",
            (threshold, *params),
        ).fetchone()
        code = _code(_wide_codes(text))
        rounds = _round(first, 0), _round(last, -1)
        known = int(costs), int(tokens)
        if distinct is None:
            rows = cursor.execute(f"SELECT prediction {select}", params)
            return code, _objects([None if r[0] is None else str(r[0]) for r in rows]), *rounds, known
        return code, np.full(code.size, None, dtype=object), *rounds, known
    values = np.empty(len(distinct) + 1, dtype=object)
    values[1:] = [text for _, text in distinct]
    case = " ".join(f"WHEN ? THEN {i}" for i in range(1, len(distinct) + 1))
    text, first, last, costs, tokens = cursor.execute(
        f"SELECT group_concat(char(48 + c, 48 + p), ''), min(r), max(r), {counts} FROM (SELECT {_RAW_SQL} "
        f"AS c, (CASE prediction {case} ELSE 0 END) AS p, round AS r, {columns} {select})",
        (threshold, *[v for v, _ in distinct], *params),
    ).fetchone()
    both = _wide_codes(text)
    answers: np.ndarray = values[both[1::2]]
    return _code(np.ascontiguousarray(both[0::2])), answers, int(first), int(last), (int(costs), int(tokens))


def _round(value: Any, default: int) -> int:
    return default if value is None else int(value)

"""Reading an experiment's runs into columns: the cursor, the parsing of packed texts and lists."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from abbench.store._run_columns import (
    _EMPTY_LIST,
    _INJECTED_ONLY,
    _LIST_COLUMNS,
    _MISSING,
    OUTCOME_SQL,
    STATE_SQL,
    TEXT_COLUMNS,
)
from abbench.store._run_table import CaseFields

if TYPE_CHECKING:
    import numpy as np


def _plain_cursor(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """A cursor that returns plain tuples: the store's sqlite3.Row objects cost time on big reads."""
    cursor = conn.cursor()
    cursor.row_factory = None
    return cursor


def _nan_missing(values: np.ndarray) -> np.ndarray:
    import numpy as np

    values[np.isneginf(values)] = np.nan
    return values


def _codes(text: str | None) -> np.ndarray:
    """Single-character codes concatenated by SQLite (``'0'`` is 0), as small integers."""
    import numpy as np

    return np.frombuffer((text or "").encode("ascii"), dtype=np.uint8).astype(np.int64) - 48


def _int_list(text: str | None) -> np.ndarray:
    """Integers concatenated by SQLite with commas."""
    import numpy as np

    if not text:
        return np.empty(0, dtype=np.int64)
    return np.array(text.split(","), dtype=np.int64)


def _split_texts(joined: str | None, n: int, *, repeated: bool = False) -> np.ndarray | None:
    """Texts concatenated by SQLite with the record separator (NULL written as the group separator).

    None when the pieces do not come out as `n` (a text contained the separator itself). With
    `repeated` (domains, gold labels: a few values over many cases), equal texts are one object, not
    one per case.
    """
    import numpy as np

    parts = (joined or "").split("\x1e") if n else []
    if len(parts) != n:
        return None
    if repeated:
        one: dict[str, str] = {}
        parts = [one.setdefault(p, p) for p in parts]
    out = np.empty(n, dtype=object)
    out[:] = parts
    out[out == "\x1d"] = None
    return out


def _locate(
    arm_id: np.ndarray, case_idx: np.ndarray, rnd: np.ndarray, rows: Sequence[tuple[Any, ...]]
) -> np.ndarray:
    """Positions in the (arm, case, round)-ordered columns of the runs named by `rows`' first three fields."""
    import numpy as np

    scale_c, scale_r = int(case_idx.max()) + 1, int(rnd.max()) + 1
    keys = (arm_id * scale_c + case_idx) * scale_r + rnd
    wanted = np.asarray([(a * scale_c + c) * scale_r + r for a, c, r, *_ in rows], dtype=np.int64)
    return np.searchsorted(keys, wanted)


def _ints(column: Sequence[Any]) -> np.ndarray:
    import numpy as np

    return np.fromiter(column, dtype=np.int64, count=len(column))


def _objects(column: Sequence[Any]) -> np.ndarray:
    import numpy as np

    out = np.empty(len(column), dtype=object)
    out[:] = column
    return out


def _json_lists(column: Sequence[Any]) -> np.ndarray:
    import numpy as np

    out = np.empty(len(column), dtype=object)
    out[:] = [tuple(json.loads(v)) if v else () for v in column]
    return out


class _RunReader:
    """The steps of store.runs.table`: each reads one group of columns of the chosen runs.

    Every query reads the runs in the order of the ``runs_results`` index (arm, case, round), so
    the columns line up without sorting.
    """

    def __init__(self, conn: sqlite3.Cursor, exp_id: int, arm_ids: list[int]) -> None:
        self.conn = conn
        self.where = "experiment_id=? AND arm_id IN ({})".format(",".join("?" * len(arm_ids)))
        self.params = (exp_id, *arm_ids)
        self.order = "ORDER BY arm_id, case_idx, round"
        self.arm_ids = sorted(arm_ids)

    def _one(self, sql: str) -> Any:
        return self.conn.execute(sql, self.params).fetchone()

    def count(self) -> tuple[int, int, int]:
        """How many runs there are, and their first and last round."""
        n, first, last = self._one(f"SELECT count(*), min(round), max(round) FROM runs WHERE {self.where}")
        return n, first, last

    def full_grid(
        self, n: int, cases: CaseFields, first_round: int, last_round: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """Arm id, case position and round of every run, worked out without reading them when the `n`
        runs are every arm × case × round; None when they are not."""
        import numpy as np

        rounds = last_round + 1
        n_cases = cases.case_idx.size
        # Runs are unique per (arm, case, round): when there are exactly arms × cases × rounds of
        # them and rounds start at 0, every combination exists, and the keys need not be read.
        if first_round != 0 or n != len(self.arm_ids) * n_cases * rounds:
            return None
        arm_id = np.repeat(np.asarray(self.arm_ids, dtype=np.int64), n_cases * rounds)
        case_idx = np.tile(np.repeat(cases.case_idx, rounds), len(self.arm_ids))
        rnd = np.tile(np.arange(rounds, dtype=np.int64), len(self.arm_ids) * n_cases)
        return arm_id, case_idx, rnd

    def keys(
        self, n: int, cases: CaseFields, first_round: int, last_round: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Run id, arm id, case position and round of every run."""
        import numpy as np

        grid = self.full_grid(n, cases, first_round, last_round)
        if grid is not None:
            sql = f"SELECT group_concat(id) FROM (SELECT id FROM runs WHERE {self.where} {self.order})"
            return _int_list(self._one(sql)[0]), *grid
        rows = self.conn.execute(
            f"SELECT id, arm_id, case_idx, round FROM runs WHERE {self.where} {self.order}", self.params
        )
        keys = np.fromiter(
            rows, dtype=np.dtype([("i", "i8"), ("a", "i8"), ("c", "i8"), ("r", "i8")]), count=n
        )
        run_id, arm_id, case_idx, rnd = (np.ascontiguousarray(keys[k]) for k in "iacr")
        return run_id, arm_id, case_idx, rnd

    def outcomes(self) -> tuple[np.ndarray, np.ndarray]:
        """Outcome and state codes (`OUTCOMES`, `STATES`) of every run."""
        # One character per run carries both the outcome (0-5) and the state (0-6): 48 + 8 × outcome + state.
        packed = _codes(
            self._one(
                f"SELECT group_concat(char(48 + 8 * ({OUTCOME_SQL}) + {STATE_SQL}), '') FROM "
                f"(SELECT state, failure_type, passed FROM runs WHERE {self.where} {self.order})"
            )[0]
        )
        return packed >> 3, packed & 7

    def numbers(self, n: int) -> list[np.ndarray]:
        """Score, confidence, cost, input and output tokens and latency, NaN where unknown."""
        import numpy as np

        m = _MISSING
        names = ("s", "q", "c", "i", "o", "l")
        floats = np.fromiter(
            self.conn.execute(
                f"SELECT IFNULL(score, {m}), IFNULL(confidence, {m}), IFNULL(cost, {m}), "
                f"IFNULL(input_tokens, {m}), IFNULL(output_tokens, {m}), IFNULL(latency_ms, {m}) "
                f"FROM runs WHERE {self.where} {self.order}",
                self.params,
            ),
            dtype=np.dtype([(k, "f8") for k in names]),
            count=n,
        )
        return [_nan_missing(np.ascontiguousarray(floats[k])) for k in names]

    def predictions_and_flags(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        """The predictions, and per run bits: 1 cited evidence, 2 read a file, 4 read a section."""
        # The wide rows are read once, for the prediction and the flags together.
        flags_sql = (
            f"48 + (evidence_refs IS NOT NULL AND evidence_refs NOT IN {_EMPTY_LIST}) "
            f"+ 2 * (files_read IS NOT NULL AND files_read NOT IN {_INJECTED_ONLY}) "
            f"+ 4 * (sections_read IS NOT NULL AND sections_read NOT IN {_EMPTY_LIST})"
        )
        joined, flag_text = self._one(
            "SELECT group_concat(IFNULL(prediction, char(29)), char(30)), group_concat(char(flag), '') FROM "
            f"(SELECT prediction, {flags_sql} AS flag FROM runs WHERE {self.where} {self.order})"
        )
        prediction = _split_texts(joined, n)
        if prediction is None:  # a prediction holds the separator itself: read the column row by row
            rows = self.conn.execute(
                f"SELECT prediction FROM runs WHERE {self.where} {self.order}", self.params
            )
            prediction = _objects([r[0] for r in rows])
        return prediction, _codes(flag_text)

    def failure_types(self, n: int, arm_id: np.ndarray, case_idx: np.ndarray, rnd: np.ndarray) -> np.ndarray:
        """The failure type of every run (None for most: only execution failures have one)."""
        import numpy as np

        failure_type = np.full(n, None, dtype=object)
        failed = self.conn.execute(
            f"SELECT arm_id, case_idx, round, failure_type FROM runs WHERE {self.where} "
            "AND failure_type IS NOT NULL",
            self.params,
        ).fetchall()
        if failed:
            failure_type[_locate(arm_id, case_idx, rnd, failed)] = [r[3] for r in failed]
        return failure_type

    def texts(self) -> dict[str, np.ndarray]:
        """The heavy columns (`TEXT_COLUMNS`) and the transcripts' tool call counts."""
        rows = self.conn.execute(
            f"SELECT {', '.join(TEXT_COLUMNS)}, IFNULL(json_extract(transcript_summary, '$.tool_calls'), 0) "
            f"FROM runs WHERE {self.where} {self.order}",
            self.params,
        ).fetchall()
        cols = list(zip(*rows, strict=True))
        extra = {
            name: _json_lists(cols[i]) if name in _LIST_COLUMNS else _objects(cols[i])
            for i, name in enumerate(TEXT_COLUMNS)
        }
        extra["tool_calls"] = _ints(cols[len(TEXT_COLUMNS)])
        return extra

"""Store methods that load an experiment's results for analysis: per run (columns) and per case (sums).

Analysis reads a lot of runs and few columns, so these loaders are built for speed: they read the
narrow ``runs_results`` index (never the wide rows with their raw outputs) in index order, turn SQL
NULLs into NaN inside SQLite (so numpy converts each column in one C loop), and take the case fields
(id, domain, gold) from the ``cases`` table once per case rather than once per run.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from abbench import _actions as do
from abbench._memo import Memo
from abbench.errors import NotFoundError
from abbench.store._base import StoreBase
from abbench.store._outcomes import (
    _SUM_NAMES,
    KEPT_CODES,
    CaseOutcomes,
    _case_sums,
    _read_sums,
)
from abbench.store._reads import in_asked_order, keep_read, read_in_snapshot
from abbench.types import RunOutcome, RunState

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from abbench.store._pages import StoreState

OUTCOMES: tuple[str, ...] = tuple(o.value for o in RunOutcome)
"""What became of a run, by code (the index into this tuple):

- ``unfinished`` (0): pending, running, executed (waiting for grading) or evaluating;
- ``pass`` (1): graded as right;
- ``fail`` (2): graded as wrong (a real answer that disagrees with the gold or the judge);
- ``execution_failed`` (3): the agent produced no usable answer (``failure_type`` says why);
- ``grading_failed`` (4): the answer exists but no grader reached a verdict;
- ``cancelled`` (5): cancelled before or while it ran;
- ``scored`` (6): graded with a score and no verdict (state ``pass``, ``passed`` NULL): neither right nor wrong.
"""
UNFINISHED, PASSED, FAILED, EXECUTION_FAILED, GRADING_FAILED, CANCELLED, SCORED = range(7)

# One expression, evaluated inside SQLite, that turns (state, failure_type, passed) into the codes above.
OUTCOME_SQL = (
    f"CASE state WHEN '{RunState.PASS}' THEN CASE WHEN passed IS NULL THEN 6 ELSE 1 END "
    f"WHEN '{RunState.FAIL}' THEN CASE WHEN failure_type IS NOT NULL "
    f"THEN 3 WHEN passed IS NULL THEN 4 ELSE 2 END WHEN '{RunState.CANCELLED}' THEN 5 ELSE 0 END"
)

STATES: tuple[str, ...] = tuple(s.value for s in RunState)
"""Run states by code (`RunTable.state` indexes into it), in `abbench.types.RunState` order."""
STATE_SQL = (
    "CASE state "
    + " ".join(f"WHEN '{s}' THEN {code}" for code, s in enumerate(STATES[:-1]))
    + f" ELSE {len(STATES) - 1} END"
)

# SQLite reads 9e999 as infinity: NULL becomes -inf in SQL, so numpy's fromiter converts a column in
# one pass (None would force the slow object path), and -inf becomes NaN afterwards.
_MISSING = "-9e999"

LIGHT_COLUMNS = (
    "run_id",
    "arm",
    "arm_id",
    "case_idx",
    "case_id",
    "round",
    "domain",
    "expected",
    "outcome",
    "state",
    "failure_type",
    "passed",
    "score",
    "prediction",
    "confidence",
    "cost",
    "input_tokens",
    "output_tokens",
    "tokens",
    "latency_ms",
    "evidence_cited",
    "read_file",
    "read_section",
    "read_skill",
)
"""The columns `load_runs` always returns (see `RunTable`)."""

TEXT_COLUMNS = (
    "reason",
    "evidence_refs",
    "files_read",
    "sections_read",
    "error",
    "raw_output",
    "model",
    "session_id",
    "transcript_path",
)
"""The heavy columns `load_runs` adds when asked (``text=True``), plus ``tool_calls`` (a count)."""

_LIST_COLUMNS = ("evidence_refs", "files_read", "sections_read")
_EMPTY_LIST = "('', '[]')"
# Having only SKILL.md "read" is not reading: adapters inject it into the prompt and some list it (as the
# read_skill grader holds).
_INJECTED_ONLY = """('', '[]', '["SKILL.md"]')"""


@dataclass(frozen=True)
class RunTable:
    """One experiment's runs as numpy columns, one row per run, ordered by arm, case and round.

    Attributes:
        experiment_id: The experiment.
        arms: Arm names in the experiment's order; ``arm_index`` points into it.
        run_id: Run ids.
        arm_index: Position of each run's arm in `arms`.
        arm_id: Each run's arm id in the store.
        case_idx: Position of the case in the dataset.
        case_id: The case id (object array of str).
        round: 0-based round.
        domain: The case's domain (object array; None where the case has none).
        expected: The case's gold label or reference answer (object array; None where absent).
        outcome: Outcome codes, an index into `OUTCOMES`.
        state: State codes, an index into `STATES` (the run's state as stored).
        failure_type: For execution failures, the kind (object array; None otherwise).
        passed: 1.0 / 0.0 for graded runs, NaN otherwise.
        score: The graded score (NaN when not graded).
        prediction: The agent's answer (object array; None when it gave none).
        confidence: The agent's confidence 0..1 (NaN when it gave none).
        cost: Money spent by the agent (NaN when not executed).
        input_tokens: Prompt tokens (NaN when not executed).
        output_tokens: Completion tokens (NaN when not executed).
        tokens: Input plus output tokens.
        latency_ms: Wall time of the execution (NaN when not executed, or not reported: `executed` says
            which runs finished their execution).
        evidence_cited: Whether the answer cited at least one skill reference.
        read_file: Whether the agent opened a skill file during the run (SKILL.md alone is not opening:
            it is injected into the prompt).
        read_section: Whether it opened a skill section.
        read_skill: Either of the two.
        text: The heavy columns when loaded (``reason``, ``evidence_refs`` as tuples, ..., and
            ``tool_calls``, the tool calls each session made), else empty.
        execution_done: Whether each run's execution finished, kept when `outcome` holds one grader's
            verdicts rather than the run's own (`GraderVerdicts.on`); None: `executed` reads it from
            the state and the outcome.
    """

    experiment_id: int
    arms: tuple[str, ...]
    run_id: np.ndarray
    arm_index: np.ndarray
    arm_id: np.ndarray
    case_idx: np.ndarray
    case_id: np.ndarray
    round: np.ndarray
    domain: np.ndarray
    expected: np.ndarray
    outcome: np.ndarray
    state: np.ndarray
    failure_type: np.ndarray
    passed: np.ndarray
    score: np.ndarray
    prediction: np.ndarray
    confidence: np.ndarray
    cost: np.ndarray
    input_tokens: np.ndarray
    output_tokens: np.ndarray
    tokens: np.ndarray
    latency_ms: np.ndarray
    evidence_cited: np.ndarray
    read_file: np.ndarray
    read_section: np.ndarray
    read_skill: np.ndarray
    text: dict[str, np.ndarray]
    execution_done: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.run_id.size)

    @property
    def executed(self) -> np.ndarray:
        """Whether each run's execution finished with an answer (`EXECUTED_SQL`, from its state): its
        latency, cost or tokens may still be unknown (NaN), which never makes it unexecuted."""
        import numpy as np

        if self.execution_done is not None:
            return self.execution_done
        done = (
            STATES.index(RunState.EXECUTED),
            STATES.index(RunState.EVALUATING),
            STATES.index(RunState.PASS),
        )
        executed: np.ndarray = (
            np.isin(self.state, done) | (self.outcome == FAILED) | (self.outcome == GRADING_FAILED)
        )
        return executed

    @property
    def arm(self) -> np.ndarray:
        """Each run's arm name (object array)."""
        import numpy as np

        return np.asarray(self.arms, dtype=object)[self.arm_index] if self.arms else np.empty(0, object)

    def arm_rows(self, index: int) -> slice:
        """The rows of the arm at `index` in `arms`, as a slice: the runs are ordered by arm, and a
        slice makes `select` give views of the columns rather than copies of them."""
        import numpy as np

        start, stop = np.searchsorted(self.arm_index, (index, index + 1))
        return slice(int(start), int(stop))

    def select(self, mask: np.ndarray | slice) -> RunTable:
        """The runs where `mask` is true (a boolean array or index array), as a new table; a slice
        gives a table of views."""
        import numpy as np

        values = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, np.ndarray):
                v = v[mask]
            elif f.name == "text":
                v = {k: col[mask] for k, col in v.items()}
            values[f.name] = v
        return RunTable(**values)

    def to_frame(self) -> pd.DataFrame:
        """The table as a pandas DataFrame (arm and outcome as categoricals), one row per run."""
        import pandas as pd

        data: dict[str, Any] = {}
        for name in LIGHT_COLUMNS:
            if name == "arm":
                data[name] = pd.Categorical.from_codes(self.arm_index, categories=pd.Index(self.arms))
            elif name == "outcome":
                data[name] = pd.Categorical.from_codes(self.outcome, categories=pd.Index(OUTCOMES))
            elif name == "state":
                data[name] = pd.Categorical.from_codes(self.state, categories=pd.Index(STATES))
            else:
                data[name] = getattr(self, name)
        data.update(self.text)
        return pd.DataFrame(data)


@dataclass(frozen=True)
class CaseFields:
    """The case fields analysis shows, for a set of case positions of one dataset.

    Attributes:
        case_idx: Positions in the dataset (sorted).
        case_id: Case ids (object array).
        domain: Domains (object array; None where absent).
        expected: Gold labels or reference answers (object array; None where absent).
    """

    case_idx: np.ndarray
    case_id: np.ndarray
    domain: np.ndarray
    expected: np.ndarray

    def positions(self, case_idx: np.ndarray) -> np.ndarray:
        """Where each of `case_idx` sits in these arrays (every value must be present)."""
        import numpy as np

        return np.searchsorted(self.case_idx, case_idx)


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
    """The steps of `ResultsMixin.load_runs`: each reads one group of columns of the chosen runs.

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

    def keys(
        self, n: int, cases: CaseFields, first_round: int, last_round: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Run id, arm id, case position and round of every run."""
        import numpy as np

        rounds = last_round + 1
        n_cases = cases.case_idx.size
        if first_round == 0 and n == len(self.arm_ids) * n_cases * rounds:
            # Runs are unique per (arm, case, round): when there are exactly arms × cases × rounds of
            # them and rounds start at 0, every combination exists, and the keys need not be read.
            arm_id = np.repeat(np.asarray(self.arm_ids, dtype=np.int64), n_cases * rounds)
            case_idx = np.tile(np.repeat(cases.case_idx, rounds), len(self.arm_ids))
            rnd = np.tile(np.arange(rounds, dtype=np.int64), len(self.arm_ids) * n_cases)
            sql = f"SELECT group_concat(id) FROM (SELECT id FROM runs WHERE {self.where} {self.order})"
            return _int_list(self._one(sql)[0]), arm_id, case_idx, rnd
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


_FIELDS: Memo[tuple[np.ndarray, list[np.ndarray]]] = Memo(4)
"""The latest datasets' case fields (`ResultsMixin._dataset_fields`), each with the store's state it was
read in."""


class ResultsMixin(StoreBase):
    """Loading an experiment's results for metrics and comparisons; mixed into `Store`."""

    if TYPE_CHECKING:

        def state_stamp(self) -> StoreState: ...

    def _arm_ids(self, exp_id: int, arms: Sequence[str] | None) -> tuple[list[int], list[str]]:
        rows = self.query("SELECT id, name FROM arms WHERE experiment_id=? ORDER BY position", (exp_id,))
        if not rows:
            if self.query_one("SELECT 1 FROM experiments WHERE id=?", (exp_id,)) is None:
                raise NotFoundError(f"no experiment #{exp_id}; `", do.list_experiments(), "` lists them")
            return [], []
        if arms is None:
            return [r[0] for r in rows], [r[1] for r in rows]
        by_name = {r[1]: r[0] for r in rows}
        unknown = [a for a in arms if a not in by_name]
        if unknown:
            raise NotFoundError(
                f"experiment #{exp_id} has no arm {', '.join(map(repr, unknown))}; its arms: "
                + ", ".join(by_name)
            )
        return [by_name[a] for a in arms], list(arms)

    def case_fields(
        self, exp_id: int, case_idx: Sequence[int] | None = None, *, expected: bool = True
    ) -> CaseFields:
        """Id, domain and gold of the cases an experiment runs (or of the given dataset positions).

        Args:
            exp_id: The experiment.
            case_idx: Only these dataset positions (default: every case the experiment runs).
            expected: Also read the gold (False leaves it None: comparisons do not need it).
        """
        import numpy as np

        row = self.query_one("SELECT dataset_id FROM experiments WHERE id=?", (exp_id,))
        if row is None:
            raise NotFoundError(f"no experiment #{exp_id}; `", do.list_experiments(), "` lists them")
        cursor = _plain_cursor(self.conn)
        if case_idx is None:
            # Concatenated by SQLite: a hundred thousand positions in one value, not a row each.
            wanted = _int_list(
                cursor.execute(
                    "SELECT group_concat(case_idx) FROM (SELECT DISTINCT case_idx FROM runs WHERE experiment_id=?)",
                    (exp_id,),
                ).fetchone()[0]
            )
        else:
            wanted = np.asarray(case_idx, dtype=np.int64)
        # return_index takes numpy's sorting path: the plain call hashes, 10× slower on 100,000 cases
        wanted = np.unique(wanted, return_index=True)[0]
        idx, texts = self._dataset_fields(cursor, row[0])
        if not expected:
            texts = [texts[0], texts[1], np.full(idx.size, None, dtype=object)]
        keep = np.isin(idx, wanted)
        if keep.sum() != wanted.size:
            missing = np.setdiff1d(wanted, idx)
            raise NotFoundError(
                f"experiment #{exp_id} has runs for case positions missing from its dataset "
                f"({', '.join(map(str, missing[:5]))}); the dataset was changed under the store"
            )
        return CaseFields(idx[keep], texts[0][keep], texts[1][keep], texts[2][keep])

    def _dataset_fields(self, cursor: sqlite3.Cursor, dataset_id: int) -> tuple[np.ndarray, list[np.ndarray]]:
        """Position, then id, domain and gold of every case of a dataset, kept while nothing is written
        (`_FIELDS`): the results widget's figures and its comparison both read them."""
        state = self.state_stamp()
        key = (str(self.db_path), dataset_id)
        if state.in_transaction:
            # What is read inside a transaction is kept only when it is a snapshot of `read_in_snapshot`
            # that nobody wrote beside (`keep_read`): metrics read the fields inside theirs.
            fields = _read_dataset_fields(cursor, dataset_id)
            keep_read(_FIELDS, key, lambda: fields)
            return fields
        return _FIELDS.get(
            key,
            state,
            lambda: _read_dataset_fields(cursor, dataset_id),
            same=lambda kept, now: bool(kept.same(now)),
        )

    def load_runs(self, exp_id: int, *, arms: Sequence[str] | None = None, text: bool = False) -> RunTable:
        """An experiment's runs as numpy columns (see `RunTable`), ordered by arm, case and round.

        Everything is read in one read transaction, so the columns agree with each other even while
        a runner is writing.

        Args:
            exp_id: The experiment's id.
            arms: Only these arms, in this order (default: every arm, in the experiment's order).
            text: Also load the heavy columns (reason, evidence references, raw output, ...).

        Raises:
            NotFoundError: no such experiment or arm.
        """

        arm_ids, names = self._arm_ids(exp_id, arms)
        if not arm_ids:
            return _empty_table(exp_id, tuple(names), text)
        table = read_in_snapshot(
            self.conn, lambda c: self._read_runs(c, exp_id, arm_ids, tuple(names), text), self.state_stamp
        )
        if table is None:
            return _empty_table(exp_id, tuple(names), text)
        return in_asked_order(table, arm_ids)

    def _read_runs(
        self, conn: sqlite3.Cursor, exp_id: int, arm_ids: list[int], names: tuple[str, ...], text: bool
    ) -> RunTable | None:
        import numpy as np

        reader = _RunReader(conn, exp_id, arm_ids)
        n, first_round, last_round = reader.count()
        if not n:
            return None
        cases = self.case_fields(exp_id)
        run_id, arm_id, case_idx, rnd = reader.keys(n, cases, first_round, last_round)
        by_id = sorted(arm_ids)
        position = {a: i for i, a in enumerate(arm_ids)}
        arm_index = np.asarray([position[a] for a in by_id], dtype=np.int64)[np.searchsorted(by_id, arm_id)]
        outcome, state = reader.outcomes()
        score, confidence, cost, input_tokens, output_tokens, latency = reader.numbers(n)
        prediction, flags = reader.predictions_and_flags(n)
        at = cases.positions(case_idx)
        return RunTable(
            experiment_id=exp_id,
            arms=names,
            run_id=run_id,
            arm_index=arm_index,
            arm_id=arm_id,
            case_idx=case_idx,
            case_id=cases.case_id[at],
            round=rnd,
            domain=cases.domain[at],
            expected=cases.expected[at],
            outcome=outcome,
            state=state,
            failure_type=reader.failure_types(n, arm_id, case_idx, rnd),
            passed=np.where(outcome == PASSED, 1.0, np.where(outcome == FAILED, 0.0, np.nan)),
            score=score,
            prediction=prediction,
            confidence=confidence,
            cost=cost,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            tokens=input_tokens + output_tokens,
            latency_ms=latency,
            evidence_cited=(flags & 1).astype(bool),
            read_file=(flags & 2).astype(bool),
            read_section=(flags & 4).astype(bool),
            read_skill=(flags & 6).astype(bool),
            text=reader.texts() if text else {},
        )

    def case_outcomes(
        self, exp_id: int, arm_ids: Sequence[int] | None = None, *, scores: bool = True
    ) -> CaseOutcomes:
        """Per (arm, case) sums of an experiment's runs: outcome counts, cost, latency, tokens, scores.

        Finished runs are summed from the ``runs_results`` index alone (a million runs come back as a
        few hundred thousand rows of sums, which is what paired statistics need); runs not finished yet
        are read from the table and added in. Right after `load_run_flags` read the arms' runs, with
        nothing written since, what their codes count is taken from that read (`RunCodes`), and only
        the sums no code carries are read.

        Args:
            exp_id: The experiment's id.
            arm_ids: Only these arms (default: every arm).
            scores: Also sum the graded scores (False leaves ``scored``/``score``/``score_sq`` at 0: a
                pass/fail comparison does not need them, and three fewer sums make the query faster).
        """
        counted = self._counted_outcomes(exp_id, arm_ids, scores)
        if counted is not None:
            return counted
        names = _SUM_NAMES if scores else _SUM_NAMES[:-3]
        finished, rest = _read_sums(_plain_cursor(self.conn), exp_id, arm_ids, names)
        return _case_sums(exp_id, finished, rest)

    def _counted_outcomes(
        self, exp_id: int, arm_ids: Sequence[int] | None, scores: bool
    ) -> CaseOutcomes | None:
        """`case_outcomes` from the codes `load_run_flags` kept (`RunCodes`), counted per case, and the
        sums no code carries, read now; None when no codes of these arms are kept for the store's state,
        or when the store was written while the sums were read."""
        state = self.state_stamp()
        if state.in_transaction:
            return None
        kept = KEPT_CODES.kept((str(self.db_path), exp_id), state, same=lambda a, b: bool(a.same(b)))
        if kept is None:
            return None
        counts = kept.counts.for_arms(self._arm_ids(exp_id, None)[0] if arm_ids is None else arm_ids)
        if counts is None:
            return None
        # A sum of a column no run has is what the query gives for it (`_read_sums`): only the others
        # are read, by the same query over the same rows in the same order, so they are the same sums.
        known = {
            "cost": counts.cost_known,
            "latency": bool(counts.executed.any()),
            "tokens": counts.tokens_known,
        }
        runs_of = {"cost": "cost_runs", "latency": "latency_runs", "tokens": "token_runs"}
        names = [n for name, some in known.items() if some for n in (name, runs_of[name])]
        if scores and counts.fractional:  # else the score sums are counts of scores of 0 and 1
            names += ["scored", "score", "score_sq"]
        if not names:
            return counts.outcomes_with(exp_id, None, scores)
        groups = counts.groups()
        finished, rest = read_in_snapshot(self.conn, lambda c: _read_sums(c, exp_id, arm_ids, names, groups))
        if not self.state_stamp().same(state) or finished is None or rest is None:
            return None  # written meanwhile: the sums may not be the counts'
        return counts.outcomes_with(exp_id, _case_sums(exp_id, finished, rest), scores)


def _read_dataset_fields(cursor: sqlite3.Cursor, dataset_id: int) -> tuple[np.ndarray, list[np.ndarray]]:
    """`ResultsMixin._dataset_fields` read from the store."""
    # Three concatenated columns instead of a row per case: a hundred thousand cases read in one go.
    ids, joined_ids, joined_domains, joined_gold, n = cursor.execute(
        "SELECT group_concat(idx), group_concat(case_id, char(30)), "
        "group_concat(IFNULL(domain, char(29)), char(30)), "
        "group_concat(IFNULL(expected, char(29)), char(30)), count(*) "
        "FROM (SELECT idx, case_id, domain, expected FROM cases WHERE dataset_id=? ORDER BY idx)",
        (dataset_id,),
    ).fetchone()
    idx = _int_list(ids)
    split = [
        _split_texts(joined_ids, n),
        _split_texts(joined_domains, n, repeated=True),
        _split_texts(joined_gold, n, repeated=True),
    ]
    texts = [t for t in split if t is not None]
    if len(texts) < len(split):  # a field holds the separator itself: read row by row
        rows = cursor.execute(
            "SELECT case_id, domain, expected FROM cases WHERE dataset_id=? ORDER BY idx", (dataset_id,)
        ).fetchall()
        columns = list(zip(*rows, strict=True)) if rows else [(), (), ()]
        texts = [_objects(c) for c in columns]
    return idx, texts


def _empty_table(exp_id: int, arms: tuple[str, ...], text: bool) -> RunTable:
    import numpy as np

    ints, floats, objects = (np.empty(0, dtype=np.int64), np.empty(0), np.empty(0, dtype=object))
    return RunTable(
        experiment_id=exp_id,
        arms=arms,
        run_id=ints,
        arm_index=ints,
        arm_id=ints,
        case_idx=ints,
        case_id=objects,
        round=ints,
        domain=objects,
        expected=objects,
        outcome=ints,
        state=ints,
        failure_type=objects,
        passed=floats,
        score=floats,
        prediction=objects,
        confidence=floats,
        cost=floats,
        input_tokens=floats,
        output_tokens=floats,
        tokens=floats,
        latency_ms=floats,
        evidence_cited=np.empty(0, dtype=bool),
        read_file=np.empty(0, dtype=bool),
        read_section=np.empty(0, dtype=bool),
        read_skill=np.empty(0, dtype=bool),
        text={**{name: objects for name in TEXT_COLUMNS}, "tool_calls": ints} if text else {},
    )

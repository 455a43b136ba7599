"""The runs table read in one pass over the store: runs joined with their cases and latest grades in SQL.

`runs_table` builds each row from a plain SQL tuple instead of a `RunRecord`, a `Case` and `Grade`
objects: at 600,000 runs the objects were most of an export's time. Spreadsheets get `Table.cells`, whose
JSON values stay the text the store keeps (`JsonText`) and whose JSONL-only columns are left empty;
`Table.rows` decodes them and adds the full latest grades, the raw source row and the transcript summary.
An experiment with a pairwise judge keeps the record path (`_tables.runs_table_records`): a pairwise
verdict belongs to both runs of its pair, which no index of the grades serves.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

from abbench.dataset import unpack_source_row
from abbench.export._lines import run_csv_lines
from abbench.export._tables import (
    PLAIN_GRADE_FIELDS,
    JsonText,
    Table,
    _grader_columns,
    _run_columns,
    runs_table_records,
)
from abbench.export._writers import JsonLine
from abbench.export._xlsx_rows import run_sheet_rows
from abbench.store import bulk, loads
from abbench.types import OUTCOME_WORDS, outcome_word, run_outcome

if TYPE_CHECKING:
    from abbench.store import Experiment, Store

# Positions in a row of `store.analysis.export_rows` (the arm first, then `EXPORT_RUN_COLUMNS`).
_ID, _CASE_ID, _HISTORY, _CONTEXT, _METADATA = 1, 4, 9, 10, 11
_STATE, _FAILURE, _PASSED, _EVIDENCE, _FILES, _SECTIONS = 12, 13, 15, 20, 21, 22
_IN_TOKENS, _OUT_TOKENS, _LATENCY, _EXECUTED = 24, 25, 29, 34
_SOURCE_LINE, _SOURCE_ROW, _SUMMARY, _OFFERED, _LOADED, _FIRST_LOAD, _GRADES = 37, 38, 39, 40, 41, 42, 43
_OUTPUT = (17, 18, 19, 23, 26, 31, 36)
"""prediction, reason, confidence, model, cost, session id, raw output: None unless executed."""

_Decode = Callable[[Any], Any]


def runs_table(store: Store, exp: Experiment) -> Table:
    """One row per run (case × round × arm) with the case, the output, the state and the latest grades.

    The rows stream from the store a chunk at a time, so writing a table of any size holds one chunk of
    runs in memory, not the experiment.
    """
    summary = store.grades.summary(exp.id)
    if any(kind == "pairwise" for _, kind, _, _ in summary):
        return runs_table_records(store, exp)
    graders = _grader_columns(exp, summary)
    names = [name for name, _ in graders]
    slots = [(cols[0].kind, len(cols)) for _, cols in graders]
    info = store.datasets.get(exp.dataset_id)
    columns = info.source_columns

    def chunks() -> Iterator[list[tuple[Any, ...]]]:
        return store.analysis.export_rows(exp.id, exp.dataset_id, names)

    def cells() -> Iterator[tuple[Any, ...]]:
        outcome = _outcomes()
        for chunk in chunks():
            for t in chunk:
                yield (*_base(exp.name, t, slots, _as_json_text, outcome), None, None, None, None)

    def rows() -> Iterator[tuple[Any, ...]]:
        full = _FullRows(exp.name, slots, columns)
        for chunk in chunks():
            ids = [t[_ID] for t in chunk]
            yield from full(chunk, store.grades.latest_fields_of_runs(exp.id, ids, PLAIN_GRADE_FIELDS))

    table_columns = tuple(_run_columns(graders))
    sheet = [c for c in table_columns if not c.jsonl_only]
    kinds = [(name, kind, n) for name, (kind, n) in zip(names, slots, strict=True)]
    lines = run_csv_lines(store, exp, sheet, kinds)
    made = run_sheet_rows(store, exp, sheet, kinds)
    block = _JsonBlock(_FullRows(exp.name, slots, columns), JsonLine([c.name for c in table_columns]))

    keys = [c.name for c in table_columns]

    def json_lines(out: BinaryIO | None = None) -> Iterator[tuple[bytes, int]]:
        if len(set(keys)) < len(keys):  # (a grader named like another's score column: a row's dict keeps one)
            return bulk.json_blocks(store, exp.id, exp.dataset_id, names, PLAIN_GRADE_FIELDS, block=block)
        return bulk.json_lines(
            store,
            exp.id,
            exp.dataset_id,
            kinds,
            names=keys,
            experiment=exp.name,
            outcome_words=OUTCOME_WORDS,
            grade_fields=PLAIN_GRADE_FIELDS,
            values=_JsonValues(columns),
            block=block,
            out=out,
        )

    return Table(
        "runs",
        exp.name,
        table_columns,
        rows,
        cells=cells,
        csv_lines=lines,
        xlsx_rows=made,
        json_lines=json_lines,
    )


class _FullRows:
    """The runs table's full rows (`Table.rows`: JSON decoded, the latest grades, the raw source row and
    the transcript summary) of a chunk of `store.analysis.export_rows` rows and their latest grades'
    ``(run_id, other_run_id, grader, *PLAIN_GRADE_FIELDS)``. A class, not a closure, so that an
    export's worker processes can be handed it."""

    def __init__(self, experiment: str, slots: list[tuple[str, int]], columns: Any) -> None:
        self.experiment, self.slots, self.columns = experiment, slots, columns

    def __getstate__(self) -> dict[str, Any]:
        return {"experiment": self.experiment, "slots": self.slots, "columns": self.columns}

    def __call__(
        self, chunk: list[tuple[Any, ...]], grade_rows: list[tuple[Any, ...]]
    ) -> Iterator[tuple[Any, ...]]:
        if "_outcome" not in self.__dict__:  # the remembered outcome words last as long as this
            self._outcome, self._decode = _outcomes(), _decoder()
        outcome, decode, columns = self._outcome, self._decode, self.columns
        per_run = _plain_grades(grade_rows)
        for t in chunk:
            grades = per_run.get(t[_ID], {})
            source = decode(t[_SOURCE_ROW])
            yield (
                *_base(self.experiment, t, self.slots, decode, outcome),
                {name: grades[name] for name in sorted(grades)} or None,
                t[_SOURCE_LINE] if t[_CASE_ID] is not None else None,
                unpack_source_row(source, columns) if source is not None else None,
                decode(t[_SUMMARY]) or None,
                decode(t[_OFFERED]),
                decode(t[_LOADED]),
                t[_FIRST_LOAD],
            )


class _JsonBlock:
    """A slice's JSON lines (`abbench.store.JsonBlock`): its full rows, each as `write_jsonl` writes it."""

    def __init__(self, rows: _FullRows, line: JsonLine) -> None:
        self.rows, self.line = rows, line

    def __call__(self, chunk: list[tuple[Any, ...]], grade_rows: list[tuple[Any, ...]]) -> bytes:
        line = self.line
        text = "\n".join([line(row) for row in self.rows(chunk, grade_rows)])
        return (text + "\n").encode("utf-8") if chunk else b""


class _JsonValues:
    """Writes stored values of a JSON line built in SQL (`abbench.store.JsonValues`) as `_FullRows` and
    `JsonLine` make them, by the kind of their column (`abbench.store.PLACE_KINDS`). A class, not a
    closure, so that an export's worker processes can be handed it."""

    def __init__(self, columns: Any) -> None:
        self.columns = columns

    def __getstate__(self) -> dict[str, Any]:
        return {"columns": self.columns}

    def __call__(self, kind: str, value: Any) -> bytes:
        if "_value" not in self.__dict__:
            self._setup()
        return self._encode(self._value[kind](value)).encode("utf-8")

    def members(self, fields: Sequence[tuple[str, str, Any]]) -> bytes:
        """``"key":value`` of each ``(key, kind, value)``, joined by commas: one encoder call."""
        if "_value" not in self.__dict__:
            self._setup()
        value = self._value
        made = {key: v if kind == "text" else value[kind](v) for key, kind, v in fields}
        return self._encode(made)[1:-1].encode("utf-8")

    def _setup(self) -> None:
        self._encode = _encoder()
        decode = _decoder()
        columns = self.columns

        def top(v: Any) -> Any:  # a column of the row: NaN and infinities as null (`JsonLine`)
            return None if isinstance(v, float) and not math.isfinite(v) else v

        def source_row(v: Any) -> Any:
            source = decode(v)
            return top(unpack_source_row(source, columns) if source is not None else None)

        self._value: dict[str, Callable[[Any], Any]] = {
            "text": lambda v: v,
            "top": top,
            "nested": lambda v: v,
            "json": lambda v: top(decode(v)),
            "list": lambda v: top(decode(v or "[]")),
            "latency": lambda v: None if v is None else top(v or 0.0),  # unknown stays null, not 0 ms
            "summary": lambda v: top(decode(v) or None),
            "dimensions": loads,
            "source_row": source_row,
        }


def _encoder() -> Callable[[Any], str]:
    """``json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode``, its C
    encoder made once (``encode`` makes one a call, half the cost of a short value)."""
    from json import encoder

    slow = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
    make = getattr(encoder, "c_make_encoder", None)
    if make is None:
        return slow
    fast = make(None, str, encoder.encode_basestring, None, ":", ",", False, False, True)

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return slow(value)
        return "".join(fast(value, 0))

    return encode


def _plain_grades(rows: list[tuple[Any, ...]]) -> dict[int, dict[str, dict[str, Any]]]:
    """Run id -> grader -> its latest grade as `_plain_grade` gives it, from the plain rows of
    `store.grades.latest_fields_of_runs` (a `Grade` each cost more than the rest of a JSONL row); a
    verdict naming a second run belongs to both runs (`_grades_per_run`)."""
    per_run: dict[int, dict[str, dict[str, Any]]] = {}
    for run_id, other, grader, *values in rows:
        grade = dict(zip(PLAIN_GRADE_FIELDS, values, strict=True))
        grade["passed"] = None if grade["passed"] is None else bool(grade["passed"])
        grade["dimensions"] = loads(grade["dimensions"])
        per_run.setdefault(run_id, {})[grader] = grade
        if other is not None:
            per_run.setdefault(other, {})[grader] = grade
    return per_run


def _as_json_text(text: str | None) -> JsonText | None:
    return None if text is None else JsonText(text)


def _decoder() -> _Decode:
    """JSON text as stored -> its value (None stays None; the common empty list without a parse)."""

    def decode(text: str | None) -> Any:
        if text is None:
            return None
        return [] if text == "[]" else loads(text)

    return decode


def _outcomes() -> Callable[[str, str | None, Any], str]:
    """`outcome_word(run_outcome(...))`, remembered: a run's few (state, failure, verdict) repeat."""
    seen: dict[tuple[str, str | None, Any], str] = {}

    def word(state: str, failure: str | None, passed: Any) -> str:
        key = (state, failure, passed)
        found = seen.get(key)
        if found is None:
            found = seen[key] = outcome_word(run_outcome(state, failure, passed))
        return found

    return word


def _base(
    experiment: str,
    t: tuple[Any, ...],
    slots: list[tuple[str, int]],
    decode: _Decode,
    outcome: Callable[[str, str | None, Any], str],
) -> tuple[Any, ...]:
    """A row of `_run_columns` up to the raw output, from a row of `store.analysis.export_rows`."""
    passed = None if t[_PASSED] is None else bool(t[_PASSED])
    executed = t[_EXECUTED] is not None
    if executed:
        prediction, reason, confidence, model, cost, session, raw = (t[i] for i in _OUTPUT)
        listed = (decode(t[_EVIDENCE] or "[]"), decode(t[_FILES] or "[]"), decode(t[_SECTIONS] or "[]"))
        tokens_in, tokens_out = t[_IN_TOKENS], t[_OUT_TOKENS]
        if tokens_in is None and tokens_out is None:
            usage: tuple[Any, Any, Any] = (None, None, None)
        else:
            usage = (tokens_in or 0, tokens_out or 0, (tokens_in or 0) + (tokens_out or 0))
        latency = None if t[_LATENCY] is None else (t[_LATENCY] or 0.0)  # unknown is not 0 ms
    else:
        prediction = reason = confidence = model = cost = session = raw = latency = None
        listed, usage = (None, None, None), (None, None, None)
    return (
        t[_ID],
        experiment,
        t[0],
        t[2] + 1,  # rounds from 1, as every view shows them (the store counts from 0)
        t[3],
        t[_CASE_ID],
        t[5],
        t[6],
        t[7],
        t[8],
        decode(t[_HISTORY]),
        decode(t[_CONTEXT]),
        decode(t[_METADATA]),
        t[_STATE],
        outcome(t[_STATE], t[_FAILURE], passed),
        t[_FAILURE],
        t[14],
        passed,
        t[16],
        *_grade_cells(t, slots),
        prediction,
        reason,
        confidence,
        *listed,
        model,
        *usage,
        cost,
        t[27],
        t[28],
        latency,
        t[30],
        session,
        t[32],
        t[33],
        t[_EXECUTED],
        t[35],
        raw,
    )


def _grade_cells(t: tuple[Any, ...], slots: list[tuple[str, int]]) -> list[Any]:
    """Each grader's cells (`_grade_cells` of the record path): its verdict, and a judge's score beside
    it; or its score alone; empty without a good latest grade."""
    out: list[Any] = []
    at = _GRADES
    for kind, n in slots:
        status, passed, score = t[at], t[at + 1], t[at + 2]
        at += 3
        if status != "ok":
            out += [None] * n
        elif kind == "float":
            out.append(score)
        else:
            out += [None if passed is None else bool(passed), score][:n]
    return out

"""Store method that hands a JSONL export its lines built inside SQLite, with places Python fills.

Made in Python, a runs JSONL line cost ~40 µs (decoding ~45 values, a dict, the JSON encoder): three
times what a big export may spend. `export_run_json_lines` asks SQLite for each line whole, as the
bytes that go into the file, built by ``json_object`` in C: keys, text escaped exactly as Python's
encoder escapes it (``ensure_ascii=False``), integers, verdicts, nulls. What SQLite cannot write as
Python does is left to Python as a *place* (`PLACE`, a JSON number no line holds), whose value comes
back beside the line and is written by the kind of its column (`PLACE_KINDS`): a float (SQLite's
float text is not Python's ``repr``; 0.0 and 1.0 it writes itself), a stored JSON value (decoded and
encoded again, as the Python path does, so a value another tool wrote comes out canonical). The case's
own fields are a place too: each case's are made once per worker (`JsonValues`), from one read of its
range of cases, and written into every run of the case, in every arm and round.

A line is first built on the assumption that every value has its column's type. A value that has not
(a real in an INTEGER column, a blob where text belongs, a verdict that is not an integer, a grade of
another experiment or of a pair) stops that query, and the slice is built again carefully: such a
value then writes `BAD`, and its row alone is made by the Python path (`JsonBlock`), as is a row whose
text holds `PLACE` itself. Text that is not UTF-8 (which only another tool can store) is refused,
naming its run or case, as the Python path refused it.

A big export's slices are made by two worker processes (`abbench.store.bulk._workers`), each owning every
other range of cases in every arm and round (so what it made of a case serves all its runs), each
writing its lines into the file itself.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from itertools import chain, compress, cycle, repeat
from operator import is_not
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from abbench.errors import StoreError
from abbench.store.bulk._csv import _case_slices
from abbench.store.bulk._json_blocks import JsonBlock, _json_fallback, _JsonSlices
from abbench.store.bulk._json_sql import (
    _CASE,
    _CASE_TAIL,
    _FLOAT_KINDS,
    _REMEMBER,
    BAD,
    CASE_FIELDS,
    CASE_TAIL,
    PLACE,
    _key,
    _line,
    _Sql,
)
from abbench.store.bulk._sheet import _named_joins
from abbench.store.bulk._utf8 import check_utf8
from abbench.store.bulk._workers import store_slices

if TYPE_CHECKING:
    from abbench.store._store import Store


class JsonValues(Protocol):
    """Writes stored values as the Python path writes them: picklable, so that workers can be handed it."""

    def __call__(self, kind: str, value: Any) -> bytes:
        """The JSON text (UTF-8) of `value`, a value of a column of kind `kind` (`PLACE_KINDS`)."""

    def members(self, fields: Sequence[tuple[str, str, Any]]) -> bytes:
        """The members ``"key":value`` (UTF-8, joined by commas) of ``(key, kind, value)`` each."""


class _LineSlices:
    """Reads a slice's lines built in SQL and fills their places; a slice SQLite could not build fast
    is built carefully, and its rows SQLite could not judge made by the Python path (a `read_slices`
    job)."""

    bundled_sqlite = True  # (see `abbench.store.bulk._workers.sqlite_module`)

    def __init__(
        self, fast: str, careful: str, kinds: list[str], fallback: _JsonSlices, values: JsonValues, cases: str
    ) -> None:
        self.fast, self.careful, self.kinds, self.fallback = fast, careful, kinds, fallback
        self.values, self.cases = values, cases

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_")}

    def prepare(self, conn: sqlite3.Connection) -> None:
        """Nothing to register: the places are filled in Python."""

    def read(self, conn: sqlite3.Connection, params: dict[str, Any]) -> tuple[bytes | list[bytes], int]:
        """The slice's lines, as bytes or as the list of their parts (see `read_slices`), and how many."""
        # One snapshot for the lines and any row read again (a caller's own transaction is one already).
        begun = not conn.in_transaction
        if begun:
            conn.execute("BEGIN")
        try:
            return self._read(conn, params)
        finally:
            if begun:
                conn.execute("COMMIT")

    def _read(self, conn: sqlite3.Connection, params: dict[str, Any]) -> tuple[bytes | list[bytes], int]:
        cursor = conn.cursor()
        cursor.row_factory = None  # plain tuples
        careful = False
        try:
            rows = cursor.execute(self.fast, params).fetchall()
        except conn.OperationalError:  # a value of an unexpected type: built carefully (any SQLite module's)
            careful = True
            rows = cursor.execute(self.careful, params).fetchall()
        if not rows:
            return b"", 0
        columns = list(zip(*rows, strict=True))
        text = b"\n".join(columns[0])
        # (what Python adds is UTF-8: only the text SQLite hands over may not be)
        check_utf8(text, columns[0], lambda i: f"run {_run_id(columns[0][i])}")
        self._remember_cases(conn, params)
        if careful and BAD in text:  # (a fast query never writes BAD: it stops)
            return self._by_row(conn, params, rows) + b"\n", len(rows)
        pieces = text.split(PLACE)
        pieces[-1] += b"\n"
        full = [j for j, col in enumerate(columns[1:]) if col.count(None) != len(rows)]
        if all(columns[1 + j].count(None) == 0 for j in full) and len(pieces) == len(full) * len(rows) + 1:
            # every row has the same places (the common case): written a column at a time
            written: list[bytes] = [b""] * (len(pieces) - 1)
            for at, j in enumerate(full):
                written[at :: len(full)] = self._column(self.kinds[j], columns[1 + j])
            return _interleave(pieces, written), len(rows)
        values = list(chain.from_iterable(rows))
        del values[:: len(self.kinds) + 1]  # the lines
        if len(pieces) != len(values) - values.count(None) + 1:
            return self._by_row(conn, params, rows) + b"\n", len(rows)
        return self._filled(pieces, values), len(rows)

    def _filled(self, pieces: list[bytes], values: list[Any]) -> list[bytes]:
        """The lines cut at their places (`pieces`) joined again, each place written from `values` (the
        lines' place values, None where a line has none)."""
        present = list(map(is_not, values, repeat(None)))
        return _interleave(
            pieces, self._write(compress(cycle(self.kinds), present), compress(values, present))
        )

    def _column(self, kind: str, values: Sequence[Any]) -> list[bytes]:
        """The JSON text of a column of places (every row's)."""
        if kind == _CASE:
            return list(map(self._heads.get, values, repeat(self._no_case[0])))
        if kind == _CASE_TAIL:
            return list(map(self._tails.get, values, repeat(self._no_case[1])))
        if kind in _FLOAT_KINDS and set(map(type, values)) == {float}:
            text = ",".join(map(float.__repr__, values))
            if "n" not in text:  # all finite ('inf', 'nan'): the encoder writes a finite float's repr
                return text.encode().split(b",")
        return self._write(repeat(kind, len(values)), iter(values))

    def _write(self, kinds: Iterator[str], values: Iterator[Any]) -> list[bytes]:
        """The JSON text of each place."""
        if "_memo" not in self.__dict__:
            self._memo: dict[tuple[str, Any], bytes] = {}
        memo, write = self._memo, self.values
        out: list[bytes] = []
        append = out.append
        for kind, v in zip(kinds, values, strict=True):
            if type(v) is float and v - v == 0 and kind in _FLOAT_KINDS:
                append(repr(v).encode())  # a finite float, as the encoder writes it
            elif kind == _CASE:
                append(self._heads.get(v, self._no_case[0]))
            elif kind == _CASE_TAIL:
                append(self._tails.get(v, self._no_case[1]))
            else:
                key = (kind, v)
                made = memo.get(key)
                if made is None:
                    made = write(kind, v)
                    if type(v) is str:  # a stored JSON text: met again in other runs
                        if len(memo) >= _REMEMBER:
                            memo.clear()
                        memo[key] = made
                append(made)
        return out

    def _remember_cases(self, conn: sqlite3.Connection, params: dict[str, Any]) -> None:
        """Make the case columns of the slice's range of cases, unless made already."""
        if "_heads" not in self.__dict__:
            self._heads: dict[Any, bytes] = {}
            self._tails: dict[Any, bytes] = {}
            self._ranges: set[tuple[int, int]] = set()
            self._no_case = (
                b",".join(_key(n).encode() + b"null" for n, _ in CASE_FIELDS),
                b",".join(_key(n).encode() + b"null" for n, _ in CASE_TAIL),
            )
        span = (params["start"], params["stop"])
        if span in self._ranges:
            return
        if len(self._heads) >= _REMEMBER:
            self._heads.clear()
            self._tails.clear()
            self._ranges.clear()
        self._ranges.add(span)
        cursor = conn.cursor()
        cursor.row_factory = None
        members, n = self.values.members, len(CASE_FIELDS)
        fields = CASE_FIELDS + CASE_TAIL
        try:
            found = cursor.execute(self.cases, params).fetchall()
        except conn.OperationalError as exc:  # ("Could not decode to UTF-8 column ...")
            raise StoreError(
                f"a case at positions {span[0]:,} to {span[1] - 1:,} of the dataset holds text that SQLite cannot "
                f"hand over ({exc}): another tool wrote it into the store; correct that case's text, then "
                "export again"
            ) from None
        for idx, *values in found:
            named = [(name, kind, v) for (name, kind), v in zip(fields, values, strict=True)]
            self._heads[idx], self._tails[idx] = members(named[:n]), members(named[n:])

    def _by_row(self, conn: sqlite3.Connection, params: dict[str, Any], rows: list[tuple[Any, ...]]) -> bytes:
        """The lines of `rows`, each holding `BAD` or a `PLACE` that is no place made by the Python path
        (its run read again, in the same snapshot), the others filled."""
        redo = [
            i
            for i, row in enumerate(rows)
            if BAD in row[0] or row[0].count(PLACE) != len(row) - 1 - row.count(None)
        ]
        again = self.fallback.lines_of(conn, params, [_run_id(rows[i][0]) for i in redo])
        lines = [row[0] for row in rows]
        for i in redo:
            lines[i] = again[_run_id(lines[i])]
        keep = sorted(set(range(len(rows))) - set(redo))
        if keep:
            values = list(chain.from_iterable(rows[i] for i in keep))
            del values[:: len(self.kinds) + 1]
            filled = b"".join(self._filled(b"\n".join([lines[i] for i in keep]).split(PLACE), values)).split(
                b"\n"
            )
            for i, line in zip(keep, filled, strict=True):
                lines[i] = line
        return b"\n".join(lines)


def _interleave(pieces: list[bytes], written: list[bytes]) -> list[bytes]:
    """`pieces` with `written` between them (one fewer), in order: the parts of the text."""
    if len(pieces) != len(written) + 1:
        raise AssertionError("a place in a line without its value")  # (a bug, not the data)
    joined: list[bytes] = [b""] * (2 * len(pieces) - 1)
    joined[::2], joined[1::2] = pieces, written
    return joined


def _case_range(params: dict[str, Any]) -> int:
    """Which range of cases a slice covers: one worker makes that range in every arm and round."""
    return int(params["start"]) // max(1, int(params["stop"]) - int(params["start"]))


def _run_id(line: bytes) -> int:
    """The run id a line starts with (``{"run_id":<id>,``)."""
    return int(line[line.index(b":") + 1 : line.index(b",")])


def json_lines(
    store: Store,
    exp_id: int,
    dataset_id: int,
    graders: Sequence[tuple[str, str, int]],
    *,
    names: Sequence[str],
    experiment: str,
    outcome_words: dict[str, str],
    grade_fields: Sequence[str],
    values: JsonValues,
    block: JsonBlock,
    chunk: int = 2000,
    out: BinaryIO | None = None,
) -> Iterator[tuple[bytes, int]]:
    """An experiment's runs as JSONL, ``(lines, how many)`` a slice of up to `chunk` cases' runs at
    a time, in `export_run_rows`' order: byte for byte the lines `block` makes of those rows.

    Args:
        exp_id: The experiment.
        dataset_id: Its dataset.
        graders: ``(name, kind, cells)`` of each non-pairwise grader, in the runs table's order:
            ``float`` for a score alone, else a verdict and, with 2 cells, its score.
        names: The runs table's column names, the line's keys (see `_line`).
        experiment: The experiment's name.
        outcome_words: The word of each outcome key or open state (`abbench.types.OUTCOME_WORDS`).
        grade_fields: The fields of each latest grade in ``grades`` (names of `GRADE_COLUMNS`).
        values: Writes a place's value (`JsonValues`).
        block: The Python path, for the rows SQLite cannot build (see `JsonBlock`).
        chunk: Cases per slice.
        out: The file the lines go to: worker processes write theirs into it themselves when it
            is a regular file, and hand back no bytes (see `read_slices`).
    """
    fallback, common = _json_fallback(
        store, exp_id, dataset_id, [g for g, _, _ in graders], grade_fields, block
    )
    built = []
    for careful in (False, True):
        line, placed = _line(_Sql(careful), names, outcome_words, graders, grade_fields)
        built.append(
            f"SELECT {', '.join([line, *(p for _, p in placed)])} FROM runs r"
            f"{_named_joins(len(graders))} WHERE r.experiment_id = :exp AND r.arm_id = :arm_id "
            "AND r.round = :round AND r.case_idx >= :start AND r.case_idx < :stop ORDER BY r.case_idx"
        )
    cases = (
        f"SELECT idx, {', '.join(n for n, _ in CASE_FIELDS + CASE_TAIL)} FROM cases "
        "WHERE dataset_id = :dataset AND idx >= :start AND idx < :stop"
    )
    common |= {"experiment_json": json.dumps(experiment, ensure_ascii=False)}
    cut, rows = _case_slices(store, exp_id, chunk)
    slices = [common | s | {"arm_json": json.dumps(s["arm"], ensure_ascii=False)} for s in cut]
    job = _LineSlices(built[0], built[1], [k for k, _ in placed], fallback, values, cases)
    yield from store_slices(store, job, slices, rows, owner=_case_range, out=out)

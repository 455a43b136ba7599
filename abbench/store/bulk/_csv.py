"""Store methods that hand an export its lines built inside SQLite: one text per run instead of ~40 values.

Reading 600,000 runs as tuples of ~40 Python objects costs more than a CSV export may spend.
`export_run_csv_lines` asks SQLite for each CSV line whole, joined by one ``printf`` (a copy per
``||`` would cost more than the cells), each slice of runs read twice at most:

- First with text cells as they are (a blob or a NUL aside): the checks a cell needs for quotes and
  formula prefixes cost SQLite more than the rest of its line, while Python finds a quote, a comma too
  many, a line break or a formula prefix in a whole slice's text with a few C-speed scans.
- The lines that fail those checks are read again with every text cell written by the CSV rules in
  SQL; once most lines of a slice failed, a reader reads its next slices that way at once.

Floats become SQL text only when whole (``%d`` and ``.0`` is their repr; SQLite's other float text is
not Python's repr, nor fast): the line holds a place for any other float cell, the value comes back
beside the line, and Python writes its ``repr`` there. A JSON cell with anything in it, written by
the CSV rules in SQL (a list or object holds quotes), comes back beside the line the same way, so that
Python's check of the line sees text cells alone; an empty list or no value is written in the line.
Every other cell SQL cannot write exactly (values of an unexpected type, text holding a NUL or `MARK`)
goes through the `CsvCell` function the export passes, which is the Python writer's own rule, so a line
is the one the Python writer would write.

A big export's slices are read by two worker processes (`abbench.store.bulk._workers`), a small one's in
the caller's thread: the job (`_CsvSlices`) and the cell function are picklable for that.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from itertools import chain
from operator import is_not
from typing import TYPE_CHECKING, Any, BinaryIO

from abbench.store._analysis import latest_grade_joins
from abbench.store._run_columns import outcome_word_sql
from abbench.store.bulk._utf8 import check_utf8
from abbench.store.bulk._workers import store_slices

CsvCell = Callable[[int, Any], str]
"""``(cell position, value) -> the cell as the CSV writer writes it``: the general path of a cell."""

MARK = "\ufffe"
"""SQLite's printf ends its text at a NUL: a `CsvCell` writes NUL as MARK + "0" and MARK itself as
MARK + "1" (`mark_line`), so the marks can be undone exactly (`unmark`). MARK + "2" is a float cell's place
in a line, which no marked text holds."""
_MARKED = re.compile((MARK + "([01])").encode())
_PLACE = MARK + "2"
_FLOAT = _PLACE.encode()
_MARK = MARK.encode()

if TYPE_CHECKING:
    from abbench.store._store import Store


def mark_line(text: str) -> str:
    """`text` with NUL and `MARK` written as marks, for a line SQLite builds."""
    if "\x00" in text or MARK in text:
        return text.replace(MARK, MARK + "1").replace("\x00", MARK + "0")
    return text


def unmark(text: bytes) -> bytes:
    """`text` (UTF-8) with the marks of `mark_line` undone (NUL and MARK as they were)."""
    if _MARK not in text:
        return text
    return _MARKED.sub(lambda m: b"\x00" if m[1] == b"0" else _MARK, text)


_CELL = "abbench_csv_cell"
_QUOTED = "'*[,\"' || char(10) || char(13) || ']*'"
_FORMULA_CODES = "(61,43,45,64,9,13)"  # = + - @ tab CR: `abbench.export.FORMULA_PREFIXES`
_FORMULA_AFTER_COMMA = re.compile(b",[=+\\-@\t]")  # (a CR anywhere fails the count of line breaks)
_WHOLE = 1e15
"""A whole float below it in size is written by SQL, as its repr writes it (``%d`` and ``.0``)."""


def _cell(n: int, v: str, kind: str, careful: bool) -> str:
    """SQL: cell `n` of a CSV line from value `v` of a column of `kind`, for ``printf('%s')`` (which
    writes NULL as nothing); for a float cell SQL's repr cannot match, or a JSON cell with anything in
    it, a place (`_PLACE`) that Python fills from `_placed`.

    The common value of the kind is written as it is, `careful` text by the CSV rules (else as it is,
    for Python to check for quotes, commas, line breaks and formula prefixes), anything else through
    the export's own cell function. Text cells come from TEXT columns, which hold no numbers (SQLite
    stores a number given to one as its text): what is below a blob is text."""
    slow = f"{_CELL}({n},iif(typeof({v}) = 'text', CAST({v} AS BLOB), {v}),typeof({v}) = 'text')"
    if kind == "bool":
        return f"(CASE {v} WHEN 1 THEN 'true' WHEN 0 THEN 'false' ELSE (CASE WHEN {v} IS NOT NULL THEN {slow} END) END)"
    if kind == "int":
        return f"(CASE WHEN typeof({v}) IN ('integer','null') THEN {v} ELSE {slow} END)"
    if kind == "float":
        return (
            f"(CASE typeof({v}) WHEN 'null' THEN NULL WHEN 'real' THEN (CASE WHEN {_whole(v)} "
            f"THEN printf('%d.0',{v}) ELSE '{_PLACE}' END) ELSE {slow} END)"
        )
    if kind == "json":
        return f"(CASE WHEN {v} IS NULL OR {v} = '[]' THEN {v} ELSE '{_PLACE}' END)"
    text = f"NOT instr({v},char(0)) AND {v} < x''"  # (NULL for NULL)
    if not careful:
        return f"(CASE WHEN {text} THEN {v} WHEN {v} IS NOT NULL THEN {slow} END)"
    safe = f"(CASE WHEN unicode({v}) IN {_FORMULA_CODES} THEN '''' || {v} ELSE {v} END)"
    written = (
        f"(CASE WHEN {v} GLOB {_QUOTED} THEN '\"' || replace({safe},'\"','\"\"') || '\"' ELSE {safe} END)"
    )
    return (
        f"(CASE WHEN {text} AND NOT instr({v},char({ord(MARK)})) THEN {written} "
        f"WHEN {v} IS NOT NULL THEN {slow} END)"
    )


def _whole(v: str) -> str:
    """SQL: whether real `v` is a whole number `_cell` writes (REAL columns hold no -0.0: SQLite reads
    a whole REAL back from its integer form, so ``0.0`` is the only zero)."""
    return f"{v} = CAST({v} AS INTEGER) AND {v} BETWEEN -{_WHOLE} AND {_WHOLE}"


def _placed(n: int, v: str, kind: str) -> str:
    """SQL: what Python writes in the place `_cell` left for cell `n` (a float or a JSON cell), NULL
    when it left none: the float itself; the JSON text by the CSV rules (a list or object with
    anything in it holds quotes, which would fail Python's check of the line)."""
    if kind == "float":
        return f"(CASE WHEN typeof({v}) = 'real' AND NOT ({_whole(v)}) THEN {v} END)"
    return f"(CASE WHEN {v} IS NULL OR {v} = '[]' THEN NULL ELSE {_cell(n, v, 'text', True)} END)"


def _printf(args: list[str]) -> str:
    """SQL: the args joined by commas, in one ``printf`` per 100 (SQLite's limit is 127 arguments):
    one string built once, not a copy per ``||``."""
    parts = [args[i : i + 100] for i in range(0, len(args), 100)]
    return " || ',' || ".join(f"printf('{','.join('%s' for _ in p)}', {', '.join(p)})" for p in parts)


_EXECUTED = "r.executed_at IS NOT NULL"


def _if_executed(v: str) -> str:
    return f"(CASE WHEN {_EXECUTED} THEN {v} END)"


def _falsy(v: str) -> str:
    return f"({v} IS NULL OR {v} = 0 OR {v} = '')"


def _csv_values(
    outcome_words: Mapping[str, str], graders: Sequence[tuple[str, int]]
) -> list[tuple[str, str]]:
    """(SQL value, kind) of each cell of a runs CSV line after the experiment and arm cells, in the
    order of the runs table's columns: the values `abbench.export`'s runs table computes in Python."""
    outcome = outcome_word_sql(outcome_words)
    grade_cells: list[tuple[str, str]] = []
    for i, (kind, n) in enumerate(graders):
        ok = f"g{i}.status = 'ok'"
        if kind == "float":
            grade_cells.append((f"(CASE WHEN {ok} THEN g{i}.score END)", "float"))
        else:
            both = [
                (f"(CASE WHEN {ok} THEN g{i}.passed END)", "bool"),
                (f"(CASE WHEN {ok} THEN g{i}.score END)", "float"),
            ]
            grade_cells += both[:n]
    tokens = "(r.input_tokens IS NULL AND r.output_tokens IS NULL)"
    t_in = f"(CASE WHEN {_falsy('r.input_tokens')} THEN 0 ELSE r.input_tokens END)"
    t_out = f"(CASE WHEN {_falsy('r.output_tokens')} THEN 0 ELSE r.output_tokens END)"
    usage = [
        f"(CASE WHEN {_EXECUTED} AND NOT {tokens} THEN {t} END)" for t in (t_in, t_out, f"{t_in} + {t_out}")
    ]
    listed = [
        _if_executed(f"(CASE WHEN r.{c} IS NULL OR r.{c} = '' THEN '[]' ELSE r.{c} END)")
        for c in ("evidence_refs", "files_read", "sections_read")
    ]
    latency = _if_executed(
        f"(CASE WHEN r.latency_ms IS NULL THEN NULL WHEN {_falsy('r.latency_ms')} THEN 0.0 ELSE r.latency_ms END)"
    )  # a latency never reported stays empty: unknown is not 0 ms
    return [
        (
            "r.round + 1",
            "int",
        ),  # rounds from 1, as the Python writer and every view (the store counts from 0)
        ("r.case_idx", "int"),
        *[(f"c.{c}", "text") for c in ("case_id", "input", "expected", "domain", "request_id")],
        *[(f"c.{c}", "json") for c in ("history", "context", "metadata")],
        ("r.state", "text"),
        (outcome, "text"),
        ("r.failure_type", "text"),
        ("r.error", "text"),
        ("r.passed", "bool"),
        ("r.score", "float"),
        *grade_cells,
        *[
            (_if_executed(f"r.{c}"), k)
            for c, k in (("prediction", "text"), ("reason", "text"), ("confidence", "float"))
        ],
        *[(v, "json") for v in listed],
        (_if_executed("r.model"), "text"),
        *[(v, "int") for v in usage],
        (_if_executed("r.cost"), "float"),
        ("r.cached_calls", "int"),
        ("r.cost_saved", "float"),
        (latency, "float"),
        ("r.attempts", "int"),
        (_if_executed("r.session_id"), "text"),
        *[(f"r.{c}", "text") for c in ("started_by", "started_at", "executed_at", "finished_at")],
        (_if_executed("r.raw_output"), "text"),
    ]


def csv_lines(
    store: Store,
    exp_id: int,
    dataset_id: int,
    graders: Sequence[tuple[str, str, int]],
    *,
    head: Callable[[str], str],
    cell: CsvCell,
    outcome_words: Mapping[str, str],
    chunk: int = 5000,
    out: BinaryIO | None = None,
) -> Iterator[tuple[bytes, int]]:
    """An experiment's runs as CSV lines, in the order and with the cells of `export_run_rows`' rows
    as the runs CSV export writes them, ``(UTF-8 lines each ended by CRLF, how many)`` for up to
    `chunk` cases at a time.

    Args:
        exp_id: The experiment.
        dataset_id: Its dataset.
        graders: ``(name, kind, cells)`` of each non-pairwise grader: ``float`` for a score alone,
            else a verdict and, with 2 cells, its score.
        head: The experiment and arm cells' text from a run's arm name (the same on every line of an
            arm but for the run id, which SQL adds).
        cell: The general path of a cell (see `CsvCell`); position 0 is the round.
        outcome_words: The word of each outcome key or open state (`abbench.types.OUTCOME_WORDS`).
        chunk: Cases per block (one line per run of the cases): a few blocks are in memory at once.
        out: The file the lines go to: worker processes write theirs into it themselves when it
            is a regular file, and hand back no bytes (see `read_slices`).
    """
    values = _csv_values(outcome_words, [(k, n) for _, k, n in graders])
    names = [name for name, _, _ in graders]
    source = (
        " FROM runs r LEFT JOIN cases c ON c.dataset_id = ? AND c.idx = r.case_idx"
        f"{latest_grade_joins(len(graders))} WHERE r.experiment_id = ? AND r.arm_id = ? AND r.round = ?"
    )
    in_slice = " AND r.case_idx >= ? AND r.case_idx < ? ORDER BY r.case_idx"
    fast, careful = (_select(values, care) + source for care in (False, True))
    cut, rows = _case_slices(store, exp_id, chunk)
    slices = [
        (
            mark_line(head(s["arm"])),
            dataset_id,
            *names,
            exp_id,
            s["arm_id"],
            s["round"],
            s["start"],
            s["stop"],
        )
        for s in cut
    ]
    job = _CsvSlices(fast, careful, in_slice, _Shape(values, cell))
    yield from store_slices(store, job, slices, rows, out=out)


def _case_slices(store: Store, exp_id: int, chunk: int) -> tuple[list[dict[str, Any]], int]:
    """An experiment's runs cut in export order (arm, round, a range of `chunk` cases), each slice
    ``{"arm_id", "arm", "round", "start", "stop"}`` (it may hold no run); and how many runs there are.
    Nothing is counted per slice: a few index seeks and one count."""
    plan = store.conn.execute(
        "SELECT a.id, a.name, (SELECT group_concat(DISTINCT round) FROM runs WHERE experiment_id = ?), "
        "(SELECT max(case_idx) FROM runs WHERE experiment_id = ?) "
        "FROM arms a WHERE a.experiment_id = ? ORDER BY a.position",
        (exp_id, exp_id, exp_id),
    ).fetchall()
    slices = [
        {"arm_id": arm_id, "arm": arm, "round": rnd, "start": start, "stop": start + chunk}
        for arm_id, arm, rounds, last in plan
        for rnd in sorted(int(x) for x in (rounds or "").split(",") if x)
        for start in range(0, int(last or 0) + 1, chunk)
    ]
    rows = store.conn.execute("SELECT count(*) FROM runs WHERE experiment_id = ?", (exp_id,)).fetchone()[0]
    return slices, rows


class _TextCell:
    """The `CsvCell` as SQL calls it: with text as its UTF-8 bytes and a flag saying it is text (the
    sqlite3 module of the bundled SQLite ends a function's text argument at its first NUL)."""

    def __init__(self, cell: CsvCell) -> None:
        self.cell = cell

    def __call__(self, n: int, value: Any, text: int) -> str:
        return self.cell(n, bytes(value).decode("utf-8") if text else value)


class _CsvSlices:
    """Reads a slice's lines (a `read_slices` job): first with text cells as they are, then the lines
    that fail `_Shape.unchecked` again with every text cell written by the CSV rules; once most lines
    of a slice failed, the next slices are read that way at once."""

    bundled_sqlite = True  # (see `abbench.store.bulk._workers.sqlite_module`)

    def __init__(self, fast: str, careful: str, in_slice: str, shape: _Shape) -> None:
        self.fast, self.careful, self.in_slice, self.shape = fast, careful, in_slice, shape
        self.care_first = False

    def prepare(self, conn: sqlite3.Connection) -> None:
        conn.create_function(_CELL, 3, _TextCell(self.shape.cell), deterministic=True)

    def read(self, conn: sqlite3.Connection, params: tuple[Any, ...]) -> tuple[bytes, int]:
        """The slice's lines (UTF-8, each ended by CRLF) and how many."""
        cursor = conn.cursor()
        cursor.row_factory = None
        if self.care_first:
            rows = cursor.execute(self.careful + self.in_slice, params).fetchall()
            return self.shape.block(rows, self.shape.placed(rows)), len(rows)
        rows = cursor.execute(self.fast + self.in_slice, params).fetchall()
        if not rows:
            return b"", 0
        placed = self.shape.placed(rows)
        redo = self.shape.unchecked(rows, params[0], len(placed))
        if redo:
            self.care_first = 2 * len(redo) > len(rows)
            ids = [_run_id(rows[i]) for i in redo]
            again = cursor.execute(
                self.careful + " AND r.id IN (SELECT value FROM json_each(?))",
                (*params[:-2], "[" + ",".join(ids) + "]"),
            ).fetchall()
            by_id = {_run_id(row): row for row in again}
            for i, run in zip(redo, ids, strict=True):
                rows[i] = by_id.get(run, rows[i])  # (a run deleted meanwhile keeps its first line)
            placed = self.shape.placed(rows)
        return self.shape.block(rows, placed), len(rows)


def _run_id(row: tuple[Any, ...]) -> str:
    line: bytes = row[0]
    return line[: line.index(b",")].decode()


def _select(values: list[tuple[str, str]], careful: bool) -> str:
    """SQL: SELECT a run's line as UTF-8 bytes (its id, the experiment and arm cells' parameter,
    `_cell` of each of `values`), then `_placed` of each float and JSON cell, in order."""
    cells = [_cell(n, v, kind, careful) for n, (v, kind) in enumerate(values)]
    placed = [_placed(n, v, kind) for n, (v, kind) in enumerate(values) if kind in ("float", "json")]
    line = f"CAST({_printf(['r.id', '?', *cells])} AS BLOB)"
    return f"SELECT {', '.join([line, *placed])}"


class _Shape:
    """The cells of a slice's rows as SQL gives them (a line, then what goes in each float and JSON
    cell's place, NULL where the line has none), to check lines and to finish them."""

    def __init__(self, values: list[tuple[str, str]], cell: CsvCell) -> None:
        self.cell = cell
        self.places = sum(kind in ("float", "json") for _, kind in values)
        self.commas = len(values) + 1  # between the run id, the experiment, the arm and the cells

    def unchecked(self, rows: list[tuple[Any, ...]], head: str, places: int) -> list[int]:
        """The positions of the rows whose line, its text cells written as they are, may not be what the
        CSV rules write: with a quote, a line break, a formula prefix, or a comma or mark that is not
        the line's own (`head`, the experiment and arm cells, holds its own; a place is one mark);
        `places` is how many places the rows' lines hold."""
        own = head.encode()
        per_line = {c: own.count(c) for c in (b",", b'"', b"\n", b"\r", _MARK)}
        per_line[b","] += self.commas
        formulas = len(_FORMULA_AFTER_COMMA.findall(own))

        def met(text: bytes, n: int, places: int) -> bool:
            return (
                text.count(b",") == n * per_line[b","]
                and text.count(_MARK) == n * per_line[_MARK] + places
                and text.count(b"\n") == n * per_line[b"\n"] + n - 1
                and text.count(b"\r") == n * per_line[b"\r"]
                and text.count(b'"') == n * per_line[b'"']
                and len(_FORMULA_AFTER_COMMA.findall(text)) == n * formulas
            )

        if met(b"\n".join([row[0] for row in rows]), len(rows), places):
            return []
        return [i for i, row in enumerate(rows) if not met(row[0], 1, len(self.placed([row])))]

    def placed(self, rows: list[tuple[Any, ...]]) -> list[Any]:
        """The values of the places in `rows`' lines, in order."""
        if not self.places:
            return []
        values = list(chain.from_iterable(rows))
        del values[:: self.places + 1]  # the lines
        return list(filter(partial(is_not, None), values))

    def block(self, rows: list[tuple[Any, ...]], placed: list[Any]) -> bytes:
        """The rows' lines, each ended by CRLF, each place filled from `placed` (a float cell's repr,
        empty for an infinity; a JSON cell's text), the marks undone.

        Raises:
            StoreError: a line holds text that is not UTF-8 (only another tool can store it).
        """
        text = b"\r\n".join([row[0] for row in rows])
        check_utf8(text, [row[0] for row in rows], lambda i: f"run {_run_id(rows[i])}")
        if placed:
            written = [
                x.encode() if type(x) is str else repr(x).encode() if x - x == 0 else b"" for x in placed
            ]
            pieces = text.split(_FLOAT)
            if len(pieces) != len(written) + 1:
                raise AssertionError("a place in a line without its cell")  # (a bug, not the data)
            joined = [b""] * (2 * len(pieces) - 1)
            joined[::2], joined[1::2] = pieces, written
            text = b"".join(joined)
        return unmark(text) + b"\r\n"

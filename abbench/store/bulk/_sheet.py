"""Store methods that hand a spreadsheet export its sheet rows built inside SQLite, as UTF-8 bytes.

Building ~40 cells a row in Python, decoding them from SQLite and encoding the XML again cost most of a
runs XLSX export. `export_run_sheet_rows` asks SQLite for each ``<row>`` element whole, by the printf
formats the export passes (`SheetCells`), with the cells SQLite can write exactly: text that needs no
escape, no cut and no replaced character; integers a double holds exactly (the writer's ``.16G`` goes
through a double); integral non-zero floats; verdicts. Every other cell — most floats (SQLite's float
text is not Python's), dates, empty text, values of an unexpected type — goes through the export's
own cell function, so a row is the one the Python writer would write. A row's texts are first tested
together (`_plain_row`); a row that fails takes the careful cell tests. The rows come back as bytes,
the way they go into the file, numbered in SQL: by case in a slice holding a run of each of its
cases, else by a window, after the rows of the slices before it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from abbench.store._analysis import arm_rounds, latest_grade_joins
from abbench.store.bulk._csv import _csv_values
from abbench.store.bulk._workers import store_slices

SheetCell = Callable[..., str]
"""``(cell position, sheet row, *values) -> the XML of the cells from that position, as the writer
writes them``: the general path (for one cell, or a run of cells that only it writes)."""

_CELL = "abbench_sheet_cell"
_EXACT = 9007199254740992
"""2**53: integers up to it are the doubles ``.16G`` formats, digit for digit."""

if TYPE_CHECKING:
    from abbench.store._store import Store


@dataclass(frozen=True)
class SheetCells:
    """How the cells of a sheet row are written, position by position (the run id, the experiment,
    the arm, then the cells of a runs CSV line after those).

    Attributes:
        kinds: Each cell's kind: ``text`` and ``json`` (text), ``int``, ``float``, ``bool``; any other
            kind is always written by `cell`.
        formats: Each cell's printf formats: text, int and float one taking the sheet row (``%d``) and
            the value (``%s`` or ``%d``); bool two taking the sheet row, for true and for false.
        row: The printf format of a row around its cells: the sheet row (``%d``), then ``%s``.
        unsafe: A GLOB pattern matching text that the general path must write (text to escape or
            replace; NUL and `marks` are tested apart).
        marks: Texts whose presence in a cell's text leaves the cell to the general path.
        max_text: The longest text written as it is.
        cell: The general path (see `SheetCell`).
    """

    kinds: Sequence[str]
    formats: Sequence[tuple[str, ...]]
    row: str
    unsafe: str
    marks: tuple[str, ...]
    max_text: int
    cell: SheetCell


class _SheetSlices:
    """Reads a slice's sheet rows (a `read_slices` job): by case when the slice is dense, else by a
    window."""

    def __init__(self, dense: str, sparse: str, cell: SheetCell) -> None:
        self.dense, self.sparse, self.cell = dense, sparse, cell

    def prepare(self, conn: sqlite3.Connection) -> None:
        conn.create_function(_CELL, -1, self.cell, deterministic=True)

    def read(self, conn: sqlite3.Connection, params: dict[str, Any]) -> list[bytes]:
        cursor = conn.cursor()
        cursor.row_factory = None
        rows = cursor.execute(self.dense if params["dense"] else self.sparse, params).fetchall()
        return [r[0] for r in rows]


def _cell(n: int, v: str, kind: str, formats: tuple[str, ...], cells: SheetCells, checked: bool) -> str:
    """SQL: sheet cell `n` from value `v` in sheet row ``n_``, for ``printf('%s')``: the common value of
    the kind by its format, NULL as nothing, anything else through the general path. Text is written
    as it is only when `checked` (its row's text needs no escape, cut or replaced character) or when
    it passes the same tests itself."""
    slow = f"{_CELL}({n},n_,{v})"
    fmt = ["'" + f.replace("'", "''") + "'" for f in formats]
    if kind == "bool":
        return (
            f"(CASE {v} WHEN 1 THEN printf({fmt[0]},n_) WHEN 0 THEN printf({fmt[1]},n_) "
            f"ELSE (CASE WHEN {v} IS NOT NULL THEN {slow} END) END)"
        )
    # by typeof first: a value that is a whole expression is worked out once per use
    integer = f"(CASE WHEN {v} BETWEEN -{_EXACT} AND {_EXACT} THEN printf({fmt[0]},n_,{v}) ELSE {slow} END)"
    if kind == "int":
        return f"(CASE typeof({v}) WHEN 'null' THEN '' WHEN 'integer' THEN {integer} ELSE {slow} END)"
    if kind == "float":
        whole = (
            f"(CASE WHEN {v}!=0 AND {v} BETWEEN -{_EXACT}.0 AND {_EXACT}.0 AND {v}=CAST({v} AS INTEGER) "
            f"THEN printf({fmt[0]},n_,CAST({v} AS INTEGER)) ELSE {slow} END)"
        )
        return (
            f"(CASE typeof({v}) WHEN 'null' THEN '' WHEN 'integer' THEN {integer} WHEN 'real' THEN {whole} "
            f"ELSE {slow} END)"
        )
    plain = f"length({v}) BETWEEN 1 AND {cells.max_text}" + ("" if checked else f" AND {_plain(v, cells)}")
    text = f"(CASE WHEN {plain} THEN printf({fmt[0]},n_,{v}) ELSE {slow} END)"
    return f"(CASE typeof({v}) WHEN 'text' THEN {text} WHEN 'null' THEN '' ELSE {slow} END)"


def _plain(v: str, cells: SheetCells) -> str:
    """SQL: whether text `v` is written as it is (the careful test of one cell)."""
    return f"length({v})<={cells.max_text} AND NOT {v} GLOB :unsafe AND NOT instr({v},char(0))" + "".join(
        f" AND NOT instr({v},:mark{i})" for i in range(len(cells.marks))
    )


def _plain_row(t: str, cells: SheetCells) -> str:
    """SQL: whether every text of a row, joined in `t`, may be written as it is, in one pass per
    character sought (each cheaper than one GLOB) over `t` read once: with its quotes, backslashes,
    tabs and line feeds dropped and each mark turned into a control character, it must be a valid
    JSON string (one without control characters)."""
    bare = f"replace(replace(replace(replace({t},'\"',''),'\\',''),char(9),''),char(10),'')"
    for i in range(len(cells.marks)):
        bare = f"replace({bare},:mark{i},char(1))"
    return f"json_valid('\"' || {bare} || '\"')"


def _row(cells: SheetCells, checked: bool) -> str:
    """SQL: a row's ``<row>`` element from the values ``v0`` … of its cells and its number ``n_``.

    The cells go through ``printf`` calls of up to 100 (SQLite's limit is 127 arguments), each one
    string built once, not a copy per ``||``; a run of cells only the general path writes (dates)
    is one call of it.
    """
    args: list[str] = []
    n = 0
    kinds = list(cells.kinds)
    while n < len(kinds):
        if cells.formats[n]:
            args.append(_cell(n, f"v{n}", kinds[n], cells.formats[n], cells, checked))
            n += 1
            continue
        end = n
        while end < len(kinds) and not cells.formats[end]:
            end += 1
        args.append(f"{_CELL}({n},n_,{','.join(f'v{i}' for i in range(n, end))})")
        n = end
    parts = [args[i : i + 100] for i in range(0, len(args), 100)] or [[]]
    body = " || ".join(f"printf('{'%s' * len(p)}'{''.join(', ' + a for a in p)})" for p in parts)
    return "printf('" + cells.row.replace("'", "''") + f"', n_, {body})"


def _named_joins(n: int) -> str:
    """`latest_grade_joins` taking grader ``i``'s name as the parameter ``:g<i>``."""
    joins = latest_grade_joins(n)
    for i in range(n):
        joins = joins.replace("?", f":g{i}", 1)
    return joins


def sheet_rows(
    store: Store,
    exp_id: int,
    dataset_id: int,
    graders: Sequence[tuple[str, str, int]],
    *,
    experiment: str,
    cells: SheetCells,
    outcome_words: Mapping[str, str],
    first_row: int = 2,
    chunk: int = 2000,
) -> Iterator[list[bytes]]:
    """An experiment's runs as sheet rows (UTF-8 ``<row>`` elements numbered from `first_row`), in
    the order and with the cells of `export_run_rows`' rows, up to `chunk` cases' runs at a time.

    Args:
        exp_id: The experiment.
        dataset_id: Its dataset.
        graders: ``(name, kind, cells)`` of each non-pairwise grader: ``float`` for a score alone,
            else a verdict and, with 2 cells, its score.
        experiment: The experiment's name (its cell in each row).
        cells: How each cell is written (`SheetCells`).
        outcome_words: The word of each outcome key or open state (`abbench.types.OUTCOME_WORDS`).
        first_row: The sheet row of the first run.
        chunk: Cases per slice read.
    """
    values = [
        "r.id",
        ":experiment",
        ":arm",
        *(v for v, _ in _csv_values(outcome_words, [(k, n) for _, k, n in graders])),
    ]
    texts = " || ".join(
        f"coalesce({v},'')" for v, kind in zip(values, cells.kinds, strict=True) if kind in ("text", "json")
    )
    inner = ", ".join(f"{v} AS v{n}" for n, v in enumerate(values))
    row = f"CAST(CASE WHEN {_plain_row('t_', cells)} THEN {_row(cells, True)} ELSE {_row(cells, False)} END AS BLOB)"
    runs = (
        "FROM runs r LEFT JOIN cases c ON c.dataset_id = :dataset AND c.idx = r.case_idx"
        f"{_named_joins(len(graders))} WHERE r.experiment_id = :exp AND r.arm_id = :arm_id "
        "AND r.round = :round AND r.case_idx >= :start AND r.case_idx < :stop ORDER BY r.case_idx"
    )
    # A slice with a run of every case in its range numbers its rows by case; any other needs a
    # window, whose table of the rows costs about a quarter of the query.
    dense = f"SELECT {row} FROM (SELECT {inner}, ({texts}) AS t_, :base + r.case_idx AS n_ {runs})"
    sparse = (
        f"SELECT {row} FROM (SELECT {inner}, ({texts}) AS t_, "
        f":before + row_number() OVER (ORDER BY r.case_idx) AS n_ {runs})"
    )
    names = {f"g{i}": name for i, (name, _, _) in enumerate(graders)}
    marks = {f"mark{i}": mark for i, mark in enumerate(cells.marks)}
    common = {"experiment": experiment, "dataset": dataset_id, "exp": exp_id, "unsafe": cells.unsafe}
    common |= names | marks
    slices = [{**common, **s} for s in _sheet_slices(store, exp_id, chunk, first_row)]

    rows = sum(s["rows"] for s in slices)
    job = _SheetSlices(dense, sparse, cells.cell)
    yield from store_slices(store, job, slices, rows)


def _sheet_slices(store: Store, exp_id: int, chunk: int, first_row: int) -> list[dict[str, Any]]:
    """The slices of an experiment's runs in export order (arm, round, case), each with the sheet
    rows before it. An arm's round with a run of every case between its first and last (the
    common one: rows numbered by case) is counted in one pass along the (experiment, arm, case,
    round) index and sliced by arithmetic; any other is counted slice by slice."""
    slices: list[dict[str, Any]] = []
    before = first_row - 1
    for arm_id, arm, rnd in arm_rounds(store.conn, exp_id):
        before = _arm_round_slices(store, exp_id, arm_id, arm, rnd, chunk, before, slices)
    return slices


def _arm_round_slices(
    store: Store,
    exp_id: int,
    arm_id: int,
    arm: str,
    rnd: int,
    chunk: int,
    before: int,
    slices: list[dict[str, Any]],
) -> int:
    """Append the slices of one arm's round to `slices` (see `_sheet_slices`); the rows after them."""
    n, low, high = store.conn.execute(
        "SELECT count(*), min(case_idx), max(case_idx) FROM runs WHERE experiment_id = ? AND arm_id = ? "
        "AND round = ?",
        (exp_id, arm_id, rnd),
    ).fetchone()
    if not n:
        return before
    dense = n == high - low + 1
    if dense:
        parts = [
            (k, min(high + 1, (k + 1) * chunk) - max(low, k * chunk), max(low, k * chunk))
            for k in range(low // chunk, high // chunk + 1)
        ]
    else:
        parts = store.conn.execute(
            "SELECT case_idx / ?, count(*), min(case_idx) FROM runs WHERE experiment_id = ? "
            "AND arm_id = ? AND round = ? GROUP BY 1 ORDER BY 1",
            (chunk, exp_id, arm_id, rnd),
        ).fetchall()
    for k, count, first in parts:
        slices.append(
            {
                "arm_id": arm_id,
                "arm": arm,
                "round": rnd,
                "start": k * chunk,
                "stop": (k + 1) * chunk,
                "before": before,
                "base": before + 1 - first,
                "dense": dense,
                "rows": count,
            }
        )
        before += count
    return before

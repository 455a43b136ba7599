"""Store methods that hand an export its lines built inside SQLite: one text per run instead of ~40 values.

Reading 600,000 runs as tuples of ~40 Python objects costs more than a CSV export may spend.
`export_run_csv_lines` asks SQLite for each CSV line whole, joined by one ``printf`` (a copy per
``||`` would cost more than the cells), each slice of runs read twice at most:

- First with text cells as they are (a blob or a NUL aside): the checks a cell needs for quotes and
  formula prefixes cost SQLite more than the rest of its line, while Python finds a quote, a comma too
  many, a line break or a formula prefix in a whole slice's text with a few C-speed scans.
- The lines that fail those checks are read again with every text cell written by the CSV rules in
  SQL; once most lines of a slice failed, a reader reads its next slices that way at once.

Floats never become SQL text (SQLite's float text is not Python's repr, nor fast): the line holds a
place for each float cell, the value comes back beside the line, and Python writes its ``repr`` there.
A JSON cell, written by the CSV rules in SQL (a list or object with anything in it holds quotes), comes
back beside the line the same way, so that Python's check of the line sees text cells alone.
Every other cell SQL cannot write exactly (values of an unexpected type, text holding a NUL or `MARK`)
goes through the `CsvCell` function the export passes, which is the Python writer's own rule, so a line
is the one the Python writer would write.
"""

from __future__ import annotations

import math
import queue
import re
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain
from typing import Any

from abbench.store._analysis import latest_grade_joins
from abbench.store._base import StoreBase

CsvCell = Callable[[int, Any], str]
"""``(cell position, value) -> the cell as the CSV writer writes it``: the general path of a cell."""

MARK = "\ufffe"
"""SQLite's printf ends its text at a NUL: a `CsvCell` writes NUL as MARK + "0" and MARK itself as
MARK + "1" (`mark_line`), so the marks can be undone exactly (`unmark`). MARK + "2" is a float cell's place
in a line, which no marked text holds."""
_MARKED = re.compile(MARK + "([01])")
_FLOAT = MARK + "2"


def mark_line(text: str) -> str:
    """`text` with NUL and `MARK` written as marks, for a line SQLite builds."""
    if "\x00" in text or MARK in text:
        return text.replace(MARK, MARK + "1").replace("\x00", MARK + "0")
    return text


def unmark(text: str) -> str:
    """`text` with the marks of `mark_line` undone (NUL and MARK as they were)."""
    if MARK not in text:
        return text
    return _MARKED.sub(lambda m: "\x00" if m[1] == "0" else MARK, text)


@dataclass(frozen=True)
class LineBlock:
    """Lines of an export file, written as they are.

    Attributes:
        lines: How many lines (rows) the text holds; a cell may hold line breaks of its own.
        text: The lines joined by the file's line end, none after the last.
    """

    lines: int
    text: str


_CELL = "abbench_csv_cell"
_QUOTED = "'*[,\"' || char(10) || char(13) || ']*'"
_FORMULA_CODES = "(61,43,45,64,9,13)"  # = + - @ tab CR: `abbench.export.FORMULA_PREFIXES`
_FORMULA_AFTER_COMMA = re.compile(",[=+\\-@\t]")  # (a CR anywhere fails the count of line breaks)
_NOT_WRITTEN = {None: "", math.inf: "", -math.inf: ""}
"""Float cells a repr does not write: empty (SQLite holds no NaN)."""


def _cell(n: int, v: str, kind: str, careful: bool) -> str | None:
    """SQL: cell `n` of a CSV line from value `v` of a column of `kind`, for ``printf('%s')`` (which
    writes NULL as nothing); None for a float cell, a place in the line that Python fills.

    The common value of the kind is written as it is, `careful` text by the CSV rules (else as it is,
    for Python to check for quotes, commas, line breaks and formula prefixes), anything else through
    the export's own cell function. Text cells come from TEXT columns, which hold no numbers (SQLite
    stores a number given to one as its text): what is below a blob is text."""
    slow = f"{_CELL}({n},{v})"
    if kind == "bool":
        return f"(CASE {v} WHEN 1 THEN 'true' WHEN 0 THEN 'false' ELSE (CASE WHEN {v} IS NOT NULL THEN {slow} END) END)"
    if kind == "int":
        return f"(CASE WHEN typeof({v}) IN ('integer','null') THEN {v} ELSE {slow} END)"
    if kind == "float":
        return None
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


def _printf(args: list[str | None]) -> str:
    """SQL: the args joined by commas, None as a float cell's place, in one ``printf`` per 100
    (SQLite's limit is 127 arguments): one string built once, not a copy per ``||``."""
    parts = [args[i : i + 100] for i in range(0, len(args), 100)]
    return " || ',' || ".join(
        f"printf('{','.join(_FLOAT if a is None else '%s' for a in p)}', "
        f"{', '.join(a for a in p if a is not None)})"
        for p in parts
    )


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
    words = " ".join(f"WHEN '{k}' THEN '{w}'" for k, w in outcome_words.items())
    outcome = (
        "(CASE WHEN r.state = 'fail' THEN (CASE WHEN r.failure_type IS NOT NULL THEN 'execution failed' "
        f"WHEN r.passed IS NULL THEN 'grading failed' ELSE 'wrong' END) ELSE (CASE r.state {words} "
        "ELSE r.state END) END)"
    )
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
    latency = _if_executed(f"(CASE WHEN {_falsy('r.latency_ms')} THEN 0.0 ELSE r.latency_ms END)")
    return [
        ("r.round", "int"),
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


class LinesMixin(StoreBase):
    """Export lines built inside SQLite (see the module docstring)."""

    def export_run_csv_lines(
        self,
        exp_id: int,
        dataset_id: int,
        graders: Sequence[tuple[str, str, int]],
        *,
        head: Callable[[str], str],
        cell: CsvCell,
        outcome_words: Mapping[str, str],
        chunk: int = 5000,
    ) -> Iterator[LineBlock]:
        """An experiment's runs as CSV lines, in the order and with the cells of `export_run_rows`' rows
        as the runs CSV export writes them, joined by CRLF, the lines of up to `chunk` cases at a time.

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
        """
        values = _csv_values(outcome_words, [(k, n) for _, k, n in graders])
        names = [name for name, _, _ in graders]
        source = (
            " FROM runs r LEFT JOIN cases c ON c.dataset_id = ? AND c.idx = r.case_idx"
            f"{latest_grade_joins(len(graders))} WHERE r.experiment_id = ? AND r.arm_id = ? AND r.round = ?"
        )
        in_slice = " AND r.case_idx >= ? AND r.case_idx < ? ORDER BY r.case_idx"
        fast, careful = (_select(values, care) + source for care in (False, True))
        plan = self.conn.execute(
            "SELECT a.id, a.name, (SELECT group_concat(DISTINCT round) FROM runs WHERE experiment_id = ?), "
            "(SELECT max(case_idx) FROM runs WHERE experiment_id = ?) "
            "FROM arms a WHERE a.experiment_id = ? ORDER BY a.position",
            (exp_id, exp_id, exp_id),
        ).fetchall()
        slices = [
            (mark_line(head(arm)), dataset_id, *names, exp_id, arm_id, rnd, start, start + chunk)
            for arm_id, arm, rounds, last in plan
            for rnd in sorted(int(x) for x in (rounds or "").split(",") if x)
            for start in range(0, int(last or 0) + 1, chunk)
        ]
        shape = _Shape(values, cell)
        care = threading.local()  # per reader: whether most lines of its last slice needed care

        def read(params: tuple[Any, ...]) -> LineBlock:
            conn = self.conn  # this thread's own connection
            conn.create_function(_CELL, 2, cell, deterministic=True)
            cursor = conn.cursor()
            cursor.row_factory = None
            if getattr(care, "first", False):
                return shape.block(cursor.execute(careful + in_slice, params).fetchall())
            rows = cursor.execute(fast + in_slice, params).fetchall()
            redo = shape.unchecked(rows, params[0])
            if redo:
                care.first = 2 * len(redo) > len(rows)
                ids = [_run_id(rows[i]) for i in redo]
                again = cursor.execute(
                    careful + " AND r.id IN (SELECT value FROM json_each(?))",
                    (*params[:-2], "[" + ",".join(ids) + "]"),
                ).fetchall()
                by_id = {_run_id(row): row for row in again}
                for i, run in zip(redo, ids, strict=True):
                    rows[i] = by_id.get(run, rows[i])  # (a run deleted meanwhile keeps its first line)
            return shape.block(rows)

        yield from _in_order(read, slices, self.close_thread_connection)


def _run_id(row: tuple[Any, ...]) -> str:
    line: str = row[0]
    return line[: line.index(",")]


def _select(values: list[tuple[str, str]], careful: bool) -> str:
    """SQL: SELECT a run's line (its id, the experiment and arm cells' parameter, `_cell` of each of
    `values`), then what goes in each place of the line, in order: a float cell's value, a JSON cell
    written by the CSV rules (a list or object with anything in it holds quotes, which would fail
    Python's check of the line; the common empty list needs no rule)."""
    cells = [None if kind == "json" else _cell(n, v, kind, careful) for n, (v, kind) in enumerate(values)]
    placed = [
        v
        if kind == "float"
        else f"(CASE WHEN {v} IS NULL OR {v} = '[]' THEN {v} ELSE {_cell(n, v, kind, True)} END)"
        for n, (v, kind) in enumerate(values)
        if kind in ("float", "json")
    ]
    return f"SELECT {', '.join([_printf(['r.id', '?', *cells]), *placed])}"


class _Shape:
    """The cells of a slice's rows as SQL gives them (a line, then what goes in each of its places), to
    check lines and to finish them."""

    def __init__(self, values: list[tuple[str, str]], cell: CsvCell) -> None:
        self.cell = cell
        self.places = [(n, kind) for n, (_, kind) in enumerate(values) if kind in ("float", "json")]
        self.commas = len(values) + 1  # between the run id, the experiment, the arm and the cells

    def unchecked(self, rows: list[tuple[Any, ...]], head: str) -> list[int]:
        """The positions of the rows whose line, its text cells written as they are, may not be what the
        CSV rules write: with a quote, a line break, a formula prefix, or a comma or mark that is not
        the line's own (`head`, the experiment and arm cells, holds its own)."""
        per_line = {c: head.count(c) for c in (",", '"', "\n", "\r", MARK)}
        per_line[","] += self.commas
        per_line[MARK] += len(self.places)

        formulas = len(_FORMULA_AFTER_COMMA.findall(head))

        def met(text: str, n: int) -> bool:
            return (
                text.count(",") == n * per_line[","]
                and text.count(MARK) == n * per_line[MARK]
                and text.count("\n") == n * per_line["\n"] + n - 1
                and text.count("\r") == n * per_line["\r"]
                and text.count('"') == n * per_line['"']
                and len(_FORMULA_AFTER_COMMA.findall(text)) == n * formulas
            )

        if met("\n".join([row[0] for row in rows]), len(rows)):
            return []
        return [i for i, row in enumerate(rows) if not met(row[0], 1)]

    def block(self, rows: list[tuple[Any, ...]]) -> LineBlock:
        """The rows' lines joined by CRLF, each place filled (a float cell's repr, a JSON cell's text),
        the marks undone."""
        text = "\r\n".join([row[0] for row in rows])
        k = len(self.places)
        if k:
            values = list(chain.from_iterable(rows))
            del values[:: k + 1]
            written: list[Any] = [None] * len(values)
            for at, (n, kind) in enumerate(self.places):
                got = values[at::k]
                if kind != "float":
                    written[at::k] = map(_NOT_WRITTEN.get, got, got)
                    continue
                written[at::k] = map(_NOT_WRITTEN.get, got, map(repr, got))
                if not {float, type(None)}.issuperset(map(type, got)):
                    for j in range(at, len(values), k):  # another number, or text, in a float column
                        if type(values[j]) is not float and values[j] is not None:
                            written[j] = self.cell(n, values[j])
            pieces = text.split(_FLOAT)
            if len(pieces) != len(written) + 1:
                raise AssertionError("a place in a line without its cell")  # (a bug, not the data)
            joined = [""] * (2 * len(pieces) - 1)
            joined[::2], joined[1::2] = pieces, written
            text = "".join(joined)
        return LineBlock(len(rows), unmark(text))


def _in_order(
    read: Callable[[tuple[Any, ...]], LineBlock], slices: list[tuple[Any, ...]], done: Callable[[], None]
) -> Iterator[LineBlock]:
    """`read` of each slice, in order, read by two threads a few slices ahead: SQLite builds lines
    without holding the GIL, so two readers keep both cores of a small machine busy. Each thread
    closes its connection (`done`) when it has no slice left or the caller stopped reading."""
    stop = threading.Event()
    results: list[queue.Queue[tuple[LineBlock | None, BaseException | None]]] = [
        queue.Queue(2),
        queue.Queue(2),
    ]

    def work(k: int) -> None:
        try:
            for params in slices[k::2]:
                try:
                    item: tuple[LineBlock | None, BaseException | None] = (read(params), None)
                except BaseException as exc:  # handed to the reader, which raises it
                    item = (None, exc)
                while not stop.is_set():
                    try:
                        results[k].put(item, timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set() or item[1] is not None:
                    return
        finally:
            done()

    threads = [
        threading.Thread(target=work, args=(k,), name=f"abbench-export-{k}", daemon=True) for k in (0, 1)
    ]
    for t in threads:
        t.start()
    try:
        for i in range(len(slices)):
            block, error = results[i % 2].get()
            if error is not None:
                raise error
            if block is not None and block.lines:
                yield block
    finally:
        stop.set()
        for t in threads:
            t.join()

"""Writing a `Table` as CSV (UTF-8 with BOM, formula-safe), XLSX (typed, frozen header) or JSONL (lossless)."""

from __future__ import annotations

import csv
import json
import logging
import math
import re
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from functools import partial
from itertools import islice
from pathlib import Path
from typing import IO, Any

from abbench._files import keep_empty
from abbench.export._tables import Column, JsonText, Table
from abbench.export._xlsx import TRUNCATED, XLSX_MAX_CELL

log = logging.getLogger(__name__)

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""A text cell starting with one of these is a formula to Excel, LibreOffice or Google Sheets."""

_TRUNCATED = TRUNCATED
_ILLEGAL_XML = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def neutralise_formula(value: str) -> str:
    """`value` made inert for spreadsheets: text beginning with ``= + - @``, a tab or a carriage return
    gets a leading ``'`` (OWASP's advice against CSV/formula injection); other text is returned as is.

    Only text is touched: numbers are written as numbers, so ``-0.5`` stays a number.
    """
    if value and value[0] in FORMULA_PREFIXES:
        return "'" + value
    return value


def _json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _text_cell(column: Column, value: Any) -> Any:
    """A value for a CSV cell: text neutralised, numbers as numbers, booleans as true/false."""
    if value is None:
        return ""
    if type(value) is str and column.kind != "json":  # the common cell, first (a row has ~40)
        return "'" + value if value and value[0] in FORMULA_PREFIXES else value
    if isinstance(value, JsonText):
        return neutralise_formula(value)
    if column.kind == "json" or isinstance(value, (list, dict, tuple)):
        return neutralise_formula(_json_text(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if isinstance(value, float) and not math.isfinite(value):
            return ""
        return repr(value)
    return neutralise_formula(str(value))


def write_csv(table: Table, out: IO[str] | Path) -> int:
    """Write `table` as CSV for Excel: UTF-8 with a byte-order mark, every row terminated by CRLF.

    Returns the number of data rows.
    """
    columns = [c for c in table.columns if not c.jsonl_only]
    index = [i for i, c in enumerate(table.columns) if not c.jsonl_only]
    if isinstance(out, Path):
        with open(out, "w", encoding="utf-8-sig", newline="", opener=keep_empty) as f:
            return _write_csv(table, columns, index, f)
    out.write("\ufeff")
    return _write_csv(table, columns, index, out)


def _write_csv(table: Table, columns: list[Column], index: list[int], f: IO[str]) -> int:
    writer = csv.writer(f, dialect="excel")
    writer.writerow([neutralise_formula(c.name) for c in columns])
    if table.csv_lines is not None:
        return _write_ready(f, table.csv_lines)
    convert = _csv_row(table.columns, index)
    n = 0
    rows = table.spreadsheet_rows()
    while block := list(islice(rows, 2000)):
        writer.writerows([convert(row) for row in block])
        n += len(block)
    return n


def _csv_cell_code(i: int, column: Column) -> str:
    """The expression for cell `i` of row ``r``: the common value of the column's kind as the csv
    module writes it (None as empty, numbers by repr), anything else through ``C[i]`` (`_text_cell`)."""
    slow = f"C[{i}](x)"
    if column.kind == "int":
        return f"(x if(x:=r[{i}])is None or type(x)is int else {slow})"
    if column.kind == "float":
        return f"(x if(x:=r[{i}])is None or(type(x)is float and x-x==0)else {slow})"
    if column.kind == "bool":
        return f"(x if(x:=r[{i}])is None else('true'if x else'false')if type(x)is bool else {slow})"
    kind = "J" if column.kind == "json" else "str"
    return f"(x if(x:=r[{i}])is None or(type(x)is {kind} and x[:1]not in P)else {slow})"


def _csv_row(columns: Sequence[Column], index: list[int]) -> Callable[[tuple[Any, ...]], list[Any]]:
    """A function giving the CSV cells of a row: one expression per column (`_csv_cell_code`), compiled
    once, so the common cell costs no Python call."""
    slow = {i: partial(_text_cell, columns[i]) for i in index}
    body = ",".join(_csv_cell_code(i, columns[i]) for i in index)
    scope = {"C": slow, "P": frozenset(FORMULA_PREFIXES), "J": JsonText}
    convert: Callable[[tuple[Any, ...]], list[Any]] = eval(f"lambda r: [{body}]", scope)  # our own code
    return convert


def _parse_datetime(value: Any) -> Any:
    if not isinstance(value, str):
        return value
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    # Excel has no time zones: the store keeps UTC, and the header says so.
    return moment.replace(tzinfo=None)


def _xlsx_text(value: str) -> str:
    value = _ILLEGAL_XML.sub("\ufffd", value)  # control characters are not allowed in XML
    if len(value) > XLSX_MAX_CELL:
        value = value[: XLSX_MAX_CELL - len(_TRUNCATED)] + _TRUNCATED
    return value


def write_jsonl(table: Table, out: IO[str] | Path) -> int:
    """Write `table` as JSON Lines: one object per row with every column, nested values kept as JSON,
    non-ASCII text as is (UTF-8, no BOM). Nothing is neutralised or cut: the file is lossless.

    Returns the number of rows.
    """
    if isinstance(out, Path):
        with open(out, "w", encoding="utf-8", newline="\n", opener=keep_empty) as f:
            return _write_jsonl(table, f)
    return _write_jsonl(table, out)


def _write_jsonl(table: Table, f: IO[str]) -> int:
    if table.json_lines is not None:
        return _write_ready(f, table.json_lines)
    n = 0
    line = JsonLine(table.names)
    lines: list[str] = []
    for row in table.rows():
        lines.append(line(row))
        if len(lines) == 2000:
            n += _write_lines(f, lines)
    return n + _write_lines(f, lines)


def _write_ready(f: IO[str], lines: Callable[..., Iterator[tuple[bytes, int]]]) -> int:
    """Write lines made ready (UTF-8, ``(bytes, how many)`` at a time) after what `f` holds; returns
    how many. A UTF-8 file takes them as the bytes they come as — or from the worker processes that
    made them, which write into it themselves (`Table.json_lines`) — anything else as text."""
    encoding = str(getattr(f, "encoding", "")).lower().replace("-", "").replace("_", "")
    raw = getattr(f, "buffer", None) if encoding in ("utf8", "utf8sig") else None
    f.flush()
    n = 0
    for data, count in lines(raw) if raw is not None else lines():
        if raw is not None:
            raw.write(data)
        else:
            f.write(data.decode("utf-8"))
        n += count
    return n


class JsonLine:
    """A row of columns `names` as one JSON Lines object (as `write_jsonl` writes it, without its line
    end). A class, not a closure, so that an export's worker processes can be handed it."""

    def __init__(self, names: Sequence[str]) -> None:
        self.names = list(names)
        self._encoders: tuple[Callable[[Any], str], Callable[[Any], str]] | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_encoders": None}

    def __call__(self, row: Sequence[Any]) -> str:
        if self._encoders is None:
            # One encoder for the file: json.dumps with options builds a new one per call.
            options: dict[str, Any] = {"ensure_ascii": False, "separators": (",", ":"), "default": str}
            self._encoders = (
                json.JSONEncoder(allow_nan=False, **options).encode,
                json.JSONEncoder(**options).encode,
            )
        finite, encode = self._encoders
        names = self.names
        # The common row has no NaN or infinity anywhere: encoded as it is, without a look at each of
        # its ~45 values; the encoder refuses one it finds, and that row alone takes the careful way.
        try:
            return finite(dict(zip(names, row, strict=True)))
        except ValueError:  # (a row of the wrong width fails again below, as it always did)
            return encode({name: _finite(v) for name, v in zip(names, row, strict=True)})


def _write_lines(f: IO[str], lines: list[str]) -> int:
    """Write `lines` each ended by a newline, then empty the list; returns how many."""
    n = len(lines)
    if n:
        f.write("\n".join(lines))
        f.write("\n")
        lines.clear()
    return n


def _finite(value: Any) -> Any:
    # JSON has no NaN or infinity; null says "no number" without breaking strict parsers.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value

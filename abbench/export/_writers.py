"""Writing a `Table` as CSV (UTF-8 with BOM, formula-safe), XLSX (typed, frozen header) or JSONL (lossless)."""

from __future__ import annotations

import csv
import json
import logging
import math
import re
from datetime import datetime
from pathlib import Path
from typing import IO, Any

from abbench.errors import UsageError
from abbench.export._tables import Column, Table

log = logging.getLogger(__name__)

FORMULA_PREFIXES = ("=", "+", "-", "@", "\t", "\r")
"""A text cell starting with one of these is a formula to Excel, LibreOffice or Google Sheets."""

XLSX_MAX_ROWS = 1_048_576
XLSX_MAX_CELL = 32_767
"""Excel's limits: rows per sheet (header included) and characters per cell."""

_TRUNCATED = "… [truncated: the full text is in the JSONL export]"
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
        with out.open("w", encoding="utf-8-sig", newline="") as f:
            return _write_csv(table, columns, index, f)
    out.write("\ufeff")
    return _write_csv(table, columns, index, out)


def _write_csv(table: Table, columns: list[Column], index: list[int], f: IO[str]) -> int:
    writer = csv.writer(f, dialect="excel")
    writer.writerow([neutralise_formula(c.name) for c in columns])
    n = 0
    for row in table.rows():
        writer.writerow([_text_cell(c, row[i]) for c, i in zip(columns, index, strict=True)])
        n += 1
    return n


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


def write_xlsx(table: Table, out: Path) -> int:
    """Write `table` as an Excel workbook: typed cells (numbers, booleans, dates), a bold frozen header
    and a filter on it, one sheet named after the table.

    XlsxWriter in its constant-memory mode writes each row to the file as it comes, so memory stays flat
    and a row of ~40 columns costs a few dozen microseconds (openpyxl's styled cell objects cost ten times
    that). Text is stored as text, never as a formula, so a cell such as ``=HYPERLINK(...)`` shows as
    written. Text longer than Excel's 32,767 characters per cell is cut with a note (JSONL keeps it
    whole). Numbers keep 16 significant digits (Excel itself shows 15).

    Returns the number of data rows.

    Raises:
        UsageError: more rows than a sheet holds.
    """
    import xlsxwriter

    columns = [c for c in table.columns if not c.jsonl_only]
    index = [i for i, c in enumerate(table.columns) if not c.jsonl_only]
    options = {"constant_memory": True, "strings_to_numbers": False, "strings_to_formulas": False}
    wb = xlsxwriter.Workbook(str(out), {**options, "strings_to_urls": False})
    try:
        ws = wb.add_worksheet(table.what[:31])
        ws.freeze_panes(1, 0)
        for n, c in enumerate(columns):
            width = 40 if c.name in ("input", "reason", "raw_output", "note", "comment", "error") else 14
            ws.set_column(n, n, max(width, min(len(c.name) + 2, 40)))
        bold = wb.add_format({"bold": True})
        for n, c in enumerate(columns):
            ws.write_string(0, n, c.name + (" (UTC)" if c.kind == "datetime" else ""), bold)
        formats = (wb.add_format({"valign": "top"}), wb.add_format({"num_format": "yyyy-mm-dd hh:mm:ss"}))
        cells = [(n, c, i) for n, (c, i) in enumerate(zip(columns, index, strict=True))]
        n = _xlsx_rows(table, ws, cells, formats)
        if columns:
            ws.autofilter(0, 0, n, len(columns) - 1)
    finally:
        wb.close()
    return n


def _xlsx_rows(table: Table, ws: Any, cells: list[tuple[int, Column, int]], formats: tuple[Any, Any]) -> int:
    """Write the data rows of `table` below the header; returns how many."""
    text_format, date_format = formats
    n = 0
    for row in table.rows():
        n += 1
        if n >= XLSX_MAX_ROWS:
            raise UsageError(
                f"the {table.what} of {table.experiment} have more rows than an Excel sheet holds "
                f"({XLSX_MAX_ROWS - 1:,}); export them as csv or jsonl instead"
            )
        for col, column, i in cells:
            value = row[i]
            if value is None:
                continue
            if column.kind == "json" or isinstance(value, (list, dict, tuple)):
                value = _json_text(value)
            elif column.kind == "datetime":
                value = _parse_datetime(value)
                if isinstance(value, datetime):
                    ws.write_datetime(n, col, value, date_format)
                    continue
            elif isinstance(value, bool):
                ws.write_boolean(n, col, value)
                continue
            elif isinstance(value, (int, float)):
                if math.isfinite(value):
                    ws.write_number(n, col, value)
                continue
            ws.write_string(n, col, _xlsx_text(str(value)), text_format)  # text, never a formula
    return n


def write_jsonl(table: Table, out: IO[str] | Path) -> int:
    """Write `table` as JSON Lines: one object per row with every column, nested values kept as JSON,
    non-ASCII text as is (UTF-8, no BOM). Nothing is neutralised or cut: the file is lossless.

    Returns the number of rows.
    """
    if isinstance(out, Path):
        with out.open("w", encoding="utf-8", newline="\n") as f:
            return _write_jsonl(table, f)
    return _write_jsonl(table, out)


def _write_jsonl(table: Table, f: IO[str]) -> int:
    n = 0
    names = table.names
    for row in table.rows():
        record = {name: _finite(v) for name, v in zip(names, row, strict=True)}
        f.write(json.dumps(record, ensure_ascii=False, separators=(",", ":"), default=str))
        f.write("\n")
        n += 1
    return n


def _finite(value: Any) -> Any:
    # JSON has no NaN or infinity; null says "no number" without breaking strict parsers.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value

"""An XLSX writer that streams a `Table` into the workbook's zip: the sheet's XML written row by row.

A workbook is a zip of XML parts. This writes the few a sheet needs ([Content_Types].xml, the
relationships, workbook.xml, styles.xml with the bold header, the wrapped-at-top text and the date
format, and the sheet with its frozen header and filter), the sheet's cells as inline strings, numbers,
booleans and dates, straight into a deflate stream: memory stays flat, and a row of ~40 cells costs a
few microseconds, where XlsxWriter's per-cell calls cost ~40 µs a row and openpyxl's cell objects more.

Each column's cells are written by one expression chosen by its kind (`_cell_code`); a value that does
not have its column's kind takes the general path (`_any_cell`), which writes it as the old writers did.
Text is always an inline string, so ``=HYPERLINK(...)`` shows as written and is never a formula.
"""

from __future__ import annotations

import math
import re
import zipfile
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import IO, Any
from xml.sax.saxutils import escape, quoteattr

from abbench._files import keep_empty
from abbench.dataset import column_letter
from abbench.errors import UsageError
from abbench.export._tables import Column, JsonText, Table
from abbench.store import check_utf8

XLSX_MAX_ROWS = 1_048_576
XLSX_MAX_CELL = 32_767
"""Excel's limits: rows per sheet (header included) and characters per cell."""

TRUNCATED = "… [truncated: the full text is in the JSONL export]"

_WIDE = ("input", "reason", "raw_output", "note", "comment", "error")
_BLOCK = 2000
"""Rows joined before they are encoded and compressed."""

# Not allowed in XML 1.0 (replaced by U+FFFD); and Excel's own escapes, _xHHHH_, which it would read
# back as the character they name: a literal one gets its underscore escaped (as Excel does).
_ILLEGAL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff\ud800-\udfff]")
_EXCEL_ESCAPE = re.compile("(_x[0-9a-fA-F]{4}_)")
_ESCAPED = re.compile("[&<>\r]")
"""What `_text` changes in a cell's text short enough to keep whole."""

_STYLE_HEADER, _STYLE_TEXT, _STYLE_DATE = 1, 2, 3
_STYLES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<styleSheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main">'
    '<numFmts count="1"><numFmt numFmtId="164" formatCode="yyyy\\-mm\\-dd\\ hh:mm:ss"/></numFmts>'
    '<fonts count="2"><font><sz val="11"/><name val="Calibri"/><family val="2"/><scheme val="minor"/></font>'
    '<font><b/><sz val="11"/><name val="Calibri"/><family val="2"/><scheme val="minor"/></font></fonts>'
    '<fills count="2"><fill><patternFill patternType="none"/></fill>'
    '<fill><patternFill patternType="gray125"/></fill></fills>'
    '<borders count="1"><border><left/><right/><top/><bottom/><diagonal/></border></borders>'
    '<cellStyleXfs count="1"><xf numFmtId="0" fontId="0" fillId="0" borderId="0"/></cellStyleXfs>'
    '<cellXfs count="4"><xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0"/>'
    '<xf numFmtId="0" fontId="1" fillId="0" borderId="0" xfId="0" applyFont="1"/>'
    '<xf numFmtId="0" fontId="0" fillId="0" borderId="0" xfId="0" applyAlignment="1">'
    '<alignment vertical="top"/></xf>'
    '<xf numFmtId="164" fontId="0" fillId="0" borderId="0" xfId="0" applyNumberFormat="1"/></cellXfs>'
    '<cellStyles count="1"><cellStyle name="Normal" xfId="0" builtinId="0"/></cellStyles>'
    "</styleSheet>"
)
_MAIN = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_PKG_REL = "http://schemas.openxmlformats.org/package/2006/relationships"
_CONTENT_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/xl/workbook.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
    '<Override PartName="/xl/worksheets/sheet1.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
    '<Override PartName="/xl/styles.xml" '
    'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/>'
    "</Types>"
)
_ROOT_RELS = (
    f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{_PKG_REL}">'
    f'<Relationship Id="rId1" Type="{_REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>'
)
_WORKBOOK_RELS = (
    f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<Relationships xmlns="{_PKG_REL}">'
    f'<Relationship Id="rId1" Type="{_REL}/worksheet" Target="worksheets/sheet1.xml"/>'
    f'<Relationship Id="rId2" Type="{_REL}/styles" Target="styles.xml"/></Relationships>'
)


def _width(column: Column) -> float:
    """The column's width as Excel stores it (characters of the default font, with its padding)."""
    chars = max(40 if column.name in _WIDE else 14, min(len(column.name) + 2, 40))
    pixels = int(chars * 7 + 0.5) + 5
    return int(pixels / 7 * 256) / 256


def _text(value: str) -> str:
    """An inline string's content: cut to Excel's cell limit (with a note), XML-escaped."""
    if len(value) > XLSX_MAX_CELL:
        value = value[: XLSX_MAX_CELL - len(TRUNCATED)] + TRUNCATED
    value = value.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return value.replace("\r", "&#13;") if "\r" in value else value  # a bare \r would read as \n


def _string_cell(ref: str, value: str, style: int = _STYLE_TEXT) -> str:
    """A text cell (an inline string) at `ref`."""
    return f'<c r="{ref}" s="{style}" t="inlineStr"><is><t xml:space="preserve">{_text(value)}</t></is></c>'


def _number_cell(ref: str, digits: str) -> str:
    """A number cell at `ref`, written `digits`."""
    return f'<c r="{ref}"><v>{digits}</v></c>'


def _bool_cell(ref: str, bit: str) -> str:
    """A boolean cell at `ref`: `bit` is 1 or 0."""
    return f'<c r="{ref}" t="b"><v>{bit}</v></c>'


class _Dates(dict[str, str | None]):
    """ISO-8601 text -> its Excel serial date (UTC: Excel has no time zones) as the sheet writes it, 16
    significant digits; None for text that is not a date. Remembered (runs share their seconds), and
    read as a dict, the cheapest lookup a cell can make."""

    _EPOCH = datetime(1899, 12, 31)

    def __missing__(self, text: str) -> str | None:
        if len(self) > 100_000:
            self.clear()
        try:
            moment = datetime.fromisoformat(text).replace(tzinfo=None)
        except ValueError:
            self[text] = None
            return None
        delta = moment - self._EPOCH
        serial = delta.days + (float(delta.seconds) + float(delta.microseconds) / 1e6) / 86400
        if serial > 59:  # Excel counts 29 February 1900
            serial += 1
        digits = self[text] = f"{serial:.16G}"
        return digits


def _any_cell(column: Column, value: Any, ref: str, dates: _Dates) -> str:
    """A cell for any value, dispatched as the earlier writers did: JSON as text, dates of datetime
    columns as dates, booleans, finite numbers; anything else as text."""
    import json

    if value is None or (isinstance(value, str) and not value):
        return ""  # an empty text is an empty cell, as XlsxWriter and Excel keep it
    if isinstance(value, JsonText):
        return _string_cell(ref, value)
    if column.kind == "json" or isinstance(value, (list, dict, tuple)):
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
        return _string_cell(ref, text)
    if column.kind == "datetime":
        serial = dates[value] if isinstance(value, str) else None
        if serial is not None:
            return f'<c r="{ref}" s="{_STYLE_DATE}"><v>{serial}</v></c>'
        if isinstance(value, datetime):
            return _any_cell(column, value.isoformat(), ref, dates)
    elif isinstance(value, bool):
        return _bool_cell(ref, str(int(value)))
    elif isinstance(value, (int, float)):
        return _number_cell(ref, f"{value:.16G}") if math.isfinite(value) else ""
    return _string_cell(ref, str(value))


def _cell_code(n: int, column: Column, i: int) -> str:
    """The expression that writes value `i` of row ``r`` in sheet column `n` of sheet row ``n_``: the
    common value of the column's kind inline, anything else through ``A[n]`` (`_any_cell`)."""
    letter = column_letter(n)
    ref = f"{letter}{{n_}}"
    slow = f"A[{n}](x, f'{ref}')"
    if column.kind in ("text", "json"):
        kind = "str" if column.kind == "text" else "J"
        # the common text needs no escape and no cut: tested in C (a regex, a length), not by `_text`
        escaped = "x if len(x)<=M and not E(x) else T(x)"
        text = f'<c r="{ref}" s="{_STYLE_TEXT}" t="inlineStr"><is><t xml:space="preserve">{{{escaped}}}</t></is></c>'

        return f"(''if(x:=r[{i}])is None else f'{text}'if type(x)is {kind} and x else {slow})"
    if column.kind in ("int", "float"):
        number = _number_cell(ref, "{x:.16G}")
        return f"(''if(x:=r[{i}])is None else f'{number}'if(type(x)is int or type(x)is float)and x-x==0 else {slow})"
    if column.kind == "bool":
        true, false = _bool_cell(ref, "1"), _bool_cell(ref, "0")
        return f"(''if(x:=r[{i}])is None else(f'{true}'if x else f'{false}')if type(x)is bool else {slow})"
    date = f'<c r="{ref}" s="{_STYLE_DATE}"><v>{{d}}</v></c>'
    return f"(''if(x:=r[{i}])is None else f'{date}'if type(x)is str and(d:=D[x])is not None else {slow})"


def _row_writer(
    columns: list[Column], index: list[int], dates: _Dates
) -> Callable[[tuple[Any, ...], int], str]:
    """A function writing one row's ``<row>`` element from a table row (`columns` at `index` in it).

    It is compiled from one expression per column (`_cell_code`), so a row costs no Python call per
    cell beyond the text escaping.
    """
    body = "+".join(_cell_code(n, c, i) for n, (c, i) in enumerate(zip(columns, index, strict=True))) or "''"
    writer: Callable[[tuple[Any, ...], int], str] = _compile(
        f"lambda r, n_: f'<row r=\"{{n_}}\">'+{body}+'</row>'", columns, dates
    )
    return writer


def cells_writer(
    columns: list[Column], n: int, count: int, dates: _Dates
) -> Callable[[tuple[Any, ...], int], str]:
    """The `count` cells from sheet column `n` on as `_row_writer` writes them, from a row holding just
    their values."""
    body = "+".join(_cell_code(n + i, columns[n + i], i) for i in range(count)) or "''"
    writer: Callable[[tuple[Any, ...], int], str] = _compile(f"lambda r, n_: {body}", columns, dates)
    return writer


def _compile(source: str, columns: list[Column], dates: _Dates) -> Any:
    """`source` (made of `_cell_code` expressions for `columns`) evaluated with the names they use."""
    slow = [
        (lambda column: lambda x, ref: _any_cell(column, x, ref, dates))(c) for c in columns
    ]  # one bound column each
    scope = {"A": slow, "T": _text, "D": dates, "J": JsonText, "E": _ESCAPED.search, "M": XLSX_MAX_CELL}
    return eval(source, scope)  # our own expressions, from column kinds


def _sheet_head(columns: list[Column]) -> str:
    cols = "".join(
        f'<col min="{n + 1}" max="{n + 1}" width="{_width(c)}" customWidth="1"/>'
        for n, c in enumerate(columns)
    )
    header = "".join(
        _string_cell(
            f"{column_letter(n)}1", c.name + (" (UTC)" if c.kind == "datetime" else ""), _STYLE_HEADER
        )
        for n, c in enumerate(columns)
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<worksheet xmlns="{_MAIN}" xmlns:r="{_REL}">'
        '<sheetViews><sheetView tabSelected="1" workbookViewId="0">'
        '<pane ySplit="1" topLeftCell="A2" activePane="bottomLeft" state="frozen"/>'
        '<selection pane="bottomLeft"/></sheetView></sheetViews>'
        '<sheetFormatPr defaultRowHeight="15"/>'
        + (f"<cols>{cols}</cols>" if cols else "")
        + f'<sheetData><row r="1">{header}</row>'
    )


def _workbook(sheet: str, filter_ref: str | None) -> str:
    name = quoteattr(sheet)
    defined = (
        '<definedNames><definedName name="_xlnm._FilterDatabase" localSheetId="0" hidden="1">'
        f"{escape(_quoted_sheet(sheet))}!{filter_ref}</definedName></definedNames>"
        if filter_ref
        else ""
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<workbook xmlns="{_MAIN}" xmlns:r="{_REL}">'
        f'<bookViews><workbookView/></bookViews><sheets><sheet name={name} sheetId="1" r:id="rId1"/></sheets>'
        f"{defined}</workbook>"
    )


def _quoted_sheet(sheet: str) -> str:
    return "'" + sheet.replace("'", "''") + "'"


def _absolute(ref: str) -> str:
    start, end = ref.split(":")
    return ":".join("$" + re.sub(r"(\d+)", r"$\1", part) for part in (start, end))


def write_xlsx(table: Table, out: Path) -> int:
    """Write `table` as an Excel workbook: typed cells (numbers, booleans, dates), a bold frozen header
    and a filter on it, one sheet named after the table.

    The sheet streams into the file as rows come, so memory stays flat whatever the size. Text is
    stored as text, never as a formula, so a cell such as ``=HYPERLINK(...)`` shows as written; text
    longer than Excel's 32,767 characters per cell is cut with a note (JSONL keeps it whole), and
    characters XML cannot hold become U+FFFD. Numbers keep 16 significant digits (Excel shows 15);
    dates of datetime columns are Excel dates in UTC (the header says so).

    Returns the number of data rows.

    Raises:
        UsageError: more rows than a sheet holds.
    """
    columns = [c for c in table.columns if not c.jsonl_only]
    index = [i for i, c in enumerate(table.columns) if not c.jsonl_only]
    sheet = _ILLEGAL.sub("\ufffd", table.what[:31]) or "Sheet1"
    with (
        open(out, "w+b", opener=keep_empty) as file,
        zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf,
    ):
        for name, text in (
            ("[Content_Types].xml", _CONTENT_TYPES),
            ("_rels/.rels", _ROOT_RELS),
            ("xl/_rels/workbook.xml.rels", _WORKBOOK_RELS),
            ("xl/styles.xml", _STYLES),
        ):
            zf.writestr(_entry(name), text)
        with zf.open(_entry("xl/worksheets/sheet1.xml"), "w", force_zip64=True) as raw:
            raw.write(_sheet_head(columns).encode("utf-8"))
            n = (
                _write_rows(table, columns, index, raw)
                if table.xlsx_rows is None
                else _write_made(table, raw)
            )
            filter_ref = f"A1:{column_letter(len(columns) - 1)}{n + 1}" if columns else None
            tail = f'<autoFilter ref="{filter_ref}"/>' if filter_ref else ""
            raw.write(f"</sheetData>{tail}</worksheet>".encode())
        zf.writestr(
            _entry("xl/workbook.xml"), _workbook(sheet, _absolute(filter_ref) if filter_ref else None)
        )
    return n


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))  # the same bytes for the same table
    info.compress_type = zipfile.ZIP_DEFLATED
    # Level 1: the sheet's XML is repetitive, so it still shrinks ~10×, at several times level 6's speed.
    info._compresslevel = 1  # type: ignore[attr-defined]  # ZipFile.open(info, "w") reads it from here
    return info


def _write_rows(table: Table, columns: list[Column], index: list[int], raw: IO[bytes]) -> int:
    """Write the data rows of `table` below the header, a block at a time; returns how many."""
    row_xml = _row_writer(columns, index, _Dates())
    rows: Iterable[tuple[Any, ...]] = table.spreadsheet_rows()
    n = 1
    block: list[str] = []
    for row in rows:
        n += 1
        block.append(row_xml(row, n))
        if len(block) == _BLOCK:
            _check_rows(table, n)
            raw.write(_clean("".join(block)).encode("utf-8"))
            block = []
    _check_rows(table, n)
    raw.write(_clean("".join(block)).encode("utf-8"))
    return n - 1


def _write_made(table: Table, raw: IO[bytes]) -> int:
    """Write the data rows `table.xlsx_rows` made (sheet rows from 2, as bytes); returns how many."""
    assert table.xlsx_rows is not None
    n = 0
    for rows in table.xlsx_rows():
        n += len(rows)
        _check_rows(table, n + 1)
        block = b"".join(rows)
        # SQLite hands its text over as stored: a file Excel cannot open is refused here instead
        check_utf8(block, rows, partial(_sheet_row, table, n - len(rows) + 2))
        raw.write(block)
    return n


def _sheet_row(table: Table, first: int, i: int) -> str:
    """Where row `i` of a block whose first row is sheet row `first` is, in words."""
    return f"the {table.what} of {table.experiment}: sheet row {first + i:,}"


def _check_rows(table: Table, n: int) -> None:
    if n > XLSX_MAX_ROWS:
        raise UsageError(
            f"the {table.what} of {table.experiment} have more rows than an Excel sheet holds "
            f"({XLSX_MAX_ROWS - 1:,}); export them as csv or jsonl instead"
        )


def _clean(xml: str) -> str:
    """A block of rows with the characters XML cannot hold replaced and Excel's escapes escaped (the
    markup itself has neither, so the whole block is searched at once)."""
    if _ILLEGAL.search(xml):
        xml = _ILLEGAL.sub("\ufffd", xml)
    if "_x" in xml:
        xml = _EXCEL_ESCAPE.sub(r"_x005F\1", xml)
    return xml

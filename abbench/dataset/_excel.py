"""Excel workbooks (xlsx, xlsm, xlsb, xls, ods, through python-calamine): sheet, header row, columns."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Iterator, Sequence
from functools import partial
from itertools import islice
from pathlib import Path
from typing import Any, NoReturn

from abbench.dataset._formats import OpenedFile, RowChunk, column_letter, header_names
from abbench.dataset._headers import second_header, two_row_names, two_row_note
from abbench.dataset._profile import ReadSpec
from abbench.dataset._sparse import read_sparse
from abbench.dataset._workbook import Workbook
from abbench.errors import ImportFailed, UsageError


def _excel_value(value: Any) -> Any:
    t = type(value)
    if t is str or t is int or t is bool:
        return value
    if t is float:
        if value != value:  # NaN
            return None
        return int(value) if value.is_integer() else value
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if value is None:
        return ""
    return str(value)


def open_excel(path: Path, read: ReadSpec) -> OpenedFile:
    """Inspect a workbook (xlsx, xlsm, xlsb, xls, ods): `read`'s sheet (or the first with data), its header row, its columns."""
    header_row = read.header_row
    guard = Workbook(path)  # the archive checked before the reader opens it
    try:
        book = _open_book(path)
        try:
            names, visible = list(book.sheet_names), _visible_sheets(book)
            name = _choose_sheet(path, names, visible, read.sheet)
            data = _sheet(path, book, guard, name)
            notes: list[str] = []
            if read.sheet is None and not _has_cells(data):
                name = _only_filled_sheet(path, book, guard, visible, name, notes)
                data = _sheet(path, book, guard, name)
            elif read.sheet is None and len(visible) > 1:  # (an empty first one: the rule above)
                name, data = _table_sheet(path, book, guard, visible, name, data, notes)
            head_rows, last_row = _head_rows(data, header_row)
        finally:
            book.close()
    finally:
        guard.close()
    if not head_rows:
        _refuse_empty(path, name, names, header_row, last_row)
    columns, data_from = _sheet_columns(path, name, data, head_rows, header_row, notes)
    options = {"format": "xlsx", "sheet": name, "header_row": 0 if header_row == 0 else data_from - 1}
    # The sheet parsed for the header serves the first read too: parsing is most of an Excel read.
    chunks = partial(_chunks, path, name, [data], data_from, len(columns))
    return OpenedFile("xlsx", columns, True, chunks, options, notes=notes)


def _sheet(path: Path, book: Any, guard: Workbook, name: str) -> Any:
    """The sheet called `name`: read by calamine when its box is small enough, else sparsely; a reader
    error becomes an `ImportFailed` naming the sheet."""
    if guard.plan(name) == "sparse":
        scan = guard.scan(name)
        assert guard.zip is not None and scan is not None
        try:
            return read_sparse(guard.zip, scan)
        except ImportFailed as exc:
            raise ImportFailed(f"{path.name}!{name}: {exc}") from None
    try:
        return book.get_sheet_by_name(name)
    except Exception as exc:
        raise ImportFailed(
            f"{path.name}!{name}: the sheet cannot be read ({exc}); open the file in Excel and save it again"
        ) from None


def _open_book(path: Path) -> Any:
    try:
        from python_calamine import CalamineWorkbook
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ImportFailed("reading Excel files needs python-calamine: pip install python-calamine") from exc
    try:
        return CalamineWorkbook.from_path(str(path))
    except Exception as exc:
        raise ImportFailed(
            f"{path.name}: cannot open as a workbook ({exc}); {_not_a_workbook(path)}"
        ) from None


def _visible_sheets(book: Any) -> list[str]:
    return [m.name for m in book.sheets_metadata if str(m.typ).endswith("WorkSheet")] or list(
        book.sheet_names
    )


def _choose_sheet(path: Path, names: list[str], visible: list[str], sheet: str | int | None) -> str:
    """The sheet asked for (by name or 0-based index), else the first worksheet."""
    if sheet is None:
        if not visible:
            raise ImportFailed(f"{path.name} has no worksheet")
        return visible[0]
    if isinstance(sheet, int) or (sheet not in names and sheet.strip().isdigit()):
        idx = int(sheet)
        if not 0 <= idx < len(names):
            raise UsageError(
                f"{path.name} has {len(names)} sheets; sheet index {idx} is out of range "
                f"(0..{len(names) - 1}: {_named(names)})"
            )
        return names[idx]
    if sheet in names:
        return sheet
    raise UsageError(
        f"{path.name} has no sheet {sheet!r}; its sheets: {_named(names)} (or give an index from 0)"
    )


def _only_filled_sheet(
    path: Path, book: Any, guard: Workbook, visible: list[str], name: str, notes: list[str]
) -> str:
    """The sheet to read when the first is empty (a cover left blank, data on "Sheet2").

    The only sheet that holds anything is what was meant; with several, the user chooses.
    """
    filled = [n for n in visible if n != name and _has_cells(_sheet(path, book, guard, n))]
    if len(filled) == 1:
        notes.append(
            f"the first sheet {name!r} is empty; read sheet {filled[0]!r}, the only one holding data"
        )
        return filled[0]
    if filled:
        raise ImportFailed(
            f"{path.name}: the first sheet {name!r} is empty and {len(filled)} sheets hold data "
            f"({_named(filled, quoted=True)}); choose one with --sheet NAME (sheet=)"
        )
    return name


_NOTES_NAME = re.compile(r"read\s*me|about|notes?|info|cover|instructions?|说明|概述", re.I)
SHEETS_NAMED = 12  # a message names this many of a workbook's sheets, then counts the rest


def _named(sheets: list[str], *, quoted: bool = False) -> str:
    """`sheets` for a message: the first `SHEETS_NAMED`, then how many more (a workbook may hold thousands)."""
    shown = ", ".join(map(repr, sheets[:SHEETS_NAMED]) if quoted else sheets[:SHEETS_NAMED])
    return shown + (f", … and {len(sheets) - SHEETS_NAMED:,} more" if len(sheets) > SHEETS_NAMED else "")


def _reads_as_notes(name: str, data: Any) -> bool:
    """Whether a sheet reads as notes rather than a table: of its first 30 filled rows fewer than two have
    two cells or more, and it is named so (README, About, Notes, 说明 …) or holds a sentence (> 60 characters)."""
    wide, longest = 0, 0
    for seen, (_, cells) in enumerate((r for r in _numbered(data) if any(c != "" for c in r[1])), start=1):
        wide += sum(c != "" for c in cells) >= 2
        longest = max(longest, *(len(str(c)) for c in cells))
        if wide >= 2 or seen >= 30:
            break
    return wide < 2 and (bool(_NOTES_NAME.search(name)) or longest > 60)


def _table_sheet(
    path: Path, book: Any, guard: Workbook, visible: list[str], name: str, data: Any, notes: list[str]
) -> tuple[str, Any]:
    """The sheet to read of a workbook of several, none asked for: the first, unless it reads as notes
    and a later one holds a table; `notes` names every sheet and the one read."""
    if _reads_as_notes(name, data):
        table = _first_table_sheet(path, book, guard, visible, name)
        if table is not None:
            notes.append(
                f"the first sheet {name!r} reads as notes (one column of text); read sheet {table!r}, "
                "the first that holds a table"
            )
            name, data = table, _sheet(path, book, guard, table)
    notes.append(
        f"{path.name} has {len(visible):,} sheets ({_named(visible)}); read {name!r}: "
        "choose another with --sheet NAME (sheet=)"
    )
    return name, data


def _first_table_sheet(path: Path, book: Any, guard: Workbook, visible: list[str], first: str) -> str | None:
    """The first visible sheet after `first` that holds a table, or None."""
    for other in visible:
        if other != first:
            data = _sheet(path, book, guard, other)
            if _has_cells(data) and not _reads_as_notes(other, data):
                return other
    return None


def _head_rows(data: Any, header_row: int | None) -> tuple[list[tuple[int, list[Any]]], int]:
    """The first filled rows (1-based number, cells), up to the header asked for; and the last row seen."""
    head_rows: list[tuple[int, list[Any]]] = []
    number = 0
    for number, cells in _numbered(data):
        if header_row and number < header_row:
            continue
        if not any(c != "" for c in cells):
            continue
        head_rows.append((number, cells))
        if len(head_rows) >= 12 or (header_row and number >= header_row):
            break
    return head_rows, number


def _refuse_empty(path: Path, name: str, names: list[str], header_row: int | None, last_row: int) -> NoReturn:
    if header_row and last_row:
        raise UsageError(
            f"{path.name}!{name} has {last_row} rows; header_row={header_row} is past the end "
            "of its filled rows (leave header_row out to find the header)"
        )
    others = [n for n in names if n != name]
    hint = f"; choose another with sheet= (sheets: {', '.join(others)})" if others else ""
    raise ImportFailed(f"{path.name}: sheet {name!r} is empty{hint}")


def _merged_ranges(data: Any) -> Any:
    return getattr(data, "merged_cell_ranges", None) or ()


def _sheet_columns(
    path: Path,
    name: str,
    data: Any,
    head_rows: list[tuple[int, list[Any]]],
    header_row: int | None,
    notes: list[str],
) -> tuple[tuple[str, ...], int]:
    """The column names (the header row asked for, or found below a title; two rows read as one) and
    the first data row."""
    first_col = data.start[1] if data.start else 0
    sheet_width = data.width if data.start else 0
    letters = getattr(data, "letters", None)  # a sheet read sparsely keeps only the columns holding a value
    if header_row == 0:
        width = max([sheet_width, *(len(c) for _, c in head_rows)])
        return tuple(letters or (column_letter(first_col + i) for i in range(width))), 1
    if header_row:
        match = [(n, c) for n, c in head_rows if n == header_row]
        if not match:
            raise UsageError(
                f"{path.name}!{name}: row {header_row} is empty or past the end; it cannot be the header"
            )
        number, cells = match[0]
    else:
        # Rows (1-based) holding a cell merged across columns: how title rows are usually made.
        merged_rows = {start[0] + 1 for start, end in _merged_ranges(data) if end[1] > start[1]}
        number, cells = _pick_header(head_rows, merged_rows)
        if number != head_rows[0][0]:
            notes.append(f"rows above row {number} look like a title; row {number} is taken as the header")
    # Every column of the sheet's used range counts, so data under a blank header cell is kept
    # (named by its letter) rather than silently dropped.
    cells = list(cells) + [""] * (sheet_width - len(cells))
    data_from = number + 1
    below = [c for n, c in head_rows if n > number]
    nxt = next(((n, c) for n, c in head_rows if n > number), None)
    if header_row is None and nxt is not None and nxt[0] == number + 1:
        merged = {
            col - first_col
            for start, end in _merged_ranges(data)
            if start[0] + 1 == number and end[1] > start[1]
            for col in range(start[1], end[1] + 1)
        }
        if second_header(cells, nxt[1], below[1:], merged):
            cells = two_row_names(cells, list(nxt[1]), len(cells), merged)
            notes.append(two_row_note(number, cells, merged=bool(merged)))
            data_from = nxt[0] + 1
    return header_names(cells, first_col, notes, letters), data_from


def _chunks(
    path: Path, name: str, parsed: list[Any], data_from: int, width: int, size: int, keep_blank: bool = False
) -> Iterator[RowChunk]:
    """The sheet's rows from `data_from`, `size` at a time (the first read reuses the parsed sheet)."""
    if parsed:
        sheet_data = parsed.pop()
    else:
        guard = Workbook(path)
        try:
            book = _open_book(path)
            try:
                sheet_data = _sheet(path, book, guard, name)
            finally:
                book.close()
        finally:
            guard.close()
    prefix = f"{name}!row "
    if hasattr(sheet_data, "numbered_rows"):
        yield from _sparse_chunks(sheet_data.numbered_rows(), data_from, width, size, prefix, keep_blank)
        return
    rows_iter = sheet_data.iter_rows()
    del sheet_data
    for _ in islice(rows_iter, data_from - 1):
        pass
    number = data_from
    seen_data = False
    while block := list(islice(rows_iter, size)):
        numbers = range(number, number + len(block))
        number += len(block)
        if set(map(len, block)) == {width} and all(map(any, block)):
            # The common case, a column at a time: no blank or short rows, cells converted only
            # in columns holding something other than text, integers and booleans.
            columns = [
                col if set(map(type, col)) <= _PLAIN_CELLS else tuple(map(_excel_value, col))
                for col in zip(*block, strict=True)
            ]
            rows = list(zip(*columns, strict=True)) if columns else block
            seen_data = True
            yield RowChunk(rows, list(map(prefix.__add__, map(str, numbers))), None, [])
            continue
        chunk = _tidy_excel(block, numbers, width, prefix, keep_blank, seen_data)
        seen_data = seen_data or bool(chunk.rows)
        if chunk.rows or chunk.bad:
            yield chunk


_PLAIN_CELLS = {str, int, bool}


def _numbered(data: Any) -> Iterator[tuple[int, list[Any]]]:
    """A sheet's rows with their 1-based numbers (a sheet read sparsely gives only its filled rows)."""
    numbered = getattr(data, "numbered_rows", None)
    return numbered() if numbered is not None else enumerate(data.iter_rows(), start=1)


def _sparse_chunks(
    rows: Iterator[tuple[int, list[Any]]],
    data_from: int,
    width: int,
    size: int,
    prefix: str,
    keep_blank: bool,
) -> Iterator[RowChunk]:
    """`_chunks` for a sheet read sparsely: its filled rows (and one blank row for each gap), numbered."""
    seen_data = False
    block: list[list[Any]] = []
    numbers: list[int] = []
    for number, cells in rows:
        if number < data_from:
            continue
        block.append(cells)
        numbers.append(number)
        if len(block) >= size:
            chunk = _tidy_excel(block, numbers, width, prefix, keep_blank, seen_data)
            seen_data = seen_data or bool(chunk.rows)
            block, numbers = [], []
            if chunk.rows or chunk.bad:
                yield chunk
    if block:
        chunk = _tidy_excel(block, numbers, width, prefix, keep_blank, seen_data)
        if chunk.rows or chunk.bad:
            yield chunk


def _not_a_workbook(path: Path) -> str:
    """What a file that calamine cannot open seems to be instead, and what to do."""
    with path.open("rb") as fh:
        head = fh.read(4096)
    if head.startswith(b"PK\x03\x04"):
        return "it is a zip archive, but not of a workbook (an .xlsx holds xl/workbook.xml)"
    if head.startswith(b"\xd0\xcf\x11\xe0"):
        return "it is an OLE file: a password-protected workbook, or another Office file; save it unprotected as .xlsx"
    if b"\x00" not in head:
        try:
            head.decode("utf-8")
        except UnicodeDecodeError:
            pass
        else:
            kind = "JSON" if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"[", b"{") else "CSV"
            return f"it is text, probably {kind}: rename it, or give --format {kind.lower()} (format=)"
    return f"is it really {path.suffix}?"


def _has_cells(data: Any) -> bool:
    return bool(data.start) and any(any(c != "" for c in cells) for _, cells in _numbered(data))


def _tidy_excel(
    block: list[list[Any]],
    numbers: Sequence[int],
    width: int,
    prefix: str,
    keep_blank: bool,
    after_data: bool,
) -> RowChunk:
    """A block of sheet rows, row by row: values converted, blank rows dropped (or kept), cells
    outside the header's columns reported."""
    rows: list[list[Any]] = []
    locs: list[str] = []
    bad: list[tuple[str, str, Any]] = []
    conv = _excel_value
    for number, cells in zip(numbers, block, strict=True):
        row = [conv(c) for c in cells[:width]]
        if not any(v != "" and v is not None for v in row):
            if any(c != "" for c in cells[width:]):
                bad.append(
                    (
                        prefix + str(number),
                        "the row has cells only in columns without a header; choose another header row or sheet",
                        [conv(c) for c in cells],
                    )
                )
            elif keep_blank and after_data:  # blank rows above the data are padding, not separators
                rows.append([""] * width)
                locs.append(prefix + str(number))
            continue
        after_data = True
        if len(row) < width:
            row += [""] * (width - len(row))
        rows.append(row)
        locs.append(prefix + str(number))
    return RowChunk(rows, locs, None, bad)


def _pick_header(rows: list[tuple[int, list[Any]]], merged_rows: set[int]) -> tuple[int, list[Any]]:
    # A title row ("2024 Q1 标注结果") sits above the real header: one filled cell, merged across the
    # columns or followed by a blank row. Skip such rows when a later row among the first few has more
    # filled cells. A one-cell header directly above its data (a column with no name) is not a title.
    def filled(cells: list[Any]) -> int:
        return sum(1 for c in cells if c != "")

    widest = max(filled(c) for _, c in rows)
    for k, (number, cells) in enumerate(rows):
        gap_after = k + 1 < len(rows) and rows[k + 1][0] > number + 1
        title = filled(cells) == 1 and widest > 1 and (gap_after or number in merged_rows)
        if not title:
            return number, cells
    return rows[0]

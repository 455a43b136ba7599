"""Row sources for each file format: CSV/TSV, Excel (via python-calamine), JSON Lines and JSON.

Each opener inspects the file (encoding, delimiter, header, sheet, splits) and returns a `Source`
whose `chunks()` streams rows again from the start every time it is called.
"""

from __future__ import annotations

import csv
import datetime as _dt
import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any

from abbench.dataset._headers import cell_text as _cell_text
from abbench.dataset._headers import second_header, two_row_names, two_row_note
from abbench.dataset._hostile import (
    SURROGATE_ESCAPE,
    check_no_nul,
    decode_json,
    dumps_short,
    json_loads,
    json_problem,
    lone_surrogate,
    surrogate_message,
)
from abbench.dataset._text import Encoding, decode_error, detect_encoding
from abbench.errors import ImportFailed, UsageError

DELIMITERS = (",", "\t", ";", "|")
"""The delimiters sniffed in CSV files, in order of preference."""

_SNIFF_BYTES = 64 * 1024
_KEY_SAMPLE = 200


@dataclass(frozen=True, slots=True)
class RowChunk:
    """A run of consecutive rows of one split.

    Attributes:
        rows: Table rows are lists aligned with the table's columns; JSON rows are any JSON value.
        locations: Where each row sits: ``"line 12"``, ``"Sheet1!row 5"``, ``"split test #3"``.
        split: The split the rows belong to (JSON object of splits), else None.
        bad: Rows that could not be read, as ``(location, message, raw text)``.
        raw: When a recipe reshaped the rows, the rows as read (kept as each case's source row).
        text_only: Every cell is a str (CSV), so converters need not look at types.
    """

    rows: list[Any]
    locations: list[str]
    split: str | None = None
    bad: list[tuple[str, str, Any]] = field(default_factory=list)
    raw: list[Any] | None = None
    text_only: bool = False


@dataclass
class Source:
    """An opened file: what was found out about it, and a way to stream its rows."""

    format: str
    columns: tuple[str, ...]
    tabular: bool
    chunks: Callable[..., Iterator[RowChunk]]
    options: dict[str, Any]
    splits: tuple[str, ...] = ()
    split_sizes: dict[str, int] = field(default_factory=dict)
    document: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def column_letter(index: int) -> str:
    """The spreadsheet name of 0-based column `index`: 0 → ``A``, 26 → ``AA``."""
    name = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        name = chr(65 + rem) + name
    return name


def _header_names(cells: list[Any], first_col: int, notes: list[str]) -> tuple[str, ...]:
    names: list[str] = []
    seen: dict[str, int] = {}
    for i, cell in enumerate(cells):
        name = _cell_text(cell).strip().lstrip("\ufeff")
        if not name:
            name = column_letter(first_col + i)
            notes.append(f"column {name} has no header; it is called {name!r}")
        if name in seen:
            seen[name] += 1
            new = f"{name}.{seen[name]}"
            notes.append(f"two columns are called {name!r}; the later one is called {new!r}")
            name = new
        seen.setdefault(name, 0)
        names.append(name)
    return tuple(names)


# -- CSV -------------------------------------------------------------------------------------------


def sniff_delimiter(sample: str, suffix: str = "") -> str:
    """The delimiter that splits the sample's lines into the most consistent number of cells.

    ``.tsv`` and ``.tab`` files are tab-separated unless their content clearly says otherwise.
    """
    lines = sample.splitlines()[:50]
    if len(sample) >= _SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last line of a cut sample may be partial
    best, best_score = ("\t" if suffix in (".tsv", ".tab") else ","), (0, 0)
    for delim in DELIMITERS:
        try:
            counts = [len(r) for r in csv.reader(lines, delimiter=delim) if any(c.strip() for c in r)]
        except csv.Error:
            continue
        if not counts:
            continue
        width = max(set(counts), key=counts.count)
        if width < 2:
            continue
        score = (sum(1 for c in counts if c == width), width)
        if score > best_score:
            best, best_score = delim, score
    return best


_LINE = "line {}"


def _record_starts(recs: list[list[str]], first: int) -> list[int]:
    starts = []
    line = first
    for rec in recs:
        starts.append(line)
        line += 1 + sum(cell.count("\n") for cell in rec)
    return starts


def _tidy_records(
    recs: list[list[str]], starts: Iterable[int], width: int, delim: str, keep_blank: bool
) -> RowChunk:
    """A chunk's records with blank ones dropped (or kept), short ones padded, long ones reported."""
    rows: list[list[str]] = []
    locs: list[str] = []
    bad: list[tuple[str, str, Any]] = []
    for rec, start in zip(recs, starts, strict=True):
        n = len(rec)
        if not any(rec):
            if keep_blank:
                rows.append([""] * width)
                locs.append(_LINE.format(start))
            continue
        if n < width:
            rec += [""] * (width - n)
        elif n > width:
            if any(rec[width:]):
                bad.append(
                    (
                        _LINE.format(start),
                        f"the row has {n} cells but the header has {width} columns; "
                        "check the delimiter or quote the cells that hold it",
                        delim.join(rec),
                    )
                )
                continue
            del rec[width:]
        rows.append(rec)
        locs.append(_LINE.format(start))
    return RowChunk(rows, locs, None, bad, text_only=True)


_FIELD_LIMIT = 16 << 20


def _csv_error(path: Path, line: int, exc: csv.Error) -> ImportFailed:
    hint = ""
    if "field larger than field limit" in str(exc):
        hint = f" (a cell over {_FIELD_LIMIT >> 20} MiB: most likely a quote that is never closed above this line)"
    return ImportFailed(f"{path.name}, line {line}: cannot read as CSV: {exc}{hint}")


def _check_quotes_closed(path: Path, codec: str, delim: str, start: int, end: int) -> None:
    """Refuse a file whose last record opens a quote that is never closed.

    The csv module then reads every line to the end of the file as one cell: the rows there would
    vanish into it without a word. Only the last record can end that way, so only it is read again,
    strictly.
    """
    with path.open(encoding=codec, newline="") as fh:
        rest = islice(fh, start - 1, None)
        try:
            for _ in csv.reader(rest, delimiter=delim, strict=True):
                pass
        except csv.Error as exc:
            if "unexpected end of data" not in str(exc):
                return  # another oddity the tolerant reader handled as before
            raise ImportFailed(
                f"{path.name}, line {start}: a quote opened in this row is never closed, so lines {start}–{end} "
                "(to the end of the file) would be read as one cell; close the quote, or write a quote "
                'that is part of the text as two ("")'
            ) from None


def open_csv(path: Path, *, encoding: str | None, delimiter: str | None, header_row: int | None) -> Source:
    """Inspect a CSV/TSV file: encoding, delimiter, header."""
    # Eval data holds long cells (reference answers, passages); the csv module stops at 128 KiB.
    if csv.field_size_limit() < _FIELD_LIMIT:
        csv.field_size_limit(_FIELD_LIMIT)
    enc = detect_encoding(path, encoding)
    if not enc.codec.replace("_", "-").lower().startswith(("utf-16", "utf-32")):
        check_no_nul(path)
    try:
        with path.open(encoding=enc.codec, newline="") as fh:
            sample = fh.read(_SNIFF_BYTES)  # within the MiB detect_encoding decoded
    except UnicodeDecodeError:  # a short file cut inside a character: the end is within the sample
        raise decode_error(path, enc) from None
    if delimiter is not None:
        delimiter = {"\\t": "\t", "tab": "\t", "TAB": "\t"}.get(delimiter, delimiter)
        if len(delimiter) != 1:
            raise UsageError(f"a delimiter is one character, got {delimiter!r}; e.g. ',' or '\\t'")
    notes: list[str] = []
    # Excel writes and reads a first line "sep=;" naming the delimiter; it is not the header.
    directive = re.fullmatch(r"sep=(.)", sample.split("\n", 1)[0].rstrip("\r").lstrip("\ufeff"))
    if directive is not None and header_row is None:
        notes.append(
            f"line 1 is Excel's {directive.group(0)!r} line: the delimiter is {directive.group(1)!r}"
        )
    else:
        directive = None
    delim = delimiter or (directive.group(1) if directive else sniff_delimiter(sample, path.suffix.lower()))

    # The header is the first non-blank record, or the record asked for (1-based); 0 means no header.
    first: list[str] = []
    after: list[list[str]] = []  # the records below the header, to spot a second header row
    n = 0
    try:
        with path.open(encoding=enc.codec, newline="") as fh:
            reader = csv.reader(fh, delimiter=delim)
            for n, rec in enumerate(reader, start=1):
                if (header_row and n < header_row) or (directive and n == 1):
                    continue
                if header_row or any(c.strip() for c in rec):
                    first = rec
                    break
            else:
                if header_row:
                    raise UsageError(
                        f"{path.name} has only {n} rows; header_row={header_row} is past the end "
                    )
            if header_row is None:
                after = list(islice(reader, 20))
    except csv.Error as exc:
        raise _csv_error(path, n, exc) from None
    except UnicodeDecodeError:
        raise decode_error(path, enc) from None
    two_rows = bool(after) and second_header(first, after[0], after[1:], set())
    if two_rows:
        first = two_row_names(first, after[0], max(len(first), len(after[0])), set())
        notes.append(two_row_note(n, first, merged=False))
    if header_row == 0:
        columns = tuple(column_letter(i) for i in range(len(first)))
        skip = 0
    else:
        # Excel's CSV export ends every line with a delimiter when the sheet had a stray empty column:
        # trailing blank header cells are not columns (cells under them are still reported if filled).
        while first and not first[-1].strip():
            first = first[:-1]
        columns = _header_names(first, 0, notes)
        skip = n + 1 if two_rows else n
    width = len(columns)

    def chunks(size: int, keep_blank: bool = False) -> Iterator[RowChunk]:
        with path.open(encoding=enc.codec, newline="") as fh:
            reader = csv.reader(fh, delimiter=delim)
            last: tuple[list[str], int] | None = None
            try:
                for _ in range(skip):
                    next(reader)
                prev = reader.line_num
                while recs := list(islice(reader, size)):
                    # Records are read in bulk (C speed). When no record spans several lines, the
                    # line numbers follow from the count; otherwise from the line breaks in each record.
                    now = reader.line_num
                    if now - prev == len(recs):
                        starts: Sequence[int] = range(prev + 1, now + 1)
                    else:
                        starts = _record_starts(recs, prev + 1)
                    prev = now
                    last = (recs[-1], starts[-1])
                    if set(map(len, recs)) == {width} and all(map(any, recs)):
                        yield RowChunk(recs, list(map(_LINE.format, starts)), None, [], text_only=True)
                    else:
                        yield _tidy_records(recs, starts, width, delim, keep_blank)
            except StopIteration:
                return
            except csv.Error as exc:
                raise _csv_error(path, reader.line_num, exc) from None
            except UnicodeDecodeError:
                raise decode_error(path, enc) from None
            if last is not None and any("\n" in cell or "\r" in cell for cell in last[0]):
                _check_quotes_closed(path, enc.codec, delim, last[1], reader.line_num)

    options = {
        "format": "csv",
        "encoding": enc.codec,
        "encoding_detected": enc.how,
        "delimiter": delim,
        "header_row": 0 if header_row == 0 else skip,
    }
    return Source("csv", columns, True, chunks, options, notes=notes)


# -- Excel -----------------------------------------------------------------------------------------


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


def open_excel(path: Path, *, sheet: str | int | None, header_row: int | None) -> Source:
    """Inspect a workbook (xlsx, xlsm, xlsb, xls, ods): the sheet, its header row, its columns."""
    try:
        from python_calamine import CalamineWorkbook
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ImportFailed("reading Excel files needs python-calamine: pip install python-calamine") from exc
    try:
        book = CalamineWorkbook.from_path(str(path))
    except Exception as exc:
        raise ImportFailed(
            f"{path.name}: cannot open as a workbook ({exc}); {_not_a_workbook(path)}"
        ) from None
    try:
        names = list(book.sheet_names)
        visible = [m.name for m in book.sheets_metadata if str(m.typ).endswith("WorkSheet")] or names
        if sheet is None:
            name = visible[0] if visible else None
        elif isinstance(sheet, int) or (
            isinstance(sheet, str) and sheet not in names and sheet.strip().isdigit()
        ):
            idx = int(sheet)
            if not 0 <= idx < len(names):
                raise UsageError(
                    f"{path.name} has {len(names)} sheets; sheet index {idx} is out of range "
                    f"(0..{len(names) - 1}: {', '.join(names)})"
                )
            name = names[idx]
        elif sheet in names:
            name = sheet
        else:
            raise UsageError(
                f"{path.name} has no sheet {sheet!r}; its sheets: {', '.join(names)} (or give an index from 0)"
            )
        if name is None:
            raise ImportFailed(f"{path.name} has no worksheet")
        data = book.get_sheet_by_name(name)
        picked_note = None
        if sheet is None and not _has_cells(data):
            # The first sheet is empty (a cover left blank, data on "Sheet2"): the only sheet that
            # holds anything is what was meant; with several, the user chooses.
            filled = [n for n in visible if n != name and _has_cells(book.get_sheet_by_name(n))]
            if len(filled) == 1:
                picked_note = (
                    f"the first sheet {name!r} is empty; read sheet {filled[0]!r}, the only one holding data"
                )
                name = filled[0]
                data = book.get_sheet_by_name(name)
            elif filled:
                raise ImportFailed(
                    f"{path.name}: the first sheet {name!r} is empty and {len(filled)} sheets hold data "
                    f"({', '.join(map(repr, filled))}); choose one with --sheet NAME (sheet=)"
                )
        first_col = data.start[1] if data.start else 0
        sheet_width = data.width if data.start else 0
        # Rows (1-based) holding a cell merged across columns: how title rows are usually made.
        merged_rows = {
            start[0] + 1
            for start, end in (getattr(data, "merged_cell_ranges", None) or ())
            if end[1] > start[1]
        }
        head_rows: list[tuple[int, list[Any]]] = []
        number = 0
        for number, cells in enumerate(data.iter_rows(), start=1):
            if header_row and number < header_row:
                continue
            if not any(c != "" for c in cells):
                continue
            head_rows.append((number, cells))
            if len(head_rows) >= 12 or (header_row and number >= header_row):
                break
    finally:
        book.close()
    if not head_rows and header_row and number:
        raise UsageError(
            f"{path.name}!{name} has {number} rows; header_row={header_row} is past the end "
            "of its filled rows (leave header_row out to find the header)"
        )
    if not head_rows:
        others = [n for n in names if n != name]
        hint = f"; choose another with sheet= (sheets: {', '.join(others)})" if others else ""
        raise ImportFailed(f"{path.name}: sheet {name!r} is empty{hint}")
    notes: list[str] = [picked_note] if picked_note else []
    if header_row == 0:
        width = max([sheet_width, *(len(c) for _, c in head_rows)])
        columns = tuple(column_letter(first_col + i) for i in range(width))
        data_from = 1
    else:
        if header_row:
            match = [(n, c) for n, c in head_rows if n == header_row]
            if not match:
                raise UsageError(
                    f"{path.name}!{name}: row {header_row} is empty or past the end; it cannot be the header"
                )
            number, cells = match[0]
        elif head_rows:
            number, cells = _pick_header(head_rows, merged_rows)
            if number != head_rows[0][0]:
                notes.append(
                    f"rows above row {number} look like a title; row {number} is taken as the header"
                )
        else:
            number, cells = 1, []
        # Every column of the sheet's used range counts, so data under a blank header cell is kept
        # (named by its letter) rather than silently dropped.
        cells = list(cells) + [""] * (sheet_width - len(cells))
        data_from = number + 1
        below = [c for n, c in head_rows if n > number]
        nxt = next(((n, c) for n, c in head_rows if n > number), None)
        if header_row is None and nxt is not None and nxt[0] == number + 1:
            merged = {
                col - first_col
                for start, end in (getattr(data, "merged_cell_ranges", None) or ())
                if start[0] + 1 == number and end[1] > start[1]
                for col in range(start[1], end[1] + 1)
            }
            if second_header(cells, nxt[1], below[1:], merged):
                cells = two_row_names(cells, list(nxt[1]), len(cells), merged)
                notes.append(two_row_note(number, cells, merged=bool(merged)))
                data_from = nxt[0] + 1
        columns = _header_names(cells, first_col, notes)
    width = len(columns)

    # The sheet parsed for the header serves the first read too: parsing is most of an Excel read.
    parsed = [data]

    def chunks(size: int, keep_blank: bool = False) -> Iterator[RowChunk]:
        if parsed:
            sheet_data = parsed.pop()
        else:
            book = CalamineWorkbook.from_path(str(path))
            try:
                sheet_data = book.get_sheet_by_name(name)
            finally:
                book.close()
        rows_iter = sheet_data.iter_rows()
        del sheet_data
        prefix = f"{name}!row "
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

    options = {"format": "xlsx", "sheet": name, "header_row": 0 if header_row == 0 else data_from - 1}
    return Source("xlsx", columns, True, chunks, options, notes=notes)


_PLAIN_CELLS = {str, int, bool}


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
    return bool(data.start) and any(any(c != "" for c in cells) for cells in data.iter_rows())


def _tidy_excel(
    block: list[list[Any]], numbers: range, width: int, prefix: str, keep_blank: bool, after_data: bool
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


# -- JSON Lines ------------------------------------------------------------------------------------


def open_jsonl(path: Path, *, encoding: str | None) -> Source:
    """Inspect a JSON Lines file: the keys of its first rows; a first line that is not JSON is refused."""
    enc = detect_encoding(path, encoding)
    keys: dict[str, None] = {}
    try:
        _sample_jsonl(path, enc, keys)
    except UnicodeDecodeError:
        raise decode_error(path, enc) from None

    def chunks(size: int, keep_blank: bool = False) -> Iterator[RowChunk]:
        try:
            yield from _jsonl_chunks(path, enc, size)
        except UnicodeDecodeError:
            raise decode_error(path, enc) from None

    options = {"format": "jsonl", "encoding": enc.codec, "encoding_detected": enc.how}
    return Source("jsonl", tuple(keys), False, chunks, options)


def _sample_jsonl(path: Path, enc: Encoding, keys: dict[str, None]) -> None:
    """Collect the keys of the first rows; refuse a file whose first line is not JSON."""
    seen = 0
    with path.open(encoding=enc.codec) as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json_loads(line, path.name, number)
            except ImportFailed:
                if seen == 0:
                    raise
                continue
            except json.JSONDecodeError as exc:
                if seen == 0:
                    hint = (
                        " — this looks like one JSON document, not JSON Lines; name the file .json"
                        if line.strip() in ("[", "{") or line.lstrip().startswith(("[{", "[\n"))
                        else ""
                    )
                    raise ImportFailed(
                        f"{path.name}, line {number}, column {exc.colno}: not JSON ({exc.msg}){hint}"
                    ) from None
                continue
            seen += 1
            _collect_keys(row, keys)
            if seen >= _KEY_SAMPLE:
                break


def _jsonl_chunks(path: Path, enc: Encoding, size: int) -> Iterator[RowChunk]:
    loads = decode_json
    surrogate = SURROGATE_ESCAPE.search
    with path.open(encoding=enc.codec) as fh:
        rows: list[Any] = []
        locs: list[str] = []
        bad: list[tuple[str, str, Any]] = []
        for number, line in enumerate(fh, start=1):
            try:
                row = loads(line)
            except json.JSONDecodeError as exc:
                if not line.strip():
                    continue
                bad.append(
                    (
                        f"line {number}",
                        f"column {exc.colno}: not valid JSON ({exc.msg})",
                        line.rstrip("\r\n"),
                    )
                )
                continue
            except (RecursionError, ValueError) as exc:
                found = json_problem(line, exc)
                if found is None:
                    raise
                bad.append(
                    (f"line {number}", f"column {found[0] + 1}: {found[1]}", line[:200].rstrip("\r\n"))
                )
                continue
            if surrogate(line) is not None and (text := lone_surrogate(row)) is not None:
                bad.append((f"line {number}", surrogate_message(text), line[:200].rstrip("\r\n")))
                continue
            rows.append(row)
            locs.append(f"line {number}")
            if len(rows) >= size:
                yield RowChunk(rows, locs, None, bad)
                rows, locs, bad = [], [], []
        if rows or bad:
            yield RowChunk(rows, locs, None, bad)


def _collect_keys(row: Any, keys: dict[str, None]) -> None:
    if isinstance(row, dict):
        for k in row:
            keys.setdefault(str(k), None)
    elif isinstance(row, list):
        for i in range(len(row)):
            keys.setdefault(str(i), None)


# -- JSON ------------------------------------------------------------------------------------------


def open_json(path: Path, *, encoding: str | None, splits: list[str] | tuple[str, ...] | None) -> Source:
    """Read a JSON document: an array of rows, or an object whose list values are named splits."""
    enc = detect_encoding(path, encoding)
    try:
        text = path.read_text(encoding=enc.codec)
    except UnicodeDecodeError:
        raise decode_error(path, enc) from None
    try:
        doc = json_loads(text, path.name)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":
            first = text.lstrip().split("\n", 1)[0]
            try:
                decode_json(first)
            except (ValueError, RecursionError):
                pass
            else:
                source = open_jsonl(path, encoding=encoding)
                source.notes.append(f"{path.name} holds one JSON value per line; it is read as JSON Lines")
                return source
        raise ImportFailed(
            f"{path.name}, line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg})"
        ) from None
    document: dict[str, Any] = {}
    if isinstance(doc, list):
        parts: dict[str | None, list[Any]] = {None: doc}
    elif isinstance(doc, dict):
        parts = {k: v for k, v in doc.items() if isinstance(v, list)}
        document = {k: v for k, v in doc.items() if not isinstance(v, list)}
        if not parts:
            raise ImportFailed(
                f"{path.name} is a JSON object without any list in it; expected an array of rows, "
                "or an object whose values are lists of rows (named splits such as train/test)"
            )
    else:
        raise ImportFailed(f"{path.name} holds a single {type(doc).__name__}; expected an array of rows")
    available = tuple(k for k in parts if k is not None)
    chosen: list[str | None] = list(parts)
    if splits:
        missing = [s for s in splits if s not in parts]
        if missing:
            sizes = ", ".join(f"{k} ({len(v)})" for k, v in parts.items() if k is not None) or "none"
            raise UsageError(f"{path.name} has no split {', '.join(map(repr, missing))}; its splits: {sizes}")
        chosen = list(splits)
    keys: dict[str, None] = {}
    for part in chosen:
        for row in parts[part][:_KEY_SAMPLE]:
            _collect_keys(row, keys)

    check_surrogates = SURROGATE_ESCAPE.search(text) is not None
    del text

    def chunks(size: int, keep_blank: bool = False) -> Iterator[RowChunk]:
        for part in chosen:
            items = parts[part]
            prefix = "item #" if part is None else f"split {part} #"
            for start in range(0, len(items), size):
                rows = items[start : start + size]
                locs = [f"{prefix}{i}" for i in range(start + 1, start + len(rows) + 1)]
                if check_surrogates:
                    # Half a surrogate pair cannot be stored as UTF-8: such a row is unreadable.
                    found = [(k, lone_surrogate(r)) for k, r in enumerate(rows)]
                    bad = [
                        (locs[k], surrogate_message(t), dumps_short(rows[k]))
                        for k, t in found
                        if t is not None
                    ]
                    if bad:
                        keep = [k for k, t in found if t is None]
                        yield RowChunk([rows[k] for k in keep], [locs[k] for k in keep], part, bad)
                        continue
                yield RowChunk(rows, locs, part)

    options = {"format": "json", "encoding": enc.codec, "encoding_detected": enc.how}
    if available:
        options["splits"] = [p for p in chosen if p is not None]
    return Source(
        "json",
        tuple(keys),
        False,
        chunks,
        options,
        splits=available,
        split_sizes={k: len(v) for k, v in parts.items() if k is not None},
        document=document,
    )


def sniff_format(path: Path) -> str:
    """The format of a file from its suffix, else from its first bytes."""
    suffix = path.suffix.lower()
    by_suffix = {
        ".csv": "csv",
        ".tsv": "csv",
        ".tab": "csv",
        ".txt": "csv",
        ".xlsx": "xlsx",
        ".xlsm": "xlsx",
        ".xlsb": "xlsx",
        ".xls": "xlsx",
        ".ods": "xlsx",
        ".jsonl": "jsonl",
        ".ndjson": "jsonl",
        ".jsonlines": "jsonl",
        ".json": "json",
    }
    if suffix in by_suffix:
        return by_suffix[suffix]
    with path.open("rb") as fh:
        head = fh.read(4096)
    if head.startswith((b"PK\x03\x04", b"\xd0\xcf\x11\xe0")):
        return "xlsx"
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text[:1] in (b"[", b"{"):
        first = text.split(b"\n", 1)[0]
        try:
            json.loads(first)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            return "json"
        return "jsonl" if b"\n" in text.strip() else "json"
    return "csv"


FORMATS = ("csv", "xlsx", "jsonl", "json")
"""The formats `read_table` understands (``xlsx`` covers every workbook python-calamine reads)."""

"""A sheet read sparsely: only the cells holding a value, for sheets whose box is far larger than what
they hold (a stray value at ``XFD1048576`` beside a few rows of data).

calamine would allocate the whole box; this reads the sheet's XML as a stream (expat) and keeps the
cells holding a value, in the columns that hold one, so memory follows the cells, not the box. The
values are what python-calamine gives for the same cells — text, numbers as floats, booleans, dates as
`datetime`/`date`/`time`/`timedelta` by the cell's number format, errors as empty text — so the rest of
the Excel reader treats both alike (tests/dataset/test_hostile_xlsx.py compares them cell by cell).
"""

from __future__ import annotations

import datetime as _dt
import re
import zipfile
from collections.abc import Iterator
from typing import Any

from abbench.dataset._formats import column_letter
from abbench.dataset._workbook import SheetScan, column_index, parse_part
from abbench.errors import ImportFailed

_DATE, _DURATION = "date", "duration"
_BUILTIN_FORMATS = {**dict.fromkeys((*range(14, 23), 45, 47), _DATE), 46: _DURATION}
_REF = re.compile(r"\$?([A-Z]{1,3})\$?([0-9]{1,7})")
_LAST_COLUMN, _LAST_ROW = 16_383, 1_048_576


def format_kind(code: str) -> str | None:
    """Whether a number format shows a date or a duration (what calamine decides for the same code)."""
    escaped = quoted = ampm = hms = False
    brackets = 0
    prev = " "
    for ch in code:
        if escaped:
            escaped = False
        elif ch in "_\\*":
            escaped = True  # the next character is a literal (or a width, or a fill)
        elif quoted:
            quoted = ch != '"'
        elif ch == '"':
            quoted = True
        elif ch == ";":
            return None  # the first section decides
        elif ch == "[":
            brackets += 1
        elif ch == "]":
            if brackets == 1 and hms:
                return _DURATION
            brackets = max(brackets - 1, 0)
        elif brackets == 0 and not ampm and ch in "aA":
            ampm = True
        elif (brackets == 0 and ampm and ch in "pm/PM") or (
            brackets == 0 and not ampm and ch in "dmhysDMHYS"
        ):
            return _DATE
        elif not (hms and ch.lower() == prev.lower()):
            hms = prev == "[" and ch in "mhsMHS"
        prev = ch
    return None


def _local(name: str) -> str:
    return name.rsplit(" ", 1)[-1].rsplit(":", 1)[-1]


def shared_strings(zf: zipfile.ZipFile, part: str | None) -> list[str]:
    """The workbook's shared strings (rich-text runs joined, phonetic guides left out)."""
    if part is None:
        return []
    items: list[str] = []
    texts: list[str] = []
    state = {"t": False, "phonetic": 0}

    def start(name: str, attrs: dict[str, str]) -> None:
        local = _local(name)
        if local == "si":
            texts.clear()
        elif local == "rPh":
            state["phonetic"] += 1
        elif local == "t":
            state["t"] = not state["phonetic"]

    def end(name: str) -> None:
        local = _local(name)
        if local == "si":
            items.append("".join(texts))
        elif local == "rPh":
            state["phonetic"] -= 1
        elif local == "t":
            state["t"] = False

    def text(data: str) -> None:
        if state["t"]:
            texts.append(data)

    parse_part(zf, part, start, end, text)
    return items


def style_kinds(zf: zipfile.ZipFile, part: str | None) -> list[str | None]:
    """For each cell style (``s=`` index), whether its number format shows a date or a duration."""
    if part is None:
        return []
    custom: dict[int, str] = {}
    xf_formats: list[int] = []
    where = {"cellXfs": False}

    def start(name: str, attrs: dict[str, str]) -> None:
        local = _local(name)
        if local == "numFmt":
            custom[int(attrs.get("numFmtId", "0") or 0)] = attrs.get("formatCode", "")
        elif local == "cellXfs":
            where["cellXfs"] = True
        elif local == "xf" and where["cellXfs"]:
            xf_formats.append(int(attrs.get("numFmtId", "0") or 0))

    def end(name: str) -> None:
        if _local(name) == "cellXfs":
            where["cellXfs"] = False

    parse_part(zf, part, start, end, lambda data: None)
    return [format_kind(custom[i]) if i in custom else _BUILTIN_FORMATS.get(i) for i in xf_formats]


_MS_A_DAY = 86_400_000


def excel_date(value: float, kind: str, date1904: bool) -> Any:
    """A serial date as python-calamine gives it: a timedelta for a duration, a time below 1, a date at
    midnight, else a datetime (to the millisecond; 1900's phantom 29 February counted as Excel does)."""
    ms = round(value * _MS_A_DAY)
    if kind == _DURATION:
        return _dt.timedelta(milliseconds=ms)
    if value < 1:
        return (_dt.datetime.min + _dt.timedelta(milliseconds=ms % _MS_A_DAY)).time()
    if date1904:
        epoch = _dt.datetime(1904, 1, 1)
    else:
        epoch = _dt.datetime(1899, 12, 30) if value >= 61 else _dt.datetime(1899, 12, 31)
    moment = epoch + _dt.timedelta(milliseconds=ms)
    return moment.date() if moment.time() == _dt.time(0) else moment


class SparseSheet:
    """The cells holding a value of one sheet, shaped as python-calamine's sheet (`start`, `width`,
    `iter_rows`, `merged_cell_ranges`) over the columns that hold a value, named by `letters`."""

    def __init__(
        self,
        zf: zipfile.ZipFile,
        scan: SheetScan,
        shared: list[str],
        styles: list[str | None],
        date1904: bool,
    ):
        self._rows: dict[int, dict[int, Any]] = {}
        self._merged: list[tuple[tuple[int, int], tuple[int, int]]] = []
        self._shared, self._styles, self._date1904 = shared, styles, date1904
        self._read(zf, scan.part)
        columns = sorted({c for cells in self._rows.values() for c in cells})
        self._index = {c: i for i, c in enumerate(columns)}

        self.letters = [column_letter(c) for c in columns]
        self.width = len(columns)
        self.height = max(self._rows, default=0)
        first = min(self._rows, default=1)
        self.start = (first - 1, 0) if self._rows else None

    def _read(self, zf: zipfile.ZipFile, part: str) -> None:
        cell: dict[str, Any] = {}
        texts: list[str] = []
        where = {"row": 0, "col": -1, "text": False, "phonetic": 0}

        def start(name: str, attrs: dict[str, str]) -> None:
            local = _local(name)
            if local == "row":
                where["row"] = int(attrs["r"]) if attrs.get("r", "").isdigit() else where["row"] + 1
                where["col"] = -1
            elif local == "c":
                found = _REF.fullmatch(attrs.get("r", ""))
                row, col = (
                    (int(found[2]), column_index(found[1])) if found else (where["row"], where["col"] + 1)
                )
                if col > _LAST_COLUMN or row > _LAST_ROW:
                    raise ImportFailed(
                        f"the part {part} has a cell past XFD1048576, the last cell a sheet has (row {row}, "
                        f"column {col + 1:,}); a crafted file? Open it in Excel and save it again"
                    )
                where["col"] = col
                cell.clear()
                cell.update(row=row, col=col, t=attrs.get("t", "n"), s=attrs.get("s"))
                texts.clear()
            elif local == "rPh":
                where["phonetic"] += 1
            elif local in ("v", "t"):
                where["text"] = not where["phonetic"]
            elif local == "mergeCell":
                self._merge(attrs.get("ref", ""))

        def end(name: str) -> None:
            local = _local(name)
            if local == "c":
                value = self._value(cell, "".join(texts))
                if value != "":
                    self._rows.setdefault(cell["row"], {})[cell["col"]] = value
            elif local == "rPh":
                where["phonetic"] -= 1
            elif local in ("v", "t"):
                where["text"] = False

        def text(data: str) -> None:
            if where["text"]:
                texts.append(data)

        parse_part(zf, part, start, end, text)

    def _merge(self, ref: str) -> None:
        ends = [_REF.fullmatch(p) for p in ref.split(":")]
        if len(ends) == 2 and all(ends):
            a, b = ends
            assert a is not None and b is not None
            self._merged.append(((int(a[2]) - 1, column_index(a[1])), (int(b[2]) - 1, column_index(b[1]))))

    def _value(self, cell: dict[str, Any], text: str) -> Any:
        kind = cell["t"]
        if kind == "s":
            try:
                return self._shared[int(text)]
            except (ValueError, IndexError):
                return ""
        if kind in ("inlineStr", "str"):
            return text
        if kind == "b":
            return text.strip() in ("1", "true")
        if kind == "e" or not text.strip():
            return ""
        if kind == "d":
            try:
                return _dt.datetime.fromisoformat(text.strip())
            except ValueError:
                return text
        try:
            number = float(text)
        except ValueError:
            return text
        style = cell["s"]
        fmt = (
            self._styles[int(style)] if style and style.isdigit() and int(style) < len(self._styles) else None
        )
        return excel_date(number, fmt, self._date1904) if fmt else number

    @property
    def merged_cell_ranges(self) -> list[tuple[tuple[int, int], tuple[int, int]]]:
        """Merged ranges over the columns kept (a range whose columns hold nothing is dropped)."""
        out = []
        for (r0, c0), (r1, c1) in self._merged:
            kept = [self._index[c] for c in range(c0, c1 + 1) if c in self._index]
            if kept:
                out.append(((r0, kept[0]), (r1, kept[-1])))
        return out

    def numbered_rows(self) -> Iterator[tuple[int, list[Any]]]:
        """The rows holding a value, numbered from 1, as lists over the columns kept; a gap of empty
        rows is one blank row (numbered as its first), so separators between blocks stay."""
        index, width = self._index, self.width
        previous = 0
        for number in sorted(self._rows):
            if number > previous + 1 and previous:
                yield previous + 1, [""] * width
            row: list[Any] = [""] * width
            for col, value in self._rows[number].items():
                row[index[col]] = value
            yield number, row
            previous = number


def read_sparse(zf: zipfile.ZipFile, scan: SheetScan) -> SparseSheet:
    """The sheet of `scan` read sparsely, with the workbook's shared strings, styles and date system."""
    names = {i.filename.lower(): i.filename for i in zf.infolist()}
    shared = shared_strings(zf, names.get("xl/sharedstrings.xml"))
    styles = style_kinds(zf, names.get("xl/styles.xml"))
    book = names.get("xl/workbook.xml")
    date1904 = book is not None and re.search(rb"date1904=[\"'](?:1|true)[\"']", zf.read(book)) is not None
    return SparseSheet(zf, scan, shared, styles, date1904)

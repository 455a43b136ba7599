"""A workbook checked before its reader allocates anything: the archive, then each sheet read.

python-calamine reads a sheet into one dense range from its first to its last cell, and a crafted
file makes that range anything: one value at ``XFD1048576`` asks 17 billion cells (the process aborts
on a failed allocation, which no ``except`` catches); one 10 MB shared string used by 2,000 cells asks
20 GB; a sheet inflating 1,000 times from its zip is read whole. So before the reader opens it:

- the archive: every member within `abbench._archive.MAX_RATIO` times its compressed size, all of them
  within `MAX_WORKBOOK_BYTES` uncompressed, and no XML part declaring a DTD (``<!DOCTYPE``: external
  entities, entity expansion — no spreadsheet program writes one);
- each sheet before it is read: its cells' bounding box from their references, how many there are, and
  the text its shared strings repeat (`scan_sheet`). A box within `MAX_DENSE_CELLS` is read by calamine;
  a larger one holding few cells (a stray value far away) is read sparsely (`abbench.dataset._sparse`);
  anything else is refused, saying which cell stretches the sheet and what to do.
"""

from __future__ import annotations

import itertools
import re
import zipfile
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from operator import itemgetter
from pathlib import Path, PurePosixPath
from typing import IO, Any

from abbench._archive import ArchiveRefused, check_ratio
from abbench.dataset._formats import column_letter
from abbench.errors import ImportFailed

MAX_WORKBOOK_BYTES = 512 << 20
"""The most a workbook's parts may hold uncompressed, together."""
MAX_DENSE_CELLS = 8 << 20
"""The largest box of cells read densely (calamine keeps 32 bytes a cell: 256 MiB)."""
MAX_SPARSE_CELLS = 1_000_000
"""The most cells holding a value a sheet read sparsely may have (about 100 bytes each in Python)."""
MAX_SHEET_TEXT = 256 << 20
"""The most text a sheet's shared strings may expand to (each use of a shared string is a copy)."""

_CHUNK = 1 << 20
_PROLOG = 64 << 10
_NS = rb"(?:[A-Za-z_][\w.-]*:)?"
# A cell's reference (a row's holds digits only); valueless cells count too, so the box is an upper bound
_REF = re.compile(rb' r="\$?([A-Z]{1,3})\$?([0-9]{1,7})"')  # a literal start: the engine skips ahead fast
_REF_QUOTED = re.compile(rb"\sr='\$?([A-Z]{1,3})\$?([0-9]{1,7})'")
_ROW = re.compile(rb"<" + _NS + rb"row\s[^>]*?\br=[\"']([0-9]{1,7})[\"']")
_SHARED_FAST = re.compile(rb't="s"><v>([0-9]{1,9})</v>')  # how Excel, LibreOffice and openpyxl write it
_SHARED_REF = re.compile(
    rb"<" + _NS + rb"c\s[^>]*?\bt=[\"']s[\"'][^>]*>\s*<" + _NS + rb"v>\s*([0-9]{1,9})\s*<"
)
_SHARED_ITEM = re.compile(rb"<" + _NS + rb"si[\s>/]")
_DTD = re.compile(rb"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)


def column_index(letters: bytes | str) -> int:
    """The 0-based index of a column's letters: ``A`` → 0, ``XFD`` → 16,383."""
    index = 0
    for ch in letters if isinstance(letters, str) else letters.decode("ascii"):
        index = index * 26 + ord(ch) - 64
    return index - 1


@dataclass
class SheetScan:
    """What a sheet's XML says before anything is built from it.

    Attributes:
        part: The sheet's part in the archive (``xl/worksheets/sheet1.xml``).
        cells: Cells holding a value.
        first_row, last_row: 1-based rows of the first and last cell (0 when there is none).
        first_col, last_col: 0-based columns of the leftmost and rightmost cell.
        columns: The 0-based columns holding a cell.
        far: The references of the cells furthest down and furthest right (``A1048576``, ``XFD1``; one
            when they are the same cell).
        text: Characters its shared strings expand to.
        implicit: Some cells give no reference (their place is counted); the box is then an upper bound.
        sparse_ok: The sheet can be read sparsely (OOXML); an OpenDocument sheet cannot.
    """

    part: str
    cells: int = 0
    first_row: int = 0
    last_row: int = 0
    first_col: int = 0
    last_col: int = 0
    columns: set[int] = field(default_factory=set)
    far: str = ""
    _far_row: str = ""
    _far_col: str = ""
    text: int = 0
    implicit: bool = False
    sparse_ok: bool = True

    @property
    def area(self) -> int:
        """The cells of the box from the first to the last cell: what a dense reader allocates."""
        if not self.cells:
            return 0
        return (self.last_row - self.first_row + 1) * (self.last_col - self.first_col + 1)


_CHECKED: dict[tuple[str, int, int], dict[str, SheetScan]] = {}
"""Workbooks whose archive passed, by (path, mtime, size), with their sheets scanned so far."""


class Workbook:
    """A workbook's archive checked, and its sheets scanned on demand (`plan`)."""

    def __init__(self, path: Path):
        self.path = path
        self.zip: zipfile.ZipFile | None = None
        self._parts: dict[str, str] | None = None
        self._shared: list[int] | None = None
        self._scans: dict[str, SheetScan] = {}
        try:
            self.zip = zipfile.ZipFile(path) if zipfile.is_zipfile(path) else None
        except (zipfile.BadZipFile, OSError):
            self.zip = None  # the reader says what is wrong with it
        stat = path.stat()
        self._key = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
        if self._key in _CHECKED:  # read again (the import after its preview): checked already
            self._scans = _CHECKED[self._key]
        elif self.zip is not None:
            try:
                self._check_archive(self.zip)
                names = {n.lower() for n in self.zip.namelist()}
                if "content.xml" in names and "xl/workbook.xml" not in names:
                    # calamine reads every table of an OpenDocument file when it opens it: all are checked now
                    self._scans.update(scan_ods(self.zip))
                    for name in list(self._scans):
                        self.plan(name)
            except ImportFailed:
                self.zip.close()
                raise
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                self.zip.close()
                raise ImportFailed(
                    f"{path.name}: the workbook is damaged ({exc}); open it in Excel and save it again"
                ) from None
            if len(_CHECKED) >= 16:
                _CHECKED.pop(next(iter(_CHECKED)))
            _CHECKED[self._key] = self._scans

    def close(self) -> None:
        """Close the archive."""
        if self.zip is not None:
            self.zip.close()

    def _refuse(self, member: str, why: str) -> ImportFailed:
        return ImportFailed(
            f"{self.path.name}: the part {member} {why}; a crafted file? Open it in Excel and save it again"
        )

    def _check_archive(self, zf: zipfile.ZipFile) -> None:
        total = 0
        for info in zf.infolist():
            total += info.file_size
            try:
                check_ratio(info.filename, info.file_size, info.compress_size)
            except ArchiveRefused as exc:
                raise self._refuse(exc.member, exc.why) from None
            if total > MAX_WORKBOOK_BYTES:
                raise self._refuse(
                    info.filename,
                    f"takes the workbook past {MAX_WORKBOOK_BYTES >> 20:,} MiB uncompressed (it holds "
                    f"{sum(i.file_size for i in zf.infolist()):,} bytes); export the data as CSV",
                )
            if info.filename.endswith((".xml", ".rels", ".vml")) and _declares_dtd(zf, info):
                raise self._refuse(
                    info.filename,
                    "declares a DTD (<!DOCTYPE or <!ENTITY): external entities or entity expansion, which no "
                    "spreadsheet program writes",
                )

    def part_of(self, sheet: str) -> str | None:
        """The archive part holding the sheet called `sheet` (None when the workbook does not say)."""
        if self.zip is None:
            return None
        if self._parts is None:
            self._parts = _sheet_parts(self.zip)
        return self._parts.get(sheet)

    def scan(self, sheet: str) -> SheetScan | None:
        """The sheet's scan (None for a workbook that is not an OOXML zip: .xls, .ods, .xlsb)."""
        if sheet in self._scans:
            return self._scans[sheet]
        part = self.part_of(sheet)
        if part is None and self.zip is not None and "content.xml" in self.zip.namelist():
            return self._scans.get(sheet)
        if part is None or self.zip is None or not part.endswith(".xml"):
            return None
        try:
            scan = scan_sheet(self.zip, part, self._shared_lengths())
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise ImportFailed(
                f"{self.path.name}!{sheet}: the part {part} is damaged ({exc}); a crafted file? Open it in Excel "
                "and save it again"
            ) from None
        self._scans[sheet] = scan
        return scan

    def _shared_lengths(self) -> list[int]:
        if self._shared is None:
            self._shared = []
            assert self.zip is not None
            names = {i.filename.lower(): i.filename for i in self.zip.infolist()}
            part = names.get("xl/sharedstrings.xml")
            if part is not None:
                with self.zip.open(part) as fh:
                    self._shared = _item_lengths(fh)
        return self._shared

    def plan(self, sheet: str) -> str:
        """How to read `sheet`: ``dense`` (calamine) or ``sparse``.

        Raises:
            ImportFailed: the sheet is too large either way, or its shared strings expand past
                `MAX_SHEET_TEXT`; the message names the cell that stretches it and what to do.
        """
        scan = self.scan(sheet)
        if scan is None:
            return "dense"
        where = f"{self.path.name}!{sheet}"
        if scan.text > MAX_SHEET_TEXT:
            raise ImportFailed(
                f"{where}: its cells repeat shared strings to {scan.text:,} characters of text, past the "
                f"{MAX_SHEET_TEXT >> 20:,} MiB a sheet may hold (one long text used by many cells?); "
                "a crafted file? Export the data as CSV"
            )
        if scan.area <= MAX_DENSE_CELLS:
            return "dense"
        box = (
            f"{'the cells' if ' and ' in scan.far else 'the cell'} {scan.far} stretch{'' if ' and ' in scan.far else 'es'} it to {scan.last_row - scan.first_row + 1:,} rows × "
            f"{scan.last_col - scan.first_col + 1:,} columns ({scan.area:,} cells, {scan.cells:,} of them "
            f"filled)"
        )
        if scan.cells <= MAX_SPARSE_CELLS and scan.sparse_ok:
            return "sparse"
        raise ImportFailed(
            f"{where}: {box}, past the {MAX_DENSE_CELLS:,} cells this reader holds; delete what lies past your "
            f"data (select the rows below it and the columns right of it, delete, save), or export the data "
            "as CSV"
        )


def _declares_dtd(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bool:
    """Whether an XML part declares a DTD in its prolog (before its root element)."""
    with zf.open(info) as fh:
        head = fh.read(_PROLOG)
    body = re.search(rb"<[A-Za-z_]", head)
    return _DTD.search(head, 0, body.start() if body else len(head)) is not None


def _sheet_parts(zf: zipfile.ZipFile) -> dict[str, str]:
    """Sheet name → its part, from xl/workbook.xml and its relationships (checked for a DTD already)."""
    import xml.etree.ElementTree as ET

    names = {i.filename.lower(): i.filename for i in zf.infolist()}
    book, rels = names.get("xl/workbook.xml"), names.get("xl/_rels/workbook.xml.rels")
    if book is None or rels is None:
        return {}
    try:
        targets = {
            el.get("Id"): el.get("Target", "")
            for el in ET.fromstring(zf.read(rels)).iter()
            if el.tag.endswith("Relationship")
        }
        sheets = [el for el in ET.fromstring(zf.read(book)).iter() if el.tag.endswith("}sheet")]
    except ET.ParseError:
        return {}
    out = {}
    for el in sheets:
        rid = next((v for k, v in el.attrib.items() if k.endswith("}id")), None)
        target = targets.get(rid, "")
        if not target:
            continue
        path = target.lstrip("/") if target.startswith("/") else str(PurePosixPath("xl") / target)
        out[el.get("name", "")] = names.get(_normal(path).lower(), _normal(path))
    return out


def _normal(path: str) -> str:
    parts: list[str] = []
    for p in path.split("/"):
        if p == "..":
            if parts:
                parts.pop()
        elif p not in ("", "."):
            parts.append(p)
    return "/".join(parts)


def _chunks(fh: IO[bytes]) -> Iterator[bytes]:
    """The part in chunks cut after a closing tag, so no cell is split between two chunks."""
    rest = b""
    while block := fh.read(_CHUNK):
        data = rest + block
        cut = data.rfind(b"</")
        end = data.find(b">", cut) + 1 if cut >= 0 else 0
        if end <= 0:
            if len(data) > 16 * _CHUNK:
                raise ImportFailed("an XML element of more than 64 MiB; a crafted file?")
            rest = data
            continue
        yield data[:end]
        rest = data[end:]
    if rest:
        yield rest


def _item_lengths(fh: IO[bytes]) -> list[int]:
    """The size in bytes of each shared string's XML (its text and markup): what each use repeats."""
    starts: list[int] = []
    offset = 0
    for chunk in _chunks(fh):
        starts.extend(offset + m.start() for m in _SHARED_ITEM.finditer(chunk))
        offset += len(chunk)
    starts.append(offset)
    return [b - a for a, b in itertools.pairwise(starts)]


def scan_sheet(zf: zipfile.ZipFile, part: str, shared: list[int]) -> SheetScan:
    """Scan a sheet's XML for its cells' box, count and shared-string text, without building a cell.

    One pass of a regular expression over the references, byte counts for the rest: on 50,000 rows of
    6 columns it takes about as long as calamine takes to read the sheet (bench/ has the figure).
    """
    scan = SheetScan(part)
    refs = Counter[bytes]()
    columns: set[bytes] = set()
    tags = row_tags = rows_seen = 0
    with zf.open(part) as fh:
        for chunk in _chunks(fh):
            found = _REF.findall(chunk)
            if b" r='" in chunk:
                found += _REF_QUOTED.findall(chunk)
            tags += chunk.count(b"<c ") + chunk.count(b"<c>")
            if found:
                _add_refs(scan, found, columns)
            if tags > scan.cells:  # cells that give no reference: their rows say where they are
                row_tags += chunk.count(b"<row")
                rows = _ROW.findall(chunk)
                rows_seen = max(rows_seen, *map(int, rows)) if rows else rows_seen
            if b't="s"' in chunk or b"t='s'" in chunk:
                shared_refs = _SHARED_FAST.findall(chunk)
                if len(shared_refs) < chunk.count(b't="s"') or b"t='s'" in chunk:
                    shared_refs = _SHARED_REF.findall(chunk)
                refs.update(shared_refs)
    scan.text = sum(n * (shared[int(i)] if int(i) < len(shared) else 0) for i, n in refs.items())
    indexes = sorted(column_index(c) for c in columns)
    if indexes:
        scan.first_col, scan.last_col = indexes[0], indexes[-1]
        scan.columns = set(indexes)
    if tags > scan.cells:  # bound the box: each such cell sits after the one before it
        scan.implicit = True
        scan.cells = tags
        scan.first_row, scan.first_col = 1, 0
        scan.last_row = max(scan.last_row, rows_seen, row_tags)
        scan.last_col = min(16_383, max(scan.last_col, tags - 1))
        scan.columns = set(range(scan.last_col + 1))
        scan.far = f"{column_letter(scan.last_col)}{scan.last_row}"
    else:
        scan.far = " and ".join(dict.fromkeys(r for r in (scan._far_row, scan._far_col) if r))
    return scan


def _add_refs(scan: SheetScan, found: list[tuple[bytes, bytes]], columns: set[bytes]) -> None:
    """Widen `scan`'s box by a chunk's cell references, remembering the cells furthest down and right."""
    here = set(map(itemgetter(0), found))
    widest = max(here, key=lambda c: (len(c), c))
    if not columns or (len(widest), widest) > max((len(c), c) for c in columns):
        scan._far_col = b"".join(next(t for t in found if t[0] == widest)).decode()
    columns.update(here)
    low = min(map(int, map(itemgetter(1), found)))
    high = max(map(int, map(itemgetter(1), found)))
    scan.first_row = min(scan.first_row, low) if scan.first_row else low
    if high > scan.last_row:
        scan._far_row = b"".join(next(t for t in found if int(t[1]) == high)).decode()
        scan.last_row = high
    scan.cells += len(found)


def scan_ods(zf: zipfile.ZipFile) -> dict[str, SheetScan]:
    """Each table of an OpenDocument spreadsheet: the box of its cells holding a value, with their
    repeats counted (``number-rows-repeated``, ``number-columns-repeated``: calamine writes each repeat
    out, so a 1 KB file can ask for a billion cells). Empty repeated cells, which LibreOffice writes to
    the sheet's edge, do not count."""
    scans: dict[str, SheetScan] = {}
    at = {"row": 0, "col": 0, "repeat": 1}
    current: list[SheetScan] = []

    def start(name: str, attrs: dict[str, str]) -> None:
        local = name.rsplit(" ", 1)[-1]
        if local == "table":
            current[:] = [
                scans.setdefault(
                    attrs.get(_ODS_TABLE + " name", ""), SheetScan("content.xml", sparse_ok=False)
                )
            ]
            at["row"] = 0
        elif local == "table-row" and current:
            at["repeat"] = _repeat(attrs.get(_ODS_TABLE + " number-rows-repeated"))
            at["col"] = 0
        elif local in ("table-cell", "covered-table-cell") and current:
            cols = _repeat(attrs.get(_ODS_TABLE + " number-columns-repeated"))
            if any(k.endswith(" value-type") for k in attrs):
                scan = current[0]
                first, last = at["row"] + 1, at["row"] + at["repeat"]
                scan.first_row = min(scan.first_row, first) if scan.cells else first
                scan.first_col = min(scan.first_col, at["col"]) if scan.cells else at["col"]
                scan.last_row, scan.last_col = (
                    max(scan.last_row, last),
                    max(scan.last_col, at["col"] + cols - 1),
                )
                scan.cells += cols * at["repeat"]
                scan.far = f"{column_letter(scan.last_col)}{scan.last_row}"
            at["col"] += cols

    def end(name: str) -> None:
        if name.rsplit(" ", 1)[-1] == "table-row":
            at["row"] += at["repeat"]

    parse_part(zf, "content.xml", start, end, program="LibreOffice")
    return scans


def parse_part(
    zf: zipfile.ZipFile, part: str, start: Any, end: Any, text: Any = None, *, program: str = "Excel"
) -> None:
    """Stream a part through expat with no DTD or entity of any kind (the archive check refused them),
    calling `start`, `end` and `text` (when given) as its elements open, close and hold text."""
    from xml.parsers import expat

    parser = expat.ParserCreate(namespace_separator=" ")
    parser.buffer_text = True
    parser.SetParamEntityParsing(expat.XML_PARAM_ENTITY_PARSING_NEVER)
    parser.StartElementHandler, parser.EndElementHandler = start, end
    if text is not None:
        parser.CharacterDataHandler = text
    try:
        with zf.open(part) as fh:
            while block := fh.read(_CHUNK):
                parser.Parse(block, False)
            parser.Parse(b"", True)
    except expat.ExpatError as exc:
        raise ImportFailed(
            f"the part {part} is not well-formed XML ({exc}); open the file in {program} and save it again"
        ) from None


_ODS_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"


def _repeat(value: str | None) -> int:
    return int(value) if value and value.isdigit() else 1

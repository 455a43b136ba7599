"""Defences against hostile files: JSON nested too deep to parse, NaN, integers of thousands of digits,
lone UTF-16 surrogates, NUL bytes in text. Each becomes an error that says where, never a traceback."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from abbench.errors import ImportFailed

_JSON_TOKENS = re.compile(r'"(?:\\.|[^"\\])*"|[\[\]{}]')
DEPTH_SHOWN = 500
_CONSTANT = re.compile(r'"(?:\\.|[^"\\])*"|(-?Infinity|NaN)')
_LONG_INT = re.compile(r"\d{4000,}")
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class _NotStandardJson(ValueError):
    """Raised by the decoder for NaN and Infinity, which JSON does not have."""


def _refuse_constant(name: str) -> Any:
    raise _NotStandardJson(name)


class _InfiniteNumber(ValueError):
    """Raised by the decoder for a number beyond a float's range (1e999), which would become infinity."""


def _finite(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise _InfiniteNumber(text)
    return value


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
_FINITE_DECODER = json.JSONDecoder(parse_constant=_refuse_constant, parse_float=_finite)
# A float past 1.8e308 has an exponent of three digits or 309 digits: only then is each float checked
_MAYBE_HUGE = re.compile(r"[0-9][eE]\+?[0-9]{3}|[0-9]{309}")


def decode_json(text: str) -> Any:
    """`json.loads` that refuses NaN and Infinity (Python writes them; no other JSON reader takes them)
    and numbers beyond a float's range (``1e999``), which would be stored as infinity."""
    return (_FINITE_DECODER if _MAYBE_HUGE.search(text) else _DECODER).decode(text)


def _offset_of(text: str, pattern: re.Pattern[str], group: int = 0) -> int:
    for m in pattern.finditer(text):
        if m.group(group):
            return m.start(group)
    return 0


def json_problem(text: str, exc: BaseException) -> tuple[int, str] | None:
    """Where and why JSON text that raised `exc` while parsing cannot be read: ``(offset, why)``.

    Covers what `json.JSONDecodeError` does not: nesting deeper than the parser goes, NaN/Infinity,
    integers too long to convert. None for any other error.
    """
    if isinstance(exc, RecursionError):
        depth = deepest = 0
        where = None
        for m in _JSON_TOKENS.finditer(text):
            tok = m.group()
            if tok in "[{":
                depth += 1
                if depth > deepest:
                    deepest = depth
                    if depth == DEPTH_SHOWN + 1:
                        where = m.start()
            elif tok in "]}":
                depth -= 1
        return where or 0, (
            f"the JSON is nested {deepest:,} levels deep (it passes {DEPTH_SHOWN} here), deeper than it can be "
            "read; rows are objects or arrays a few levels deep — check how the file was made"
        )
    if isinstance(exc, _InfiniteNumber):
        return text.find(str(exc)), (
            f"{exc} is beyond the largest number a float holds (it would be stored as infinity); write it "
            "as a text (quoted), or as a smaller number"
        )
    if isinstance(exc, _NotStandardJson):
        return _offset_of(text, _CONSTANT, 1), (
            f"{exc} is not JSON (Python writes it for a missing or infinite number); write null or a number"
        )
    if isinstance(exc, ValueError) and "digits" in str(exc):
        return _offset_of(text, _LONG_INT), "a number with thousands of digits; write it as a text (quoted)"
    return None


def _line_col(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def json_loads(text: str, name: str, line: int | None = None) -> Any:
    """Parse JSON text; what `json_problem` covers becomes an `ImportFailed` saying where.

    Raises:
        json.JSONDecodeError: the text is not JSON.
        ImportFailed: nested too deep, NaN/Infinity, or an integer too long (with line and column).
    """
    try:
        return decode_json(text)
    except json.JSONDecodeError:
        raise
    except (RecursionError, ValueError) as exc:
        found = json_problem(text, exc)
        if found is None:
            raise
        offset, why = found
        row, col = _line_col(text, offset)
        raise ImportFailed(f"{name}, line {line or row}, column {col}: {why}") from None


def dumps_short(value: Any) -> str:
    """A row as JSON text for a problem report (escaped, so any string survives)."""
    return json.dumps(value)[:200]


def lone_surrogate(value: Any) -> str | None:
    """The first string in `value` holding half a UTF-16 pair (``"\\ud800"``), which no UTF-8 text can
    hold; None when there is none."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            found = lone_surrogate(k) or lone_surrogate(v)
            if found is not None:
                return found
    elif isinstance(value, list):
        for v in value:
            found = lone_surrogate(v)
            if found is not None:
                return found
    return None


def surrogate_message(text: str) -> str:
    bad = next((c for c in text if "\ud800" <= c <= "\udfff"), "")
    return (
        f"a string holds \\u{ord(bad):04x} alone, half of a UTF-16 surrogate pair, which no UTF-8 text can "
        "hold; fix the escape (a pair such as \\ud83d\\ude00 is fine)"
    )


_NUL_BLOCK = 1 << 20


def check_no_nul(path: Path) -> None:
    """Refuse a text file holding a NUL byte: no CSV holds one, and the csv module reads it into a cell.

    Raises:
        ImportFailed: with the line and column of the first NUL.
    """
    line = 1
    last_newline = -1
    offset = 0
    with path.open("rb") as fh:
        while block := fh.read(_NUL_BLOCK):
            at = block.find(b"\x00")
            if at < 0:
                line += block.count(b"\n")
                nl = block.rfind(b"\n")
                if nl >= 0:
                    last_newline = offset + nl
                offset += len(block)
                continue
            line += block.count(b"\n", 0, at)
            nl = block.rfind(b"\n", 0, at)
            if nl >= 0:
                last_newline = offset + nl
            col = offset + at - last_newline
            raise ImportFailed(
                f"{path.name}, line {line}, column {col}: a NUL byte (\\x00), which no text file holds; the file "
                "is binary, cut off mid-write, or UTF-16 without a byte order mark (then give --encoding utf-16-le)"
            )


_MAGIC = (
    (
        b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1",
        "an OLE file: an old Excel .xls, another Office file or a password-protected workbook",
        "save it as .xlsx (unprotected) and import that",
    ),
    (b"%PDF-", "a PDF document", "export the table from it as CSV or XLSX (a PDF holds pages, not rows)"),
    (
        b"\x1f\x8b",
        "a gzip archive",
        "unpack it (gzip -dc '{name}' > '{unpacked}') and import the file inside",
    ),
    (b"BZh", "a bzip2 archive", "unpack it (bzip2 -dc '{name}' > '{unpacked}') and import the file inside"),
    (
        b"\xfd7zXZ\x00",
        "an xz archive",
        "unpack it (xz -dc '{name}' > '{unpacked}') and import the file inside",
    ),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "unpack it (7z x '{name}') and import the file inside"),
    (b"Rar!\x1a\x07", "a RAR archive", "unpack it (unrar x '{name}') and import the file inside"),
    (
        b"SQLite format 3\x00",
        "an SQLite database",
        "export a table as CSV: sqlite3 -header -csv '{name}' 'SELECT * FROM <table>' > '{csv}' "
        "(its tables: sqlite3 '{name}' .tables)",
    ),
    (
        b"PAR1",
        "a Parquet file",
        "import it as Parquet: name it {stem}.parquet, or give --format parquet (format=)",
    ),
    (b"\x89PNG", "a PNG image", "import the data file itself"),
    (b"\xff\xd8\xff", "a JPEG image", "import the data file itself"),
    (b"GIF8", "a GIF image", "import the data file itself"),
    (b"\x7fELF", "a program (ELF)", "import the data file itself"),
)

_MARKUP = re.compile(
    rb"\s*(<\?xml\b|<!doctype\s+(\w+)|<([A-Za-z_][\w.:-]*)(\s[^<>]*)?/?>\s*(<|$))", re.IGNORECASE
)


def csv_name(path: Path) -> str:
    """The CSV a conversion should write: ``<stem>.csv``, unless that is the file itself (an XML file
    named ``cases.csv``), which the conversion would overwrite while reading it."""
    name = f"{path.stem}.csv"
    return f"{path.stem}-converted.csv" if name.lower() == path.name.lower() else name


def markup_kind(path: Path, head: bytes) -> tuple[str, str] | None:
    """What a text file given as CSV or JSON is instead when it is markup (XML, HTML), and a one-line
    conversion, as ``(what, how to convert)``; None for anything else. A CSV cell may hold a tag, so only a file that opens with an XML
    declaration, a doctype, or a line that is a lone tag counts."""
    text = head.removeprefix(b"\xef\xbb\xbf")
    m = _MARKUP.match(text)
    if m is None:
        return None
    doctype = (m.group(2) or b"").lower()
    tag = (m.group(3) or b"").lower()
    if doctype == b"html" or tag == b"html":
        return (
            "an HTML page",
            'save the table as CSV, or convert it: python -c "import pandas as pd; '
            f"pd.read_html('{path.name}')[0].to_csv('{csv_name(path)}', index=False)\"",
        )
    return (
        "an XML document",
        'convert it to CSV: python -c "import pandas as pd; '
        f"pd.read_xml('{path.name}').to_csv('{csv_name(path)}', index=False)\" "
        "(give read_xml xpath='//row' to choose the element that is a row)",
    )


def _reads_as_text(head: bytes) -> bool:
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        return exc.start > len(head) - 4  # a character cut at the end of the block
    return True


def binary_kind(path: Path) -> str | None:
    """What a file given as text (CSV, JSON) is instead, when its first bytes say it is binary (a zip, an
    Office file, an archive, an image, a database), and what to do; None for anything else."""
    with path.open("rb") as fh:
        head = fh.read(4096)
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        import zipfile

        try:
            with zipfile.ZipFile(path) as zf:
                names = zf.namelist()
        except (zipfile.BadZipFile, OSError):
            names = []
        if "xl/workbook.xml" in names or "xl/workbook.bin" in names:
            return (
                f"a zip archive holding an Excel workbook (xl/workbook.xml): rename it {path.stem}.xlsx, "
                "or give --format xlsx (format=)"
            )
        if "content.xml" in names and "mimetype" in names:
            return f"an OpenDocument file (a zip archive): rename it {path.stem}.ods, or give --format xlsx (format=)"
        shown = ", ".join(names[:3]) + (", …" if len(names) > 3 else "")
        return (
            f"a zip archive ({len(names)} files: {shown}): unzip it (unzip '{path.name}') and import the "
            "data file inside"
        )
    for magic, kind, todo in _MAGIC:
        # a text file may start with these letters (a header "PAR1,..."): then it must not read as text
        if head.startswith(magic) and (not magic.isascii() or not _reads_as_text(head)):
            unpacked = path.stem if path.suffix.lower() in _PACKED else f"{path.stem}-unpacked{path.suffix}"
            return f"{kind}: {todo.format(name=path.name, stem=path.stem, unpacked=unpacked, csv=csv_name(path))}"
    return _noise(head)


_CONTROL = bytes(range(9)) + bytes(range(14, 32))


def _noise(head: bytes) -> str | None:
    """A binary file of no known kind: a twentieth of its first bytes are control bytes no text holds (UTF-16
    without a byte order mark, a NUL beside each ASCII letter, is text and is left to the reader)."""
    n = len(head)
    control = n - len(head.translate(None, _CONTROL))
    if n < 64 or control * 20 < n:
        return None
    half = n // 2
    nul_even, nul_odd = head[0::2].count(0), head[1::2].count(0)
    if max(nul_even, nul_odd) * 10 > half * 3 and min(nul_even, nul_odd) * 20 < half:
        return None
    return (
        f"a binary file of no kind abbench knows: {control * 100 // n}% of its first {n:,} bytes are control "
        "bytes (NUL ...) that no text holds; export the data from the program that wrote it as CSV, XLSX, "
        "JSON Lines or Parquet"
    )


_PACKED = (".gz", ".gzip", ".bz2", ".xz")


def refuse_unread(path: Path) -> None:
    """Refuse at once, before any decoding, a file given as text (CSV, JSON) that is something abbench
    does not read — binary (a zip, an archive, a PDF, a database) or markup (XML, HTML) — saying what it
    is and how to convert it, never "name the encoding".

    Raises:
        ImportFailed: ``cases.csv is a zip archive holding an Excel workbook ...``.
    """
    kind = binary_kind(path)
    if kind is not None:
        raise ImportFailed(
            f"{path.name} is {kind}; it is not a text file (CSV, JSON), whatever its name says"
        )
    with path.open("rb") as fh:
        head = fh.read(4096)
    markup = markup_kind(path, head)
    if markup is not None:
        raise ImportFailed(
            f"{path.name} is {markup[0]}, which abbench does not read (it reads CSV/TSV, Excel, JSON Lines, "
            f"JSON and Parquet); {markup[1]}"
        )

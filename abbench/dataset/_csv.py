"""CSV and TSV files: encoding, delimiter and header found out, then rows streamed in bulk."""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Iterator, Sequence
from functools import partial
from itertools import chain, islice
from pathlib import Path
from typing import Any, Literal

from abbench.dataset._formats import OpenedFile, RowChunk, column_letter, header_names
from abbench.dataset._headers import second_header, two_row_names, two_row_note
from abbench.dataset._hostile import check_no_nul
from abbench.dataset._profile import ReadSpec
from abbench.dataset._quotes import (
    Reading,
    decide_quoting,
    quote_refusal,
    record_lines,
    spanning_problem,
    strict_refusal,
    unclosed_refusal,
)
from abbench.dataset._text import Encoding, decode_error, detect_encoding
from abbench.errors import ImportFailed, UsageError

DELIMITERS = (",", "\t", ";", "|")
"""The delimiters sniffed in CSV files, in order of preference."""

_SNIFF_BYTES = 64 * 1024


def sniff_delimiter(sample: str, suffix: str = "") -> str:
    """The delimiter that splits the sample's lines into the most consistent number of cells.

    ``.tsv`` and ``.tab`` files are tab-separated unless their content clearly says otherwise.
    """
    lines = sample.splitlines()[:50]
    if len(sample) >= _SNIFF_BYTES and len(lines) > 1:
        lines = lines[:-1]  # the last line of a cut sample may be partial
    best, best_score = ("\t" if suffix in (".tsv", ".tab") else ","), (0, 0)
    for delim in DELIMITERS:
        # with quotes read as quoting, and as text: a stray quote in a file that does not quote its
        # cells (a TSV of messages) must not hide its delimiter
        for quoting in (csv.QUOTE_MINIMAL, csv.QUOTE_NONE):
            score = _delimiter_score(lines, delim, quoting)
            if score > best_score:
                best, best_score = delim, score
    return best


def _delimiter_score(lines: list[str], delim: str, quoting: Literal[0, 3]) -> tuple[int, int]:
    """How many non-blank lines have the most common width (of two cells or more), and that width."""
    try:
        reader = csv.reader(lines, delimiter=delim, quoting=quoting)
        counts = [len(r) for r in reader if any(c.strip() for c in r)]
    except csv.Error:
        return (0, 0)
    if not counts:
        return (0, 0)
    width = max(set(counts), key=counts.count)
    return (sum(1 for c in counts if c == width), width) if width >= 2 else (0, 0)


_LINE = "line {}"


def _record_starts(recs: list[list[str]], first: int) -> list[int]:
    starts = []
    line = first
    for rec in recs:
        starts.append(line)
        line += 1 + sum(cell.count("\n") for cell in rec)
    return starts


def _tidy_records(
    recs: list[list[str]], starts: Iterable[int], width: int, reading: Reading, keep_blank: bool
) -> RowChunk:
    """A chunk's records with blank ones dropped (or kept), short ones padded, long ones reported."""
    delim = reading.delimiter
    hint = (
        "check the delimiter or quote the cells that hold it"
        if reading.quoting == "csv"
        else "check the delimiter: quotes are read as text in this file, so a cell cannot hold it"
    )
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
                        f"the row has {n} cells but the header has {width} columns; {hint}",
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
            raise unclosed_refusal(path, start, end) from None


def open_csv(path: Path, read: ReadSpec) -> OpenedFile:
    """Inspect a CSV/TSV file (encoding, delimiter, header) with `read`'s encoding, delimiter and header row."""
    # Eval data holds long cells (reference answers, passages); the csv module stops at 128 KiB.
    if csv.field_size_limit() < _FIELD_LIMIT:
        csv.field_size_limit(_FIELD_LIMIT)
    header_row = read.header_row
    enc, sample = _sample(path, read.encoding)
    notes: list[str] = []
    comments = _comment_lines(sample)
    if header_row is not None:  # given: the comment lines above it are still never read as cells
        comments = min(comments, max(header_row - 1, 0))
    data = "".join(sample.splitlines(keepends=True)[comments:]) if comments else sample
    delim, directive = _delimiter(path, data, read.delimiter, header_row, notes)
    if comments and header_row is None:
        comments = _header_among_comments(sample, comments, delim)
        if comments:
            notes.append(_comment_note(comments))
    sample = _blank(sample, comments)
    if read.quoting is not None:  # given: read as asked (CSV quoting leniently, as the csv module does)
        reading = Reading(delim, read.quoting)
    else:
        header_line = header_row or (2 if directive else comments + 1)
        reading = decide_quoting(sample, len(sample) >= _SNIFF_BYTES, delim, header_line, notes)
    n, first, after = _header_records(
        path, enc, reading, header_row, skip=int(directive) or comments, comments=comments
    )
    columns, skip = _columns(n, first, after, header_row, notes)
    options = {
        "format": "csv",
        "encoding": enc.codec,
        "encoding_detected": enc.how,
        "delimiter": delim,
        "quoting": reading.quoting,
        "header_row": 0 if header_row == 0 else skip,
    }
    chunks = partial(_chunks, path, enc, reading, skip, len(columns), comments=comments)
    return OpenedFile("csv", columns, True, chunks, options, notes=notes)


def _sample(path: Path, encoding: str | None) -> tuple[Encoding, str]:
    """The file's encoding and its first characters; a NUL byte in a UTF-8/legacy file is refused."""
    enc = detect_encoding(path, encoding)
    if not enc.codec.replace("_", "-").lower().startswith(("utf-16", "utf-32")):
        check_no_nul(path)
    try:
        with path.open(encoding=enc.codec, newline="") as fh:
            return enc, fh.read(_SNIFF_BYTES)  # within the MiB detect_encoding decoded
    except UnicodeDecodeError:  # a short file cut inside a character: the end is within the sample
        raise decode_error(path, enc) from None


def _delimiter(
    path: Path, sample: str, delimiter: str | None, header_row: int | None, notes: list[str]
) -> tuple[str, bool]:
    """The delimiter (given, named by Excel's ``sep=`` line, or sniffed), and whether line 1 is that line."""
    if delimiter is not None:
        delimiter = {"\\t": "\t", "tab": "\t", "TAB": "\t"}.get(delimiter, delimiter)
        if len(delimiter) != 1:
            raise UsageError(f"a delimiter is one character, got {delimiter!r}; e.g. ',' or '\\t'")
    # Excel writes and reads a first line "sep=;" naming the delimiter; it is not the header.
    directive = re.fullmatch(r"sep=(.)", sample.split("\n", 1)[0].rstrip("\r").lstrip("\ufeff"))
    if directive is not None and header_row is None:
        notes.append(
            f"line 1 is Excel's {directive.group(0)!r} line: the delimiter is {directive.group(1)!r}"
        )
    else:
        directive = None
    delim = delimiter or (directive.group(1) if directive else sniff_delimiter(sample, path.suffix.lower()))
    return delim, directive is not None


_COMMENT = re.compile(r"\ufeff?#")


def _comment_lines(sample: str) -> int:
    """How many of the sample's first lines start with ``#`` (a line below them is left for the header)."""
    lines = sample.splitlines()
    n = 0
    while n < len(lines) - 1 and _COMMENT.match(lines[n]):
        n += 1
    return n


def _blank(sample: str, n: int) -> str:
    """The sample with its first `n` lines blank: the quoting is decided on the lines that hold data,
    and every line keeps its number."""
    if not n:
        return sample
    lines = sample.splitlines(keepends=True)
    return "\n" * n + "".join(lines[n:])


def _header_among_comments(sample: str, n: int, delim: str) -> int:
    """The comment lines above the header: all `n` of them, or ``n - 1`` when the last has the
    width of the line below it and so is the header itself (``#id<TAB>text``, VCF's ``#CHROM``)."""
    lines = sample.splitlines()
    below = next((line for line in lines[n:] if line.strip()), "")
    width = len(next(csv.reader([below], delimiter=delim), []))
    if width > 1 and len(next(csv.reader([lines[n - 1]], delimiter=delim), [])) == width:
        return n - 1
    return n


def _uncommented(lines: Iterator[str], n: int) -> Iterator[str]:
    """`lines` with the first `n` read as blank lines: a quote in a comment opens no cell, and every
    line keeps its number (the skipping runs at C speed, as the reading does)."""
    return chain(["\n"] * n, islice(lines, n, None)) if n else lines


def _comment_note(n: int) -> str:
    lines = "line 1 starts" if n == 1 else f"lines 1–{n} start"
    return (
        f"{lines} with '#' and read as comments above the header: skipped, the header is line {n + 1} "
        "(give header_row=N, CLI --header-row N, to take another line as the header)"
    )


def _header_records(
    path: Path, enc: Encoding, reading: Reading, header_row: int | None, *, skip: int, comments: int = 0
) -> tuple[int, list[str], list[list[str]]]:
    """The header's record number and cells, and the records below it (to spot a second header row).

    The header is the first non-blank record after the first `skip` (Excel's ``sep=`` line, comment
    lines), or the record asked for (1-based); 0 means no header.
    """
    first: list[str] = []
    after: list[list[str]] = []
    n = 0
    try:
        with path.open(encoding=enc.codec, newline="") as fh:
            # leniently: a quote problem in these rows is refused, with its line, when they are read
            reader = Reading(reading.delimiter, reading.quoting).reader(_uncommented(fh, comments))
            for n, rec in enumerate(reader, start=1):
                if (header_row and n < header_row) or n <= skip:
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
    return n, first, after


def _columns(
    n: int, first: list[str], after: list[list[str]], header_row: int | None, notes: list[str]
) -> tuple[tuple[str, ...], int]:
    """The column names (one header row or two read as one) and how many records precede the data."""
    two_rows = bool(after) and second_header(first, after[0], after[1:], set())
    if two_rows:
        first = two_row_names(first, after[0], max(len(first), len(after[0])), set())
        notes.append(two_row_note(n, first, merged=False))
    if header_row == 0:
        return tuple(column_letter(i) for i in range(len(first))), 0
    # Excel's CSV export ends every line with a delimiter when the sheet had a stray empty column:
    # trailing blank header cells are not columns (cells under them are still reported if filled).
    while first and not first[-1].strip():
        first = first[:-1]
    if header_row is None and not two_rows:
        _note_data_as_header(n, first, after, notes)
    return header_names(first, 0, notes), (n + 1 if two_rows else n)


def _note_data_as_header(n: int, first: list[str], after: list[list[str]], notes: list[str]) -> None:
    """Say so when the header row reads like data: two or more of its cells — or half of them, in a
    file of two or three columns — are numbers, values that recur in their own column below, or
    sentences (a file without column names, e.g. GLUE's CoLA and SST-2 TSVs: label, sentence)."""
    below = [{rec[i].strip() for rec in after if i < len(rec)} for i in range(len(first))]
    named = [cell.strip() for cell in first if cell.strip()]
    datalike = [
        cell.strip()
        for i, cell in enumerate(first)
        if cell.strip()
        and (_is_number(cell.strip()) or cell.strip() in below[i] or len(cell.split()) >= _SENTENCE_WORDS)
    ]
    if len(datalike) >= 2 or (datalike and 2 * len(datalike) >= len(named)):
        shown = ", ".join(repr(c) for c in datalike[:4])
        notes.append(
            f"line {n} reads like data, not column names ({shown} are values, as in the rows below): "
            "if the file has no header row, use header_row=0 (CLI --header-row 0; columns A, B, C …) so that row is a case too"
        )


_SENTENCE_WORDS = 8
"""A header cell of this many words or more reads like a case's text, not a column's name."""


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _chunks(
    path: Path,
    enc: Encoding,
    reading: Reading,
    skip: int,
    width: int,
    size: int,
    keep_blank: bool = False,
    *,
    comments: int = 0,
) -> Iterator[RowChunk]:
    """The records after the header, `size` at a time, read again from the start of the file."""
    delim = reading.delimiter
    with path.open(encoding=enc.codec, newline="") as fh:
        reader = reading.reader(_uncommented(fh, comments))
        last: tuple[list[str], int] | None = None
        prev = 0
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
                    if reading.checks_spans:
                        _check_spans(path, reading, recs, starts, width)
                prev = now
                last = (recs[-1], starts[-1])
                if set(map(len, recs)) == {width} and all(map(any, recs)):
                    yield RowChunk(recs, list(map(_LINE.format, starts)), None, [], text_only=True)
                else:
                    yield _tidy_records(recs, starts, width, reading, keep_blank)
        except StopIteration:
            return
        except csv.Error as exc:
            failed = _csv_error(path, reader.line_num, exc)
            if reading.strict:  # which quote, and where: the lines from the failed chunk read again
                failed = strict_refusal(path, enc.codec, reading, prev + 1, width, failed)
            raise failed from None
        except UnicodeDecodeError:
            raise decode_error(path, enc) from None
        if last is not None and not reading.strict and any("\n" in c or "\r" in c for c in last[0]):
            _check_quotes_closed(path, enc.codec, delim, last[1], reader.line_num)


def _check_spans(
    path: Path, reading: Reading, recs: list[list[str]], starts: Sequence[int], width: int
) -> None:
    """Refuse a record that is rows a stray quote joined (`spanning_problem`, `SPAN_DELIMITERS`)."""
    for rec, start in record_lines(recs, starts):
        problem = spanning_problem(rec, start, reading.delimiter, width)
        if problem is not None:
            raise quote_refusal(path, reading, problem)

"""Quotes in CSV/TSV files: RFC 4180 quoting or part of the text, decided, and read without a silent change.

Python's csv module, left lenient, reads a quote that opens a cell and closes inside it by dropping
both quotes (``"Happy valentines day" I know`` → ``Happy valentines day I know``), and a quote that
opens a cell and closes lines below by joining those rows into one cell. A file that writes quotes as
text (the UCI SMS Spam Collection: tab-separated, no quoting) loses quotes and rows that way. So:

- when the quoting is not given, the first 64 KiB are read strictly as CSV; a quote problem there,
  in a sample whose every line has the header's width with quotes as text, reads the file with quotes
  as text, and a note names the line that decided it;
- otherwise the file is read as CSV strictly, and a quote problem further down is refused, naming its
  line and the ways out;
- given, ``quoting="none"`` reads quotes as text, and ``quoting="csv"`` the csv module's lenient way.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Literal, NamedTuple

from abbench._text import clip
from abbench.dataset._profile import Quoting
from abbench.errors import ImportFailed

SPAN_DELIMITERS = frozenset("\t;|")
"""The delimiters for which a quoted cell running on into a line that holds the delimiter is a problem.

In a tab-, semicolon- or pipe-separated file such a cell is most often rows that a stray quote joined
(``ham<TAB>"Keep ur problems…`` swallowing the two rows below). Not for commas: a quoted paragraph
whose later lines hold commas is ordinary CSV (addresses, comments, reference answers)."""


@dataclass(frozen=True, slots=True)
class Reading:
    """How the csv module reads a file's records.

    Attributes:
        delimiter: The one-character delimiter.
        quoting: ``csv`` or ``none`` (quotes are text).
        strict: Quote problems are refused (CSV quoting detected, not given).
        misfit: Why quotes as text did not fit the sample, when it held a quote problem.
    """

    delimiter: str
    quoting: Quoting = "csv"
    strict: bool = False
    misfit: str | None = None

    def reader(self, lines: Iterable[str]) -> Any:
        """A csv reader of `lines` (a file opened with ``newline=""``, or lines with their ends)."""
        if self.quoting == "none":
            return csv.reader(lines, delimiter=self.delimiter, quoting=csv.QUOTE_NONE)
        return csv.reader(lines, delimiter=self.delimiter, strict=self.strict)

    @property
    def checks_spans(self) -> bool:
        """Whether a record spanning lines is checked for joined rows (`SPAN_DELIMITERS`)."""
        return self.strict and self.delimiter in SPAN_DELIMITERS


class QuoteProblem(NamedTuple):
    """A place where reading quotes as CSV quoting would change the text or join rows.

    Attributes:
        kind: ``closes`` (a quote closes inside its cell), ``spans`` (a quoted cell runs on into a
            line holding the delimiter) or ``unclosed`` (a quote is never closed).
        line: The line that shows it (where the quote closes, or where the cell opens).
        what: What happens there, as a clause.
        end: For ``unclosed``, the last line of the file.
    """

    kind: Literal["closes", "spans", "unclosed"]
    line: int
    what: str
    end: int = 0


def decide_quoting(sample: str, cut: bool, delimiter: str, header_line: int, notes: list[str]) -> Reading:
    """The reading of a file whose quoting is not given, from its first characters.

    Quotes as text when reading the sample strictly as CSV meets a quote closing inside its cell or a
    cell joining rows, and every non-blank line of the sample has the header's width with quotes as
    text (`notes` gets why); else CSV quoting, read strictly. A quote never closed decides nothing:
    it is what a cut file looks like too, and is refused with its own message.

    Args:
        sample: The file's first characters.
        cut: Whether the file goes on after the sample (its last line may be partial).
        delimiter: The file's delimiter.
        header_line: The header's line (1-based); lines above it are not counted.
        notes: Where the note goes.
    """
    lines = list(io.StringIO(sample, newline=""))  # split where the file reader splits
    if cut and len(lines) > 1:
        lines = lines[:-1]
    strict = Reading(delimiter, "csv", strict=True)
    width, misfit = _text_width(lines, delimiter, header_line)
    problem = first_problem(strict, lines, 1, lambda n: lines[n - 1], width=width, end_is_cut=cut)
    if problem is None or problem.kind == "unclosed":
        return strict
    if misfit is not None:
        return Reading(delimiter, "csv", strict=True, misfit=misfit)
    notes.append(
        f"line {problem.line}: {problem.what}; every line has {width} cells when quotes are read as text: "
        "quotes are kept as written (give quoting='csv', CLI --quoting csv, if the file quotes its cells)"
    )
    return Reading(delimiter, "none")


def _text_width(lines: Sequence[str], delimiter: str, header_line: int) -> tuple[int, str | None]:
    """The header's width with quotes read as text, and the first line of another width (None if none)."""
    width = 0
    reader = csv.reader(lines, delimiter=delimiter, quoting=csv.QUOTE_NONE)
    for n, rec in enumerate(reader, start=1):
        if n < header_line or not any(c.strip() for c in rec):
            continue
        if not width:
            width = len(rec)
        elif len(rec) != width:
            return width, f"with quotes as text, line {n} has {len(rec)} cells and the header {width}"
    return width, (None if width > 1 else "with quotes as text, the file has one column")


def first_problem(
    reading: Reading,
    lines: Iterable[str],
    first: int,
    text_of: Callable[[int], str],
    *,
    width: int,
    end_is_cut: bool,
) -> QuoteProblem | None:
    """The first quote problem in reading `lines` (line `first` on) strictly as CSV, or None.

    `text_of` gives a line's text by number, for the message; `width` is the header's. A quote never
    closed is no problem when `end_is_cut` (the lines stop before the file does); joined rows
    (`spanning_problem`) are one only for the `SPAN_DELIMITERS`.
    """
    reader = csv.reader(lines, delimiter=reading.delimiter, strict=True)
    start = first
    spans = reading.delimiter in SPAN_DELIMITERS
    try:
        for rec in reader:
            if spans and reader.line_num + first - 1 > start:
                spanned = spanning_problem(rec, start, reading.delimiter, width)
                if spanned is not None:
                    return spanned
            start = reader.line_num + first
    except csv.Error as exc:
        line = reader.line_num + first - 1
        if "unexpected end of data" in str(exc) and not end_is_cut:
            what = f"a quote opened in this row is never closed ({_excerpt(_quoted_cell(text_of(start), reading.delimiter))})"
            return QuoteProblem("unclosed", start, what, line)
        if "expected after" in str(exc) and line == start:
            what = (
                f"a quote closes inside its cell ({_excerpt(_quoted_cell(text_of(line), reading.delimiter))})"
            )
            return QuoteProblem("closes", line, what)
        if "expected after" in str(exc):
            opened = _excerpt(_quoted_cell(text_of(start), reading.delimiter))
            what = (
                f"a quote opens a cell ({opened}) that runs on to line {line}, where a quote closes inside "
                f"a cell ({_excerpt(text_of(line))}): lines {start}–{line} would be one row"
            )
            return QuoteProblem("spans", start, what)
    return None


def spanning_problem(rec: Sequence[str], start: int, delimiter: str, width: int) -> QuoteProblem | None:
    """The problem of a record from line `start` that is rows a stray quote joined, or None.

    Joined rows: a quoted cell runs on over lines that each read as a row of their own, with quotes as
    text: `width` cells (the header's), the first one filled. A quoted paragraph whose lines do not
    (``1;"Dear Sir;`` then ``thanks; bye"`` under a two-column header) is a cell that spans lines.
    """
    lines = delimiter.join(rec).split("\n")
    if len(lines) < 2 or width < 2:
        return None
    if not all(line.count(delimiter) == width - 1 and line.split(delimiter, 1)[0].strip() for line in lines):
        return None
    end = start + len(lines) - 1
    opened = next(cell for cell in rec if "\n" in cell).split("\n", 1)[0]
    return QuoteProblem(
        "spans",
        start,
        f'a quote opens a cell ("{_excerpt(opened)}) that runs on to line {end}, and lines {start + 1}–{end} '
        f"read as rows of their own ({width} cells each: {_excerpt(lines[1])}): lines {start}–{end} would "
        "be one row",
    )


def _excerpt(text: str) -> str:
    """The start of a line, tabs shown as ⇥."""
    return clip(text.rstrip("\r\n").replace("\t", " ⇥ "), 41)


def _quoted_cell(line: str, delimiter: str) -> str:
    """The first cell of `line` that opens with a quote (the whole line when none does)."""
    return next((c for c in line.rstrip("\r\n").split(delimiter) if c.startswith('"')), line)


def strict_refusal(
    path: Path, codec: str, reading: Reading, first: int, width: int, fallback: ImportFailed
) -> ImportFailed:
    """The refusal of a file read strictly as CSV whose records from line `first` on raised an error.

    Those lines are read again (only then) to find the record and line at fault; `fallback` when the
    error was not a quote problem (a cell over the size limit …).
    """

    def text_of(n: int) -> str:
        with path.open(encoding=codec, newline="") as fh:
            return next(islice(fh, n - 1, None), "")

    with path.open(encoding=codec, newline="") as fh:
        problem = first_problem(
            reading, islice(fh, first - 1, None), first, text_of, width=width, end_is_cut=False
        )
    return fallback if problem is None else quote_refusal(path, reading, problem)


def quote_refusal(path: Path, reading: Reading, problem: QuoteProblem) -> ImportFailed:
    """A quote problem in a file read strictly as CSV: what, where, why CSV, and the ways out."""
    if problem.kind == "unclosed":
        return unclosed_refusal(path, problem.line, problem.end)
    why = (
        "its first 64 KiB read cleanly that way"
        if reading.misfit is None
        else f"quotes as text do not fit either: {reading.misfit}"
    )
    lenient = (
        "give quoting='csv' (--quoting csv) if the cell really runs over those lines"
        if problem.kind == "spans"
        else "quoting='csv' (--quoting csv) reads it leniently, dropping such quotes"
    )
    return ImportFailed(
        f"{path.name}, line {problem.line}: {problem.what}. The file is read with CSV quoting ({why}), "
        "which would change this text. If quotes are part of the text, give quoting='none' (CLI --quoting "
        'none); if the file quotes its cells, write a quote inside a quoted cell as two (""); or '
        f"{lenient}"
    )


def unclosed_refusal(path: Path, start: int, end: int) -> ImportFailed:
    """The refusal of a file whose last record opens a quote that is never closed."""
    return ImportFailed(
        f"{path.name}, line {start}: a quote opened in this row is never closed, so lines {start}–{end} "
        "(to the end of the file) would be read as one cell; close the quote, or write a quote "
        "that is part of the text as two (\"\"), or give quoting='none' (CLI --quoting none) if quotes "
        "are part of the text"
    )


def record_lines(records: Sequence[list[str]], starts: Sequence[int]) -> Iterable[tuple[list[str], int]]:
    """The records that span several lines, each with its first line."""
    return ((rec, start) for rec, start in zip(records, starts, strict=True) if any("\n" in c for c in rec))

"""What every format's reader shares: the chunks of rows, the opened file, header names, the format sniff.

The readers of each format (`_csv`, `_excel`, `_json`, `_parquet`) inspect a file (encoding, delimiter, header,
sheet, splits) and return an `OpenedFile` whose `chunks()` streams rows again from the start every time
it is called.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from abbench.dataset._headers import cell_text as _cell_text

KEY_SAMPLE = 200
"""Rows of a JSON file whose keys are collected as its columns."""


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
        problems: Rows a recipe refused, each ``(kind, location, field, value, message)`` (a dialogue
            whose speaker no mapping names: ``unknown_speaker``); the problems at one location are one invalid row.
        notes: What a recipe did to the rows that a person should know of (histories it cut), said
            once, in the chunk that ends the file; they join the import report's notes.
    """

    rows: list[Any]
    locations: list[str]
    split: str | None = None
    bad: list[tuple[str, str, Any]] = field(default_factory=list)
    raw: list[Any] | None = None
    text_only: bool = False
    problems: list[tuple[str, str, str | None, Any, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class OpenedFile:
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
    root: Any = None


def column_letter(index: int) -> str:
    """The spreadsheet name of 0-based column `index`: 0 → ``A``, 26 → ``AA``."""
    name = ""
    index += 1
    while index:
        index, rem = divmod(index - 1, 26)
        name = chr(65 + rem) + name
    return name


def header_names(
    cells: list[Any], first_col: int, notes: list[str], letters: Sequence[str] | None = None
) -> tuple[str, ...]:
    """The column names of a header row; a blank cell is named by its column's letters (`letters`, when
    the columns are not consecutive from `first_col`)."""
    names: list[str] = []
    seen: dict[str, int] = {}
    for i, cell in enumerate(cells):
        name = _cell_text(cell).strip().lstrip("\ufeff")
        if not name:
            name = letters[i] if letters is not None and i < len(letters) else column_letter(first_col + i)
            notes.append(f"column {name} has no header; it is called {name!r}")
        if name in seen:
            seen[name] += 1
            new = f"{name}.{seen[name]}"
            notes.append(f"two columns are called {name!r}; the later one is called {new!r}")
            name = new
        seen.setdefault(name, 0)
        names.append(name)
    return tuple(names)


PARQUET_MAGIC = b"PAR1"


def is_parquet(path: Path) -> bool:
    """Whether `path` starts and ends with Parquet's magic bytes (a text file may start ``PAR1,``)."""
    try:
        with path.open("rb") as fh:
            if fh.read(4) != PARQUET_MAGIC:
                return False
            fh.seek(-4, 2)
            return fh.read(4) == PARQUET_MAGIC
    except OSError:
        return False


def sniff_format(path: Path) -> str:
    """The format of a file from its suffix, else from its first bytes; Parquet by its magic bytes,
    whatever the suffix."""
    if is_parquet(path):
        return "parquet"
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
        ".parquet": "parquet",
        ".pq": "parquet",
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


FORMATS = ("csv", "xlsx", "jsonl", "json", "parquet")
"""The formats `read_table` understands (``xlsx`` covers every workbook python-calamine reads;
``parquet`` needs pyarrow, the ``parquet`` extra)."""

"""`read_table`: open a data file of any supported format and stream its rows in chunks."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from abbench._utf8 import read_utf8
from abbench._yaml import load_yaml
from abbench.dataset._csv import open_csv
from abbench.dataset._excel import open_excel
from abbench.dataset._formats import FORMATS, OpenedFile, RowChunk, sniff_format
from abbench.dataset._hostile import json_problem, refuse_unread
from abbench.dataset._json import open_json, open_jsonl
from abbench.dataset._jsonpath import PathError
from abbench.dataset._parquet import open_parquet
from abbench.dataset._profile import QUOTINGS, ReadOptions, ReadSpec, check_read_options
from abbench.dataset._sources import SourceCompiler
from abbench.errors import ImportFailed, UsageError

if TYPE_CHECKING:  # pandas loads only when a frame is asked for
    import pandas as pd

    from abbench.dataset._recipes import RowStream

CHUNK_SIZE = 2000
"""Rows per chunk: large enough for fast batched inserts, small enough to keep memory flat."""


@dataclass(frozen=True, slots=True)
class Row:
    """One row with where it came from (what previews and suggestions look at).

    Attributes:
        value: A dict for table rows (column → cell); the parsed JSON value for JSON rows.
        location: ``"line 12"``, ``"Sheet1!row 5"``, ``"split test #3"``.
        split: The JSON split the row belongs to, if any.
    """

    value: Any
    location: str
    split: str | None = None


class Table:
    """An opened data file: its format, columns and read options, and its rows as a stream.

    Rows are read again from the file on every iteration, so a table can be previewed and then
    imported; only one chunk (`CHUNK_SIZE` rows) is in memory at a time (JSON documents, which must
    be parsed whole, excepted).

    Attributes:
        path: The file.
        format: ``"csv"``, ``"xlsx"``, ``"jsonl"``, ``"json"`` or ``"parquet"``.
        columns: Table columns in order; for JSON rows, the keys (or ``"0"``, ``"1"``... for
            array rows) seen in the first rows.
        tabular: True for CSV, Excel and Parquet (rows are lists aligned with `columns`).
        options: What was used to read it: encoding, delimiter, sheet, header row, splits.
        splits: The splits of a JSON object of splits (all of them, not only the selected ones).
        split_sizes: Rows per split.
        document: The non-list values at the top of a JSON object (``skill_name`` in ``evals.json``).
        root: A JSON document that is an object, whole (the ``conversations`` recipe reads the
            dialogues of ``{"2303": {"messages": [...]}, ...}`` from it); None for other files.
        notes: Things worth telling a person (renamed columns, a skipped title row).
    """

    def __init__(self, path: Path, source: OpenedFile):
        self.path = path
        self._source = source
        self.format = source.format
        self.columns = source.columns
        self.tabular = source.tabular
        self.options = dict(source.options)
        self.splits = source.splits
        self.split_sizes = dict(source.split_sizes)
        self.document = dict(source.document)
        self.root = source.root
        self.notes = list(source.notes)

    def __repr__(self) -> str:
        return f"Table({self.path.name!r}, format={self.format!r}, columns={list(self.columns)!r})"

    def chunks(self, size: int = CHUNK_SIZE, *, keep_blank: bool = False) -> Iterator[RowChunk]:
        """The rows in chunks of at most `size`, from the start of the file.

        `keep_blank` keeps blank table rows (as rows of empty cells) for layouts where they separate blocks.
        """
        return self._source.chunks(size, keep_blank)

    def rows(self) -> Iterator[Row]:
        """Every row, one at a time (table rows as dicts)."""
        for chunk in self.chunks():
            for value, location in zip(chunk.rows, chunk.locations, strict=True):
                yield Row(self.as_record(value), location, chunk.split)

    def head(self, n: int = 10) -> list[Row]:
        """The first `n` rows."""
        out: list[Row] = []
        for chunk in self.chunks(max(n, 1)):
            for value, location in zip(chunk.rows, chunk.locations, strict=True):
                if len(out) >= n:
                    return out
                out.append(Row(self.as_record(value), location, chunk.split))
            if len(out) >= n:
                break
        return out

    def as_record(self, value: Any) -> Any:
        """A table row (list) as a dict of column → cell; JSON rows unchanged."""
        if self.tabular:
            return dict(zip(self.columns, value, strict=False))
        return value

    @property
    def shape(self) -> dict[str, Any]:
        """What a mapping profile records to recognise the next file of the same shape."""
        shape: dict[str, Any] = {"format": self.format, "columns": list(self.columns)}
        if self.splits:
            shape["splits"] = list(self.splits)
        return shape

    def value_counts(
        self, source: str, *, limit: int | None = None, rows: RowStream | None = None
    ) -> ValueCounts:
        """How often each value of one column (or JSON path) occurs, most common first.

        What a label value map editor shows beside each source value. Blank cells and rows where the
        path finds nothing are counted apart; lists and objects are counted by their JSON text.

        Args:
            source: A column name (or top-level key), else a JSON path such as ``data.label``.
            limit: Read at most this many rows (None: the whole file).
            rows: The rows to count in, when a recipe reshapes the file (``get_recipe(name).transform``:
                a dialogue file's one row per user turn, whose ``turn.frames[0].state.active_intent`` is
                the gold); None: the table's own rows.

        Raises:
            MappingError: `source` is neither a column nor a valid JSON path.
        """
        from collections import Counter

        # The importer's own rule for a source named by a string (a column, a key, or a JSON path such as
        # ``1`` on array rows like CLINC150's ``[text, intent]``), so the counts are of what it would import.
        get = SourceCompiler(
            tuple(rows.columns if rows is not None else self.columns),
            tabular=rows.tabular if rows is not None else self.tabular,
            file_name=self.path.name,
            lookups={},
            label="value counts",
        ).compile_name(source, "expected")
        counts: Counter[str] = Counter()
        seen = blank = 0
        for chunk in rows.chunks(CHUNK_SIZE) if rows is not None else self.chunks():
            for record, location in zip(chunk.rows, chunk.locations, strict=True):
                if limit is not None and seen >= limit:
                    return ValueCounts(_most_common(counts), seen, blank, complete=False)
                seen += 1
                try:
                    value = get(record, location, chunk.split)
                except (PathError, AttributeError, IndexError, KeyError, TypeError):
                    value = None
                if value is None or (isinstance(value, str) and not value.strip()):
                    blank += 1
                    continue
                counts[_count_key(value)] += 1
        return ValueCounts(_most_common(counts), seen, blank)

    def to_pandas(self, limit: int | None = None) -> pd.DataFrame:
        """The rows as a pandas DataFrame (with a ``_location`` column), for a look in a notebook."""
        import pandas as pd

        records = []
        for i, row in enumerate(self.rows()):
            if limit is not None and i >= limit:
                break
            value = row.value if isinstance(row.value, dict) else {"value": row.value}
            records.append({**value, "_location": row.location})
        return pd.DataFrame.from_records(records)


@dataclass(frozen=True)
class ValueCounts:
    """The values of one column of a file and how often each occurs (`Table.value_counts`).

    Attributes:
        counts: Value (as text, unstripped) → rows holding it, most common first.
        n_rows: Rows read.
        blank: Rows where the value is missing or blank.
        complete: False when reading stopped at the row limit.
    """

    counts: dict[str, int]
    n_rows: int
    blank: int = 0
    complete: bool = True


def _count_key(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, (list, dict)):
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    return str(value)


def _most_common(counts: Mapping[str, int]) -> dict[str, int]:
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def sheet_names(path: str | os.PathLike[str]) -> list[str]:
    """The worksheets of an Excel workbook, in workbook order; ``[]`` for CSV and JSON files.

    Raises:
        ImportFailed: the file does not exist or cannot be opened as a workbook.
    """
    p = Path(path).expanduser()
    if not p.is_file():
        raise ImportFailed(f"no such file: {p}")
    if sniff_format(p) != "xlsx":
        return []
    from python_calamine import CalamineWorkbook

    try:
        book = CalamineWorkbook.from_path(str(p))
    except Exception as exc:
        raise ImportFailed(f"{p.name}: cannot open as a workbook ({exc}); is it really {p.suffix}?") from None
    names = list(book.sheet_names)
    visible = [m.name for m in book.sheets_metadata if str(m.typ).endswith("WorkSheet")]
    return visible or names


def check_data_file(path: Path) -> None:
    """Refuse a path that is not a readable data file, saying what it is instead.

    Raises:
        ImportFailed: no such file, a symbolic link that leads nowhere, a folder, or a special file.
    """
    if not path.exists():
        if path.is_symlink():
            raise ImportFailed(
                f"{path} is a symbolic link that leads nowhere (a loop, or its target is gone)"
            )
        raise ImportFailed(f"no such file: {path}")
    if path.is_dir():
        raise ImportFailed(f"{path} is a folder; give a data file (CSV, XLSX, JSONL, JSON or Parquet)")
    if not path.is_file():
        raise ImportFailed(f"{path} is not a regular file (a pipe or a device); give a data file")


def read_table(
    path: str | os.PathLike[str],
    *,
    splits: list[str] | tuple[str, ...] | None = None,
    read: ReadSpec | None = None,
    **options: Unpack[ReadOptions],
) -> Table:
    """Open a data file and find out how to read it.

    Args:
        path: A ``.csv``/``.tsv`` (delimiter sniffed), Excel workbook (``.xlsx``, ``.xls``, ``.ods``,
            ...), ``.jsonl``, ``.json`` or Parquet file (with the ``parquet`` extra; recognised by its
            content whatever its suffix). Other suffixes are recognised by their content; a file abbench
            does not read (XML, a zip, a PDF ...) is refused saying what it is and how to convert it.
        splits: For a JSON object of named splits, the splits to read (default: all).
        read: The read options as one `ReadSpec` (a profile's ``read``); the options given one by
            one take its place where set.
        **options: The read options one by one (`ReadOptions`): ``format`` (to override the
            suffix), ``sheet`` (name or 0-based index), ``header_row`` (1-based, as Excel numbers
            rows; ``0`` when there is none: columns are then ``A``, ``B``, ...; default: the first
            non-blank row, skipping a one-cell title row above the real header in Excel files),
            ``encoding`` (default: detected), ``delimiter`` (default: sniffed among ``,`` tab ``;``
            ``|``), ``quoting`` (``"csv"`` or ``"none"``: quotes as text; default: ``csv`` unless
            the file's first 64 KiB only read as text).

    Returns:
        The opened `Table`; its rows are read when iterated.

    Raises:
        ImportFailed: the file cannot be read as that format (with line and column where known).
        UsageError: an option does not fit the file (no such sheet, split, or encoding).

    Example:
        >>> table = read_table("banking77/test.csv")
        >>> table.columns
        ('text', 'category')
    """
    p = Path(path).expanduser()
    check_data_file(p)
    check_read_options(options)
    header_row = options.get("header_row")
    if header_row is not None and (not isinstance(header_row, int) or header_row < 0):
        raise UsageError(f"header_row is a row number from 1 (or 0 for no header), got {header_row!r}")
    quoting = options.get("quoting")
    if quoting is not None and quoting not in QUOTINGS:
        raise UsageError(
            f"quoting is 'csv' (quotes quote cells) or 'none' (quotes are text), got {quoting!r}"
        )
    spec = (read or ReadSpec()).updated(options)
    fmt = _check_options(p, spec, splits)
    if fmt in ("csv", "jsonl", "json"):
        refuse_unread(p)  # before any decoding: a zip, a PDF or an XML file is not "in another encoding"
    if fmt == "parquet":
        source = open_parquet(p)
    elif fmt == "csv":
        source = open_csv(p, spec)
    elif fmt == "xlsx":
        source = open_excel(p, spec)
    elif fmt == "jsonl":
        source = open_jsonl(p, spec)
    else:
        source = open_json(p, spec, splits)
    return Table(p, source)


def _check_options(p: Path, spec: ReadSpec, splits: Sequence[str] | None) -> str:
    """The format to read `p` as, once every option is known to apply to it.

    Raises:
        UsageError: an unknown format, or an option of another format (a sheet for a CSV file ...).
        ImportFailed: the file is empty.
    """
    fmt = (spec.format or sniff_format(p)).lower()
    fmt = {
        "tsv": "csv",
        "xls": "xlsx",
        "excel": "xlsx",
        "ods": "xlsx",
        "ndjson": "jsonl",
        "pq": "parquet",
    }.get(fmt, fmt)
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {spec.format!r}; choose one of {', '.join(FORMATS)}")
    if fmt != "xlsx" and spec.sheet is not None:
        raise UsageError(f"sheet= applies to Excel files; {p.name} is read as {fmt}")
    if fmt != "csv" and spec.quoting is not None:
        raise UsageError(f"quoting= applies to CSV files; {p.name} is read as {fmt}")
    if fmt != "json" and splits:
        raise UsageError(f"splits= applies to JSON files holding named splits; {p.name} is read as {fmt}")
    if fmt in ("jsonl", "json", "parquet") and spec.header_row is not None:
        raise UsageError(f"header_row= applies to CSV and Excel files; {p.name} is read as {fmt}")
    if fmt == "parquet" and (spec.encoding is not None or spec.delimiter is not None):
        raise UsageError(
            f"encoding= and delimiter= apply to text files; {p.name} is Parquet, which holds typed columns"
        )
    if p.stat().st_size == 0:
        raise ImportFailed(f"{p.name} is empty")
    return fmt


def load_json_file(path: str | os.PathLike[str]) -> Any:
    """A small JSON (or YAML) file such as a lookup table, with a clear error when it does not parse."""
    p = Path(path).expanduser()
    try:
        text = read_utf8(p, ImportFailed)
    except OSError as exc:
        raise ImportFailed(f"cannot read {p}: {exc.strerror or exc}") from None
    if p.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            return load_yaml(text)
        except yaml.YAMLError as exc:
            raise ImportFailed(f"{p.name}: not valid YAML ({exc})") from None
    try:
        return json.loads(text)
    except RecursionError as exc:
        found = json_problem(text, exc)
        raise ImportFailed(
            f"{p.name}: {found[1] if found else 'nested deeper than it can be read'}"
        ) from None
    except json.JSONDecodeError as exc:
        raise ImportFailed(
            f"{p.name}, line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg})"
        ) from None

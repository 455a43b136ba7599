"""Parquet files: read with pyarrow (the ``parquet`` extra), one record batch at a time.

Rows are table rows aligned with the columns, as a workbook's are: text, integers, floats and booleans
as they are stored, dates and times as ISO text, a null as an empty cell; a struct, list or map column
holds JSON values (objects and arrays, null where the file has null), which a path such as
``data.query`` or ``messages[-1].content`` reaches as it reaches into a JSON row.
"""

from __future__ import annotations

import base64
import datetime as _dt
import decimal
import math
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

from abbench._archive import ArchiveRefused, check_ratio
from abbench.dataset._formats import OpenedFile, RowChunk, header_names
from abbench.errors import ImportFailed

EXTRA = "abbench[parquet]"
"""The extra that installs pyarrow, which reads Parquet."""
MAX_PARQUET_BYTES = 512 << 20
"""Most data a Parquet file may hold uncompressed (its footer's column chunk sizes), as a workbook may:
Parquet compresses a repeated cell thousands of times (300 MiB of one letter in 10 kB), so a small file
could otherwise fill the memory of the process reading it."""


def _pyarrow() -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        return None
    return pq


def open_parquet(path: Path) -> OpenedFile:
    """Inspect a Parquet file: its columns (from the schema) and row count; rows stream by batches.

    Raises:
        ImportFailed: pyarrow is not installed (naming the extra), or the file is not readable Parquet.
    """
    pq = _pyarrow()
    if pq is None:
        raise ImportFailed(
            f"{path.name} is a Parquet file; reading Parquet needs pyarrow: pip install '{EXTRA}' "
            "(or pip install pyarrow)"
        )
    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:  # pyarrow raises ArrowInvalid, OSError ... for a damaged file
        if "too deeply nested" in str(exc):  # pyarrow's own bound on a schema's depth (100 levels)
            raise ImportFailed(
                f"{path.name}: its schema nests deeper than pyarrow reads ({exc}); flatten the nested "
                "columns (e.g. pandas.json_normalize) or keep the columns you map, then import again"
            ) from None
        raise ImportFailed(f"{path.name}: cannot read as Parquet ({exc}); is the file complete?") from None
    notes: list[str] = []
    if path.suffix.lower() not in (".parquet", ".pq"):
        notes.append(
            f"{path.name} is a Parquet file (its first and last bytes say so); it is read as Parquet"
        )
    try:
        _check_sizes(path, pf.metadata)
    except ImportFailed:
        pf.close()
        raise
    schema = pf.schema_arrow
    columns = header_names(list(schema.names), 0, notes)
    n_rows = pf.metadata.num_rows
    options = {"format": "parquet", "rows": n_rows, "row_groups": pf.metadata.num_row_groups}
    pf.close()
    return OpenedFile("parquet", columns, True, partial(_chunks, path), options, notes=notes)


def _check_sizes(path: Path, metadata: Any) -> None:
    """Refuse a file whose footer says it expands past `MAX_PARQUET_BYTES`, or a column chunk expanding
    more than `MAX_RATIO` times (a bomb), before any page is read.

    Raises:
        ImportFailed: naming the row group and column, and what to do.
    """
    total = 0
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        for c in range(group.num_columns):
            chunk = group.column(c)
            size = chunk.total_uncompressed_size
            total += size
            try:
                check_ratio(
                    f"row group {g}, column {chunk.path_in_schema!r}", size, chunk.total_compressed_size
                )
            except ArchiveRefused as exc:
                raise ImportFailed(
                    f"{path.name}, {exc.member}: {exc.why.replace('zip bomb', 'compression bomb')}; "
                    "write the file without that column, or as CSV or JSON Lines"
                ) from None
            if total > MAX_PARQUET_BYTES:
                raise ImportFailed(
                    f"{path.name}: at row group {g}, column {chunk.path_in_schema!r}, its data passes "
                    f"{MAX_PARQUET_BYTES >> 20:,} MiB uncompressed, more than a data file may hold; keep the "
                    "columns the cases need, or split the rows into several files"
                )


def _chunks(path: Path, size: int, keep_blank: bool = False) -> Iterator[RowChunk]:
    """The file's rows, `size` at a time; only one record batch is in memory."""
    pq = _pyarrow()
    pf = pq.ParquetFile(path)
    number = 1
    try:
        for batch in pf.iter_batches(batch_size=size):
            columns = [_column(col) for col in batch.columns]
            n = batch.num_rows
            locs = [f"row {i}" for i in range(number, number + n)]
            number += n
            rows = list(zip(*columns, strict=True)) if columns else [()] * n
            if not keep_blank:
                blank = [i for i, row in enumerate(rows) if not any(v != "" for v in row)]
                if blank:
                    skip = set(blank)
                    rows = [r for i, r in enumerate(rows) if i not in skip]
                    locs = [loc for i, loc in enumerate(locs) if i not in skip]
            yield RowChunk(rows, locs)
    except ImportFailed:
        raise
    except Exception as exc:  # a damaged page or row group
        raise ImportFailed(f"{path.name}, near row {number}: cannot read as Parquet ({exc})") from None
    finally:
        pf.close()


def _column(col: Any) -> list[Any]:
    """A pyarrow column as cells: text, integers and booleans as they are; the rest converted."""
    import pyarrow as pa

    values: list[Any] = col.to_pylist()
    t = col.type
    if (
        pa.types.is_string(t)
        or pa.types.is_large_string(t)
        or pa.types.is_integer(t)
        or pa.types.is_boolean(t)
    ):
        if col.null_count:
            return ["" if v is None else v for v in values]
        return values
    if pa.types.is_map(t):  # key/value pairs, as a JSON object
        return [None if v is None else {str(k): _json_value(x) for k, x in v} for v in values]
    if pa.types.is_nested(t):  # a null object or list stays null: a path into it says "of null"
        return [_json_value(v) for v in values]
    return [_cell(v) for v in values]


def _cell(value: Any) -> Any:
    """A top-level cell: null (or NaN) is an empty cell, as in a workbook."""
    if value is None or (type(value) is float and math.isnan(value)):
        return ""
    return _json_value(value)


def _json_value(value: Any) -> Any:
    """A value as JSON holds it: dates as ISO text, decimals as numbers, bytes as text (or base64)."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is float:
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and all(type(v) is tuple and len(v) == 2 for v in value):  # a map column: key/value pairs
            return {str(k): _json_value(v) for k, v in value}
        return [_json_value(v) for v in value]
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, _dt.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return "base64:" + base64.b64encode(value).decode("ascii")
    return str(value)

"""The bulk engines: an experiment's runs as CSV lines, sheet rows and JSON lines, built inside SQLite.

Each engine is a function of the open store that yields the bytes the export's plain Python path
(`abbench.export`) would write for the same rows — byte for byte, as the equality tests in
``tests/export/`` (``test_csv_lines.py``, ``test_xlsx_rows.py``, ``test_jsonl_writer.py``,
``test_streaming.py``) check against that path on real stores. The export package owns the format
objects (how a cell, a sheet cell or a JSON value is written) and passes them in; a big export's
slices are read by worker processes (`read_slices`). The packed outcome codes the result tables
read (`RunCodes`, `CaseOutcomes`) live here too.

    engine            plain path it must equal                       equality test
    csv_lines         abbench.export write_csv of export_table        tests/export/test_csv_lines.py
    sheet_rows        abbench.export write_xlsx of export_table       tests/export/test_xlsx_rows.py
    json_blocks       abbench.export write_jsonl, a slice at a time   tests/export/test_jsonl_writer.py
    json_lines        abbench.export write_jsonl of export_table      tests/export/test_jsonl_writer.py
"""

from __future__ import annotations

import typing

from abbench import _lazy

# Lazy, like every package face (`abbench._lazy`): an export's worker process starts as
# ``python -m abbench.store.bulk._workers``, which imports this package first; an eager face would load
# every engine there (and `_workers` itself, which ``-m`` then runs a second time, with a warning).
if typing.TYPE_CHECKING:
    from abbench.store.bulk._csv import CsvCell, csv_lines, mark_line, unmark
    from abbench.store.bulk._json_blocks import JsonBlock, json_blocks
    from abbench.store.bulk._json_lines import JsonValues, json_lines
    from abbench.store.bulk._sheet import SheetCell, SheetCells, sheet_rows
    from abbench.store.bulk._utf8 import check_utf8
    from abbench.store.bulk._workers import read_slices, worker_count

__all__ = [
    "CsvCell",
    "JsonBlock",
    "JsonValues",
    "SheetCell",
    "SheetCells",
    "check_utf8",
    "csv_lines",
    "json_blocks",
    "json_lines",
    "mark_line",
    "read_slices",
    "sheet_rows",
    "unmark",
    "worker_count",
]

__getattr__, __dir__ = _lazy.exports(
    __name__,
    {
        "abbench.store.bulk._csv": ("CsvCell", "csv_lines", "mark_line", "unmark"),
        "abbench.store.bulk._json_blocks": ("JsonBlock", "json_blocks"),
        "abbench.store.bulk._json_lines": ("JsonValues", "json_lines"),
        "abbench.store.bulk._sheet": ("SheetCell", "SheetCells", "sheet_rows"),
        "abbench.store.bulk._utf8": ("check_utf8",),
        "abbench.store.bulk._workers": ("read_slices", "worker_count"),
    },
    public=__all__,
)

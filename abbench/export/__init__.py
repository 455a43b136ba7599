"""Exports: an experiment's runs, grades, reviews and comparison lists as CSV, XLSX or JSONL files, and a
pairwise judge's contest as one JSON document."""

from __future__ import annotations

from abbench import _lazy
from abbench.export._api import (
    EXPORT_FORMATS,
    EXPORT_KINDS,
    RUNS_PROFILE,
    ExportResult,
    export,
    export_table,
)
from abbench.export._pairwise import pairwise_result
from abbench.export._tables import Column, Table
from abbench.export._writers import (
    FORMULA_PREFIXES,
    neutralise_formula,
    write_csv,
    write_jsonl,
)
from abbench.export._xlsx import write_xlsx

__all__ = [
    "EXPORT_FORMATS",
    "EXPORT_KINDS",
    "FORMULA_PREFIXES",
    "RUNS_PROFILE",
    "Column",
    "ExportResult",
    "Table",
    "export",
    "export_table",
    "neutralise_formula",
    "pairwise_result",
    "write_csv",
    "write_jsonl",
    "write_xlsx",
]

__dir__ = _lazy.listing(__all__)

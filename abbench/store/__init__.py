"""The store: one folder holding the SQLite database, skill snapshots, transcripts and uploaded files."""

from __future__ import annotations

from abbench.store._base import (
    DEFAULT_STORE,
    STORE_ENV,
    current_user,
    dumps,
    loads,
    now_iso,
    resolve_store_path,
)
from abbench.store._cache import CacheEntry, CacheModelStats, CacheStats
from abbench.store._datasets import import_dataset, list_datasets, load_cases, load_dataset
from abbench.store._migrations import SCHEMA_VERSION
from abbench.store._results import OUTCOMES, STATES, CaseFields, CaseOutcomes, RunTable
from abbench.store._snapshots import load_snapshot, snapshot_skill
from abbench.store._store import Store, open_store

__all__ = [
    "DEFAULT_STORE",
    "OUTCOMES",
    "SCHEMA_VERSION",
    "STATES",
    "STORE_ENV",
    "CacheEntry",
    "CacheModelStats",
    "CacheStats",
    "CaseFields",
    "CaseOutcomes",
    "RunTable",
    "Store",
    "current_user",
    "dumps",
    "import_dataset",
    "list_datasets",
    "load_cases",
    "load_dataset",
    "load_snapshot",
    "loads",
    "now_iso",
    "open_store",
    "resolve_store_path",
    "snapshot_skill",
]

"""The store: one folder holding the SQLite database, skill snapshots, transcripts and uploaded files."""

from __future__ import annotations

import os

from abbench.store._base import (
    DEFAULT_STORE,
    STORE_ENV,
    StoreBase,
    current_user,
    dumps,
    loads,
    now_iso,
    resolve_store_path,
)
from abbench.store._datasets import DatasetsMixin
from abbench.store._experiments import ExperimentsMixin
from abbench.store._grades import GradesMixin
from abbench.store._migrations import SCHEMA_VERSION
from abbench.store._results import OUTCOMES, STATES, CaseFields, CaseOutcomes, ResultsMixin, RunTable
from abbench.store._reviews import ReviewsMixin
from abbench.store._runs import RunsMixin
from abbench.store._snapshots import SnapshotsMixin, load_snapshot, snapshot_skill


class Store(
    DatasetsMixin,
    SnapshotsMixin,
    ExperimentsMixin,
    RunsMixin,
    GradesMixin,
    ReviewsMixin,
    ResultsMixin,
    StoreBase,
):
    """An open abbench store. Use `open_store()` to get one; close it (or use ``with``) when done."""


def open_store(path: str | os.PathLike | Store | None = None, *, create: bool = True) -> Store:
    """Open (and create or migrate) the store at `path`, $ABBENCH_STORE, or ./.abbench.

    A `Store` passed in is returned as is, so every API function can take either.
    """
    if isinstance(path, Store):
        return path
    return Store(path, create=create)


__all__ = [
    "DEFAULT_STORE",
    "OUTCOMES",
    "SCHEMA_VERSION",
    "STATES",
    "STORE_ENV",
    "CaseFields",
    "CaseOutcomes",
    "RunTable",
    "Store",
    "current_user",
    "dumps",
    "load_snapshot",
    "loads",
    "now_iso",
    "open_store",
    "resolve_store_path",
    "snapshot_skill",
]

"""Big reads' shared frame: one snapshot of the store for every column, and the arms in the order asked."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from abbench.store._results import RunTable

_T = TypeVar("_T")


def read_in_snapshot(conn: sqlite3.Connection, read: Callable[[sqlite3.Cursor], _T]) -> _T:
    """`read(cursor)` (a plain-tuple cursor) inside one deferred read transaction, so every column it
    reads comes from one snapshot of the store while a runner writes (or inside the caller's own)."""
    cursor = conn.cursor()
    cursor.row_factory = None  # plain tuples: sqlite3.Row objects cost time on big reads
    nested = conn.in_transaction
    if not nested:
        cursor.execute("BEGIN")
    try:
        return read(cursor)
    finally:
        if not nested:
            cursor.execute("COMMIT")


def in_asked_order(table: RunTable, arm_ids: Sequence[int]) -> RunTable:
    """`table` (read in the store's arm id order) in the order the arms were asked for."""
    import numpy as np

    if np.any(np.diff(np.asarray(arm_ids, dtype=np.int64)) < 0):
        table = table.select(np.lexsort((table.round, table.case_idx, table.arm_index)))
    return table

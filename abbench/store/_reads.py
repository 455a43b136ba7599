"""Big reads' shared frame: one snapshot of the store for every column, and the arms in the order asked."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from abbench._memo import Memo
    from abbench.store._base import StoreState
    from abbench.store._run_table import RunTable

_T = TypeVar("_T")

_SNAPSHOT = threading.local()
"""``pending``: what the snapshot open on this thread (`read_in_snapshot`) read to be kept, or None."""


def read_in_snapshot(
    conn: sqlite3.Connection,
    read: Callable[[sqlite3.Cursor], _T],
    stamp: Callable[[], StoreState] | None = None,
) -> _T:
    """`read(cursor)` (a plain-tuple cursor) inside one deferred read transaction, so every column it
    reads comes from one snapshot of the store while a runner writes (or inside the caller's own).

    With `stamp` (the store's `state_stamp`), what `read` offers with `keep_read` is kept in its memo
    once the snapshot is closed, with the state the store was in before it was opened, when that state
    is still the store's: then nobody wrote in between, and the snapshot was of that state. Inside the
    caller's own transaction nothing is kept (see `abbench.store.StoreState`).
    """
    cursor = conn.cursor()
    cursor.row_factory = None  # plain tuples: sqlite3.Row objects cost time on big reads
    nested = conn.in_transaction
    before = stamp() if stamp is not None and not nested else None
    pending: list[tuple[Memo[Any], Hashable, Any]] | None = [] if before is not None else None
    outer = getattr(_SNAPSHOT, "pending", None)
    _SNAPSHOT.pending = pending
    if not nested:
        cursor.execute("BEGIN")
    try:
        value = read(cursor)
    finally:
        _SNAPSHOT.pending = outer
        if not nested:
            cursor.execute("COMMIT")
    if pending and before is not None and stamp is not None and stamp().same(before):
        for memo, key, kept in pending:
            memo.keep(key, before, kept)
    return value


def keep_read(memo: Memo[Any], key: Hashable, make: Callable[[], Any]) -> None:
    """Inside `read_in_snapshot` with a stamp: keep `make()` in `memo` under `key` once the snapshot is
    closed, if nothing was written meanwhile. Elsewhere (no snapshot, or the caller's own transaction)
    nothing: `make` is not even called."""
    pending = getattr(_SNAPSHOT, "pending", None)
    if pending is not None:
        pending.append((memo, key, make()))


def in_asked_order(table: RunTable, arm_ids: Sequence[int]) -> RunTable:
    """`table` (read in the store's arm id order) in the order the arms were asked for."""
    import numpy as np

    if np.any(np.diff(np.asarray(arm_ids, dtype=np.int64)) < 0):
        table = table.select(np.lexsort((table.round, table.case_idx, table.arm_index)))
    return table

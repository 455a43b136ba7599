"""Stores as an older abbench left them: the schema stopped at a migration, rows written by hand."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from abbench.store._migrations import migrate


def old_store(folder: Path, upto: int, *writes: str | tuple[str, list[tuple]]) -> Path:
    """A store at `folder` whose schema stops at migration `upto`, with `writes` run on it in order (an SQL
    statement, or a statement and the rows to run it for); returns `folder` for `open_store`."""
    path = folder / "abbench.db"
    path.parent.mkdir()
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, str(path), upto=upto)
    for write in writes:
        if isinstance(write, str):
            conn.execute(write)
        else:
            conn.executemany(*write)
    conn.close()
    return folder

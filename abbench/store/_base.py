"""The store folder and its SQLite connections: one per thread, WAL, foreign keys, immediate transactions."""

from __future__ import annotations

import getpass
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from contextvars import ContextVar, copy_context
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Self
from urllib.parse import quote

from abbench import _actions as do
from abbench._files import ROOM_BYTES, check_room
from abbench.errors import SchemaVersionError, StoreError
from abbench.store._aside import _T, Aside
from abbench.store._migrations import SCHEMA_VERSION, current_version, migrate

log = logging.getLogger(__name__)

DEFAULT_STORE = ".abbench"
STORE_ENV = "ABBENCH_STORE"
DB_NAME = "abbench.db"
SUBFOLDERS = ("snapshots", "transcripts", "uploads")


def resolve_store_path(path: str | os.PathLike[str] | None = None) -> Path:
    """The store folder: `path` if given, else $ABBENCH_STORE, else ./.abbench."""
    if path is None:
        path = os.environ.get(STORE_ENV) or DEFAULT_STORE
    return Path(path).expanduser().resolve()


_last_iso: tuple[int, str] = (0, "")


def now_iso() -> str:
    """The current UTC time as an ISO-8601 string with seconds, the format every table uses."""
    global _last_iso
    second = int(time.time())
    if _last_iso[0] != second:  # formatting a datetime costs more than the rest of a run's bookkeeping
        _last_iso = (second, datetime.fromtimestamp(second, UTC).isoformat(timespec="seconds"))
    return _last_iso[1]


ACTING_USER: ContextVar[str | None] = ContextVar("abbench_acting_user", default=None)
"""Who a server request acts for (the key's owner), set by `abbench.store.acting_as`; None outside one."""


def current_user() -> str:
    """Who is acting: the owner a server request acts for, else $ABBENCH_USER, else the OS user.

    Recorded as who created or ran something, and the owner of what a local store holds.
    """
    name = ACTING_USER.get() or os.environ.get("ABBENCH_USER")
    if name:
        return name
    try:
        return getpass.getuser()
    except Exception:  # no passwd entry in some containers
        return f"uid{os.getuid()}" if hasattr(os, "getuid") else "unknown"


def dumps(value: Any) -> str | None:
    """JSON text for a stored value (None stays NULL); keeps non-ASCII text readable in the database."""
    if value is None:
        return None
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_default)


def loads(text: str | None) -> Any:
    """The value stored by `dumps`."""
    if text is None:
        return None
    return json.loads(text)


def inserted_id(cur: sqlite3.Cursor) -> int:
    """The row id an INSERT on `cur` gave its row."""
    if cur.lastrowid is None:  # never after an INSERT of one row; typed Optional by sqlite3
        raise StoreError("an INSERT returned no row id")
    return cur.lastrowid


def _json_default(value: Any) -> Any:
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "isoformat"):
        return value.isoformat()
    if hasattr(value, "item"):  # numpy scalars
        return value.item()
    raise TypeError(f"cannot store a {type(value).__name__} as JSON")


@dataclass(frozen=True)
class StoreState:
    """The state of the database as one connection sees it (store.runs.state_stamp`).

    Attributes:
        conn: The connection the figures below are its own (another connection's are not comparable).
        data_version: SQLite's ``PRAGMA data_version``: changes when another connection commits.
        changes: The rows this connection wrote (``total_changes``), committed or not.
        in_transaction: Whether the connection was inside a transaction (whose rows, once rolled
            back, still count in `changes`: what was read inside one must not be kept).
    """

    conn: sqlite3.Connection = field(compare=False, repr=False)
    data_version: int
    changes: int
    in_transaction: bool = False

    def same(self, other: StoreState) -> bool:
        """Whether nothing was written between the two, on the same connection."""
        return self.conn is other.conn and self == other


class StoreBase:
    """The store folder: ``abbench.db`` plus ``snapshots/``, ``transcripts/`` and ``uploads/``.

    Connections are per thread (sqlite3 objects must not cross threads). Writes go through
    `transaction()`, which takes the write lock up front (``BEGIN IMMEDIATE``) so concurrent writers
    queue on the busy timeout instead of failing with "database is locked" half way.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, create: bool = True):
        self.path = resolve_store_path(path)
        self.db_path = self.path / DB_NAME
        if self.path.exists() and not self.path.is_dir():
            raise StoreError(
                f"the store path {self.path} is a file, not a folder; give store= (CLI --store, or ${STORE_ENV}) a folder "
                "— a new one is created — or the folder that holds abbench.db"
            )
        if not self.db_path.exists() and not create:
            raise StoreError(
                f"no abbench store at {self.path}; create one by importing a dataset (",
                do.import_dataset("FILE", store=self.path),
                f") or point the store (store=, --store or ${STORE_ENV}) at an existing one",
            )
        # A store this user may read but not write (a colleague's, a read-only mount) is opened for
        # reading: every view works, and a write is refused with a message instead of a SQLite error.
        self.read_only = self.db_path.is_file() and not (
            os.access(self.path, os.W_OK) and os.access(self.db_path, os.W_OK)
        )
        self._immutable = False
        if not self.read_only:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
                for sub in SUBFOLDERS:
                    (self.path / sub).mkdir(exist_ok=True)
            except OSError as exc:
                raise StoreError(f"cannot create the store folder {self.path}: {exc}") from exc
        self._local = threading.local()
        # every connection this store opened, with the thread that owns it (see `close`)
        self._connections: dict[sqlite3.Connection, threading.Thread] = {}
        self._lock = threading.Lock()
        if self.read_only:
            self._check_version()
            log.info("the store %s is read-only for this user: opened for reading", self.path)
        else:
            migrate(self.conn, str(self.db_path))

    def _check_version(self) -> None:
        have = current_version(self.conn)
        if have > SCHEMA_VERSION:
            raise SchemaVersionError(
                f"the store {self.db_path} has schema version {have}, but this abbench only knows versions up "
                f"to {SCHEMA_VERSION}; upgrade abbench (pip install -U abbench) to open it"
            )
        if have < SCHEMA_VERSION:
            raise StoreError(
                f"the store {self.path} was written by an older abbench and must be upgraded, which needs "
                "write access; it is read-only for this user. Open it once with write access, or copy it "
                f"(cp -r {self.path} COPY) and use --store COPY"
            )

    def refuse_write(self, what: str = "this") -> StoreError:
        """The error for a write to a read-only store: what was refused and what to do."""
        return StoreError(
            f"the store {self.path} is read-only for this user, so {what} cannot be saved; make the folder "
            f"and abbench.db writable, or copy the store (cp -r {self.path} COPY) and use --store COPY"
        )

    def check_room(self, nbytes: int = ROOM_BYTES) -> None:
        """Make sure the store can take `nbytes` more before anything is paid for that it must record.

        Raises:
            StoreError: the store is read-only, or its disk is full (or a quota or a file-size limit
                reached): what, where and what to do.
        """
        if self.read_only:
            raise self.refuse_write("what runs execute")
        try:
            check_room(self.path, nbytes)
        except OSError as exc:
            raise StoreError(
                f"the store {self.path} cannot take {nbytes // 2**20} MB more ({exc.strerror or exc}), so "
                "nothing would be recorded of what the agents did and paid: free disk space (or raise the "
                "quota) first; what was committed is kept, and running it again continues where it stopped"
            ) from exc

    # -- connections -------------------------------------------------------------------------------

    @property
    def conn(self) -> sqlite3.Connection:
        """This thread's connection to the database (opened on first use)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        return conn

    def _connect(self) -> sqlite3.Connection:
        if self.read_only:
            conn = self._connect_read_only()
            with self._lock:
                self._connections[conn] = threading.current_thread()
            return conn
        try:
            conn = sqlite3.connect(self.db_path, timeout=30.0, isolation_level=None, check_same_thread=False)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot open {self.db_path}: {exc}") from exc
        conn.row_factory = sqlite3.Row
        try:
            # 8 KiB pages suit rows of a few hundred bytes (cases with their source rows): measured ~20%
            # faster bulk imports than the 4 KiB default. Only a new, empty database takes it.
            conn.execute("PRAGMA page_size=8192")
            conn.execute("PRAGMA journal_mode=WAL")
        except sqlite3.DatabaseError as exc:
            conn.close()
            raise StoreError(f"{self.db_path} is not an abbench database ({exc})") from exc
        conn.execute("PRAGMA foreign_keys=ON")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=30000")
        with self._lock:
            self._connections[conn] = threading.current_thread()
        return conn

    def _connect_read_only(self) -> sqlite3.Connection:
        uri = f"file:{quote(str(self.db_path))}?mode=ro"
        # A WAL database is read through its -shm file; when that cannot be created (the folder is
        # read-only too) SQLite can only read the file as immutable, which ignores a leftover -wal.
        for suffix in ("", "&immutable=1"):
            try:
                conn = sqlite3.connect(
                    uri + suffix, uri=True, timeout=30.0, isolation_level=None, check_same_thread=False
                )
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            except sqlite3.DatabaseError as exc:
                error = exc
                continue
            if suffix:
                self._immutable = True
                log.info("reading %s as immutable (its folder is read-only)", self.db_path)
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA query_only=ON")
            return conn
        raise StoreError(f"cannot read {self.db_path} ({error}); is it an abbench store?")

    def reader_uri(self) -> str:
        """The SQLite URI another process reads this store's database by (read-only)."""
        uri = f"file:{quote(str(self.db_path))}?mode=ro"
        if self._immutable:
            uri += "&immutable=1"
        return uri

    def close(self) -> None:
        """Close this thread's connection and those of threads that have ended.

        A connection another live thread owns is left to that thread (`close_thread_connection`, or
        when it is collected): closing it under a query that thread is running crashed the process
        (SQLite frees the handle mid-statement), as a widget's poller did when its notebook's store
        was closed.
        """
        me = threading.current_thread()
        with self._lock:
            for conn, owner in list(self._connections.items()):
                if owner is me or not owner.is_alive():
                    with suppress(sqlite3.Error):
                        conn.close()
            self._connections.clear()
        self._local = threading.local()

    def close_thread_connection(self) -> None:
        """Close the calling thread's connection (threads that end should call this)."""
        conn = getattr(self._local, "conn", None)
        if conn is None:
            return
        self._local.conn = None
        with self._lock:
            self._connections.pop(conn, None)
        with suppress(sqlite3.Error):
            conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Store({str(self.path)!r})"

    # -- transactions ------------------------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """A write transaction on this thread's connection; nested calls become savepoints.

        Everything written inside is committed together or not at all.

        Raises:
            StoreError: the store is read-only for this user.
        """
        if self.read_only:
            raise self.refuse_write()
        conn = self.conn
        if conn.in_transaction:
            depth = getattr(self._local, "depth", 0)
            name = f"sp{id(conn)}_{threading.get_ident()}_{depth}"
            self._local.depth = depth + 1
            conn.execute(f"SAVEPOINT {name}")
            try:
                yield conn
            except BaseException:
                conn.execute(f"ROLLBACK TO {name}")
                conn.execute(f"RELEASE {name}")
                self._undo(depth + 1)
                raise
            else:
                conn.execute(f"RELEASE {name}")
            finally:
                self._local.depth -= 1
            return
        self._local.undo = []
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            self._undo(0)
            raise
        else:
            conn.execute("COMMIT")
        finally:
            self._local.undo = []

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """A read transaction on this thread's connection: every query inside sees one state of the store.

        Without it, an experiment's status and its run counts read a moment apart can disagree
        (another process finished the run in between), and a view would show two states at once.
        Inside a transaction already open, this adds nothing.
        """
        conn = self.conn
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")  # deferred: the snapshot is taken at the first read
        try:
            yield conn
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    def on_rollback(self, undo: Callable[[], None]) -> None:
        """Call `undo` if the transaction open on this thread rolls back (files placed beside its rows).

        A nested write (a snapshot inside a try) commits its savepoint, but the outer transaction may
        still roll back; what it put on disk must then go too, or the store keeps files no row names.
        """
        if self.conn.in_transaction:
            if getattr(self._local, "undo", None) is None:
                self._local.undo = []
            self._local.undo.append((getattr(self._local, "depth", 0), undo))

    def _undo(self, depth: int) -> None:
        """Run (newest first) the undo steps registered at `depth` or deeper, and forget them."""
        steps = getattr(self._local, "undo", [])
        keep = [(d, fn) for d, fn in steps if d < depth]
        for d, fn in reversed(steps):
            if d >= depth:
                try:
                    fn()
                except Exception:  # an undo that fails must not hide the error that rolled back
                    log.warning("could not undo a write after a rollback", exc_info=True)
        self._local.undo = keep

    def read_aside(self, read: Callable[[], _T]) -> Aside[_T]:
        """Start `read` (reads of this store only) on a helper thread with a connection of its own, and
        return at once: `Aside.result` waits for its value (or raises its error).

        SQLite hands the GIL back while it steps a query, so an aggregate that answers in a few rows
        (each arm's spend over every attempt) runs beside the caller's own reads on the other core.
        Inside a transaction open on this thread, `read` runs here and now: the helper's connection
        would not see what the transaction wrote.
        """
        aside: Aside[_T] = Aside()
        if self.conn.in_transaction:
            aside.run(read)
            return aside
        context = copy_context()  # the caller's owner (`acting_as`) scopes the helper's reads too

        def work() -> None:
            try:
                context.run(aside.run, read)
            finally:
                self.close_thread_connection()

        thread = threading.Thread(target=work, name="abbench-read-aside", daemon=True)
        aside.thread = thread
        thread.start()
        return aside

    def query(self, sql: str, params: Any = ()) -> list[sqlite3.Row]:
        """Rows of a read-only query on this thread's connection."""
        return self.conn.execute(sql, params).fetchall()

    def query_one(self, sql: str, params: Any = ()) -> sqlite3.Row | None:
        """The first row of a read-only query, or None."""
        row: sqlite3.Row | None = self.conn.execute(sql, params).fetchone()
        return row

    # -- meta --------------------------------------------------------------------------------------

    # -- read snapshots ----------------------------------------------------------------------------

    def results_stamp(self) -> tuple[int, int, int]:
        """What changes whenever a run or grade is written (the newest run, transition and grade ids).

        Every change of a run's state is recorded as a transition and every verdict appended as a
        grade, so a view may keep what it computed from the runs while the stamp stays the same.
        """
        row = self.query_one(
            "SELECT (SELECT max(id) FROM runs), (SELECT max(id) FROM run_events), (SELECT max(id) FROM grades)"
        )
        return (0, 0, 0) if row is None else (int(row[0] or 0), int(row[1] or 0), int(row[2] or 0))

    def listing_stamp(self) -> tuple[Any, ...]:
        """What changes whenever an experiment is created, deleted, or changes status or control, or a
        dataset or snapshot is stored or deleted: one query of counts and maxima, for views that list
        them to read the lists again only then. ``updated_at`` has whole seconds, so a status changed in
        the second the experiment was created would not move its maximum: each status and control is in
        the stamp itself (a short text per experiment, read from the table alone)."""
        row = self.query_one(
            "SELECT (SELECT count(*) FROM experiments), (SELECT max(id) FROM experiments), "
            "(SELECT max(updated_at) FROM experiments), "
            "(SELECT group_concat(id || status || control, ',') FROM experiments), "
            "(SELECT count(*) FROM datasets), "
            "(SELECT max(id) FROM datasets), (SELECT count(*) FROM snapshots)"
        )
        return () if row is None else tuple(row)

    def state_stamp(self) -> StoreState:
        """What changes whenever the database may have changed, as this thread's connection sees it.

        ``PRAGMA data_version`` changes when another connection (another thread's, another
        process's) commits; the connection's ``total_changes`` grows with each row it writes itself,
        inside a transaction too. A view may keep what it computed while both stay the same on the
        same connection, outside a transaction: rolled back rows still count in ``total_changes``, so
        the figures read inside one must not be kept.
        """
        conn = self.conn
        version = conn.execute("PRAGMA data_version").fetchone()[0]
        return StoreState(conn, int(version), int(conn.total_changes), conn.in_transaction)

    def query_plan(self, sql: str, params: Any = ()) -> list[str]:
        """SQLite's plan for a query (``EXPLAIN QUERY PLAN``), one line per step: which index serves it."""
        return [str(r[3]) for r in self.query(f"EXPLAIN QUERY PLAN {sql}", params)]

    def schema_version(self) -> int:
        """The schema version of the open database."""
        return current_version(self.conn)

    def relpath(self, path: str | os.PathLike[str]) -> str:
        """`path` relative to the store folder, with forward slashes (what tables store)."""
        return Path(path).resolve().relative_to(self.path).as_posix()

    def abspath(self, relative: str) -> Path:
        """The absolute path of a file the tables name relative to the store folder."""
        return self.path / relative

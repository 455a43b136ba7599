"""Slices of a big export read by worker processes and handed back in order.

SQLite builds an export's lines and rows in C, but one process cannot use two cores for it: two reader
threads of one process cost ~1.5× the CPU of one (SQLite's allocator takes one lock for every
connection, and the cell functions take the GIL turn by turn), so they saved no wall time. Two
processes share neither. Each worker is ``python -m abbench.store.bulk._workers`` — not `multiprocessing`,
whose spawned children import the caller's main script again, which may be a user's script without a
``__main__`` guard — reading its share of the slices (every n-th) on its own read-only connection and
writing each result, pickled, to its stdout; the pipe's small buffer keeps a worker at most one result
ahead of the reader, so memory holds a result per worker, not the export.

A job is a picklable object with ``prepare(conn)`` (functions to register) and ``read(conn, params)``
(one slice's result); the same job runs in this thread when the export is small, the store is not a
file SQLite can share, or workers cannot start. A job with ``bundled_sqlite = True`` is read by the
newer SQLite where it is installed (`sqlite_module`); its errors come back as Python's sqlite3 ones.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol, cast

from abbench.errors import StoreError

if TYPE_CHECKING:
    from abbench.store._store import Store

WORKER_ROWS = 100_000
"""Rows an export must hold before it is read by worker processes: below it, starting them (~0.15 s
each) costs about what they save."""


class SliceJob(Protocol):
    """What a worker runs: picklable, with no connection of its own."""

    def prepare(self, conn: sqlite3.Connection) -> None:
        """Register what the job's SQL calls on `conn` (once per connection)."""

    def read(self, conn: sqlite3.Connection, params: Any) -> Any:
        """One slice's result, read on `conn`."""


def worker_count(rows: int) -> int:
    """How many worker processes an export of `rows` rows is read by: 0 (this thread) when small or
    on one core, else 2. ``ABBENCH_EXPORT_WORKERS`` sets it (0 turns the workers off)."""
    told = os.environ.get("ABBENCH_EXPORT_WORKERS", "").strip()
    if told:
        try:
            return max(0, int(told))
        except ValueError:
            raise StoreError(
                f"ABBENCH_EXPORT_WORKERS={told!r} is not a number: set it to 0 (no worker processes) or "
                "a count of workers"
            ) from None
    if rows < WORKER_ROWS or (os.cpu_count() or 1) < 2:
        return 0
    return 2


def read_slices(
    job: SliceJob,
    slices: Sequence[Any],
    *,
    conn: Callable[[], sqlite3.Connection],
    uri: str,
    workers: int,
    owner: Callable[[Any], int] | None = None,
    out: BinaryIO | None = None,
) -> Iterator[Any]:
    """`job.read` of each slice, in order: in `workers` processes reading the database at `uri`
    (a read-only SQLite URI), or in this thread on `conn()` when `workers` is 0 or 1.

    `owner` numbers the slices a worker should read together (a worker reads those whose number is
    its own modulo the workers: what it remembers from one serves the others); by default, every n-th
    slice.

    With `out`, a file the results go to, each result must be ``(data, n)`` (bytes, or a list of the
    parts of the bytes, and what they count): when workers read the slices and `out` is a regular file,
    they write their data into it themselves, each at its place after what `out` held, and hand back
    ``(b"", n)``; `out` is left after the last. Bytes then cross no pipe and this process copies none.
    Otherwise data in parts is handed back joined.
    """
    if workers < 2 or len(slices) < 2:
        yield from _here(job, slices, conn())
        return
    _told_sqlite()  # (a wrong setting is refused here, not by each worker)
    n = min(workers, len(slices))
    owners = [owner(s) % n if owner else i % n for i, s in enumerate(slices)]
    shares = [[s for s, o in zip(slices, owners, strict=True) if o == k] for k in range(n)]
    fd = _file_of(out)
    at = 0
    if fd is not None and out is not None:
        out.flush()
        at = out.tell()
    procs = _start(job, shares, uri, fd)
    handed = False
    try:
        for k in owners:
            result = _receive(procs[k])
            if fd is None:
                yield result
                continue
            size, count = result
            _send_offset(procs[k], at)  # the worker writes there, then reads its next slice
            at += size
            yield b"", count
        if fd is not None and out is not None:
            for k in range(n):  # each worker's last write is done once it says so
                _receive(procs[k])
            out.seek(at)
        handed = True
    finally:
        for proc in procs:
            if not handed and proc.poll() is None:  # the reader stopped early, or a worker failed
                proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()


def _file_of(out: BinaryIO | None) -> int | None:
    """The descriptor of `out` when workers can write into it at their places (a regular file)."""
    if out is None:
        return None
    try:
        fd = out.fileno()
        return fd if stat.S_ISREG(os.fstat(fd).st_mode) else None
    except (OSError, AttributeError, ValueError):  # io.BytesIO and other files without a descriptor
        return None


def _send_offset(proc: subprocess.Popen[bytes], at: int) -> None:
    assert proc.stdin is not None
    proc.stdin.write(at.to_bytes(8, "little"))
    proc.stdin.flush()


def _here(job: SliceJob, slices: Sequence[Any], conn: sqlite3.Connection) -> Iterator[Any]:
    job.prepare(conn)
    for params in slices:
        yield _joined(job.read(conn, params))


def _joined(result: Any) -> Any:
    """A result with data in parts (a list of bytes) as one bytes."""
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], list):
        return b"".join(result[0]), result[1]
    return result


def _start(job: SliceJob, shares: list[list[Any]], uri: str, fd: int | None) -> list[subprocess.Popen[bytes]]:
    """Start a worker for each share of the slices, each sent the job and its share (and, to write
    into, the descriptor `fd`, which it inherits)."""
    root = str(Path(__file__).resolve().parents[3])  # where this abbench is imported from
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for share in shares:
            proc = subprocess.Popen(
                [sys.executable, "-m", "abbench.store.bulk._workers"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
                pass_fds=() if fd is None else (fd,),
            )
            procs.append(proc)
            assert proc.stdin is not None
            pickle.dump((uri, job, share, fd), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            if fd is None:
                proc.stdin.close()
            else:
                proc.stdin.flush()  # (left open: the offsets to write at follow)
    except BaseException:
        for proc in procs:
            proc.kill()
            proc.wait()
        raise
    return procs


def _receive(proc: subprocess.Popen[bytes]) -> Any:
    """A worker's next result; its error raised here."""
    assert proc.stdout is not None
    try:
        ok, value = pickle.load(proc.stdout)
    except EOFError:
        code = proc.wait()
        raise StoreError(
            f"an export worker process ended (exit code {code}) before it handed over or wrote all its slices; "
            "nothing was left half-written in the store: run the export again, or set "
            "ABBENCH_EXPORT_WORKERS=0 to read it in one process"
        ) from None
    if not ok:
        raise value
    return value


SQLITE_ENV = "ABBENCH_EXPORT_SQLITE"
"""Which SQLite a worker reads with: ``bundled`` (the newer one of pysqlite3-binary, when installed:
the default) or ``system`` (Python's own sqlite3 module)."""


def sqlite_module(job: object = None) -> ModuleType:
    """The SQLite module a worker reads `job` with (see `SQLITE_ENV`).

    Python's sqlite3 links the system's SQLite (3.40 on Debian 12, from 2022); the one pysqlite3-binary
    bundles (3.51) builds an export's JSON lines 1.35× and its CSV lines 1.25× as fast, and writes the
    same bytes (the export tests compare every byte against the Python writers on both). Only export
    workers use it, read-only, for jobs that say they can (``bundled_sqlite``: its module hands a
    function's text argument over only up to a NUL); the store's own connections stay on Python's.

    Raises:
        StoreError: `SQLITE_ENV` names neither.
    """
    if getattr(job, "bundled_sqlite", False) and _told_sqlite() == "bundled":
        try:
            from pysqlite3 import dbapi2  # type: ignore[import-not-found,unused-ignore]
        except ImportError:  # (not installed: its wheels are for Linux on x86-64)
            return sqlite3
        if _version(dbapi2.sqlite_version) > _version(sqlite3.sqlite_version):
            return cast(ModuleType, dbapi2)
    return sqlite3


def _told_sqlite() -> str:
    told = os.environ.get(SQLITE_ENV, "").strip().lower() or "bundled"
    if told not in ("bundled", "system"):
        raise StoreError(f"{SQLITE_ENV}={told!r} is not a choice: set it to bundled (the default) or system")
    return told


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())


def _work(source: BinaryIO, out: BinaryIO) -> None:
    """A worker's life: read the job and its slices from `source`, write each result to `out` (or,
    given a file to write into, each result's data there, at the offset `source` then sends)."""
    uri, job, slices, fd = pickle.load(source)
    try:
        conn = sqlite_module(job).connect(uri, uri=True, isolation_level=None)
        conn.execute("PRAGMA query_only=ON")
        job.prepare(conn)
        for params in slices:
            result = job.read(conn, params)
            if fd is None:
                pickle.dump((True, _joined(result)), out, protocol=pickle.HIGHEST_PROTOCOL)
                out.flush()
                continue
            data, count = result
            parts = data if isinstance(data, list) else [data]
            pickle.dump((True, (sum(map(len, parts)), count)), out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
            _write_at(fd, parts, int.from_bytes(_read_exactly(source, 8), "little"))
        if fd is not None:
            pickle.dump((True, None), out, protocol=pickle.HIGHEST_PROTOCOL)  # every write is done
    except Exception as error:
        exc = _as_sqlite3(error)
        try:
            data = pickle.dumps((False, exc))
        except Exception:
            data = pickle.dumps((False, StoreError(f"an export worker failed: {exc!r}")))
        out.write(data)
    out.flush()


def _write_at(fd: int, parts: list[bytes], at: int) -> None:
    """Write `parts` one after another into `fd` from offset `at` (a few system calls, no copy)."""
    if not hasattr(os, "pwritev"):  # (not on every system)
        parts = [b"".join(parts)]
        while parts[0]:
            written = os.pwrite(fd, parts[0], at)
            parts[0], at = parts[0][written:], at + written
        return
    limit = min(os.sysconf("SC_IOV_MAX"), 1024) if hasattr(os, "sysconf") else 16
    parts = [p for p in parts if p]
    while parts:
        batch = parts[:limit]
        written = os.pwritev(fd, batch, at)
        at += written
        for i, part in enumerate(batch):  # drop what was written (a short write leaves a part's tail)
            if written < len(part):
                parts = [part[written:], *parts[i + 1 :]]
                break
            written -= len(part)
        else:
            parts = parts[len(batch) :]


def _as_sqlite3(exc: Exception) -> Exception:
    """An error of the bundled SQLite's module as the same error of Python's sqlite3, which callers
    catch."""
    if type(exc).__module__.startswith("pysqlite3"):
        same = getattr(sqlite3, type(exc).__name__, None)
        if isinstance(same, type) and issubclass(same, Exception):
            return same(*exc.args)
    return exc


def _read_exactly(source: BinaryIO, n: int) -> bytes:
    data = source.read(n)
    if len(data) != n:
        raise StoreError("an export worker lost its reader before it was told where to write")
    return data


if __name__ == "__main__":
    _out = os.fdopen(os.dup(1), "wb")
    sys.stdout = sys.stderr  # anything printed goes to stderr, never into the results
    with contextlib.suppress(BrokenPipeError):  # the reader stopped early
        _work(sys.stdin.buffer, _out)


def store_slices(
    store: Store, job: SliceJob, slices: Sequence[Any], rows: int, **options: Any
) -> Iterator[Any]:
    """`read_slices` of an open store: this thread's connection when the slices are few, else worker
    processes reading the store's database on their own read-only URI (as many as `rows` call for)."""
    return read_slices(
        job, slices, conn=lambda: store.conn, uri=store.reader_uri(), workers=worker_count(rows), **options
    )

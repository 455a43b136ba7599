"""Slices of a big export read by worker processes and handed back in order.

SQLite builds an export's lines and rows in C, but one process cannot use two cores for it: two reader
threads of one process cost ~1.5× the CPU of one (SQLite's allocator takes one lock for every
connection, and the cell functions take the GIL turn by turn), so they saved no wall time. Two
processes share neither. Each worker is ``python -m abbench.store._workers`` — not `multiprocessing`,
whose spawned children import the caller's main script again, which may be a user's script without a
``__main__`` guard — reading its share of the slices (every n-th) on its own read-only connection and
writing each result, pickled, to its stdout; the pipe's small buffer keeps a worker at most one result
ahead of the reader, so memory holds a result per worker, not the export.

A job is a picklable object with ``prepare(conn)`` (functions to register) and ``read(conn, params)``
(one slice's result); the same job runs in this thread when the export is small, the store is not a
file SQLite can share, or workers cannot start.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import sqlite3
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from abbench.errors import StoreError

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
) -> Iterator[Any]:
    """`job.read` of each slice, in order: in `workers` processes reading the database at `uri`
    (a read-only SQLite URI), or in this thread on `conn()` when `workers` is 0 or 1."""
    if workers < 2 or len(slices) < 2:
        yield from _here(job, slices, conn())
        return
    procs = _start(job, slices, uri, min(workers, len(slices)))
    handed = False
    try:
        for i in range(len(slices)):
            yield _receive(procs[i % len(procs)])
        handed = True
    finally:
        for proc in procs:
            if not handed and proc.poll() is None:  # the reader stopped early, or a worker failed
                proc.kill()
            proc.wait()
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    stream.close()


def _here(job: SliceJob, slices: Sequence[Any], conn: sqlite3.Connection) -> Iterator[Any]:
    job.prepare(conn)
    for params in slices:
        yield job.read(conn, params)


def _start(job: SliceJob, slices: Sequence[Any], uri: str, n: int) -> list[subprocess.Popen[bytes]]:
    """Start `n` workers, each sent the job and its share of the slices."""
    root = str(Path(__file__).resolve().parents[2])  # where this abbench is imported from
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": root + (os.pathsep + path if path else "")}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for k in range(n):
            proc = subprocess.Popen(
                [sys.executable, "-m", "abbench.store._workers"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=env,
            )
            procs.append(proc)
            assert proc.stdin is not None
            pickle.dump((uri, job, list(slices[k::n])), proc.stdin, protocol=pickle.HIGHEST_PROTOCOL)
            proc.stdin.close()
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
            f"an export worker process ended (exit code {code}) before it handed over all its slices; "
            "nothing was left half-written in the store: run the export again, or set "
            "ABBENCH_EXPORT_WORKERS=0 to read it in one process"
        ) from None
    if not ok:
        raise value
    return value


def _work(source: BinaryIO, out: BinaryIO) -> None:
    """A worker's life: read the job and its slices from `source`, write each result to `out`."""
    uri, job, slices = pickle.load(source)
    try:
        conn = sqlite3.connect(uri, uri=True, isolation_level=None)
        conn.execute("PRAGMA query_only=ON")
        job.prepare(conn)
        for params in slices:
            pickle.dump((True, job.read(conn, params)), out, protocol=pickle.HIGHEST_PROTOCOL)
            out.flush()
    except Exception as exc:
        try:
            data = pickle.dumps((False, exc))
        except Exception:
            data = pickle.dumps((False, StoreError(f"an export worker failed: {exc!r}")))
        out.write(data)
    out.flush()


if __name__ == "__main__":
    _out = os.fdopen(os.dup(1), "wb")
    sys.stdout = sys.stderr  # anything printed goes to stderr, never into the results
    with contextlib.suppress(BrokenPipeError):  # the reader stopped early
        _work(sys.stdin.buffer, _out)

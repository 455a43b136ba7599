"""One writer thread per run: state transitions, grades and transcripts committed in small batches.

Bookkeeping, not the agents, is what limits throughput: one transaction per transition costs a
commit each, while a batch of a few thousand costs one. The scheduler submits and moves on; the writer
commits every `interval` seconds (or sooner when `max_batch` ops wait).

The queue is bounded: once `max_pending` changes wait uncommitted, the scheduler's workers wait
(`StoreWriter.room`) before they start another run, and the writer, being behind, commits everything
that waits (up to `max_pending`) in one bigger transaction instead of a batch per interval. So memory
stays flat however fast the agents answer, and a crash loses at most what waited uncommitted: one
interval's changes, or `max_pending` of them (plus those of the runs in flight) when the writer was
behind. Start-up reconciliation turns what was lost into actionable states.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar, cast

from abbench import _actions as do
from abbench._files import claimed_file, sweep_stale
from abbench.errors import Action, StoreError
from abbench.store import ATTEMPT_COLUMNS, AttemptWrite, CacheEntry, GradeWrite, RunChange, Store, WriteBatch
from abbench.types import AttemptOutcome, RunState

log = logging.getLogger(__name__)

__all__ = ["ATTEMPT_COLUMNS", "StoreWriter", "describe_write_error"]

_PLAIN: dict[str, str] = {str(s): str(s) for s in RunState}
"""Each state (a `RunState` hashes and compares as its text) -> its plain text, looked up rather than
converted with ``str()`` on every transition."""

_RUNNING = str(RunState.RUNNING)
_STARTED = str(AttemptOutcome.RUNNING)
ROOM_EVERY_S = 5.0
"""How often, while it commits, the writer asks whether the store still has room (`Store.check_room`)."""

_Op = tuple[Any, ...]
"""One submitted operation: its kind (run, grade, attempt, transcript, experiment, cache), then its values."""


class StoreWriter:
    """Commits what the scheduler submits, in batches, from its own thread and connection.

    Args:
        store: The store to write to (the writer opens its own connection in its thread).
        interval: Longest time a submitted change waits before it is committed, in seconds.
        max_batch: Commit early once this many changes wait.
        max_pending: The bound: once this many changes wait uncommitted, `room` holds the workers back
            (until half of them are committed), and one transaction takes up to this many. `_submit`
            itself blocks at four times this, so a caller that never awaits `room` cannot outrun it.
        room_every: Seconds between two checks that the store still has room (`Store.check_room`;
            default `ROOM_EVERY_S`; 0: never). Out of room, no new run starts (`room_error`).
    """

    def __init__(
        self,
        store: Store,
        *,
        interval: float = 0.05,
        max_batch: int = 4000,
        max_pending: int = 20_000,
        room_every: float | None = None,
    ):
        if max_pending < 1 or max_batch < 1:
            raise ValueError(f"max_batch and max_pending must be at least 1, not {max_batch}, {max_pending}")
        self.store = store
        self.interval = interval
        self.max_batch = max_batch
        self.max_pending = max_pending
        self._crowd = min(max_batch, 4 * max_pending)  # `_submit` looks further only from here on
        # Submitting is lock-free (deque.append is atomic): it sits on the scheduler's hot path.
        self._ops: deque[_Op] = deque()
        self._cond = threading.Condition(threading.Lock())
        self._wake = threading.Event()
        self._drained = 0
        self._committed = 0
        self._closing = False
        self.error: BaseException | None = None
        self.room_every = ROOM_EVERY_S if room_every is None else room_every
        self.room_error: BaseException | None = None
        """Set when the store has run out of room (`Store.check_room`, asked every `room_every` seconds
        while it commits): the writer still commits, but no new run should start (`behind` says so)."""
        self._room_checked = time.monotonic()
        self._open: set[tuple[int, int]] = set()
        """(run id, attempt) of the attempts committed as started and not yet finished."""
        self.commits = 0
        self.waits = 0
        """How many times `room` held a worker back because the writer was behind."""
        self._thread = threading.Thread(target=self._loop, name="abbench-writer", daemon=True)
        self._thread.start()

    # -- what the scheduler calls (any thread) ----------------------------------------------------------

    def transition(
        self,
        run_id: int,
        from_state: str | None,
        to_state: str,
        fields: RunChange | None = None,
        detail: str | None = None,
    ) -> None:
        """Record that a run moved to `to_state`, with the columns that change alongside (which the
        writer then owns: not copied)."""
        # As plain str: SQLite binds a str subclass (a `RunState`) through its adapter lookup, which
        # costs more per transition than the rest of the bookkeeping.
        old = None if from_state is None else _PLAIN.get(from_state) or str(from_state)
        new = _PLAIN.get(to_state) or str(to_state)
        # the run_events row as it is inserted, built once
        self._submit(("run", (run_id, time.time(), old, new, detail), fields))

    def grade(self, grade: GradeWrite) -> None:
        """Append a grade (the batch id and creation time are filled in when it is committed)."""
        self._submit(("grade", grade))

    def attempt(self, attempt: AttemptWrite) -> None:
        """Append one execution attempt of a run with what it spent."""
        self._submit(("attempt", attempt))

    def attempt_started(self, run_id: int, attempt: int, started_at: str) -> None:
        """Record that attempt number `attempt` of a run has started (a retry: the run is running already).

        The first attempt of a run needs no call: its move to ``running`` with ``attempts`` and
        ``started_at`` says it. Either way the attempt is stored ``running`` unless it ends in the same
        batch (then only its end is written), and its end (`attempt`) completes that row: a process
        killed under it leaves the attempt, which reconciliation records as interrupted.
        """
        self._submit(("started", run_id, attempt, started_at))

    def transcript(self, path: Path, messages: Any) -> None:
        """Write a run's transcript as JSON lines (before the rows that point at it are committed)."""
        self._submit(("transcript", path, messages))

    def cache(self, action: str, value: Any) -> None:
        """Keep (``save``, a `CacheEntry`), count (``hit``, ``(key, cost saved)``) or drop (``forget``, a
        key) a response-cache entry, committed with the rest of the batch."""
        self._submit(("cache", action, value))

    def experiment(self, experiment_id: int, **fields: Any) -> None:
        """Update columns of the experiment row (heartbeat, status)."""
        self._submit(("experiment", experiment_id, fields))

    @property
    def pending(self) -> int:
        """Changes submitted and not yet committed (queued, or in the transaction being written)."""
        return len(self._ops) + self._drained - self._committed

    @property
    def committed(self) -> int:
        """Changes committed so far."""
        return self._committed

    @property
    def behind(self) -> bool:
        """True when `max_pending` changes wait uncommitted (new work should wait: `room`), or when the
        store has run out of room (`room_error`: new work should not start)."""
        return (
            len(self._ops) + self._drained - self._committed >= self.max_pending  # `pending`, once a run
            or self.room_error is not None
        )

    async def room(self) -> None:
        """Wait, without blocking the event loop, until the writer is no longer behind.

        Returns at once when it is not (the common case: one comparison). When it is, waits until half of
        `max_pending` is committed, so the workers resume in a burst instead of one run per commit.

        Raises:
            StoreError: the writer failed (the cause is chained).
        """
        if self.pending >= self.max_pending:
            self.waits += 1
            await asyncio.to_thread(self._wait_below, self.max_pending // 2)
        if self.error is not None:
            raise self._failed() from self.error

    def _wait_below(self, limit: int) -> None:
        """Block this thread until at most `limit` changes wait uncommitted, or the writer failed."""
        self._wake.set()
        with self._cond:
            while self.pending > limit and self.error is None and self._thread.is_alive():
                self._cond.wait(1.0)

    def _failed(self) -> StoreError:
        return StoreError(*describe_write_error(self.error, self.store.path))

    def _submit(self, op: _Op) -> None:
        if self.error is not None:
            raise self._failed() from self.error
        ops = self._ops
        ops.append(op)
        if len(ops) >= self._crowd:
            self._crowded(len(ops))

    def _crowded(self, waiting: int) -> None:
        """Many changes wait: wake the writer, and hold back a caller that ignored `room`."""
        # is_set() is a plain read; set() takes a lock, which on every submit of a writer that has
        # fallen behind cost more than the rest of the bookkeeping.
        if waiting >= self.max_batch and not self._wake.is_set():
            self._wake.set()
        if waiting >= 4 * self.max_pending:  # a caller that ignored `room`: hold it here
            self._wait_below(self.max_pending)

    def flush(self, timeout: float | None = 60.0) -> None:
        """Block until everything submitted so far is committed.

        Raises:
            StoreError: the writer failed (the cause is chained).
        """
        with self._cond:
            target = self._drained + len(self._ops)
        self._wake.set()
        with self._cond:
            deadline = None if timeout is None else time.monotonic() + timeout
            while self._committed < target and self.error is None:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise StoreError(f"the store writer did not commit within {timeout} s")
                self._cond.wait(remaining)
        if self.error is not None:
            raise self._failed() from self.error

    def close(self) -> None:
        """Commit what is left and stop the thread."""
        self._closing = True
        self._wake.set()
        self._thread.join()
        if self.error is not None:
            raise self._failed() from self.error

    # -- the writer thread -----------------------------------------------------------------------------

    def _loop(self) -> None:
        last = time.monotonic()  # when the changes of the last commit were taken
        try:  # what killed writers left: done here, so a pass never waits for it
            sweep_transcripts(self.store.path)
        except OSError:
            log.warning("could not remove the partial transcripts left in %s", self.store.path, exc_info=True)
        try:
            while True:
                if not self._closing:
                    if not self._ops:
                        self._wake.wait(self.interval)
                    elif len(self._ops) < self.max_batch:
                        # an interval after the last commit, not at once: a writer that keeps up
                        # otherwise commits a few runs at a time, each commit and update a cost of its own
                        self._wake.wait(self.interval - (time.monotonic() - last))
                self._wake.clear()
                closing = self._closing
                with self._cond:
                    # behind: everything that waits, up to the bound, in one bigger transaction
                    take = min(len(self._ops), self.max_pending)
                    ops = [self._ops.popleft() for _ in range(take)]
                    self._drained += len(ops)
                last = time.monotonic()
                if ops:
                    self._write(ops)
                    with self._cond:
                        self._committed += len(ops)
                        self._cond.notify_all()
                elif closing:
                    return
                if self.room_every and last - self._room_checked >= self.room_every:
                    self._check_room(last)  # also while the runs in flight take their time
        except BaseException as exc:  # surfaced to the scheduler through .error / flush()
            if isinstance(exc, (OSError, sqlite3.OperationalError)):
                # a full disk or a read-only store: the message says it all, the traceback is noise
                log.debug("store writer failed", exc_info=True)
            else:
                log.exception("store writer failed")
            with self._cond:
                self.error = exc
                self._cond.notify_all()
        finally:
            self.store.close_thread_connection()

    def _check_room(self, now: float) -> None:
        """Ask the store for room (a few times a minute, from this thread): none left stops new runs."""
        self._room_checked = now
        try:
            self.store.check_room()
        except StoreError as exc:
            if self.room_error is None:
                log.warning("%s", exc)
            self.room_error = exc
        else:
            self.room_error = None

    def _write(self, ops: list[_Op]) -> None:
        """Gather `ops` into one batch and commit it (transcripts are written first, outside it)."""
        batch = WriteBatch()
        cached: dict[
            str, CacheEntry | None
        ] = {}  # key -> the entry to keep, or None to drop: the last word wins
        runs, event = batch.runs, batch.events.append
        started: dict[tuple[int, int], str] = {}  # attempts started in this batch -> when
        ended: list[tuple[int, int]] = []  # attempts committed as started before, ended in this batch
        for op in ops:
            kind = op[0]
            if kind == "run":
                _, row_of_event, fields = op
                run_id, at, _from, to_state, _detail = row_of_event
                row = runs.get(run_id)
                if row is None:
                    row = runs[run_id] = {}
                if fields:
                    row.update(fields)
                    if to_state == _RUNNING and "started_at" in fields:  # its first attempt starts
                        started[run_id, fields["attempts"]] = fields["started_at"]
                row["state"] = to_state
                row["updated_at"] = at
                event(row_of_event)
            elif kind == "grade":
                batch.grades.append(op[1])
            elif kind == "attempt":
                done = op[1]
                key = (done.run_id, done.attempt)
                if started.pop(key, None) is None and key in self._open:
                    batch.attempts_ended.append(done)
                    ended.append(key)
                else:  # started and ended in this batch (the common case), or never said to start
                    batch.attempts.append(done)
            elif kind == "started":
                started[op[1], op[2]] = op[3]
            elif kind == "transcript":
                _write_transcript(op[1], op[2])
            elif kind == "experiment":
                batch.experiments[op[1]].update(op[2])
            elif kind == "cache":
                _, action, value = op
                if action == "hit":
                    batch.cache_hits.append(value)
                else:
                    cached[value.key if action == "save" else value] = value if action == "save" else None
        batch.cache_saved = [e for e in cached.values() if e is not None]
        batch.cache_forgotten = [k for k, e in cached.items() if e is None]
        for (run_id, number), at in started.items():  # still under way when the batch commits
            batch.attempts.append(AttemptWrite(run_id, number, _STARTED, started_at=at))
        try:
            self.store.runs.write_batch(batch)
        except (UnicodeEncodeError, OverflowError) as exc:
            # A value SQLite cannot take (a lone surrogate in an agent's or grader's text, an integer
            # past 64 bits) rolled the batch back. One run's value must not end the experiment: the
            # batch is written again with such values made storable (the text escaped, the number NULL).
            log.warning("a value could not be stored as given (%s); it is stored escaped or as unknown", exc)
            self.store.runs.write_batch(storable_batch(batch))
        self._open.difference_update(ended)
        self._open.update(started)
        self.commits += 1


_MIN_INT, _MAX_INT = -(2**63), 2**63 - 1
_Record = TypeVar("_Record", AttemptWrite, GradeWrite)


def storable(value: Any) -> Any:
    """`value` as SQLite can store it: text with lone surrogates escaped (``\\ud800``), an integer
    beyond 64 bits as None (unknown); anything else as it is."""
    if type(value) is str:
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if type(value) is int and not _MIN_INT <= value <= _MAX_INT:
        return None
    return value


def storable_batch(batch: WriteBatch) -> WriteBatch:
    """`batch` with every value made `storable` (the slow path, after SQLite refused one of them)."""

    def row(values: Mapping[str, Any]) -> dict[str, Any]:
        return {k: storable(v) for k, v in values.items()}

    def entry(e: CacheEntry) -> CacheEntry:
        return dataclasses.replace(e, **{f.name: storable(getattr(e, f.name)) for f in dataclasses.fields(e)})

    def record(r: _Record) -> _Record:
        return type(r)._make(map(storable, r))

    out = WriteBatch(
        runs={run_id: cast("RunChange", row(values)) for run_id, values in batch.runs.items()},
        events=[tuple(map(storable, e)) for e in batch.events],
        attempts=[record(a) for a in batch.attempts],
        attempts_ended=[record(a) for a in batch.attempts_ended],
        grades=[record(g) for g in batch.grades],
        cache_saved=[entry(e) for e in batch.cache_saved],
        cache_hits=list(batch.cache_hits),
        cache_forgotten=list(batch.cache_forgotten),
    )
    for exp_id, fields in batch.experiments.items():
        out.experiments[exp_id].update(row(fields))
    return out


def _write_transcript(path: Path, messages: Any) -> None:
    """Write a transcript whole or not at all: a full disk must not leave half a file behind.

    It is written to a hidden ``.<name>.<pid>-<n>.partial`` beside it, held (locked) by this process
    while it is written (`claimed_file`), then renamed into place: a process killed half way leaves a
    partial file no live process holds, which the next writer removes (`sweep_transcripts`). Text that
    is not valid Unicode (a lone surrogate an agent returned) is written as its JSON escape.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, partial = claimed_file(path.parent, prefix=f".{path.name}.", suffix=".partial")
    try:
        with open(fd, "w", encoding="utf-8", errors="backslashreplace", closefd=False) as f:
            for m in messages:
                f.write(json.dumps(m, ensure_ascii=False, default=str) + "\n")
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)


def sweep_transcripts(store_path: Path) -> int:
    """Remove the partial transcripts killed processes left in the store (never a live writer's)."""
    folder = store_path / "transcripts"
    # hidden and held while written; `<name>.partial`: written by an abbench before the lock, whose
    # writers only ran while they held their experiment (and nothing that still runs writes those)
    return sweep_stale(folder, ".*.partial") + sweep_stale(folder, "*.jsonl.partial")


def describe_write_error(exc: BaseException | None, store_path: Path) -> tuple[str | Action, ...]:
    """What a failed store write means for a person: what failed, where, and what to do (the message's
    parts, for a `StoreError`)."""
    again: tuple[str | Action, ...] = (
        "what was committed is kept; run the experiment again (",
        do.run_experiment("EXPERIMENT"),
        ") to continue where it stopped",
    )
    if isinstance(exc, OSError):
        where = f" {exc.filename}" if exc.filename else f" the store {store_path}"
        what = exc.strerror or str(exc)
        return (
            f"cannot write{where}: {what}. Free disk space or make the store folder {store_path} writable; ",
            *again,
        )
    if isinstance(exc, sqlite3.OperationalError):
        return (
            f"the store database {store_path / 'abbench.db'} refused a write ({exc}). Free disk space or make "
            "the store folder writable; ",
            *again,
        )
    return (f"the store writer stopped: {exc}; ", *again)

"""The runner's writer commits through here (``store.runs.write_batch``): one batch of run changes, attempts,
grades and cache entries per transaction.

The runner's `StoreWriter` gathers what the scheduler submits into a `WriteBatch` on its own thread and
hands it to `store.runs.write_batch`, which commits it as one transaction: bookkeeping, not the agents, is
what limits throughput, and one commit per batch of a few thousand changes is what keeps it cheap.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import chain, compress, groupby
from operator import attrgetter
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict

from abbench.store._base import dumps, now_iso
from abbench.store._noun import Noun

if TYPE_CHECKING:
    from collections.abc import Sequence

    from abbench.store._cache import CacheEntry
    from abbench.store._store import Store


class AttemptWrite(NamedTuple):
    """One execution attempt of a run to store, as the scheduler (or `record_runs`) ended or started it.

    Each field is the ``run_attempts`` column of its name (`ATTEMPT_FIELDS`; tests check them against
    the table): a field that is misspelt or renamed fails under mypy and at construction, not in the
    writer's thread at commit time. What an attempt did not report is None (NULL: unknown, not zero).

    A typed named tuple, not a frozen dataclass: as immutable and as slotted, but made in a quarter of
    the time (a frozen dataclass sets each of its fields through ``object.__setattr__``: 8 µs against
    2 µs here, one per run on the scheduler's hot path), and it is the row that is inserted as it is.
    """

    run_id: int
    attempt: int
    outcome: str
    failure_type: str | None = None
    error: str | None = None
    started_at: str | None = None
    ended_at: str | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    latency_ms: float | None = None
    model_calls: int | None = None
    files_read: str | None = None
    """JSON list of the files the agent read."""
    sections_read: str | None = None
    """JSON list of the sections the agent read."""
    transcript_path: str | None = None
    transcript_summary: str | None = None
    cached_calls: int | None = None
    cost_saved: float | None = None
    recorded_attempt: int | None = None
    recorded_digest: str | None = None


ATTEMPT_FIELDS: tuple[str, ...] = AttemptWrite._fields
"""The ``run_attempts`` columns an `AttemptWrite` fills in, one per field, in the fields' order (all but ``id``)."""
ATTEMPT_COLUMNS = ATTEMPT_FIELDS[1:]
"""The columns of a ``run_attempts`` row the scheduler (or `record_runs`) fills in (the run's id aside)."""
_ENDED = tuple(c for c in ATTEMPT_COLUMNS if c != "attempt")
_ended_row = attrgetter(*_ENDED, "run_id", "attempt")


class GradeWrite(NamedTuple):
    """One grade to append: who judged which run, with the grader's values.

    Each field is the ``grades`` column of its name (`GRADE_FIELDS`; tests check them against the
    table); the writer fills in ``batch_id`` and ``created_at``. What the grader did not give is None.
    A typed named tuple for the reason `AttemptWrite` is one.
    """

    experiment_id: int
    run_id: int
    grader: str
    kind: str
    status: str
    other_run_id: int | None = None
    passed: bool | None = None
    score: float | None = None
    verdict: str | None = None
    dimensions: dict[str, Any] | None = None
    comment: str | None = None
    raw_output: str | None = None
    error: str | None = None
    retryable: bool | None = None
    judge_model: str | None = None
    judge_cost: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    details: dict[str, Any] | None = None
    run_attempt: int | None = None
    other_run_attempt: int | None = None
    cached: bool | None = None
    cost_saved: float | None = None


GRADE_FIELDS: tuple[str, ...] = GradeWrite._fields
"""The ``grades`` columns a `GradeWrite` fills in, one per field, in the fields' order."""
_INSERTED = ("batch_id", "created_at", *GRADE_FIELDS)
"""The columns `write_batch` gives a new ``grades`` row: every column but its id."""
_AT = {c: i for i, c in enumerate(_INSERTED)}
_FLAGS = tuple(_AT[c] for c in ("passed", "retryable", "cached"))
_BLOBS = tuple(_AT[c] for c in ("dimensions", "details"))


class RunChange(TypedDict, total=False):
    """The ``runs`` columns one transition of a run changes: a field left out is left as it is.

    Each key is the ``runs`` column of its name (`RUN_CHANGE_FIELDS`; tests check them against the
    table), so a misspelt or renamed column fails under mypy where the change is made, not in the
    writer's thread at commit time. A typed dict, not a record with an "unset" marker in each field:
    a key left out is what "unchanged" means, distinct from None (set NULL); two changes of a run in
    one batch merge as dicts do, the later value of each column winning; and a transition costs a
    dict, where a record of 34 fields cost more than the rest of its bookkeeping (`StoreWriter`).
    The writer sets ``state`` and ``updated_at`` itself.
    """

    state: str
    updated_at: float
    attempts: int
    grade_attempts: int
    started_by: str | None
    started_at: str | None
    executed_at: str | None
    finished_at: str | None
    failure_type: str | None
    error: str | None
    traceback: str | None
    retryable: int | None
    prediction: str | None
    reason: str | None
    confidence: float | None
    evidence_refs: str | None
    raw_output: str | None
    files_read: str | None
    sections_read: str | None
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    latency_ms: float | None
    session_id: str | None
    model: str | None
    transcript_path: str | None
    transcript_summary: str | None
    passed: int | None
    score: float | None
    cached_calls: int | None
    cost_saved: float | None
    skills_offered: str | None
    skills_loaded: str | None
    first_load_turn: int | None


RUN_CHANGE_FIELDS: tuple[str, ...] = tuple(RunChange.__annotations__)
"""The ``runs`` columns a `RunChange` may set: all but the run's identity (id, experiment, arm, case, round)."""


@dataclass
class WriteBatch:
    """What one commit of the runner's writer holds, gathered from the operations submitted.

    Attributes:
        runs: Run id -> its changes merged (``state`` and ``updated_at`` included).
        events: ``run_events`` rows: (run id, at, from state, to state, detail).
        attempts: Attempts to insert, in submission order.
        attempts_ended: Attempts stored ``running`` by an earlier batch, which these now complete
            (their run id and ``attempt`` number say which).
        grades: Grades to append, in submission order.
        experiments: Experiment id -> the columns that change (heartbeat, status).
        cache_saved: Response-cache entries to keep.
        cache_hits: (key, cost saved) of each reply the cache answered.
        cache_forgotten: Keys of response-cache entries to drop.
    """

    runs: dict[int, RunChange] = field(default_factory=dict)
    events: list[tuple[int, float, str | None, str, str | None]] = field(default_factory=list)
    attempts: list[AttemptWrite] = field(default_factory=list)
    attempts_ended: list[AttemptWrite] = field(default_factory=list)
    grades: list[GradeWrite] = field(default_factory=list)
    experiments: dict[int, dict[str, Any]] = field(default_factory=lambda: defaultdict(dict))
    cache_saved: list[CacheEntry] = field(default_factory=list)
    cache_hits: list[tuple[str, float | None]] = field(default_factory=list)
    cache_forgotten: list[str] = field(default_factory=list)


class RunWrites(Noun):
    """The writer's batch commit (part of ``store.runs``)."""

    def write_batch(self, batch: WriteBatch) -> None:
        """Commit one batch of the runner's writer in a single transaction (all of it or none)."""
        with self._store.transaction() as conn:
            _update_runs(conn, batch.runs)
            if batch.events:
                execute_rows(
                    conn,
                    "INSERT INTO run_events (run_id, at, from_state, to_state, detail) VALUES ",
                    "",
                    batch.events,
                )
            if batch.attempts:
                insert_rows(conn, "run_attempts", ATTEMPT_FIELDS, batch.attempts)
            if batch.attempts_ended:
                _end_attempts(conn, batch.attempts_ended)
            if batch.grades:
                _insert_grades(self._store, conn, batch.grades)
            if batch.cache_saved or batch.cache_hits or batch.cache_forgotten:
                self._store.cache.write(batch.cache_saved, batch.cache_hits, batch.cache_forgotten, conn)
            for exp_id, fields in batch.experiments.items():
                sets = ", ".join(f"{c}=?" for c in fields)
                conn.execute(f"UPDATE experiments SET {sets} WHERE id=?", (*fields.values(), exp_id))


def _end_attempts(conn: sqlite3.Connection, ended: list[AttemptWrite]) -> None:
    """Complete attempts stored ``running`` (a run slower than one batch) with how they ended.

    Every column but the attempt's number is set: what the ``running`` row held (its outcome and start)
    the end gives again, and the rest was NULL.
    """
    sets = ", ".join(f"{c}=?" for c in _ENDED)
    conn.executemany(
        f"UPDATE run_attempts SET {sets} WHERE run_id=? AND attempt=? AND outcome='running'",
        list(map(_ended_row, ended)),
    )


def _insert_grades(store: Store, conn: sqlite3.Connection, grades: list[GradeWrite]) -> None:
    """Append grades, each with its experiment's current grade batch and one creation time."""
    batches: dict[int, str] = {}
    created = now_iso()
    rows = []
    for g in grades:
        if g.experiment_id not in batches:
            batches[g.experiment_id] = store.experiments.ensure_batch(g.experiment_id, conn)
        rows.append(_grade_row(g, batches[g.experiment_id], created))
    insert_rows(conn, "grades", _INSERTED, rows)


def insert_rows(
    conn: sqlite3.Connection, table: str, columns: tuple[str, ...], rows: Sequence[Sequence[Any]]
) -> None:
    """Insert `rows` (values in `columns`' order) in their order, each without its NULL columns.

    Binding a NULL costs sqlite3 an adapter lookup, more than the rest of the value: a grade or an
    attempt leaves most of its columns NULL, and naming only the others halved these inserts. Rows in a
    row with the same types in the same places (NULLs in the same columns) share one statement; the
    order is kept, since a later id is a later grade. Exact only because none of `table`'s columns has a
    default other than NULL (tests/runner/test_write_batch.py checks).
    """
    for types, group in groupby(rows, key=_types):
        present = [t is not _NULL for t in types]
        names = ", ".join(compress(columns, present))
        execute_rows(
            conn,
            f"INSERT INTO {table} ({names}) VALUES ",
            "",
            [tuple(compress(row, present)) for row in group],
        )


_NULL = type(None)


def _types(row: Sequence[Any]) -> tuple[type, ...]:
    return tuple(map(type, row))


ROWS_PER_STATEMENT = 100
"""Rows one statement of `execute_rows` takes (fewer when they would pass `MAX_PARAMETERS`)."""
MAX_PARAMETERS = 999
"""The most parameters a statement may bind on any SQLite (its default limit before 3.32)."""
UPDATE_FROM = sqlite3.sqlite_version_info >= (3, 33, 0)
"""Whether this SQLite has ``UPDATE ... FROM`` (3.33): else each run's update is a statement of its own."""


def execute_rows(conn: sqlite3.Connection, head: str, tail: str, rows: Sequence[Sequence[Any]]) -> None:
    """Execute ``head VALUES-list tail`` over `rows`, `ROWS_PER_STATEMENT` rows to a statement.

    `head` ends where the ``(?,...),(?,...)`` list goes (``INSERT INTO t (a, b) VALUES ``), `tail`
    follows it. One statement over a hundred rows costs half of what a hundred executions of a one-row
    statement do (`executemany` binds, steps and resets each), and SQLite then works through them with the
    interpreter's lock released once, not once a row. The rows left over (fewer than a statement's worth)
    go in statements of 64, 32, ... 1 rows, the binary digits of their count: `executemany` took them one
    at a time, and each time the writer's thread queued for the lock behind the event loop again (up
    to the interpreter's switch interval, 5 ms) — hundreds of times a batch, which kept the writer
    behind. A statement of each size is prepared once and kept in the connection's statement cache.
    """
    if not rows:
        return
    width = len(rows[0])
    row_sql = f"({','.join('?' * width)})"
    per = max(1, min(ROWS_PER_STATEMENT, MAX_PARAMETERS // width))
    done, total = 0, len(rows)
    while done < total:
        left = total - done
        n = per if left >= per else 1 << (left.bit_length() - 1)
        sql = head + ",".join([row_sql] * n) + tail
        conn.execute(sql, list(chain.from_iterable(rows[done : done + n])))
        done += n


def _update_runs(conn: sqlite3.Connection, runs: dict[int, RunChange]) -> None:
    """Update the runs' changed columns; runs with the same changed columns share one statement.

    Runs are grouped by their columns in the order they were set (not sorted): runs that took the same
    path set them in the same order, and sorting each run's columns cost more than the few extra groups.
    With ``UPDATE ... FROM (VALUES ...)`` a statement updates a hundred runs (`execute_rows`).
    """
    by_columns: dict[tuple[str, ...], list[tuple[Any, ...]]] = defaultdict(list)
    for run_id, row in runs.items():
        by_columns[tuple(row)].append((*row.values(), run_id))
    for cols, rows in by_columns.items():
        if not UPDATE_FROM:
            conn.executemany(f"UPDATE runs SET {', '.join(f'{c}=?' for c in cols)} WHERE id=?", rows)
            continue
        sets = ", ".join(f"{c}=v.column{i}" for i, c in enumerate(cols, 1))
        id_column = f"v.column{len(cols) + 1}"
        execute_rows(conn, f"UPDATE runs SET {sets} FROM (VALUES ", f") AS v WHERE runs.id={id_column}", rows)


def _grade_row(g: GradeWrite, batch_id: str, created: str) -> list[Any]:
    """The row of one new grade, in `_INSERTED`'s order; what the grader did not give is NULL.

    Built by position, not as a dict: one grade per run is written, and the dict cost more than the insert.
    """
    row = [batch_id, created, *g]
    for i in _FLAGS:
        flag = row[i]
        if flag is not None:
            row[i] = int(bool(flag))
    for i in _BLOBS:
        if row[i] is not None:
            row[i] = dumps(row[i])
    return row

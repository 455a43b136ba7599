"""Store methods for the runner's writer: one batch of run changes, attempts, grades and cache entries per commit.

The runner's `StoreWriter` gathers what the scheduler submits into a `WriteBatch` on its own thread and
hands it to `Store.write_batch`, which commits it as one transaction: bookkeeping, not the agents, is
what limits throughput, and one commit per batch of a few thousand changes is what keeps it cheap.
"""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from abbench.store._base import StoreBase, dumps, now_iso
from abbench.store._grades import GRADE_COLUMNS

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from abbench.store._cache import CacheEntry

_INSERTED = tuple(c for c in GRADE_COLUMNS if c != "id")
"""The columns `write_batch` gives a new ``grades`` row: every column of a `Grade` but its id."""

ATTEMPT_COLUMNS = (
    "attempt",
    "outcome",
    "failure_type",
    "error",
    "started_at",
    "ended_at",
    "model",
    "input_tokens",
    "output_tokens",
    "cost",
    "latency_ms",
    "model_calls",
    "files_read",
    "sections_read",
    "transcript_path",
    "transcript_summary",
    "cached_calls",
    "cost_saved",
)
"""The columns of a ``run_attempts`` row the scheduler fills in."""


@dataclass(frozen=True)
class GradeWrite:
    """One grade to append: who judged which run, with the grader's values (see `GRADE_COLUMNS`)."""

    experiment_id: int
    run_id: int
    grader: str
    kind: str
    status: str
    values: dict[str, Any]


@dataclass
class WriteBatch:
    """What one commit of the runner's writer holds, gathered from the operations submitted.

    Attributes:
        runs: Run id -> the columns that change (``state`` and ``updated_at`` included).
        events: ``run_events`` rows: (run id, at, from state, to state, detail).
        attempts: Run id and its attempt's values (see `ATTEMPT_COLUMNS`), in submission order.
        grades: Grades to append, in submission order.
        experiments: Experiment id -> the columns that change (heartbeat, status).
        cache_saved: Response-cache entries to keep.
        cache_hits: (key, cost saved) of each reply the cache answered.
        cache_forgotten: Keys of response-cache entries to drop.
    """

    runs: dict[int, dict[str, Any]] = field(default_factory=dict)
    events: list[tuple[int, float, str | None, str, str | None]] = field(default_factory=list)
    attempts: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    grades: list[GradeWrite] = field(default_factory=list)
    experiments: dict[int, dict[str, Any]] = field(default_factory=lambda: defaultdict(dict))
    cache_saved: list[CacheEntry] = field(default_factory=list)
    cache_hits: list[tuple[str, float | None]] = field(default_factory=list)
    cache_forgotten: list[str] = field(default_factory=list)


class WritesMixin(StoreBase):
    """The writer's batch commit (mixed into `Store`)."""

    if TYPE_CHECKING:  # provided by the other parts of `Store`

        def ensure_batch(self, exp_id: int, conn: sqlite3.Connection | None = None) -> str: ...
        def cache_write(
            self,
            saves: Sequence[CacheEntry] = (),
            hits: Iterable[tuple[str, float | None]] = (),
            forgets: Iterable[str] = (),
            conn: sqlite3.Connection | None = None,
        ) -> None: ...

    def write_batch(self, batch: WriteBatch) -> None:
        """Commit one batch of the runner's writer in a single transaction (all of it or none)."""
        with self.transaction() as conn:
            _update_runs(conn, batch.runs)
            if batch.events:
                conn.executemany(
                    "INSERT INTO run_events (run_id, at, from_state, to_state, detail) VALUES (?,?,?,?,?)",
                    batch.events,
                )
            if batch.attempts:
                conn.executemany(
                    f"INSERT INTO run_attempts (run_id, {', '.join(ATTEMPT_COLUMNS)}) "
                    f"VALUES ({','.join('?' * (len(ATTEMPT_COLUMNS) + 1))})",
                    [
                        (run_id, *(values.get(c) for c in ATTEMPT_COLUMNS))
                        for run_id, values in batch.attempts
                    ],
                )
            if batch.grades:
                _insert_grades(self, conn, batch.grades)
            if batch.cache_saved or batch.cache_hits or batch.cache_forgotten:
                self.cache_write(batch.cache_saved, batch.cache_hits, batch.cache_forgotten, conn)
            for exp_id, fields in batch.experiments.items():
                sets = ", ".join(f"{c}=?" for c in fields)
                conn.execute(f"UPDATE experiments SET {sets} WHERE id=?", (*fields.values(), exp_id))


def _insert_grades(store: WritesMixin, conn: sqlite3.Connection, grades: list[GradeWrite]) -> None:
    """Append grades, each with its experiment's current grade batch and one creation time."""
    batches: dict[int, str] = {}
    created = now_iso()
    rows = []
    for g in grades:
        if g.experiment_id not in batches:
            batches[g.experiment_id] = store.ensure_batch(g.experiment_id, conn)
        rows.append(_grade_row(g, batches[g.experiment_id], created))
    conn.executemany(
        f"INSERT INTO grades ({', '.join(_INSERTED)}) VALUES ({','.join('?' * len(_INSERTED))})",
        rows,
    )


def _update_runs(conn: sqlite3.Connection, runs: dict[int, dict[str, Any]]) -> None:
    """Update the runs' changed columns; runs with the same set of changed columns share one executemany."""
    by_columns: dict[tuple[str, ...], list[tuple[Any, ...]]] = defaultdict(list)
    for run_id, row in runs.items():
        cols = tuple(sorted(row))
        by_columns[cols].append((*(row[c] for c in cols), run_id))
    for cols, rows in by_columns.items():
        sets = ", ".join(f"{c}=?" for c in cols)
        conn.executemany(f"UPDATE runs SET {sets} WHERE id=?", rows)


def _grade_row(g: GradeWrite, batch_id: str, created: str) -> tuple[Any, ...]:
    """The row of one new grade, in `_INSERTED`'s order; what the grader did not give is NULL."""
    values = g.values
    row: dict[str, Any] = {c: values.get(c) for c in _INSERTED}
    row.update(experiment_id=g.experiment_id, batch_id=batch_id, run_id=g.run_id, grader=g.grader)
    row.update(kind=g.kind, status=g.status, created_at=created)
    for flag in ("passed", "retryable", "cached"):
        row[flag] = _bool(values.get(flag))
    for blob in ("dimensions", "details"):
        row[blob] = dumps(values.get(blob))
    return tuple(row[c] for c in _INSERTED)


def _bool(value: Any) -> int | None:
    return None if value is None else int(bool(value))

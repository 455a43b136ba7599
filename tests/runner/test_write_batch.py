"""The writer's batch SQL (a hundred rows to a statement, NULL columns left out) stores what one row at a time does."""

from __future__ import annotations

import sqlite3

import pytest

from abbench.runner import create_experiment
from abbench.store import ATTEMPT_COLUMNS, AttemptWrite, GradeWrite, WriteBatch, _writes

_GRADE_VALUES = (
    {"passed": True, "score": 1.0, "run_attempt": 1},
    {"passed": None, "score": 0.25, "comment": "同意", "details": {"seed": 3}, "run_attempt": 1},
    {"passed": False, "score": 0.0, "dimensions": {"tone": 2}, "cached": True, "run_attempt": 2},
)


_AWKWARD = (
    *(float("nan"), float("inf"), -0.0, 1e16, 1e-5, 0.1 + 0.2, 2**62, -(2**63), None, ""),
    *("同意 ü", "a\x00b\x1f", "q\"uo'te", "a,b", "l1\nl2\r\n", "=1+2", "+x", "-x", "@x", "\tx", "\rx"),
)
"""Values that change type, NULL-ness and text from row to row: the statements' shapes and leftovers too."""


def _awkward(n: int) -> object:
    return _AWKWARD[n % len(_AWKWARD)]


def _batch(run_ids: list[int], exp_id: int) -> WriteBatch:
    """Every kind of row, more of them than one statement takes, with NULLs in changing places."""
    batch = WriteBatch()
    for n, run_id in enumerate(run_ids):
        at = 1_800_000_000 + n / 7
        batch.runs[run_id] = {"attempts": 1, "state": "executed", "updated_at": at, "prediction": f"p{n}"}
        if n % 3 == 0:
            batch.runs[run_id].update(passed=n % 2, score=None, error="x" if n % 6 else None)
        if n % 5 == 1:
            batch.runs[run_id].update(reason=_awkward(n), cost=_awkward(n + 1))
        for step, (old, new) in enumerate((("pending", "running"), ("running", "executed"))):
            batch.events.append((run_id, at + step, old, new, None if n % 4 else f"detail {n}"))
        values = dict.fromkeys(ATTEMPT_COLUMNS)
        values.update(attempt=1, outcome="executed", latency_ms=n / 3, cost=None if n % 5 else 0.01 * n)
        if n % 4 == 3:
            values.update(error=_awkward(n), cost=_awkward(n + 2), model=_awkward(n + 3))
        batch.attempts.append(AttemptWrite(run_id, **values))
        # long stretches of one shape (a statement of a hundred), and now and then the same grader
        # twice on one run in another shape: the later one must stay the later id
        twice = (_GRADE_VALUES[(n // 150) % 3], _GRADE_VALUES[(n // 150 + 1) % 3])
        for values in twice if n % 50 == 7 else twice[:1]:
            odd = {"comment": _awkward(n), "score": _awkward(n + 5)} if n % 9 == 4 else {}
            batch.grades.append(GradeWrite(exp_id, run_id, "label_match", "rule", "ok", **{**values, **odd}))
    return batch


def _one_row_at_a_time(store, batch: WriteBatch) -> None:
    """The batch as plain one-row statements, every column named: what the writer's SQL must equal."""
    with store.transaction() as conn:
        for run_id, row in batch.runs.items():
            conn.execute(
                f"UPDATE runs SET {', '.join(f'{c}=?' for c in row)} WHERE id=?", (*row.values(), run_id)
            )
        for event in batch.events:
            conn.execute(
                "INSERT INTO run_events (run_id, at, from_state, to_state, detail) VALUES (?,?,?,?,?)", event
            )
        for a in batch.attempts:
            conn.execute(
                f"INSERT INTO run_attempts (run_id, {', '.join(ATTEMPT_COLUMNS)}) "
                f"VALUES ({','.join('?' * (len(ATTEMPT_COLUMNS) + 1))})",
                (a.run_id, *(getattr(a, c) for c in ATTEMPT_COLUMNS)),
            )
        batch_id = store.experiments.ensure_batch(batch.grades[0].experiment_id, conn)
        for g in batch.grades:
            row = [g.experiment_id, batch_id, g.run_id, g.grader, g.kind, g.status, "now"]
            row += [_writes._grade_row(g, batch_id, "now")[_writes._AT[c]] for c in _GRADED]
            conn.execute(
                "INSERT INTO grades (experiment_id, batch_id, run_id, grader, kind, status, created_at, "
                f"{', '.join(_GRADED)}) VALUES ({','.join('?' * (7 + len(_GRADED)))})",
                row,
            )


_GRADED = ("passed", "score", "comment", "details", "dimensions", "cached", "run_attempt", "verdict")


def _tables(store, exp_id: int) -> dict[str, list[tuple]]:
    """One experiment's rows in id order, each run named by its arm, case and round instead of its id."""
    key = {r.id: (r.arm, r.case_idx, r.round) for r in store.runs.records(exp_id)}
    ids = {"id", "experiment_id", "arm_id", "run_id", "created_at", "batch_id"}
    out = {}
    for table in ("runs", "run_events", "run_attempts", "grades"):
        columns = [r["name"] for r in store.query(f"PRAGMA table_info({table})") if r["name"] not in ids]
        run = "id" if table == "runs" else "run_id"
        rows = store.query(f"SELECT {run}, {', '.join(columns)} FROM {table} ORDER BY id")
        out[table] = [(key[r[0]], *tuple(r)[1:]) for r in rows if r[0] in key]
    return out


@pytest.mark.parametrize("update_from", [True, False])
def test_the_batch_stores_what_one_row_at_a_time_stores(store, definition, monkeypatch, update_from):
    monkeypatch.setattr(_writes, "UPDATE_FROM", update_from and _writes.UPDATE_FROM)
    tables = []
    for name in ("batched", "reference"):
        exp = create_experiment(definition(name=name, rounds=40), store=store)  # 4 cases × 2 arms × 40 rounds
        run_ids = [r.id for r in store.runs.records(exp.id)]
        assert len(run_ids) > 2 * _writes.ROWS_PER_STATEMENT and len(run_ids) % _writes.ROWS_PER_STATEMENT
        batch = _batch(run_ids, exp.id)
        store.runs.write_batch(batch) if name == "batched" else _one_row_at_a_time(store, batch)
        tables.append(_tables(store, exp.id))
    batched, reference = tables
    assert batched == reference
    runs = len(batched["runs"])
    assert len(batched["run_events"]) == 2 * runs and len(batched["grades"]) == runs + len(range(7, runs, 50))


def test_left_out_columns_default_to_null(store):
    # `insert_rows` leaves a row's NULL columns out of its INSERT: exact only while they default to NULL
    for table in ("grades", "run_attempts", "run_events"):
        defaults = {r["name"]: r["dflt_value"] for r in store.query(f"PRAGMA table_info({table})")}
        assert {c: d for c, d in defaults.items() if d is not None} == {}, table


def test_a_failing_row_fails_the_batch_whole(store, definition):
    exp = create_experiment(definition(rounds=40), store=store)
    run_ids = [r.id for r in store.runs.records(exp.id)]
    batch = _batch(run_ids, exp.id)
    batch.events.append((10**9, 1.0, "running", "executed", None))  # no such run
    with pytest.raises(sqlite3.IntegrityError):
        store.runs.write_batch(batch)
    assert store.query_one("SELECT COUNT(*) FROM run_events")[0] == 0
    assert store.query_one("SELECT COUNT(*) FROM grades")[0] == 0
    assert {r.state for r in store.runs.records(exp.id)} == {"pending"}

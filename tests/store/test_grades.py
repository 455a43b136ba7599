"""Grades come back as typed `Grade` records; the latest per (run, other run, grader) is one view."""

from __future__ import annotations

import sqlite3

import pytest

from abbench.store import GRADE_COLUMNS, Grade, open_store
from abbench.store._migrations import migrate
from tests.results import cases_of, make_experiment


@pytest.fixture
def graded(store):
    """Two arms × 2 cases × 1 round, graded by label_match (once, by make_experiment)."""
    return make_experiment(store, "graded", cases_of(2), {"a": [[True], [False]], "b": [[True], [True]]})


def add_grade(store, exp, run_id, grader, *, other=None, kind="rule", status="ok", passed=None, **values):
    """Append one grade, as the runner's writer does; returns its id."""
    fields = {"experiment_id": exp.id, "batch_id": store.experiments.ensure_batch(exp.id), "run_id": run_id}
    fields |= {"other_run_id": other, "grader": grader, "kind": kind, "status": status, "passed": passed}
    fields |= {"created_at": "2026-01-01T00:00:00+00:00"} | values
    with store.transaction() as conn:
        cur = conn.execute(
            f"INSERT INTO grades ({', '.join(fields)}) VALUES ({', '.join('?' * len(fields))})",
            list(fields.values()),
        )
    return cur.lastrowid


def test_grade_fields_are_the_columns_of_the_grades_table(store):
    columns = [r[1] for r in store.conn.execute("PRAGMA table_info(grades)")]
    assert sorted(GRADE_COLUMNS) == sorted(columns)
    assert GRADE_COLUMNS[0] == "id"


def test_grades_are_frozen_records_with_booleans_and_json_decoded(store, graded):
    run = store.runs.records(graded.id)[0]
    gid = add_grade(
        store, graded, run.id, "judge", kind="judge", passed=1, retryable=0, cached=None,
        dimensions='{"correctness": 4}', details='{"seed": 7}', judge_cost=0.25,
    )  # fmt: skip
    grade = store.grades.latest(run.id)["judge"]
    assert isinstance(grade, Grade) and grade.id == gid
    assert grade.passed is True and grade.retryable is False and grade.cached is False
    assert grade.dimensions == {"correctness": 4} and grade.details == {"seed": 7}
    with pytest.raises(AttributeError):
        grade.passed = False  # type: ignore[misc]
    as_dict = grade.as_dict()
    assert list(as_dict) == list(GRADE_COLUMNS) and as_dict["judge_cost"] == 0.25


def test_a_regrade_replaces_the_latest_and_keeps_the_history(store, graded):
    run = store.runs.records(graded.id)[0]
    first = store.grades.latest(run.id)["label_match"]
    again = add_grade(store, graded, run.id, "label_match", passed=0, comment="again")
    latest = store.grades.latest(run.id)["label_match"]
    assert latest.id == again and latest.passed is False and latest.comment == "again"
    assert [g.id for g in store.grades.history(run.id, "label_match")] == [first.id, again]
    current = [g for g in store.grades.records(graded.id) if g.run_id == run.id]
    assert [g.id for g in current] == [again]
    assert len(store.grades.records(graded.id, latest=False)) == len(store.grades.records(graded.id)) + 1
    assert {g["run_id"] for g in store.grades.table(graded.id)} == {
        r.id for r in store.runs.records(graded.id)
    }
    assert [g["passed"] for g in store.grades.table(graded.id) if g["run_id"] == run.id] == [False]


def test_the_latest_pairwise_grade_is_kept_per_pair(store, graded):
    runs = {(r.arm, r.case_id): r.id for r in store.runs.records(graded.id)}
    a0, b0 = runs[("a", "c000")], runs[("b", "c000")]
    a1, b1 = runs[("a", "c001")], runs[("b", "c001")]
    add_grade(store, graded, a0, "pair", other=b0, kind="pairwise", verdict="a")
    add_grade(store, graded, a1, "pair", other=b1, kind="pairwise", verdict="b")
    add_grade(store, graded, a0, "pair", other=b0, kind="pairwise", verdict="tie")  # re-graded
    add_grade(store, graded, a1, "pair", other=b1, kind="pairwise", status="error", error="no verdict")
    pairs = store.grades.records(graded.id, grader="pair")
    assert [(g.run_id, g.other_run_id, g.verdict, g.status) for g in pairs] == [
        (a0, b0, "tie", "ok"),
        (a1, b1, None, "error"),
    ]
    arm = {a.name: a.id for a in graded.arms}
    # a failed latest grade is no verdict: the pair of case c001 drops out
    assert store.grades.pairwise_verdicts(graded.id) == [("pair", "tie", arm["a"], arm["b"])]


def test_migration_7_adds_the_view_to_a_store_of_version_6(tmp_path):
    path = tmp_path / "old"
    path.mkdir()
    conn = sqlite3.connect(path / "abbench.db", isolation_level=None)
    migrate(conn, upto=6)
    assert conn.execute("SELECT 1 FROM sqlite_master WHERE name='latest_grades'").fetchone() is None
    conn.close()
    with open_store(path) as store:
        assert store.schema_version() >= 7
        assert store.query_one("SELECT type FROM sqlite_master WHERE name='latest_grades'")[0] == "view"
        assert store.grades.records(1) == []

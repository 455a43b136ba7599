"""`store.grades.summary` (every export asks it) answers by index seeks what one pass over the latest
grades answered: checked against that pass on the fixture experiments (rules, judges, a pairwise judge)
and on a copy whose grades were rewritten into every shape the seeks must get right."""

from __future__ import annotations

import shutil

import pytest

from abbench.store import open_store

_PASS = (
    "SELECT grader, kind, MIN(id), SUM(status='ok'), SUM(status='ok' AND passed IS NOT NULL) "
    "FROM latest_grades WHERE experiment_id=? GROUP BY grader ORDER BY MIN(id)"
)


def _by_pass(store, exp_id):
    """The summary as the pass over the latest grades gave it, its counts as flags."""
    return [(g, k, int(ok > 0), int(v > 0)) for g, k, _, ok, v in store.conn.execute(_PASS, (exp_id,))]


def test_the_fixture_experiments_are_summed_up_as_one_pass_did(finished):
    store, ids = finished
    kinds = set()
    for exp_id in ids.values():
        summary = store.grades.summary(exp_id)
        assert summary == _by_pass(store, exp_id)
        kinds |= {k for _, k, _, _ in summary}
    assert {"rule", "judge", "pairwise"} <= kinds  # every kind of grader was met


@pytest.fixture
def rewritten(finished, tmp_path):
    """A copy of the fixture store whose two-arm experiment's grades take awkward shapes."""
    store, ids = finished
    store.conn.execute("PRAGMA wal_checkpoint(FULL)")
    shutil.copytree(store.path, tmp_path / "store")
    copy = open_store(tmp_path / "store")
    exp = ids["two-arm"]
    with copy.transaction() as conn:
        runs = [r for (r,) in conn.execute("SELECT id FROM runs WHERE experiment_id=? ORDER BY id", (exp,))]
        batch = conn.execute("SELECT batch_id FROM experiments WHERE id=?", (exp,)).fetchone()[0]

        def grade(run, grader, kind, status, passed, score):
            conn.execute(
                "INSERT INTO grades (experiment_id, batch_id, run_id, grader, kind, status, passed, score, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, '2026-01-01T00:00:00+00:00')",
                (exp, batch, run, grader, kind, status, passed, score),
            )

        # a grader whose first grade was replaced (its first latest grade is later, of another kind)
        grade(runs[0], "zeta", "rule", "ok", 1, 1.0)
        for run in runs:
            grade(run, "zeta", "judge", "ok", 1, 0.5)
        grade(runs[0], "zeta", "judge", "ok", None, 0.5)  # and a latest one without a verdict
        # a grader whose latest grades all failed, though an older one succeeded
        grade(runs[1], "broken", "judge", "ok", 1, 1.0)
        for run in runs[:5]:
            grade(run, "broken", "judge", "error", None, None)
        # a grader that only scores
        for run in runs[3:9]:
            grade(run, "scorer", "judge", "ok", None, 0.25)
        # a grader named like nothing else sorts: empty, and a name with a quote
        grade(runs[2], "", "rule", "ok", 0, 0.0)
        grade(runs[4], "it's", "rule", "error", None, None)
    yield copy, exp
    copy.close()


def test_rewritten_grades_are_summed_up_as_one_pass_did(rewritten):
    store, exp = rewritten
    summary = store.grades.summary(exp)
    assert summary == _by_pass(store, exp)
    flags = {g: (k, ok, v) for g, k, ok, v in summary}
    assert flags["broken"] == ("judge", 0, 0)
    assert flags["scorer"] == ("judge", 1, 0)
    assert flags["zeta"][0] == "judge" and flags["zeta"][1:] == (1, 1)
    assert flags[""] == ("rule", 1, 1) and flags["it's"] == ("rule", 0, 0)


def test_an_experiment_without_grades_has_no_graders(finished, tmp_path):
    store, _ = finished
    assert store.grades.summary(10**6) == []

"""What a snapshot read (`read_in_snapshot`) keeps for the next reader while nothing is written: the
case fields that metrics read inside theirs serve the comparison after them, as do the per-case counts
of the runs' codes (tests/store/test_kept_counts.py). A commit while the snapshot is open, or a
transaction around it, keeps nothing."""

from __future__ import annotations

import sqlite3

import pytest

from abbench.store import _light as light, open_store
from abbench.store._results import _FIELDS
from abbench.store.bulk._outcomes import KEPT_CODES
from tests.reads import statements
from tests.results import cases_of, make_experiment


@pytest.fixture(autouse=True)
def _nothing_kept():
    _FIELDS.clear()
    KEPT_CODES.clear()
    yield
    _FIELDS.clear()
    KEPT_CODES.clear()


@pytest.fixture
def exp(store):
    runs = [[True, False, True], [False, "exec_fail", True], ["pending", True, "cancelled"]] * 5
    return make_experiment(store, "kept", cases_of(15), {"A": runs, "B": runs[::-1]})


def _kept_fields(store, exp):
    return _FIELDS.kept((str(store.db_path), exp.dataset_id), store.state_stamp(), lambda a, b: a.same(b))


def _kept_counts(store, exp):
    return KEPT_CODES.kept((str(store.db_path), exp.id), store.state_stamp(), lambda a, b: a.same(b))


@pytest.mark.parametrize("read", ["load_run_flags", "table"])
def test_case_fields_read_in_a_snapshot_serve_the_next_reader(store, exp, read):
    getattr(store.runs, read)(exp.id)
    fields_, sql = statements(store, lambda: store.runs.case_fields(exp.id, [3, 1, 2], expected=False))
    assert not any("FROM cases" in s for s in sql)  # kept from the snapshot: not read again
    assert fields_.case_idx.tolist() == [1, 2, 3]
    assert fields_.case_id.tolist() == ["c001", "c002", "c003"]
    store.conn.execute("UPDATE cases SET domain='moved' WHERE idx=1")  # a write: read again
    fields_, sql = statements(store, lambda: store.runs.case_fields(exp.id, [1], expected=False))
    assert any("FROM cases" in s for s in sql)
    assert fields_.domain.tolist() == ["moved"]


def test_a_read_inside_the_callers_transaction_keeps_nothing(store, exp):
    with store.transaction():
        store.runs.load_run_flags(exp.id)
    assert _kept_fields(store, exp) is None and _kept_counts(store, exp) is None
    store.runs.load_run_flags(exp.id)
    assert _kept_fields(store, exp) is not None and _kept_counts(store, exp) is not None


@pytest.mark.parametrize("when", ["before the snapshot's first read", "after it"])
def test_a_commit_while_the_snapshot_is_open_keeps_nothing(store, exp, monkeypatch, when):
    distinct = light._distinct_answers  # the snapshot's first read

    def committing(*args):
        found = distinct(*args) if when == "after it" else None
        other = sqlite3.connect(store.db_path)
        other.execute("UPDATE cases SET domain='moved' WHERE idx=1")
        other.execute("UPDATE runs SET state='cancelled', passed=NULL WHERE id=(SELECT min(id) FROM runs)")
        other.commit()
        other.close()
        return found if when == "after it" else distinct(*args)

    monkeypatch.setattr(light, "_distinct_answers", committing)
    store.runs.load_run_flags(exp.id)
    monkeypatch.undo()
    assert _kept_fields(store, exp) is None and _kept_counts(store, exp) is None
    assert store.runs.case_fields(exp.id, [1]).domain.tolist() == ["moved"]
    other = open_store(store.path, create=False)
    assert (
        store.runs.load_run_flags(exp.id).domain.tolist() == other.runs.load_run_flags(exp.id).domain.tolist()
    )
    assert (
        store.runs.case_outcomes(exp.id).cancelled.tolist()
        == other.runs.case_outcomes(exp.id).cancelled.tolist()
    )
    other.close()

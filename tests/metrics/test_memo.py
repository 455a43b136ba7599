"""`experiment_metrics` keeps its latest figures while the store's state stays the same on the
connection that reads them (`Store.state_stamp`), and works them out again after any write: on the same
connection, from another process, or inside a transaction not committed yet."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from abbench.metrics import experiment_metrics
from abbench.store import open_store
from tests.results import cases_of, make_experiment


def _figures(m) -> str:
    return json.dumps(m.as_dict(), sort_keys=True, default=repr)


@pytest.fixture
def exp(store):
    runs = [[True, True], [False, True], [True, "exec_fail"], [False, False], ["pending", True]] * 4
    return make_experiment(store, "memo", cases_of(20), {"A": runs, "B": runs[::-1]})


def _fresh(store, exp_id):
    """The figures as another store object (its own connection, so nothing kept) reads them."""
    other = open_store(store.path, create=False)
    try:
        return experiment_metrics(exp_id, store=other)
    finally:
        other.close()


def _first_passed_run(store, exp_id: int) -> int:
    return int(
        store.conn.execute(
            "SELECT min(id) FROM runs WHERE experiment_id=? AND state='pass'", (exp_id,)
        ).fetchone()[0]
    )


def _fail(conn, run_id: int) -> None:
    conn.execute("UPDATE runs SET state='fail', passed=0, prediction='wrong', score=0 WHERE id=?", (run_id,))


def test_figures_read_again_without_a_write_are_the_ones_kept(store, exp):
    first = experiment_metrics(exp.id, store=store)
    assert experiment_metrics(exp.id, store=store) is first
    assert experiment_metrics(exp.id, store=store, arms=["B"]) is not first  # other options: their own
    assert _figures(first) == _figures(_fresh(store, exp.id))


def _fail_elsewhere(db, run_id: int) -> None:
    """`_fail` from another process."""
    script = (
        "import sqlite3, sys\n"
        "conn = sqlite3.connect(sys.argv[1])\n"
        "conn.execute(\"UPDATE runs SET state='fail', passed=0, prediction='wrong', score=0 WHERE id=?\", "
        "(int(sys.argv[2]),))\n"
        "conn.commit()\n"
    )
    subprocess.run([sys.executable, "-c", script, str(db), str(run_id)], check=True)


@pytest.mark.parametrize("where", ["same connection", "another process"])
def test_a_write_is_seen(store, exp, where):
    before = experiment_metrics(exp.id, store=store)
    run_id = _first_passed_run(store, exp.id)
    if where == "same connection":
        _fail(store.conn, run_id)  # autocommit: no transaction around it
    else:
        _fail_elsewhere(store.db_path, run_id)
    after = experiment_metrics(exp.id, store=store)
    assert after.arm("A").counts.passed == before.arm("A").counts.passed - 1
    assert _figures(after) == _figures(_fresh(store, exp.id))


def test_a_write_inside_a_transaction_is_seen_and_its_rollback_too(store, exp):
    before = experiment_metrics(exp.id, store=store)
    run_id = _first_passed_run(store, exp.id)
    with pytest.raises(RuntimeError), store.transaction() as conn:
        _fail(conn, run_id)
        inside = experiment_metrics(exp.id, store=store)
        assert inside.arm("A").counts.passed == before.arm("A").counts.passed - 1
        assert experiment_metrics(exp.id, store=store) is not inside  # nothing kept inside
        raise RuntimeError("roll back")
    # The rolled-back write still counts in total_changes: the figures are read again, as before it.
    after = experiment_metrics(exp.id, store=store)
    assert after is not inside and after is not before
    assert _figures(after) == _figures(before)
    assert experiment_metrics(exp.id, store=store) is after
    # A later transaction that writes nothing does not bring back the figures read inside the first.
    with store.transaction():
        assert _figures(experiment_metrics(exp.id, store=store)) == _figures(before)


def test_a_committed_transaction_is_seen(store, exp):
    before = experiment_metrics(exp.id, store=store)
    with store.transaction() as conn:
        _fail(conn, _first_passed_run(store, exp.id))
    after = experiment_metrics(exp.id, store=store)
    assert after.arm("A").counts.passed == before.arm("A").counts.passed - 1

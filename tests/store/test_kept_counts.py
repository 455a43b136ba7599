"""Each (arm, case)'s counts worked out from the runs' codes that `store.runs.load_run_flags` read are kept
while nothing is written, and `store.runs.case_outcomes` after it reads only the sums no code carries (the
results widget's gate compares the pair its figures were just read for).

Every sum must equal the one read afresh (another store object: its own connection, nothing kept), and
a write must be seen: on the same connection, from another process, or inside a transaction (a commit
while the flags' snapshot is open: tests/store/test_kept_reads.py). The runs are scripted to have every outcome, open runs beside finished ones in a
case, cost and tokens reported by some runs only, latencies whose sum depends on the order they are
added in, and fractional scores.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields

import numpy as np
import pytest

from abbench.store import CaseOutcomes, open_store
from abbench.store.bulk._outcomes import KEPT_CODES, _sums_table
from tests.reads import statements
from tests.results import cases_of, make_experiment, not_an_answer

PACKED = "16777216"
"""A constant of the packed outcome counts in `case_outcomes`' full query: seen in it, it was run."""


def _run(i: int, arm: int, rnd: int, kind: str):
    """A run scripted by its case, arm and round (`kind`: what the experiment's runs report)."""
    h = (i * 7 + arm * 13 + rnd * 5) % 19
    if kind == "waiting":
        return "pending"
    if (unanswered := not_an_answer(h, arm)) is not None:
        return unanswered
    if h == 4:  # executed, waiting for grading: an open run with a latency
        return {"state": "executed", "passed": None, "grade": None, "latency_ms": 0.1 + i / 3}
    out = {"passed": h % 4 != 0, "latency_ms": 10.0 + h / 3 + i / 7 + rnd * 0.1}
    if kind == "latency":  # the agent reports neither cost nor tokens (a python agent)
        return out | {"cost": None, "input_tokens": None, "output_tokens": None}
    out |= {
        "cost": None if h % 5 == 0 else 0.001 * h + 1e-9 * i,
        "input_tokens": None if h % 6 == 0 else 90 + h,
    }
    if kind == "scores":
        out["score"] = (h % 10) / 9
    return out


EXPERIMENTS = {"usage": ("A", "B", "C"), "latency": ("A", "B"), "scores": ("A", "B"), "waiting": ("A", "B")}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    store = open_store(tmp_path_factory.mktemp("kept") / "store")
    cases = cases_of(40)
    exps = {
        kind: make_experiment(
            store,
            kind,
            cases,
            {
                name: [[_run(i, a, r, kind) for r in range(3)] for i in range(40)]
                for a, name in enumerate(arms)
            },
            dataset=f"ds-{kind}",
        )
        for kind, arms in EXPERIMENTS.items()
    }
    yield store, exps
    store.close()


@pytest.fixture(autouse=True)
def _nothing_kept():
    KEPT_CODES.clear()
    yield
    KEPT_CODES.clear()


def _fresh(store, exp_id, arm_ids, scores):
    """`case_outcomes` read by another store object: its own connection, nothing kept for it."""
    other = open_store(store.path, create=False)
    try:
        return other.runs.case_outcomes(exp_id, arm_ids, scores=scores)
    finally:
        other.close()


def _assert_same(got: CaseOutcomes, want: CaseOutcomes) -> None:
    for f in fields(CaseOutcomes):
        a, b = getattr(got, f.name), getattr(want, f.name)
        assert a.dtype == b.dtype, f.name
        assert np.array_equal(a, b, equal_nan=True), f.name


def test_the_runs_have_what_the_sums_must_get_right(built):
    store, exps = built
    runs = store.runs.table(exps["usage"].id)
    assert set(runs.outcome.tolist()) == {0, 1, 2, 3, 4, 5}
    assert np.isnan(runs.cost).any() and not np.isnan(runs.cost).all()
    assert np.isnan(runs.tokens).any() and not np.isnan(runs.tokens).all()
    sums = store.runs.case_outcomes(exps["usage"].id)
    assert ((sums.runs > sums.passed + sums.failed + sums.cancelled) & (sums.passed > 0)).any()  # open beside
    # SQLite adds a case's latencies in its index's order, not the rounds': summed in round order, some
    # cases' sums differ in their last bits, so only the same query gives the same sums.
    _, case = np.unique(runs.arm_id * 1000 + runs.case_idx, return_inverse=True)
    in_rounds = np.bincount(case, weights=np.nan_to_num(runs.latency_ms))
    assert (in_rounds != sums.latency_ms).any()
    scored = store.runs.table(exps["scores"].id).score
    assert not np.isin(scored[~np.isnan(scored)], (0.0, 1.0)).all()


@pytest.mark.parametrize("kind", list(EXPERIMENTS))
@pytest.mark.parametrize("scores", [False, True])
@pytest.mark.parametrize(
    ("read", "asked"),
    [(None, None), (None, ["A", "B"]), (None, ["B"]), (["B", "A"], ["A", "B"]), (["B", "A"], ["B"])],
)
def test_sums_from_the_kept_counts_equal_those_read_afresh(built, kind, scores, read, asked):
    store, exps = built
    exp = exps[kind]
    arm_ids = None if asked is None else [exp.arm(a).id for a in asked]
    store.runs.load_run_flags(exp.id, arms=read)
    got, sql = statements(store, lambda: store.runs.case_outcomes(exp.id, arm_ids, scores=scores))
    assert not any(PACKED in s for s in sql)  # counted from the codes, not summed again
    if kind == "waiting":
        assert not any("GROUP BY" in s for s in sql)  # no run has a sum to read
    _assert_same(got, _fresh(store, exp.id, arm_ids, scores))


def test_counts_of_arms_the_flags_did_not_read_are_not_made_up(built):
    store, exps = built
    exp = exps["usage"]
    store.runs.load_run_flags(exp.id, arms=["A", "B"])
    for asked in (None, [exp.arm("A").id, exp.arm("C").id]):
        got, sql = statements(store, lambda: store.runs.case_outcomes(exp.id, asked))  # noqa: B023
        assert any(PACKED in s for s in sql)
        _assert_same(got, _fresh(store, exp.id, asked, True))


def _fail_a_passed_run(conn, exp_id: int) -> None:
    conn.execute(
        "UPDATE runs SET state='fail', passed=0, latency_ms=latency_ms + 1 WHERE id=(SELECT min(id) FROM runs "
        "WHERE experiment_id=? AND state='pass')",
        (exp_id,),
    )


def _write_elsewhere(db, exp_id: int) -> None:
    script = (
        "import sqlite3, sys\n"
        "conn = sqlite3.connect(sys.argv[1])\n"
        "conn.execute(\"UPDATE runs SET state='fail', passed=0, latency_ms=latency_ms + 1 WHERE id=(SELECT min(id) \"\n"
        "             \"FROM runs WHERE experiment_id=? AND state='pass')\", (int(sys.argv[2]),))\n"
        "conn.commit()\n"
    )
    subprocess.run([sys.executable, "-c", script, str(db), str(exp_id)], check=True)


def _counts_kept(tmp_path, name: str):
    """A store with experiment `name` (arms A and B, runs reporting usage) whose counts were read after
    its flags (and so kept): ``(store, experiment, counts)``."""
    store = open_store(tmp_path / "store")
    exp = make_experiment(
        store,
        name,
        cases_of(30),
        {a: [[_run(i, n, r, "usage") for r in range(3)] for i in range(30)] for n, a in enumerate("AB")},
    )
    store.runs.load_run_flags(exp.id)
    return store, exp, store.runs.case_outcomes(exp.id)


@pytest.mark.parametrize("where", ["same connection", "another process"])
def test_a_write_after_the_flags_read_is_seen(tmp_path, where):
    store, exp, before = _counts_kept(tmp_path, "w")
    if where == "same connection":
        _fail_a_passed_run(store.conn, exp.id)  # autocommit: no transaction around it
    else:
        _write_elsewhere(store.db_path, exp.id)
    after, sql = statements(store, lambda: store.runs.case_outcomes(exp.id))
    assert any(PACKED in s for s in sql)
    assert after.failed.sum() == before.failed.sum() + 1
    _assert_same(after, _fresh(store, exp.id, None, True))
    store.close()


def test_inside_a_transaction_the_counts_are_neither_kept_nor_used(tmp_path):
    store, exp, before = _counts_kept(tmp_path, "t")
    with pytest.raises(RuntimeError), store.transaction() as conn:
        _fail_a_passed_run(conn, exp.id)
        store.runs.load_run_flags(exp.id)  # read inside: nothing kept
        inside, sql = statements(store, lambda: store.runs.case_outcomes(exp.id))
        assert any(PACKED in s for s in sql)
        assert inside.failed.sum() == before.failed.sum() + 1
        raise RuntimeError("roll back")
    assert KEPT_CODES.kept((str(store.db_path), exp.id), store.state_stamp(), lambda a, b: a.same(b)) is None
    after, sql = statements(store, lambda: store.runs.case_outcomes(exp.id))
    assert any(PACKED in s for s in sql)
    _assert_same(after, before)
    store.close()


def test_sums_whose_rows_are_not_the_counts_pairs_give_way_to_the_full_read():
    """The rows of the sums read beside kept counts carry no arm and case: as many as the pairs, or none."""
    keys = (np.array([1, 1, 2]), np.array([0, 5, 0]))
    table = _sums_table([(1.5,), (2.0,), (0.25,)], ["latency"], keys)
    assert table is not None
    assert table["case_idx"].tolist() == [0, 5, 0] and table["latency"].tolist() == [1.5, 2.0, 0.25]
    assert table["cost"].tolist() == [-1.0] * 3  # not read: what the query gives when no run has one
    assert _sums_table([(1.5,), (2.0,)], ["latency"], keys) is None

"""Migration 10: an index serves the lookup of a case's runs by its id (the case view's first query)."""

from __future__ import annotations

from abbench.review import case_detail
from abbench.runner import create_experiment, run_experiment
from abbench.store import SCHEMA_VERSION, open_store
from abbench.types import Case


def test_case_lookup_uses_the_case_id_index_and_finds_the_case(tmp_path):
    store = open_store(tmp_path / "store")
    assert store.schema_version() == SCHEMA_VERSION >= 10
    cases = [Case(f"q{i:03d}", f"query {i}", "fast" if i % 2 else "slow") for i in range(30)]
    ds = store.datasets.save("lookup", cases, label_set=["fast", "slow"])
    exp = create_experiment(
        {"name": "lookup", "dataset": ds.fingerprint, "rounds": 2, "arms": {"a": {"agent": "builtin"}}},
        store=store,
    )
    run_experiment(exp.id, store=store)
    plan = " ".join(
        str(tuple(r))
        for r in store.query(
            "EXPLAIN QUERY PLAN SELECT case_idx FROM runs WHERE experiment_id=? AND case_id=? LIMIT 1",
            (exp.id, "q017"),
        )
    )
    assert "runs_experiment_case_id" in plan, plan
    assert store.analysis.case_position(exp.id, "q017") == 17
    detail = case_detail(exp.id, "q017", store=store)
    assert detail.case.case_id == "q017" and len(detail.runs) == 2
    assert {r.round for r in detail.runs} == {0, 1}
    store.close()


def test_a_store_at_version_7_gains_the_index(tmp_path):
    import sqlite3

    from abbench.store._migrations import migrate

    conn = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    migrate(conn, upto=7)
    assert not conn.execute("SELECT 1 FROM sqlite_master WHERE name='runs_experiment_case_id'").fetchone()
    assert 10 in migrate(conn)
    assert conn.execute("SELECT 1 FROM sqlite_master WHERE name='runs_experiment_case_id'").fetchone()
    conn.close()

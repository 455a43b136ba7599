"""The store folder, its migrations, and its transactions."""

from __future__ import annotations

import threading

import pytest

from abbench.errors import SchemaVersionError, StoreError
from abbench.store import SCHEMA_VERSION, open_store
from abbench.store._migrations import MIGRATIONS
from tests.old_stores import old_store


def test_new_store_has_folders_wal_and_foreign_keys(tmp_path):
    with open_store(tmp_path / "s") as store:
        for sub in ("snapshots", "transcripts", "uploads"):
            assert (tmp_path / "s" / sub).is_dir()
        assert store.query_one("PRAGMA journal_mode")[0] == "wal"
        assert store.query_one("PRAGMA foreign_keys")[0] == 1
        assert store.schema_version() == SCHEMA_VERSION
        tables = {r[0] for r in store.query("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {
            "datasets",
            "cases",
            "mapping_profiles",
            "snapshots",
            "experiments",
            "arms",
            "runs",
            "grades",
            "reviews",
            "run_events",
            "schema_migrations",
        } <= tables


def test_store_path_from_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("ABBENCH_STORE", str(tmp_path / "env-store"))
    with open_store() as store:
        assert store.path == tmp_path / "env-store"


def test_older_store_is_migrated(tmp_path):
    with open_store(old_store(tmp_path / "old", 1, "INSERT INTO meta VALUES ('kept', 'yes')")) as store:
        assert store.schema_version() == SCHEMA_VERSION
        assert [r[0] for r in store.query("SELECT version FROM schema_migrations ORDER BY version")] == [
            m.version for m in MIGRATIONS
        ]
        assert store.query_one("SELECT value FROM meta WHERE key='kept'")[0] == "yes"


def test_newer_store_is_refused(tmp_path):
    with open_store(tmp_path / "new") as store, store.transaction() as conn:
        conn.execute(
            "INSERT INTO schema_migrations VALUES (?, 'from the future', '2099-01-01')", (SCHEMA_VERSION + 1,)
        )
    with pytest.raises(SchemaVersionError, match="upgrade abbench"):
        open_store(tmp_path / "new")


def test_not_a_database_is_a_clear_error(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "abbench.db").write_bytes(b"this is not sqlite at all" * 100)
    with pytest.raises(StoreError, match="not an abbench database"):
        open_store(tmp_path / "bad")


def test_missing_store_refused_when_not_creating(tmp_path):
    with pytest.raises(StoreError, match="no abbench store"):
        open_store(tmp_path / "nothing", create=False)


def test_transaction_rolls_back_everything(store):
    with pytest.raises(RuntimeError), store.transaction() as conn:
        conn.execute("INSERT INTO meta VALUES ('a', '1')")
        with store.transaction():
            conn.execute("INSERT INTO meta VALUES ('b', '2')")
        raise RuntimeError("half way")
    assert store.query("SELECT * FROM meta") == []


def test_nested_transaction_failure_keeps_outer(store):
    with store.transaction() as conn:
        conn.execute("INSERT INTO meta VALUES ('a', '1')")
        with pytest.raises(ValueError), store.transaction():
            conn.execute("INSERT INTO meta VALUES ('b', '2')")
            raise ValueError
    assert [r[0] for r in store.query("SELECT key FROM meta")] == ["a"]


def test_concurrent_writers_do_not_fail(store):
    errors = []

    def write(n):
        try:
            for i in range(50):
                with store.transaction() as conn:
                    conn.execute("INSERT INTO meta VALUES (?, ?)", (f"{n}-{i}", "x"))
        except Exception as exc:  # pragma: no cover - the assertion below reports it
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert store.query_one("SELECT COUNT(*) FROM meta")[0] == 400


def test_migration_8_adds_the_activation_columns_empty(tmp_path):
    folder = old_store(
        tmp_path / "v7",
        7,
        "INSERT INTO datasets (id, fingerprint, name, content_hash, n_cases, created_at) "
        "VALUES (1, 'd@000000000000', 'd', '00', 1, '2026-01-01')",
        "INSERT INTO cases (dataset_id, idx, case_id, input) VALUES (1, 0, 'c1', 'hello')",
    )
    with open_store(folder) as store:
        assert store.schema_version() >= 8
        (case,) = store.datasets.load_cases(1)
        assert case.expected_skill is None
        columns = {r[1] for r in store.query("PRAGMA table_info(runs)")}
        assert {"skills_offered", "skills_loaded", "first_load_turn"} <= columns

"""Keys and owners in the store (migration 11) and the `abbench keys` commands: no server needed."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3

import pytest
from click.testing import CliRunner

from abbench.cli import cli
from abbench.errors import StoreError
from abbench.store import acting_as, current_user, open_store, pepper_path
from abbench.store._migrations import migrate
from tests.conftest import DEMO


def test_keys_create_prints_the_key_once_and_the_store_keeps_only_a_peppered_hash(tmp_path):
    store_dir = tmp_path / "st"
    runner = CliRunner()
    made = runner.invoke(
        cli, ["--store", str(store_dir), "keys", "create", "alice", "--scopes", "read,run", "--json"]
    )
    assert made.exit_code == 0, made.output
    key = json.loads(made.output)["key"]
    key_id, secret = key.split("_")[1], key.split("_", 2)[2]
    listed = runner.invoke(cli, ["--store", str(store_dir), "keys", "list", "--json"])
    assert key not in listed.output and secret not in listed.output
    assert json.loads(listed.output)[0]["scopes"] == ["read", "run"]
    raw = (store_dir / "abbench.db").read_bytes() + b"".join(
        p.read_bytes() for p in store_dir.glob("abbench.db-*") if p.is_file()
    )
    assert secret.encode() not in raw
    pepper = pepper_path(store_dir)
    assert oct(pepper.stat().st_mode & 0o777) == "0o600"
    with sqlite3.connect(store_dir / "abbench.db") as conn:
        stored = conn.execute("SELECT secret_hash FROM api_keys WHERE key_id=?", (key_id,)).fetchone()[0]
    # the hash is HMAC-SHA256 of the secret under the pepper file's text, checked independently
    assert (
        stored == hmac.new(pepper.read_text().strip().encode(), secret.encode(), hashlib.sha256).hexdigest()
    )
    with open_store(store_dir) as s:
        assert s.keys.authenticate(key).owner == "alice"
        assert s.keys.authenticate(key[:-1] + ("A" if key[-1] != "A" else "B")) is None
        assert s.keys.authenticate("abk_" + key_id + "_" + "x" * 40) is None
    revoked = runner.invoke(cli, ["--store", str(store_dir), "keys", "revoke", key_id])
    assert revoked.exit_code == 0 and "revoked" in revoked.output
    with open_store(store_dir) as s:
        assert s.keys.authenticate(key) is None


def test_a_pepper_others_can_read_is_refused_and_the_env_pepper_wins(tmp_path, monkeypatch):
    with open_store(tmp_path / "st") as s:
        s.keys.create("bob")
    pepper = pepper_path(tmp_path / "st")
    pepper.chmod(0o644)
    with open_store(tmp_path / "st") as s, pytest.raises(StoreError, match="chmod 600"):
        s.keys.create("bob")
    monkeypatch.setenv("ABBENCH_KEY_PEPPER", "from-the-environment")
    with open_store(tmp_path / "st2") as s:
        _, key = s.keys.create("carol", expires="never")
        assert s.keys.authenticate(key).expires_at is None
    assert not pepper_path(tmp_path / "st2").exists()


def test_bad_owner_scope_and_expiry_say_what_to_write(store):
    with pytest.raises(StoreError, match="scopes"):
        store.keys.create("a", scopes="read,write")
    with pytest.raises(StoreError, match="90d"):
        store.keys.create("a", expires="soon")
    with pytest.raises(StoreError, match="owner name"):
        store.keys.create("a b")
    key, _ = store.keys.create("a", expires="12h")
    assert key.active and key.expires_at > key.created_at


def test_a_local_store_is_owned_by_its_user_until_someone_else_is_granted(store):
    info = store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
    me = current_user()
    assert store.keys.holds("dataset", info.fingerprint, me)
    assert not store.keys.holds("dataset", info.fingerprint, "bob")
    store.keys.grant("dataset", info.fingerprint, "bob")  # bob brought the same bytes over HTTP
    assert store.keys.holds("dataset", info.fingerprint, me) and store.keys.holds(
        "dataset", info.fingerprint, "bob"
    )
    assert store.keys.held("dataset", "bob") == {info.fingerprint} == store.keys.held("dataset", me)
    with acting_as("carol"):
        assert current_user() == "carol"
        snap = store.snapshots.freeze(DEMO / "skills" / "fast-slow-routing-v1")
    assert current_user() == me
    assert store.keys.holds("snapshot", snap.hash, "carol") and not store.keys.holds(
        "snapshot", snap.hash, me
    )


def test_migration_11_gives_existing_rows_their_creator_as_owner(tmp_path):
    store_dir = tmp_path / "old"
    store_dir.mkdir()
    for sub in ("snapshots", "transcripts", "uploads"):
        (store_dir / sub).mkdir()
    conn = sqlite3.connect(store_dir / "abbench.db", isolation_level=None)
    migrate(conn, "old", upto=10)
    conn.execute(
        "INSERT INTO datasets (fingerprint, name, content_hash, n_cases, created_at, created_by) "
        "VALUES ('d@000000000000', 'd', 'h', 0, '2026-01-01', 'olduser')"
    )
    conn.close()
    with open_store(store_dir) as s:
        assert s.schema_version() >= 11
        assert s.keys.holds("dataset", "d@000000000000", "olduser")
        assert not s.keys.holds("dataset", "d@000000000000", os.environ.get("USER", "someone-else") + "-x")
        assert s.query_one("SELECT owner FROM datasets")["owner"] == "olduser"

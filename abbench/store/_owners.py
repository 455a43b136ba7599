"""Owners and API keys: who holds which dataset and snapshot, and the keys a server accepts.

A key reads ``abk_<key id>_<secret>``. The store keeps the key id (public, shown in lists) and an
HMAC-SHA256 of the secret under a *pepper* that is not in the store: ``$ABBENCH_KEY_PEPPER``, else a
file beside the store folder (``<store>.key-pepper``, mode 0600, made on first use). A copy of the
database alone therefore cannot be used to test guessed keys. The key itself is shown once, when it is
made, and never stored, logged or echoed.

Datasets and snapshots are content-addressed, so owners who bring the same bytes share one row; the
``holdings`` table says who may see it. A row nobody was granted (written by the CLI on a local store)
belongs to its ``created_by``: a local store is owned by the local user. Experiments carry their owner
in their own row; runs, reviews and exports follow their experiment.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from abbench import _actions as do
from abbench.errors import StoreError
from abbench.store._base import ACTING_USER, current_user, now_iso
from abbench.store._noun import Noun

PEPPER_ENV = "ABBENCH_KEY_PEPPER"
SCOPES = ("read", "run", "review", "admin")
"""What a key may do: read results, create and run experiments, add reviews, everything."""
KINDS = ("dataset", "snapshot")
_KEY = re.compile(r"^abk_([0-9a-f]{12})_([A-Za-z0-9_-]{20,100})$")
_OWNER = re.compile(r"^[\w.@+-]{1,100}$")
_DUMMY_HASH = "0" * 64


@contextmanager
def acting_as(owner: str) -> Iterator[None]:
    """Within the block (this thread or task), `current_user()` is `owner`: what is created belongs to it."""
    token = ACTING_USER.set(owner)
    try:
        yield
    finally:
        ACTING_USER.reset(token)


@dataclass(frozen=True)
class ApiKey:
    """A stored key, without its secret: who it acts for, what it may do, and until when."""

    key_id: str
    owner: str
    scopes: tuple[str, ...]
    created_at: str
    created_by: str | None
    expires_at: str | None
    revoked_at: str | None
    last_used_at: str | None

    @property
    def active(self) -> bool:
        """Neither revoked nor expired."""
        if self.revoked_at:
            return False
        return not (self.expires_at and self.expires_at <= now_iso())

    def allows(self, scope: str) -> bool:
        """Whether this key may do what `scope` names (``admin`` may do everything)."""
        return scope in self.scopes or "admin" in self.scopes

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready fields (never a secret: the store has none)."""
        out = asdict(self)
        out["scopes"] = list(self.scopes)
        out["active"] = self.active
        return out


def parse_scopes(text: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Scopes from ``read,run`` (or a list), checked and in their canonical order.

    Raises:
        StoreError: an unknown scope, or none at all.
    """
    items = text.split(",") if isinstance(text, str) else list(text)
    wanted = {s.strip().lower() for s in items if s.strip()}
    unknown = sorted(wanted - set(SCOPES))
    if unknown or not wanted:
        raise StoreError(
            f"unknown key scope(s) {', '.join(unknown) or '(none given)'}; give some of {', '.join(SCOPES)}, "
            "comma-separated (e.g. --scopes read,run)"
        )
    return tuple(s for s in SCOPES if s in wanted)


def parse_expiry(text: str | None) -> str | None:
    """The expiry time for ``90d``, ``12h``, ``30m`` or ``never`` (None), as an ISO-8601 UTC string.

    Raises:
        StoreError: not a number followed by d, h or m.
    """
    if text is None or text.strip().lower() in ("", "never", "none"):
        return None
    m = re.fullmatch(r"\s*(\d{1,5})\s*([dhm])\s*", text.lower())
    if not m or int(m.group(1)) == 0:
        raise StoreError(
            f"cannot read the expiry {text!r}; write a number of days, hours or minutes: 90d, 12h, 30m"
        )
    unit = {"d": "days", "h": "hours", "m": "minutes"}[m.group(2)]
    when = datetime.now(UTC) + timedelta(**{unit: int(m.group(1))})
    return when.isoformat(timespec="seconds")


def check_owner(owner: str) -> str:
    """`owner` when it is a usable owner name (letters, digits, ``. _ @ + -``).

    Raises:
        StoreError: empty, too long or with other characters.
    """
    if not _OWNER.match(owner or ""):
        raise StoreError(
            f"the owner name {owner!r} is not usable; use 1-100 letters, digits or . _ @ + - (e.g. team-search)"
        )
    return owner


def pepper_path(store_path: Path) -> Path:
    """Where the pepper file of the store at `store_path` lives: beside the folder, not inside it."""
    return store_path.parent / f"{store_path.name}.key-pepper"


def load_pepper(store_path: Path, *, create: bool) -> bytes:
    """The pepper: $ABBENCH_KEY_PEPPER, else the file beside the store (made, mode 0600, if `create`).

    Raises:
        StoreError: the file is readable by others (it must be 0600), or missing and not to be made.
    """
    env = os.environ.get(PEPPER_ENV)
    if env:
        return env.encode()
    path = pepper_path(store_path)
    if not path.exists():
        if not create:
            raise StoreError(
                f"no key pepper: set ${PEPPER_ENV} or create a key first (",
                do.create_key(),
                f"), which writes {path}",
            )
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise StoreError(
            f"the key pepper {path} can be read by others (mode {mode:o}); make it private: chmod 600 {path}"
        )
    return path.read_text().strip().encode()


def _digest(pepper: bytes, secret: str) -> str:
    return hmac.new(pepper, secret.encode(), hashlib.sha256).hexdigest()


def _key(row: Any) -> ApiKey:
    return ApiKey(
        key_id=row["key_id"],
        owner=row["owner"],
        scopes=tuple(s for s in row["scopes"].split(",") if s),
        created_at=row["created_at"],
        created_by=row["created_by"],
        expires_at=row["expires_at"],
        revoked_at=row["revoked_at"],
        last_used_at=row["last_used_at"],
    )


_TABLE = {"dataset": ("datasets", "fingerprint"), "snapshot": ("snapshots", "hash")}


class Keys(Noun):
    """Keys and holdings: `create_key`, `authenticate_key`, `grant`, `holds`, `held`."""

    _pepper: bytes | None = None

    def _key_pepper(self, create: bool) -> bytes:
        if self._pepper is None:
            self._pepper = load_pepper(self._store.path, create=create)
        return self._pepper

    def create(
        self,
        owner: str,
        *,
        scopes: str | tuple[str, ...] = ("read", "run", "review"),
        expires: str | None = None,
    ) -> tuple[ApiKey, str]:
        """Make a key for `owner`; returns it and the key text, which is never shown again.

        Raises:
            StoreError: a bad owner name, scope or expiry.
        """
        check_owner(owner)
        chosen = parse_scopes(scopes)
        expires_at = parse_expiry(expires)
        pepper = self._key_pepper(create=True)
        key_id, secret = secrets.token_hex(6), secrets.token_urlsafe(30)
        with self._store.transaction() as conn:
            conn.execute(
                "INSERT INTO api_keys (key_id, owner, secret_hash, scopes, created_at, created_by, expires_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    key_id,
                    owner,
                    _digest(pepper, secret),
                    ",".join(chosen),
                    now_iso(),
                    current_user(),
                    expires_at,
                ),
            )
        return self.get(key_id), f"abk_{key_id}_{secret}"

    def get(self, key_id: str) -> ApiKey:
        """The stored key `key_id` (the part after ``abk_``).

        Raises:
            StoreError: no such key.
        """
        row = self._store.query_one(
            "SELECT * FROM api_keys WHERE key_id=?", (key_id.removeprefix("abk_")[:12],)
        )
        if row is None:
            raise StoreError(
                f"no key {key_id!r} in {self._store.path}; list them with ",
                do.list_keys(),
                kind="key",
                name=key_id,
            )
        return _key(row)

    def all(self, owner: str | None = None) -> list[ApiKey]:
        """Every key (or `owner`'s), newest first."""
        sql = (
            "SELECT * FROM api_keys"
            + (" WHERE owner=?" if owner else "")
            + " ORDER BY created_at DESC, key_id"
        )
        return [_key(r) for r in self._store.query(sql, (owner,) if owner else ())]

    def revoke(self, key_id: str) -> ApiKey:
        """Revoke a key now (a server refuses it from its next request).

        Raises:
            StoreError: no such key.
        """
        key = self.get(key_id)
        with self._store.transaction() as conn:
            conn.execute(
                "UPDATE api_keys SET revoked_at=COALESCE(revoked_at, ?) WHERE key_id=?",
                (now_iso(), key.key_id),
            )
        return self.get(key.key_id)

    def authenticate(self, token: str) -> ApiKey | None:
        """The active key `token` is, or None (unknown, wrong secret, revoked, expired).

        Unknown keys cost the same HMAC as known ones, so timing does not tell them apart.
        """
        m = _KEY.match(token.strip())
        pepper = self._key_pepper(create=False)
        row = self._store.query_one("SELECT * FROM api_keys WHERE key_id=?", (m.group(1),)) if m else None
        secret = m.group(2) if m else token
        ok = hmac.compare_digest(_digest(pepper, secret), row["secret_hash"] if row else _DUMMY_HASH)
        if not ok or row is None:
            return None
        key = _key(row)
        return key if key.active else None

    def touch(self, key_id: str) -> None:
        """Record that the key was used now (at most once a minute is enough: callers throttle)."""
        with self._store.transaction() as conn:
            conn.execute("UPDATE api_keys SET last_used_at=? WHERE key_id=?", (now_iso(), key_id))

    # -- holdings ----------------------------------------------------------------------------------

    def grant(self, kind: str, ref: str, owner: str) -> None:
        """Let `owner` see the dataset (fingerprint) or snapshot (hash) `ref`.

        The first grant of a row made locally also grants its creator, who owned it until then.
        """
        table, column = _TABLE[kind]
        now = now_iso()
        with self._store.transaction() as conn:
            row = conn.execute(f"SELECT created_by FROM {table} WHERE {column}=?", (ref,)).fetchone()
            if row is None:
                raise StoreError(f"no {kind} {ref!r} to grant")
            held = conn.execute(
                "SELECT 1 FROM holdings WHERE kind=? AND ref=? LIMIT 1", (kind, ref)
            ).fetchone()
            owners = {owner} if held or not row["created_by"] else {owner, row["created_by"]}
            conn.executemany(
                "INSERT OR IGNORE INTO holdings (kind, ref, owner, granted_at) VALUES (?, ?, ?, ?)",
                [(kind, ref, o, now) for o in sorted(owners)],
            )
            conn.execute(f"UPDATE {table} SET owner=COALESCE(owner, ?) WHERE {column}=?", (owner, ref))

    def holds(self, kind: str, ref: str, owner: str) -> bool:
        """Whether `owner` may see the dataset or snapshot `ref` (see the module's docstring)."""
        table, column = _TABLE[kind]
        rows = self._store.query("SELECT owner FROM holdings WHERE kind=? AND ref=?", (kind, ref))
        if rows:
            return any(r["owner"] == owner for r in rows)
        row = self._store.query_one(f"SELECT created_by FROM {table} WHERE {column}=?", (ref,))
        return row is not None and row["created_by"] == owner

    def held(self, kind: str, owner: str) -> set[str]:
        """The refs (fingerprints or hashes) of every dataset or snapshot `owner` may see."""
        table, column = _TABLE[kind]
        granted = {
            r["ref"]
            for r in self._store.query("SELECT ref FROM holdings WHERE kind=? AND owner=?", (kind, owner))
        }
        local = self._store.query(
            f"SELECT {column} AS ref FROM {table} t WHERE created_by=? AND NOT EXISTS "
            f"(SELECT 1 FROM holdings h WHERE h.kind=? AND h.ref=t.{column})",
            (owner, kind),
        )
        return granted | {r["ref"] for r in local}

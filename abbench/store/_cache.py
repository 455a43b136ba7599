"""Store methods for the response cache: model replies kept by endpoint, model, request body and round.

The runner reads entries from its own thread and hands new ones, hits and forgotten keys to its
writer, which commits them with the run states (`cache_write`). No request header is ever passed
in, so the table cannot hold an API key; the replies themselves are redacted by the client.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from abbench._result import Result
from abbench.store._base import now_iso
from abbench.store._noun import Noun

_COLUMNS = (
    "key",
    "endpoint",
    "model",
    "round",
    "response",
    "streamed",
    "input_tokens",
    "output_tokens",
    "cost",
    "bytes",
    "created_at",
)


@dataclass(frozen=True)
class CacheEntry:
    """One kept model reply.

    Attributes:
        key: The request's key (SHA-256 over endpoint, model, body and round).
        endpoint: The API root (no credentials).
        model: The model the request named.
        round: The round it belongs to.
        response: The completion as JSON text.
        streamed: It came as a stream (kept as its assembled completion).
        input_tokens: Prompt tokens (None: not reported).
        output_tokens: Completion tokens (None: not reported).
        cost: What the call cost when it was made (None: unknown).
        created_at: When it was kept (UTC).
        hits: Calls it has answered since.
        cost_saved: What those calls would have cost.
    """

    key: str
    endpoint: str
    model: str
    round: int
    response: str
    streamed: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    created_at: str = ""
    hits: int = 0
    cost_saved: float = 0.0


@dataclass(frozen=True)
class CacheModelStats(Result):
    """The cache's figures for one endpoint and model (see `CacheStats`)."""

    endpoint: str
    model: str
    entries: int
    bytes: int
    hits: int
    cost_saved: float

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view: the fields, the cost rounded to a millionth."""
        return Result.as_dict(self) | {"cost_saved": round(self.cost_saved, 6)}


@dataclass(frozen=True)
class CacheStats(Result):
    """What the response cache holds and has saved.

    Attributes:
        entries: Replies kept.
        bytes: Their size (the response text, UTF-8).
        hits: Calls answered from the cache.
        cost_saved: What those calls would have cost (known costs only).
        cost_kept: What the kept replies cost when they were made.
        oldest: When the oldest entry was kept (None: empty).
        newest: When the newest was.
        by_model: The same per endpoint and model, most entries first.
    """

    entries: int
    bytes: int
    hits: int
    cost_saved: float
    cost_kept: float
    oldest: str | None
    newest: str | None
    by_model: tuple[CacheModelStats, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view: the fields, the costs rounded to a millionth."""
        return Result.as_dict(self) | {
            "cost_saved": round(self.cost_saved, 6),
            "cost_kept": round(self.cost_kept, 6),
        }


class Cache(Noun):
    """The response cache (part of ``store.cache``)."""

    def lookup(self, key: str) -> CacheEntry | None:
        """The reply kept under `key`, or None."""
        row = self._store.query_one(
            "SELECT key, endpoint, model, round, response, streamed, input_tokens, output_tokens, cost, "
            "created_at, hits, cost_saved FROM response_cache WHERE key=?",
            (key,),
        )
        if row is None:
            return None
        return CacheEntry(
            row[0],
            row[1],
            row[2],
            row[3],
            row[4],
            bool(row[5]),
            row[6],
            row[7],
            row[8],
            row[9],
            row[10],
            row[11],
        )

    def write(
        self,
        saves: Sequence[CacheEntry] = (),
        hits: Iterable[tuple[str, float | None]] = (),
        forgets: Iterable[str] = (),
        conn: sqlite3.Connection | None = None,
    ) -> None:
        """Keep `saves` (replacing entries under the same key), count `hits` as ``(key, cost saved)``
        and drop `forgets`, in `conn`'s open transaction or a new one."""
        if conn is None:
            with self._store.transaction() as own:
                self.write(saves, hits, forgets, own)
            return
        at = now_iso()
        if saves:
            conn.executemany(
                f"INSERT OR REPLACE INTO response_cache ({', '.join(_COLUMNS)}) "
                f"VALUES ({','.join('?' * len(_COLUMNS))})",
                [
                    (
                        e.key,
                        e.endpoint,
                        e.model,
                        e.round,
                        e.response,
                        int(e.streamed),
                        e.input_tokens,
                        e.output_tokens,
                        e.cost,
                        len(e.response.encode("utf-8")),
                        e.created_at or at,
                    )
                    for e in saves
                ],
            )
        counted: dict[str, list[float]] = {}
        for key, saved in hits:
            entry = counted.setdefault(key, [0, 0.0])
            entry[0] += 1
            entry[1] += saved or 0.0
        if counted:
            conn.executemany(
                "UPDATE response_cache SET hits = hits + ?, cost_saved = cost_saved + ?, last_hit_at=? "
                "WHERE key=?",
                [(n, saved, at, key) for key, (n, saved) in counted.items()],
            )
        forgets = list(forgets)
        if forgets:
            conn.executemany("DELETE FROM response_cache WHERE key=?", [(k,) for k in forgets])

    def stats(self) -> CacheStats:
        """What the response cache holds and has saved, in total and per endpoint and model."""
        rows = self._store.query(
            "SELECT endpoint, model, count(*), total(bytes), total(hits), total(cost_saved), total(cost), "
            "min(created_at), max(created_at) FROM response_cache GROUP BY endpoint, model "
            "ORDER BY count(*) DESC, endpoint, model"
        )
        by_model = tuple(
            CacheModelStats(r[0], r[1], int(r[2]), int(r[3]), int(r[4]), float(r[5])) for r in rows
        )
        return CacheStats(
            entries=sum(m.entries for m in by_model),
            bytes=sum(m.bytes for m in by_model),
            hits=sum(m.hits for m in by_model),
            cost_saved=float(sum(m.cost_saved for m in by_model)),
            cost_kept=float(sum(r[6] for r in rows)),
            oldest=min((r[7] for r in rows), default=None),
            newest=max((r[8] for r in rows), default=None),
            by_model=by_model,
        )

    def clear(self, older_than: timedelta | None = None, *, model: str | None = None) -> int:
        """Drop kept replies — all of them, or those kept more than `older_than` ago, or only `model`'s —
        and return how many went."""
        where, params = [], []
        if older_than is not None:
            cutoff = (datetime.now(UTC) - older_than).isoformat(timespec="seconds")
            where.append("created_at < ?")
            params.append(cutoff)
        if model is not None:
            where.append("model = ?")
            params.append(model)
        sql = "DELETE FROM response_cache" + (f" WHERE {' AND '.join(where)}" if where else "")
        with self._store.transaction() as conn:
            return conn.execute(sql, params).rowcount

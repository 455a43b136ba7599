"""Who is asking: the key in ``Authorization: Bearer``, its scopes, its rate, and the actor named."""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from fastapi import Request

from abbench.server._problems import Problem, problem_response
from abbench.store import ApiKey, Store

log = logging.getLogger(__name__)

ACTOR_HEADER = "X-Abbench-Actor"
_TOUCH_EVERY_S = 60.0


@dataclass(frozen=True)
class Caller:
    """The key a request came with: its owner acts, and `actor` (the person or job named) is recorded."""

    key: ApiKey
    actor: str

    @property
    def owner(self) -> str:
        """The owner everything this request reads or makes belongs to."""
        return self.key.owner


class RateLimiter:
    """A token bucket per key: `per_minute` requests a minute, bursts of as many."""

    def __init__(self, per_minute: int):
        self.rate = per_minute / 60.0
        self.capacity = float(per_minute)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, key_id: str) -> float:
        """Take one request's token; returns 0, or the seconds to wait before one is free."""
        now = time.monotonic()
        with self._lock:
            tokens, since = self._buckets.get(key_id, (self.capacity, now))
            tokens = min(self.capacity, tokens + (now - since) * self.rate)
            if tokens >= 1.0:
                self._buckets[key_id] = (tokens - 1.0, now)
                return 0.0
            self._buckets[key_id] = (tokens, now)
            return (1.0 - tokens) / self.rate


_KEY_ID = re.compile(rb"^\s*bearer\s+abk_([0-9a-f]{12})_", re.IGNORECASE)
_BODIES = ("POST", "PUT", "PATCH")
STREAMS_PER_REQUEST = 4
"""Event streams one key may hold open, as a multiple of its requests in flight."""


class InFlight:
    """ASGI middleware: who may send a body, and how many requests one key has in flight.

    - A request with a body is answered 401 before its body is read unless its key is valid: nobody
      without a key makes the server read (and spool) an upload it would refuse anyway.
    - At most `per_key` requests of one key are in flight at once, and `STREAMS_PER_REQUEST` times as
      many event streams; more answer 429. A request holds a worker thread (or a work process) while
      it runs: a caller sending forty slow requests at once would otherwise hold every thread, and
      every other caller would wait.
    """

    def __init__(self, app: Any, per_key: int):
        self.app = app
        self.per_key = per_key
        self._counts: dict[tuple[bytes, bool], int] = {}

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        path = str(scope.get("path", ""))
        if scope["type"] != "http" or not path.startswith("/api/") or path == "/api/health":
            await self.app(scope, receive, send)
            return
        header = dict(scope.get("headers") or []).get(b"authorization", b"")
        if scope.get("method") in _BODIES and not self._valid(scope, header):
            await self._refuse(scope, receive, send, 401, _unauthorized(_NO_KEY).detail, "unauthorized")
            return
        found = _KEY_ID.match(header)
        if found is None:
            await self.app(scope, receive, send)  # no key: the route says what is missing
            return
        stream = path.endswith("/events")
        slot = (found.group(1), stream)
        limit = self.per_key * (STREAMS_PER_REQUEST if stream else 1)
        if self._counts.get(slot, 0) >= limit:
            what = "event streams open" if stream else "requests in flight"
            detail = (
                f"key {slot[0].decode()} has {limit} {what}, this server's limit at once (--max-inflight); "
                "send the next when one is answered"
            )
            await self._refuse(scope, receive, send, 429, detail, "too many requests")
            return
        self._counts[slot] = self._counts.get(slot, 0) + 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._counts[slot] -= 1
            if not self._counts[slot]:
                del self._counts[slot]

    @staticmethod
    def _valid(scope: Any, header: bytes) -> bool:
        kind, _, token = header.decode("latin-1").partition(" ")
        if kind.lower() != "bearer" or not token.strip():
            return False
        keys: KeyCache = scope["app"].state.keys  # the application, set in the scope before any middleware
        return keys.check(token.strip()) is not None

    @staticmethod
    async def _refuse(scope: Any, receive: Any, send: Any, status: int, detail: str, title: str) -> None:
        response = problem_response(status, title, detail, scope.get("path", ""))
        if status == 429:
            response.headers["Retry-After"] = "1"
        else:
            response.headers["WWW-Authenticate"] = 'Bearer realm="abbench"'
        await response(scope, receive, send)


class KeyCache:
    """Authenticates keys against the store, and notes their use at most once a minute.

    The check is one indexed read, quick enough for the event loop; the note is a write, which may
    wait for a runner's write lock, so it is made on a thread of its own and never delays a request.
    """

    def __init__(self, store: Store):
        self.store = store
        self._touched: dict[str, float] = {}

    def check(self, token: str) -> ApiKey | None:
        """The active key `token` is, or None."""
        key = self.store.keys.authenticate(token)
        if key is not None and time.monotonic() - self._touched.get(key.key_id, -1e9) > _TOUCH_EVERY_S:
            self._touched[key.key_id] = time.monotonic()
            threading.Thread(
                target=self._touch, args=(key.key_id,), name="abbench-key-use", daemon=True
            ).start()
        return key

    def _touch(self, key_id: str) -> None:
        try:
            self.store.keys.touch(key_id)
        except Exception as exc:  # a busy store: the next use notes it
            log.warning("key %s: its last use was not recorded (%s)", key_id, exc)
        finally:
            self.store.close_thread_connection()


_NO_KEY = (
    "this route needs a valid API key: send Authorization: Bearer abk_...; make one with "
    "abbench keys create OWNER on the server's store"
)


def _unauthorized(detail: str) -> Problem:
    return Problem(401, "unauthorized", detail, headers={"WWW-Authenticate": 'Bearer realm="abbench"'})


def _actor(request: Request, key: ApiKey) -> str:
    raw = (request.headers.get(ACTOR_HEADER) or "").strip()
    if not raw:
        return key.owner
    if len(raw) > 200 or any(ord(c) < 32 for c in raw):
        raise Problem(
            422,
            "invalid header",
            f"{ACTOR_HEADER} must be one line of at most 200 characters (a person or job)",
        )
    return raw


def require(scope: str) -> Callable[[Request], Awaitable[Caller]]:
    """A dependency: the request's key, which must be active and allow `scope`, within its rate.

    Asynchronous, so that it runs on the event loop: a request then crosses to a worker thread once
    (for its route), not twice.
    """

    async def dependency(request: Request) -> Caller:
        header = request.headers.get("authorization", "")
        kind, _, token = header.partition(" ")
        if kind.lower() != "bearer" or not token.strip():
            raise _unauthorized(
                "this route needs an API key: send Authorization: Bearer abk_...; make one with "
                "abbench keys create OWNER on the server's store"
            )
        keys: KeyCache = request.app.state.keys
        key = keys.check(token)
        if key is None:
            raise _unauthorized(
                "the API key is unknown, revoked or expired; ask for a new one (abbench keys create)"
            )
        wait = request.app.state.limiter.take(key.key_id)
        if wait > 0:
            raise Problem(
                429,
                "too many requests",
                f"key {key.key_id} is over its rate limit; wait {math.ceil(wait)} s and try again",
                headers={"Retry-After": str(max(1, math.ceil(wait)))},
            )
        if not key.allows(scope):
            raise Problem(
                403,
                "scope missing",
                f"key {key.key_id} has scopes {','.join(key.scopes)}; this route needs {scope!r} "
                f"(abbench keys create {key.owner} --scopes {','.join((*key.scopes, scope))})",
            )
        return Caller(key, _actor(request, key))

    return dependency

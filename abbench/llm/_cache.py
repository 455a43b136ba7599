"""The response cache of model calls: its modes, its key, and the interface a store implements.

A model call costs money and time; a resumed, retried or re-graded experiment should not pay twice
for a call it has already made. The cache keys a reply by the endpoint, the model, the full request
body and the **round** — never the attempt — so repeats of a case stay independent samples while a
second attempt of the same run (a retry, a resume after a pause or a crash, a re-grade) gets the
replies it already paid for.

Modes (``cache:`` per experiment, per arm, per judge):

- ``on``: answer from the cache when it has the reply; otherwise call and keep the reply.
- ``off``: neither read nor write.
- ``read-only``: answer from the cache when it can; a fresh reply is not kept.
- ``refresh``: always call, and replace what the cache held.

Defaults (`default_cache_mode`): **on** for judges and for agents at ``temperature: 0``, **off**
otherwise. A judge at temperature 0 (the default) is meant to be a fixed function of what it judges,
and an agent at temperature 0 asks for its most likely reply: reading those from the cache changes
no figure and saves their cost. An agent sampled at a higher temperature (or the endpoint's default,
which is usually 1) is *measured* for its spread: serving a repeat from the cache would hide it, so it
is cached only when the arm says ``cache: on`` (and even then per round, so rounds stay distinct).

Two identical calls in flight at once (two arms whose judge prompts match, a pair whose answers are
the same in both orders) are asked once: the second waits for the first and takes its reply from the
cache (`asking_now`, `one_asking`), so what an experiment pays does not depend on which call happened
to start first.

Only replies that parsed as a chat completion are kept: an error, a 429 (until a retry succeeds), a
stream cut in the middle never are. A streamed reply is kept as the completion it assembled to. The
key hashes the endpoint and the body; the stored row holds the reply (with the key redacted, as every
text the client keeps), its usage and cost — never a request header, so never the API key.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

from abbench.errors import UsageError

CACHE_MODES = ("on", "off", "read-only", "refresh")
"""What a ``cache:`` setting accepts."""

# Fields of a request that say how the reply travels, not what it is: a streamed and a plain call of
# the same body get the same completion, so they share an entry.
_TRANSPORT_FIELDS = ("stream", "stream_options")


def check_cache_mode(value: Any, where: str = "cache") -> str | None:
    """`value` as a cache mode (None stays None: not set, the default applies).

    Raises:
        UsageError: it is not one of `CACHE_MODES` (the message says where and lists them).
    """
    if value is None:
        return None
    if value is True:
        return "on"
    if value is False:
        return "off"
    mode = str(value).strip().lower().replace("_", "-")
    if mode == "readonly":
        mode = "read-only"
    if mode not in CACHE_MODES:
        raise UsageError(f"{where}: {value!r} is not a cache mode; choose one of: {', '.join(CACHE_MODES)}")
    return mode


def default_cache_mode(temperature: float | None, *, judge: bool = False) -> str:
    """The mode when nothing says one: ``on`` for judges and for ``temperature: 0``, else ``off``
    (see the module's docstring for why)."""
    if judge:
        return "on"
    return "on" if temperature is not None and float(temperature) == 0.0 else "off"


def cache_endpoint(base_url: str) -> str:
    """`base_url` as the cache records it: no user name, password, query or fragment (a key can hide there)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/"), "", ""))


def cache_key(base_url: str, model: str, body: Mapping[str, Any], round: int, scope: str = "") -> str:
    """The cache key of one request: SHA-256 over the endpoint, the model, the canonical body (keys
    sorted, transport fields dropped), the round and the scope (`CallCache.scope`; none: not in the key)."""
    request = {k: v for k, v in body.items() if k not in _TRANSPORT_FIELDS}
    keyed: dict[str, Any] = {"endpoint": base_url.rstrip("/"), "model": model, "round": int(round)}
    if scope:
        keyed["scope"] = scope
    canonical = json.dumps(
        {**keyed, "body": request},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class CachedReply:
    """One kept reply.

    Attributes:
        key: Its `cache_key`.
        endpoint: The API root it came from (`cache_endpoint`: no credentials).
        model: The model the request named.
        round: The round it belongs to.
        response: The completion as JSON text (a stream's assembled completion), redacted.
        input_tokens: Prompt tokens it reported (None: not reported).
        output_tokens: Completion tokens, likewise.
        cost: What it cost when it was made (None: unknown).
        streamed: It came as a stream.
    """

    key: str
    endpoint: str
    model: str
    round: int
    response: str
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    streamed: bool = False


@runtime_checkable
class ResponseCache(Protocol):
    """Where replies are kept: the store implements it for runs (``abbench.runner``); `MemoryCache` in memory."""

    def lookup(self, key: str) -> CachedReply | None:
        """The reply kept under `key`, or None."""
        ...

    def save(self, reply: CachedReply) -> None:
        """Keep `reply` (replacing any under its key)."""
        ...

    def hit(self, reply: CachedReply, saved: float | None) -> None:
        """Count that `reply` answered a call, saving `saved` (its cost now; None: unknown)."""
        ...

    def forget(self, key: str) -> None:
        """Drop the reply kept under `key` (an answer that could not be read is asked again next time)."""
        ...


class MemoryCache:
    """A `ResponseCache` in a dict: for calls outside a store (``abbench try``, tests, notebooks)."""

    def __init__(self) -> None:
        self.replies: dict[str, CachedReply] = {}
        self.hits = 0
        self.saved = 0.0

    def lookup(self, key: str) -> CachedReply | None:
        """The reply kept under `key`, or None."""
        return self.replies.get(key)

    def save(self, reply: CachedReply) -> None:
        """Keep `reply`."""
        self.replies[reply.key] = reply

    def hit(self, reply: CachedReply, saved: float | None) -> None:
        """Count a hit."""
        self.hits += 1
        self.saved += saved or 0.0

    def forget(self, key: str) -> None:
        """Drop one reply."""
        self.replies.pop(key, None)


@dataclass(frozen=True)
class CallCache:
    """The cache as one run (or one grading) uses it: where replies are kept, the mode, the round.

    Attributes:
        cache: Where replies are kept.
        round: The run's round (part of every key).
        mode: One of `CACHE_MODES`; None leaves the choice to the caller's default
            (`default_cache_mode`).
        scope: Part of every key when set: calls in different scopes never share a reply (a judge
            scores each arm's runs in the arm's own scope, so arms stay apart).
    """

    cache: ResponseCache
    round: int = 0
    mode: str | None = None
    scope: str = ""

    def resolved(self, default: str) -> str:
        """The mode in force: this one's, or `default` when it names none."""
        return self.mode or default


# the calls being asked right now, by (cache, key): a twin waits for the first instead of asking again
_ASKING: dict[tuple[int, str], asyncio.Future[None]] = {}


def asking_now(cache: CallCache, key: str) -> asyncio.Future[None] | None:
    """The call with `key` that this event loop is asking through `cache` right now (None: none is).

    Await it (through `asyncio.shield`), then look in the cache: an answer that was kept is there; a
    failed or unkept one is not, and the caller asks itself.
    """
    asking = _ASKING.get((id(cache.cache), key))
    if asking is None or asking.done() or asking.get_loop() is not asyncio.get_running_loop():
        return None
    return asking


@contextlib.contextmanager
def one_asking(cache: CallCache, key: str) -> Iterator[None]:
    """Mark the call with `key` as being asked through `cache` while the block runs (see `asking_now`)."""
    slot = (id(cache.cache), key)
    if slot in _ASKING:  # asked on another event loop: not shared
        yield
        return
    asking: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    _ASKING[slot] = asking
    try:
        yield
    finally:
        del _ASKING[slot]
        asking.set_result(None)

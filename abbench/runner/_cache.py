"""The response cache as the runner offers it to agents and judges: the store's table, written in batches.

Agents and judges never touch the store: the runner hands each run (and each grading) a
`abbench.llm.CallCache` over `StoreResponseCache`, which reads the store's ``response_cache`` table and
sends what it keeps, hits and forgets to the runner's writer, committed with the run states. Replies
kept in this pass are answered from memory too, so a retry a moment later finds them before the writer
has committed them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from abbench.llm import CachedReply, CallCache, check_cache_mode
from abbench.store import CacheEntry, Store


class StoreResponseCache:
    """A `abbench.llm.ResponseCache` over the store, writing through the runner's writer.

    Args:
        store: The open store (read on the calling thread).
        writer: Returns the writer to submit changes to (it is made after the cache).
    """

    def __init__(self, store: Store, writer: Callable[[], Any]):
        self.store = store
        self._writer = writer
        self._fresh: dict[str, CachedReply | None] = {}  # kept (or dropped, None) in this pass

    def lookup(self, key: str) -> CachedReply | None:
        """The reply kept under `key`, or None."""
        if key in self._fresh:
            return self._fresh[key]
        entry = self.store.cache_lookup(key)
        if entry is None:
            return None
        return CachedReply(
            key=entry.key,
            endpoint=entry.endpoint,
            model=entry.model,
            round=entry.round,
            response=entry.response,
            input_tokens=entry.input_tokens,
            output_tokens=entry.output_tokens,
            cost=entry.cost,
            streamed=entry.streamed,
        )

    def save(self, reply: CachedReply) -> None:
        """Keep `reply` (committed with the next batch)."""
        self._fresh[reply.key] = reply
        self._writer().cache(
            "save",
            CacheEntry(
                key=reply.key,
                endpoint=reply.endpoint,
                model=reply.model,
                round=reply.round,
                response=reply.response,
                streamed=reply.streamed,
                input_tokens=reply.input_tokens,
                output_tokens=reply.output_tokens,
                cost=reply.cost,
            ),
        )

    def hit(self, reply: CachedReply, saved: float | None) -> None:
        """Count that `reply` answered a call."""
        self._writer().cache("hit", (reply.key, saved))

    def forget(self, key: str) -> None:
        """Drop the reply under `key`."""
        self._fresh[key] = None
        self._writer().cache("forget", key)


class CacheMixin:
    """The runner's response cache: the modes of the experiment and its arms; mixed into the scheduler."""

    def _prepare_cache(self) -> None:
        spec = self.exp.spec
        self.response_cache = StoreResponseCache(self.store, lambda: self.writer)
        self._cache_mode = check_cache_mode(spec.get("cache"), "cache")
        arms = spec.get("arms") or {}
        self._arm_cache = {
            a.id: check_cache_mode((arms.get(a.name) or {}).get("cache"), f"arms.{a.name}.cache")
            or self._cache_mode
            for a in self.exp.arms
        }

    def _run_cache(self, arm_id: int, round: int) -> CallCache:
        """What one run's model calls go through (no mode: the adapter's default applies)."""
        return CallCache(self.response_cache, round, self._arm_cache.get(arm_id))

    def _judge_cache(self, round: int) -> CallCache:
        """What the judges' calls about a run of `round` go through (a judge's own `cache` wins)."""
        return CallCache(self.response_cache, round, self._cache_mode)


def run_cache_fields(spending: Any) -> dict[str, Any]:
    """The run's cache columns after an execution: how many of its model calls the cache answered,
    and the cost they saved (NULL when none did, so a re-run clears what an earlier one recorded)."""
    return {"cached_calls": spending.cached_calls or None, "cost_saved": spending.cost_saved}


def attempt_cache_spend(spending: Any) -> dict[str, Any]:
    """What an executed attempt records as spent when the cache answered some of its calls: the
    tokens and cost it paid for (the run keeps the answer's), and what it saved."""
    if not spending.cached_calls:
        return {}
    usage = spending.usage
    return {
        "input_tokens": usage.input_tokens if usage is not None else None,
        "output_tokens": usage.output_tokens if usage is not None else None,
        "cost": spending.cost,
        "cached_calls": spending.cached_calls,
        "cost_saved": spending.cost_saved,
    }

"""The response cache as the runner offers it to agents and judges: the store's table, written in batches.

Agents and judges never touch the store: the runner hands each run (and each grading) a
`abbench.llm.CallCache` over `StoreResponseCache`, which reads the store's ``response_cache`` table and
sends what it keeps, hits and forgets to the runner's writer, committed with the run states. Replies
kept in this pass are answered from memory too, so a retry a moment later finds them before the writer
has committed them.
"""

from __future__ import annotations

import os
import re
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import fields
from datetime import timedelta
from pathlib import Path
from typing import Any

from abbench.errors import UsageError
from abbench.llm import CachedReply, CallCache, check_cache_mode
from abbench.store import (
    AttemptWrite,
    CacheEntry,
    CacheStats,
    Experiment,
    RunChange,
    RunSettings,
    Store,
    open_store,
)

FRESH_LIMIT = 20_000
"""Replies kept in this pass that lookups answer from memory (older ones are read from the store)."""

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks", "": "days"}

_REPLY_FIELDS = tuple(f.name for f in fields(CachedReply))
"""A kept reply's fields: each is the store's `CacheEntry` field of the same name (the entry adds when
it was kept and what it answered since)."""


def _reply_fields(kept: CachedReply | CacheEntry) -> dict[str, Any]:
    """What a kept reply and the store's entry for it share, field for field."""
    return {name: getattr(kept, name) for name in _REPLY_FIELDS}


def parse_age(value: str | float | timedelta) -> timedelta:
    """An age such as ``7d``, ``12h``, ``30m``, ``90s`` or ``2w`` (a bare number is days) as a timedelta.

    Raises:
        UsageError: it is not such an age.
    """
    if isinstance(value, timedelta):
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return timedelta(days=float(value))
    match = _DURATION.match(str(value))
    if not match:
        raise UsageError(
            f"{value!r} is not an age; write a number with a unit: 90s, 30m, 12h, 7d or 2w (a bare number is days)"
        )
    return timedelta(**{_UNITS[match.group(2).lower()]: float(match.group(1))})


def cache_stats(*, store: str | os.PathLike[str] | Store | None = None) -> CacheStats:
    """What the store's response cache holds (entries, bytes) and has saved (hits, cost), per model too."""
    return open_store(store).cache.stats()


def clear_cache(
    older_than: str | float | timedelta | None = None,
    *,
    model: str | None = None,
    store: str | os.PathLike[str] | Store | Path | None = None,
) -> int:
    """Drop replies from the store's response cache and return how many went.

    Args:
        older_than: Only replies kept longer ago than this (``7d``, ``12h``, a timedelta); None: all.
        model: Only this model's replies.
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).

    Raises:
        UsageError: `older_than` is not an age.
    """
    age = parse_age(older_than) if older_than is not None else None
    return open_store(store).cache.clear(age, model=model)


class StoreResponseCache:
    """A `abbench.llm.ResponseCache` over the store, writing through the runner's writer.

    Args:
        store: The open store (read on the calling thread).
        writer: Returns the writer to submit changes to (it is made after the cache).
    """

    def __init__(self, store: Store, writer: Callable[[], Any]):
        self.store = store
        self._writer = writer
        # kept (or dropped: None) in this pass, until the writer has surely committed them: the newest
        # FRESH_LIMIT, far more than one writer batch, so memory stays flat over a long experiment
        self._fresh: OrderedDict[str, CachedReply | None] = OrderedDict()

    def _remember(self, key: str, reply: CachedReply | None) -> None:
        self._fresh[key] = reply
        self._fresh.move_to_end(key)
        while len(self._fresh) > FRESH_LIMIT:
            self._fresh.popitem(last=False)

    def lookup(self, key: str) -> CachedReply | None:
        """The reply kept under `key`, or None."""
        if key in self._fresh:
            return self._fresh[key]
        entry = self.store.cache.lookup(key)
        if entry is None:
            return None
        return CachedReply(**_reply_fields(entry))

    def save(self, reply: CachedReply) -> None:
        """Keep `reply` (committed with the next batch)."""
        self._remember(reply.key, reply)
        self._writer().cache("save", CacheEntry(**_reply_fields(reply)))

    def hit(self, reply: CachedReply, saved: float | None) -> None:
        """Count that `reply` answered a call."""
        self._writer().cache("hit", (reply.key, saved))

    def forget(self, key: str) -> None:
        """Drop the reply under `key`."""
        self._remember(key, None)
        self._writer().cache("forget", key)


class RunCaches:
    """The response cache one runner pass hands its agents and judges, in the modes its definition asks.

    Args:
        store: The open store.
        experiment: The experiment (its ``cache`` mode and its arms' own).
        writer: Returns the writer that commits what the cache keeps.
    """

    def __init__(self, store: Store, experiment: Experiment, writer: Callable[[], Any]) -> None:
        spec = experiment.settings
        self.response_cache = StoreResponseCache(store, writer)
        self.mode = check_cache_mode(spec.cache, "cache")
        self.arm_modes = {
            a.id: check_cache_mode(_arm_cache(spec, a.name), f"arms.{a.name}.cache") or self.mode
            for a in experiment.arms
        }
        self._made: dict[tuple[int | str, int], CallCache] = {}

    def for_run(self, arm_id: int, round: int) -> CallCache:
        """What one run's model calls go through (no mode: the adapter's default applies).

        A `CallCache` is frozen: one per arm and round is made, and shared by its runs.
        """
        key = (arm_id, round)
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = CallCache(self.response_cache, round, self.arm_modes.get(arm_id))
        return made

    def for_judge(self, round: int, arm: str) -> CallCache:
        """What the judges' calls about a run of `round` in the arm named `arm` go through (a judge's own
        `cache` wins).

        The arm's name is the scope (so a new experiment with the same arms finds the replies): two arms that answered alike are still judged apart, so each arm's
        judge cost is its own and does not depend on which arm was judged first. A pairwise judge
        asks in its first arm's scope, so a pair's two orders of identical answers are asked once.
        """
        key = (arm, round)
        made = self._made.get(key)
        if made is None:
            made = self._made[key] = CallCache(self.response_cache, round, self.mode, scope=f"arm {arm}")
        return made


def _arm_cache(spec: RunSettings, arm: str) -> str | None:
    own = spec.arms.get(arm)
    return own.cache if own is not None else None


def run_cache_fields(spending: Any) -> RunChange:
    """The run's cache columns after an execution: how many of its model calls the cache answered,
    and the cost they saved (NULL when none did, so a re-run clears what an earlier one recorded)."""
    return {"cached_calls": spending.cached_calls or None, "cost_saved": spending.cost_saved}


def attempt_cache_spend(paid: AttemptWrite, spending: Any) -> AttemptWrite:
    """What an executed attempt records as spent when the cache answered some of its calls: the
    tokens and cost it paid for (the run keeps the answer's), and what it saved."""
    if not spending.cached_calls:
        return paid
    usage = spending.usage
    return paid._replace(
        input_tokens=usage.input_tokens if usage is not None else None,
        output_tokens=usage.output_tokens if usage is not None else None,
        cost=spending.cost,
        cached_calls=spending.cached_calls,
        cost_saved=spending.cost_saved,
    )

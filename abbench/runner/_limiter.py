"""A priority semaphore shared by every experiment running on one event loop."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import os
import weakref

DEFAULT_OVERALL = int(os.environ.get("ABBENCH_MAX_CONCURRENCY", "512"))


class PriorityLimiter:
    """At most `limit` runs in flight on this loop; when slots are scarce, higher priority goes first.

    A big nightly batch at priority 0 and an interactive `abbench try` at priority 10 share the
    machine: the try's runs take the next free slots instead of queueing behind thousands of runs.
    """

    def __init__(self, limit: int = DEFAULT_OVERALL):
        self.limit = limit
        self.used = 0
        self._waiters: list[tuple[int, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def try_acquire(self) -> bool:
        """Take a slot when one is free and nobody waits (True); else False, and `acquire` must wait."""
        if self.used < self.limit and not self._waiters:
            self.used += 1
            return True
        return False

    async def acquire(self, priority: int = 0) -> None:
        """Wait for a slot."""
        if self.used < self.limit and not self._waiters:
            self.used += 1
            return
        fut = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (-priority, next(self._seq), fut))
        try:
            await fut
        except asyncio.CancelledError:
            if fut.done() and not fut.cancelled():
                self.release()  # the slot was handed to us as we were cancelled: pass it on
            raise

    def release(self) -> None:
        """Give a slot back (to the highest-priority waiter, if any)."""
        while self._waiters:
            _, _, fut = heapq.heappop(self._waiters)
            if not fut.done():
                fut.set_result(None)  # the slot passes directly to the waiter
                return
        self.used -= 1


_LIMITERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, PriorityLimiter] = weakref.WeakKeyDictionary()


def loop_limiter() -> PriorityLimiter:
    """The limiter of the running event loop (made on first use)."""
    loop = asyncio.get_running_loop()
    limiter = _LIMITERS.get(loop)
    if limiter is None:
        limiter = _LIMITERS[loop] = PriorityLimiter()
    return limiter

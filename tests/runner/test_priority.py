"""Priorities: a big batch does not starve a small interactive run sharing the machine."""

from __future__ import annotations

import asyncio

from abbench.runner import arun_experiment, create_experiment
from abbench.runner._limiter import PriorityLimiter, loop_limiter


def test_limiter_hands_free_slots_to_the_highest_priority_first():
    async def main():
        limiter = PriorityLimiter(1)
        order = []
        await limiter.acquire(0)

        async def take(name, prio):
            await limiter.acquire(prio)
            order.append(name)
            await asyncio.sleep(0)
            limiter.release()

        tasks = [
            asyncio.create_task(take(n, p)) for n, p in (("low1", 0), ("high", 10), ("low2", 0), ("mid", 5))
        ]
        await asyncio.sleep(0)
        limiter.release()
        await asyncio.gather(*tasks)
        return order, limiter.used

    order, used = asyncio.run(main())
    assert order == ["high", "mid", "low1", "low2"] and used == 0


def test_a_cancelled_waiter_passes_its_slot_on():
    async def main():
        limiter = PriorityLimiter(1)
        await limiter.acquire()
        waiter = asyncio.create_task(limiter.acquire(5))
        await asyncio.sleep(0)
        waiter.cancel()
        limiter.release()
        await asyncio.sleep(0)
        await limiter.acquire()  # the slot was not lost with the cancelled waiter
        return limiter.used

    assert asyncio.run(main()) == 1


def test_small_high_priority_experiment_finishes_before_a_big_batch(store, dataset):
    big = create_experiment(
        {
            "name": "nightly",
            "dataset": dataset.fingerprint,
            "rounds": 30,
            "concurrency": 8,
            "priority": 0,
            "arms": {"a": {"agent": "scripted", "sleep_ms": 10}},
        },
        store=store,
    )
    small = create_experiment(
        {
            "name": "interactive",
            "dataset": dataset.fingerprint,
            "rounds": 1,
            "concurrency": 8,
            "priority": 10,
            "arms": {"a": {"agent": "scripted", "sleep_ms": 10}},
        },
        store=store,
    )

    async def main():
        loop_limiter().limit = 4  # the machine is shared: 4 runs in flight overall
        finished = []

        async def go(exp, delay):
            await asyncio.sleep(delay)
            summary = await arun_experiment(exp.id, store=store)
            finished.append(exp.name)
            return summary

        summaries = await asyncio.gather(go(big, 0), go(small, 0.1))
        return finished, summaries

    finished, summaries = asyncio.run(main())
    assert finished == ["interactive", "nightly"]
    assert all(s.status == "finished" for s in summaries)

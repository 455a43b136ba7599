"""Priorities: a big batch does not starve a small interactive run sharing the machine."""

from __future__ import annotations

import asyncio

from abbench.runner import arun_experiment, create_experiment
from abbench.runner._limiter import PriorityLimiter, loop_limiter
from tests.blocking import SAFETY_NET_S, Gate


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


def test_small_high_priority_experiment_finishes_before_a_big_batch(store, dataset, tmp_path):
    gate = Gate(tmp_path / "gate")  # the big batch's runs wait here; the small one's never do
    big = create_experiment(
        {
            "name": "nightly",
            "dataset": dataset.fingerprint,
            "rounds": 30,
            "concurrency": 8,
            "priority": 0,
            "arms": {"a": {"agent": "scripted", **gate.params}},
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
            "arms": {"a": {"agent": "scripted"}},
        },
        store=store,
    )

    async def until(predicate):
        deadline = asyncio.get_running_loop().time() + SAFETY_NET_S
        while not predicate():
            assert asyncio.get_running_loop().time() < deadline, "the experiments never got there"
            await asyncio.sleep(0.005)

    async def main():
        limiter = loop_limiter()
        limiter.limit = 4  # the machine is shared: 4 runs in flight overall
        finished = []

        async def go(exp):
            summary = await arun_experiment(exp.id, store=store)
            finished.append(exp.name)
            return summary

        nightly = asyncio.create_task(go(big))
        await until(lambda: gate.arrived() == 4 and len(limiter._waiters) == 4)  # 4 slots held, 4 queued
        interactive = asyncio.create_task(go(small))
        await until(lambda: len(limiter._waiters) == 4 + 6)  # the small one's 6 runs queue behind
        # The batch gives its 4 slots back and queues again. Handed out first come, first served,
        # they would go to the batch's 4 older waiters, which then hold them at the gate for good:
        # the small experiment finishes only if every freed slot goes to it first.
        gate.allow(4)
        await asyncio.wait_for(interactive, SAFETY_NET_S)
        gate.open()
        await nightly
        return finished, [nightly.result(), interactive.result()]

    finished, summaries = asyncio.run(main())
    assert finished == ["interactive", "nightly"]
    assert all(s.status == "finished" for s in summaries)

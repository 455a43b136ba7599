"""A python-adapter agent for the stopping tests: right on every case with a skill, wrong on a third without.

It never reads the gold answer (``sees_gold`` is off): the answer depends on the case's text alone, and
the dataset is built so that text and gold agree.
"""

from __future__ import annotations


def answer(task):
    """``fast``/``slow`` from the query's number; without a skill, the cases numbered 0 mod 3 go wrong."""
    number = int(task.case.input.rsplit(" ", 1)[1])
    right = "slow" if number % 2 else "fast"
    if task.skill is None and number % 3 == 0:
        return "slow" if right == "fast" else "fast"
    return right


async def answer_slowly(task):
    """`answer`, after yielding to the loop a few times (so that the other arm's runs get ahead)."""
    import asyncio

    for _ in range(2000):
        await asyncio.sleep(0)
    return answer(task)


async def answer_now(task):
    """`answer` on the loop, at once."""
    return answer(task)

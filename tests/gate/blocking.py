"""A python agent that answers a given number of runs and then blocks until the test releases it.

Each test opens its own `Valve` (named by a token passed in the arm's parameters), so nothing is shared
between tests: ``arm = {"agent": "python", "function": "tests.gate.blocking:answer", "token": valve.token}``.
The agent never reads the gold answer; it always answers ``fast``.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from dataclasses import dataclass, field

VALVES: dict[str, Valve] = {}


@dataclass
class Valve:
    """Lets `answer_first` runs through, then holds every later run until `release` is set.

    Attributes:
        token: Names the valve in the arms' parameters.
        answer_first: How many runs are answered at once.
        hold: How many held runs the test waits for (`all_held` is set when that many are held).
        release: Set by the test to let the held runs go.
    """

    token: str
    answer_first: int
    hold: int
    release: threading.Event = field(default_factory=threading.Event)
    all_held: threading.Event = field(default_factory=threading.Event)
    answered: int = 0
    held: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)


def open_valve(answer_first: int, hold: int) -> Valve:
    """A new valve: `answer_first` runs pass, then `hold` runs are held (the experiment's concurrency)."""
    valve = Valve(uuid.uuid4().hex, answer_first, hold)
    VALVES[valve.token] = valve
    return valve


async def answer(task):
    """``fast`` for the first runs; later runs wait for the test's release first."""
    valve = VALVES[task.params["token"]]
    with valve.lock:
        through = valve.answered < valve.answer_first
        if through:
            valve.answered += 1
        else:
            valve.held += 1
            if valve.held >= valve.hold:
                valve.all_held.set()
    if not through:
        await asyncio.to_thread(valve.release.wait)
    return {"prediction": "fast", "reason": "always fast", "confidence": 0.9, "evidence_refs": []}

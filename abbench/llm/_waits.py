"""Time a model call spends waiting instead of working, told to whoever times the call.

A run's ``timeout_s`` bounds how long its agent works on it. Waiting for the server's ``Retry-After``
after a 429, backing off after a 503, or waiting for the same call another run is making is not
work: the runner stops the run's clock meanwhile (``abbench.runner``), as the time a run waits for
a concurrency slot was never counted. The clock is a context variable, so the waits of one run's
calls reach that run's clock only, and code outside a run (a judge, a notebook) is told nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Protocol


class WaitClock(Protocol):
    """What a call tells when it starts and stops waiting (a run's timeout clock)."""

    def waiting(self) -> None:
        """The call waits from now on: stop counting."""

    def working(self) -> None:
        """The call works again: count on."""


_CLOCK: contextvars.ContextVar[WaitClock | None] = contextvars.ContextVar("abbench_wait_clock", default=None)


@contextlib.contextmanager
def timed_by(clock: WaitClock | None) -> Iterator[None]:
    """Tell `clock` the waits of the calls made inside the block (in this task and those it starts)."""
    token = _CLOCK.set(clock)
    try:
        yield
    finally:
        _CLOCK.reset(token)


@contextlib.contextmanager
def not_working() -> Iterator[None]:
    """A wait that is not work (a retry's backoff, a twin call's answer): the run's clock stops."""
    clock = _CLOCK.get()
    if clock is None:
        yield
        return
    clock.waiting()
    try:
        yield
    finally:
        clock.working()

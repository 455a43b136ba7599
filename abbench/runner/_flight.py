"""One piece of work in flight (a run's agent, its graders, the pairwise judging) and how it ended.

`abbench.runner._control.RunControl` hands a `Flight` out for the time the work is awaited and is
the only one that cancels it: for a person's cancel, or (a run's agent) for overrunning its
timeout. Whoever awaited the work reads `Flight.ended` afterwards instead of asking the control
which of its registries the run was in.
"""

from __future__ import annotations

import asyncio
import enum
import math
from typing import Any


class FlightEnd(enum.Enum):
    """How a flight ended."""

    FINISHED = "finished"
    """The work came back by itself: with its result, or raising its own error (which goes on). A timeout
    the work swallowed, answering all the same, ends here too: the answer counts."""
    TIMEOUT = "timeout"
    """The watchdog cancelled the agent for overrunning its timeout (before a person's cancel, when both came)."""
    CANCEL = "cancel"
    """A person cancelled the experiment while the work was in flight (also when the work swallowed it)."""
    STOP = "stop"
    """The runner itself is stopping (a signal, an error, its store out of room): the cancellation goes on,
    and the scheduler records the run as interrupted."""


class Flight:
    """One piece of work in flight: the task (or future) that awaits it, and what was done to it.

    Attributes:
        run_id: The run the work is for; None for the pairwise judging.
        worker: What a cancel cancels: the worker task awaiting the work (or the judging's future).
        deadline: The loop time the agent must answer by (infinite while a `RunClock` waits); None for
            work without a timeout (grading, judging).
        timed_out: The watchdog cancelled it for overrunning its deadline.
        cancel_asked: A person's cancel cancelled it.
        ended: How it ended; None while it is in flight.
    """

    __slots__ = ("cancel_asked", "cancels", "deadline", "ended", "run_id", "timed_out", "worker")

    def __init__(self, run_id: int | None, worker: asyncio.Future[Any], deadline: float | None) -> None:
        self.run_id = run_id
        self.worker = worker
        self.deadline = deadline
        self.timed_out = False
        self.cancel_asked = False
        self.cancels = 0
        """How many times the control cancelled `worker`: taken back when the flight ends by its doing."""
        self.ended: FlightEnd | None = None

    def cancel(self, *, timeout: bool = False) -> None:
        """Cancel the work: for overrunning its deadline (`timeout`), else for a person's cancel."""
        if timeout:
            self.timed_out = True
        else:
            self.cancel_asked = True
        self.cancels += 1
        self.worker.cancel()

    def cancelled(self) -> FlightEnd:
        """How the flight ends when its work raised `CancelledError`; the control's own cancels are taken back."""
        if self.timed_out:
            ended = FlightEnd.TIMEOUT
        elif self.cancel_asked:
            ended = FlightEnd.CANCEL
        else:
            return FlightEnd.STOP  # not ours: the cancellation goes on
        self._take_back()
        return ended

    def came_back(self, *, raised: bool) -> FlightEnd:
        """How the flight ends when its work returned (or `raised` its own error), though we may have cancelled it.

        Work that swallowed a person's cancel and returned ends by the cancel; its own error is its own
        failure, whatever was asked meanwhile.
        """
        self._take_back()
        return FlightEnd.CANCEL if self.cancel_asked and not raised else FlightEnd.FINISHED

    def _take_back(self) -> None:
        # The worker task goes on to its next run: it must not stay marked as being cancelled.
        worker = self.worker
        if isinstance(worker, asyncio.Task):
            for _ in range(min(self.cancels, worker.cancelling())):
                worker.uncancel()
        self.cancels = 0


class RunClock:
    """One attempt's timeout clock: it stops while the agent's calls wait rather than work.

    Told by `abbench.llm.not_working` (a rate limit's ``Retry-After``, a backoff, a twin call's
    answer): while any such wait lasts the run has no deadline, and when it ends the deadline is
    what was left of it. So ``timeout_s`` bounds the time the agent works, as the time the run waited
    for a slot before its attempt started was never counted.
    """

    def __init__(self, flight: Flight) -> None:
        self.flight = flight
        self.loop = flight.worker.get_loop()
        self.depth = 0
        self.left: float | None = None
        self.waited_s = 0.0
        self._since = 0.0

    def waiting(self) -> None:
        """A wait starts: the deadline is put aside (nested waits count once)."""
        self.depth += 1
        if self.depth > 1:
            return
        self._since = now = self.loop.time()
        flight = self.flight
        if flight.deadline is not None and flight.ended is None:
            self.left = flight.deadline - now
            flight.deadline = math.inf

    def working(self) -> None:
        """The wait is over: the deadline is what was left of it when the wait started."""
        self.depth -= 1
        if self.depth > 0:
            return
        now = self.loop.time()
        self.waited_s += now - self._since
        if self.left is not None and self.flight.ended is None:
            self.flight.deadline = now + self.left
        self.left = None

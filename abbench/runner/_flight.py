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


FINISHED = FlightEnd.FINISHED
"""Bound once: every flight but a few ends so, and an enum member lookup costs more than the rest of its end."""


class Flight:
    """One piece of work in flight, a context manager: the task awaiting it, and what was done to it.

    Made by `abbench.runner._control.RunControl.flight` (or ``judging_pairs``), it is in the control's
    registry while the block runs. A cancellation that is the control's own (a timeout, a person's
    cancel) ends the block quietly, and the worker is no longer marked as being cancelled; one that is
    not (the runner stopping) goes on. `ended` then says which.

    Attributes:
        run_id: The run the work is for; None for the pairwise judging.
        worker: What a cancel cancels: the worker task awaiting the work (or the judging's future).
        deadline: The loop time the agent must answer by (infinite while a `RunClock` waits); None for
            work without a timeout (grading, judging).
        timed_out: The watchdog cancelled it for overrunning its deadline.
        cancel_asked: A person's cancel cancelled it.
        cancels: How many times the control cancelled `worker` (taken back when the flight ends by it).
        ended: How it ended; None while it is in flight.
    """

    __slots__ = ("_registry", "cancel_asked", "cancels", "deadline", "ended", "run_id", "timed_out", "worker")

    def __init__(
        self,
        run_id: int | None,
        worker: asyncio.Future[Any],
        deadline: float | None,
        registry: dict[Any, Flight],
    ) -> None:
        self.run_id = run_id
        self.worker = worker
        self.deadline = deadline
        self.timed_out = False
        self.cancel_asked = False
        self.cancels = 0
        self.ended: FlightEnd | None = None
        self._registry = registry  # the control's, keyed by run id: in it while in flight

    def __enter__(self) -> Flight:
        self._registry[self.run_id] = self
        return self

    def __exit__(self, kind: type[BaseException] | None, error: object, tb: object) -> bool:
        # a plain class, not a generator, and the common end first: two flights a run, on the hot path
        self._registry.pop(self.run_id, None)
        if kind is None:
            self.ended = FINISHED if not self.cancels else self.came_back(raised=False)
            return False
        if issubclass(kind, asyncio.CancelledError):
            self.ended = self.cancelled()
            return self.ended is not FlightEnd.STOP  # the control's own cancellation ends here
        self.ended = self.came_back(raised=True)
        return False

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
        if not self.cancels:
            return FlightEnd.FINISHED
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

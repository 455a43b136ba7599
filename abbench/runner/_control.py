"""What the collaborators of one runner pass share: pause and cancel as asked, runs in flight, state changes, counts.

The scheduler makes one of each per pass and hands them to the collaborators that execute, grade and
budget runs; none of them reaches back into the scheduler.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from abbench.agents import Agent
from abbench.runner._cache import RunCaches
from abbench.runner._flight import Flight
from abbench.runner._progress import Tracker
from abbench.runner._writer import StoreWriter
from abbench.snapshot import Snapshot
from abbench.store import Arm, RunChange, WorkItem
from abbench.types import Case, RunState, run_outcome

_TERMINAL = (RunState.PASS, RunState.FAIL, RunState.CANCELLED)
_FAIL, _PASS = RunState.FAIL, RunState.PASS


@dataclass(frozen=True)
class RunInputs:
    """What the runs of one pass are made of, read once from the store before the work starts.

    Attributes:
        cases: Case index -> the dataset's case (read a page at a time: `abbench.runner._work.CasePages`).
        skills: Arm id -> its skill snapshot (None: no skill).
        label_map: The dataset's label value map.
        label_set: The dataset's declared labels, if any.
        arms: Arm id -> the stored arm.
        agents: Arm id -> its agent adapter.
        offered: Arm id -> the skills its catalogue offers, in order (absent or (): not offered).
    """

    cases: Mapping[int, Case]
    skills: dict[int, Snapshot | None]
    label_map: dict[str, str]
    label_set: tuple[str, ...] | None
    arms: dict[int, Arm]
    agents: dict[int, Agent]
    offered: dict[int, tuple[Snapshot, ...]] = field(default_factory=dict)


@dataclass
class Tally:
    """What this pass did so far: the counts a `RunSummary` reports, each its field of the same name."""

    executed: int = 0
    graded: int = 0
    failed: int = 0
    cancelled: int = 0
    up_to_date: int = 0
    pairs_judged: int = 0
    pairs_failed: int = 0
    execution_failed: int = 0
    grading_failed: int = 0


@dataclass(frozen=True)
class PassParts:
    """What the execution and grading halves of one pass both work with (the scheduler makes it once).

    Attributes:
        inputs: The cases, skills, labels and agents.
        writer: Where run changes, attempts and grades go.
        moves: The runs' state changes.
        control: Pause, cancel, timeouts and the work in flight.
        tally: The counts of this pass.
        caches: The response cache the agents' and the judges' model calls go through.
    """

    inputs: RunInputs
    writer: StoreWriter
    moves: RunMoves
    control: RunControl
    tally: Tally
    caches: RunCaches


class RunControl:
    """Pause and cancel as asked (by this process or another), and the work in flight they stop.

    The work in flight is registered only through `flight` and `judging_pairs`, one context manager
    per piece of work, whose `Flight` says afterwards how it ended (`FlightEnd`): finished, by its
    timeout, by a person's cancel, or by the runner itself stopping.

    Attributes:
        paused: A pause was asked: running runs finish, no new ones start.
        cancelling: A cancel was asked: runs in flight are cancelled, none start.
        cancel_event: Set on cancel; wakes runs waiting to be retried or for budget room.
        resume: Set while not paused; workers wait on it.
        wake: Set to make the poller read the control column now.
        stopped: The stopping rule decided (or `halted`): no new run starts; runs in flight finish.
        halted: Why the pass must end once its runs in flight are recorded (its store running out
            of room); None otherwise.
    """

    def __init__(self) -> None:
        self.paused = False
        self.cancelling = False
        self.cancel_event = asyncio.Event()
        self.resume = asyncio.Event()
        self.resume.set()
        self.wake = asyncio.Event()
        self.stopped = False
        self.halted: BaseException | None = None
        self._flights: dict[int, Flight] = {}  # run id -> its agent or its graders in flight
        self._judging: dict[None, Flight] = {}  # the pairwise judging in flight

    def flight(self, run_id: int, worker: asyncio.Task[Any], *, timeout_s: float | None = None) -> Flight:
        """The run's agent (with its `timeout_s`, counted from now) or its graders (None) in flight.

        Use it as ``with control.flight(...) as flight:`` and await the work inside the block, in
        `worker`; afterwards ``flight.ended`` says how it ended (`Flight`).
        """
        deadline = None if timeout_s is None else worker.get_loop().time() + timeout_s
        return Flight(run_id, worker, deadline, self._flights)

    def judging_pairs(self, judging: asyncio.Future[Any]) -> Flight:
        """The pairwise judging in flight (awaited inside its block): cancelled with the rest, as `flight`."""
        return Flight(None, judging, None, self._judging)

    @property
    def in_flight(self) -> int:
        """Runs whose agent or graders are in flight."""
        return len(self._flights)

    @property
    def deadlines(self) -> dict[int, float]:
        """Run id -> the loop time its agent must answer by (infinite while a `RunClock` waits), a copy."""
        return {run_id: f.deadline for run_id, f in self._flights.items() if f.deadline is not None}

    def time_out(self, now: float) -> None:
        """Cancel every agent that overran its deadline by the loop time `now` (once each)."""
        for flight in list(self._flights.values()):
            if flight.deadline is not None and now >= flight.deadline and not flight.timed_out:
                flight.cancel(timeout=True)

    def stop_agents(self) -> None:
        """The runner is stopping: cancel every agent in flight (their flights end by `FlightEnd.STOP`)."""
        for flight in list(self._flights.values()):
            if flight.deadline is not None:
                flight.worker.cancel()

    def stop(self) -> None:
        """The stopping rule decided: start no new run (those in flight finish and count)."""
        self.stopped = True
        self.resume.set()

    def halt(self, error: BaseException) -> None:
        """Start no new run: those in flight finish and are recorded, then the pass ends with `error`."""
        if self.halted is None:
            self.halted = error
        self.stop()

    def cancel_all(self) -> None:
        """Cancel every run in flight, grading and pairwise judging included."""
        self.cancelling = True
        self.cancel_event.set()
        self.resume.set()
        # Grading in flight stops too (a slow judge must not hold a cancel for minutes); those
        # runs go back to executed, waiting for grading, their execution kept.
        for flight in list(self._flights.values()):
            flight.cancel()
        for flight in list(self._judging.values()):
            flight.cancel()

    async def wait_unless_cancelled(self, awaitable: asyncio.Future[Any]) -> None:
        """Wait for `awaitable`, or until a cancel is asked (whichever comes first; both end)."""
        cancelled = asyncio.ensure_future(self.cancel_event.wait())
        try:
            await asyncio.wait((awaitable, cancelled), return_when=asyncio.FIRST_COMPLETED)
        finally:
            awaitable.cancel()
            cancelled.cancel()


class RunMoves:
    """Every state change of a run in this pass: the in-memory progress and the store writer, together.

    Args:
        writer: Where the transitions go.
        tracker: The counts observers are told about.
    """

    def __init__(self, writer: StoreWriter, tracker: Tracker) -> None:
        self.writer = writer
        self.tracker = tracker
        self.states: dict[int, str] = {}
        """Run id -> its state, for the runs this pass moved and is not through with (the scheduler
        forgets a run once it is: `state` then falls back to the work item's stored state)."""
        self.on_finished: Callable[[WorkItem, str, str], None] | None = None
        """Told of every run reaching pass, fail or cancelled (its state and outcome): the stopping rule."""

    def state(self, item: WorkItem) -> str:
        """The run's state now."""
        return self.states.get(item.run_id, item.state)

    def move(
        self,
        item: WorkItem,
        to_state: RunState,
        fields: RunChange | None = None,
        detail: str | None = None,
        wrong_by: tuple[str, ...] = (),
    ) -> None:
        """Move the run to `to_state`, with the columns that change alongside (`wrong_by`: when it is
        graded wrong, the graders that said so)."""
        run_id = item.run_id
        states = self.states
        from_state = states.get(run_id, item.state)
        states[run_id] = to_state
        self.writer.transition(run_id, from_state, to_state, fields, detail)
        if to_state == _FAIL:
            fields = fields or {}
            outcome = run_outcome(to_state, fields.get("failure_type"), fields.get("passed", 0))
        elif to_state == _PASS:  # a verdict of right, or a score alone (its NULL verdict may be left out)
            outcome = run_outcome(to_state, None, (fields or {}).get("passed"))
        else:  # as `run_outcome`: every state but fail and pass is its own outcome (a state is its text)
            outcome = to_state
        self.tracker.move(
            item.arm_id, from_state, to_state, run_id, outcome, wrong_by
        )  # positional: hot path
        if self.on_finished is not None and to_state in _TERMINAL:
            self.on_finished(item, to_state, outcome)

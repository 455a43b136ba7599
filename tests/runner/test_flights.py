"""`RunControl.flight`: each piece of work in flight says how it ended — finished, timeout, cancel or stop.

The control used to keep its runs in flight in public sets (``inflight``, ``grading``, ``cancel_asked``,
``timed_out``, ``deadlines``) that three runner files filled and read; now one context manager per
flight registers the work and records how it ended, which the execution and the grading read.
"""

from __future__ import annotations

import asyncio
import contextlib
import math

import pytest

from abbench.agents import register_agent
from abbench.errors import AgentError
from abbench.runner import ExperimentRunner, create_experiment, start_experiment
from abbench.runner._control import RunControl
from abbench.runner._flight import Flight, FlightEnd
from tests.blocking import SAFETY_NET_S, Gate

from .conftest import make_cases

# -- the context manager on its own, around real tasks --------------------------------------------------


async def _fly(how: str) -> tuple[FlightEnd | None, int, int]:
    """One agent flight ended `how`: how the flight says it ended, the worker's cancels left, flights left."""
    control = RunControl()
    never = asyncio.get_running_loop().create_future()  # the agent's answer, which never comes
    swallow = how.startswith("swallowed")
    inside = asyncio.Event()
    flights: list[Flight] = []

    async def worker() -> str:
        with control.flight(7, task, timeout_s=60) as flight:
            flights.append(flight)
            inside.set()
            try:
                await never
            except asyncio.CancelledError:
                if not swallow:
                    raise
        return "after"

    task = asyncio.create_task(worker())
    await inside.wait()
    if how in ("timeout", "swallowed timeout"):
        control.time_out(math.inf)
    elif how in ("cancel", "swallowed cancel"):
        control.cancel_all()
    elif how == "stop":
        control.stop_agents()
    else:
        never.set_result(None)
    try:
        assert await task == "after"
    except asyncio.CancelledError:
        assert how == "stop"
    return flights[0].ended, task.cancelling(), control.in_flight


@pytest.mark.parametrize(
    ("how", "ended"),
    [
        ("finished", FlightEnd.FINISHED),
        ("timeout", FlightEnd.TIMEOUT),
        ("cancel", FlightEnd.CANCEL),
        ("stop", FlightEnd.STOP),
        ("swallowed cancel", FlightEnd.CANCEL),  # an adapter that answers anyway: the cancel still wins
        ("swallowed timeout", FlightEnd.FINISHED),  # its late answer counts, as before
    ],
)
def test_a_flight_says_how_it_ended_and_leaves_nothing_behind(how, ended):
    got, cancelling, left = asyncio.run(_fly(how))
    assert got is ended
    assert left == 0  # the registry forgets the flight however it ended
    # the control takes back its own cancels (the worker goes on to its next run); a stop is not its own
    assert cancelling == (1 if how == "stop" else 0)


def test_a_flight_timed_out_once_is_not_cancelled_again_and_a_new_flight_starts_clean():
    async def main() -> tuple[int, bool]:
        control = RunControl()
        task = asyncio.current_task()
        assert task is not None
        with control.flight(1, task, timeout_s=0) as flight:
            control.time_out(math.inf)
            control.time_out(math.inf)  # the watchdog comes round again before the worker ran
            cancels = flight.cancels
            await asyncio.sleep(0)  # the cancel lands here, and the flight takes it
        assert flight.ended is FlightEnd.TIMEOUT
        # the run's next attempt is a new flight: the old one's timeout does not stick to the run
        with control.flight(1, task, timeout_s=0) as again:
            return cancels, again.timed_out

    assert asyncio.run(main()) == (1, False)


# -- real runs ------------------------------------------------------------------------------------------


@pytest.fixture
def flights(monkeypatch) -> list[Flight]:
    """Every flight of the runs made in this test, as the control hands them out (the real ones)."""
    seen: list[Flight] = []
    original = RunControl.flight

    @contextlib.contextmanager
    def recording(self, *args, **kwargs):
        with original(self, *args, **kwargs) as flight:
            seen.append(flight)
            yield flight

    monkeypatch.setattr(RunControl, "flight", recording)
    return seen


def _experiment(store, name, *, n=3, timeout_s=600.0, retries=0, graders=("label_match",), **arm):
    dataset = store.datasets.save(name, make_cases(n), label_set=["fast", "slow"])
    spec = {
        "name": name,
        "dataset": dataset.fingerprint,
        "concurrency": 4,
        "retries": retries,
        "timeout_s": timeout_s,
        "graders": list(graders),
        "arms": {"a": {"agent": "scripted", **arm}},
    }
    return create_experiment(spec, store=store)


def _ends(store, exp_id, flights, *, agents: bool) -> dict[str, FlightEnd]:
    """Case id -> how its agent's flight (`agents`) or its graders' flight ended."""
    cases = {run.id: run.case_id for run in store.runs.records(exp_id)}
    return {cases[f.run_id]: f.ended for f in flights if (f.deadline is not None) == agents}


def test_a_run_that_overruns_its_timeout_ends_its_flight_by_timeout(store, flights):
    # c000 never answers; the others answer without waiting, so their flights finish whatever the machine's speed
    exp = _experiment(store, "timeout", timeout_s=0.5, hang=["c000"])
    summary = start_experiment(exp.id, store=store).wait(SAFETY_NET_S)
    assert summary.status == "finished"
    ends = _ends(store, exp.id, flights, agents=True)
    assert ends == {"c000": FlightEnd.TIMEOUT, "c001": FlightEnd.FINISHED, "c002": FlightEnd.FINISHED}
    (late,) = [r for r in store.runs.records(exp.id) if r.case_id == "c000"]
    assert (late.state, late.failure_type) == ("fail", "timeout")


def test_a_person_cancelling_ends_the_agents_flights_by_cancel(store, flights, tmp_path):
    gate = Gate(tmp_path / "gate")  # never opened: only the cancel ends these runs
    exp = _experiment(store, "cancel", **gate.params)
    handle = start_experiment(exp.id, store=store)
    gate.wait_arrived(3)
    handle.cancel()
    assert handle.wait(SAFETY_NET_S).status == "cancelled"
    assert set(_ends(store, exp.id, flights, agents=True).values()) == {FlightEnd.CANCEL}
    assert len(flights) == 3
    assert {r.state for r in store.runs.records(exp.id)} == {"cancelled"}


def test_a_person_cancelling_ends_the_graders_flights_by_cancel(store, flights, tmp_path, monkeypatch):
    judges = Gate(tmp_path / "judges")  # never opened: only the cancel ends these gradings
    monkeypatch.setenv("JUDGE_GATE", str(judges.folder))
    exp = _experiment(store, "grading", graders=["tests.runner.robust_helpers:slow_judge"])
    handle = start_experiment(exp.id, store=store)
    judges.wait_arrived(3)
    handle.cancel()
    assert handle.wait(SAFETY_NET_S).status == "cancelled"
    assert set(_ends(store, exp.id, flights, agents=True).values()) == {FlightEnd.FINISHED}
    assert set(_ends(store, exp.id, flights, agents=False).values()) == {FlightEnd.CANCEL}
    assert {r.state for r in store.runs.records(exp.id)} == {"executed"}  # their executions are kept


def test_the_runner_stopping_ends_the_agents_flights_by_stop(store, flights, tmp_path):
    gate = Gate(tmp_path / "gate")
    exp = _experiment(store, "stop", **gate.params)
    runner = ExperimentRunner(store, store.experiments.get(exp.id))

    async def main() -> None:
        work = asyncio.create_task(runner.run())
        await asyncio.get_running_loop().run_in_executor(None, gate.wait_arrived, 3)
        work.cancel()  # what Ctrl-C does to a pass
        with pytest.raises(asyncio.CancelledError):
            await work

    asyncio.run(main())
    assert set(_ends(store, exp.id, flights, agents=True).values()) == {FlightEnd.STOP}
    assert len(flights) == 3
    # a stop is not a person's cancel: the runs are recorded as interrupted, to be run again
    assert {(r.state, r.failure_type) for r in store.runs.records(exp.id)} == {("fail", "interrupted")}


@register_agent("test-flights-swallows-then-hangs")
class _SwallowsThenHangs:
    """Its first attempt turns the watchdog's cancel into an error of its own; its second never answers."""

    name = "test-flights-swallows-then-hangs"

    def __init__(self, model=None, **params):
        self.attempts = 0

    async def run(self, task):
        self.attempts += 1
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if self.attempts == 1:
                raise AgentError("gave up", "agent_error", retryable=True) from None
            raise
        raise AssertionError("never answers")


def test_an_attempt_after_one_that_swallowed_its_timeout_still_times_out(store, flights):
    # The control kept timed-out runs in a set that only a cancellation reaching the runner emptied: an
    # agent that raised its own error instead left its run there, and the watchdog never timed out the
    # run's next attempt, which hung the pass for good. A flight's timeout ends with the flight.
    exp = _experiment(
        store, "swallows", n=1, timeout_s=0.5, retries=1, agent="test-flights-swallows-then-hangs"
    )
    handle = start_experiment(exp.id, store=store)
    try:
        summary = handle.wait(SAFETY_NET_S / 5)
    finally:
        handle.cancel()
    assert summary.status == "finished"
    assert [f.ended for f in flights] == [FlightEnd.FINISHED, FlightEnd.TIMEOUT]
    (run,) = store.runs.records(exp.id)
    assert (run.state, run.failure_type, run.attempts) == ("fail", "timeout", 2)

"""A run's ``timeout_s`` bounds the time its agent works, from its attempt's start: the time it waits for a
slot, and the time its calls wait out a rate limit's ``Retry-After``, are not counted. A new user's runs
timed out while they waited, never having been answered."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest

from abbench.runner import ExperimentRunner, create_experiment
from abbench.testing import Reply, ScriptedOpenAIServer
from abbench.types import Case

ANSWER = json.dumps({"prediction": "fast", "reason": "a command"})
TIMEOUT_S = 4.0


def _experiment(store, server, *, cases=1, concurrency=1):
    dataset = store.datasets.save(
        "waits", [Case(f"c{i}", f"打开空调 {i}", "fast") for i in range(cases)], label_set=["fast", "slow"]
    )
    arm = {"agent": "openai", "model": "scripted", "base_url": server.base_url, "max_retries": 1}
    spec = {
        "name": "waits",
        "dataset": dataset.fingerprint,
        "retries": 0,  # one attempt: a timeout would fail the run, not be tried again
        "timeout_s": TIMEOUT_S,
        "concurrency": concurrency,
        "arms": {"a": arm},
    }
    return create_experiment(spec, store=store)


@pytest.mark.slow
def test_waiting_out_a_rate_limit_is_not_counted_against_the_timeout(store):
    # The server asks the client to wait longer than the run's timeout: before the wait was set apart
    # from the work, the watchdog cancelled the run in the middle of it and the call was never made again.
    script = [Reply.error(429, "rate limited", retry_after=TIMEOUT_S + 1), ANSWER]
    with ScriptedOpenAIServer(script) as server:
        exp = _experiment(store, server)
        asyncio.run(ExperimentRunner(store, store.experiments.get(exp.id)).run())
        assert len(server.chat_requests) == 2  # the call was made again after the wait
    (run,) = store.runs.records(exp.id)
    assert (run.state, run.failure_type, run.output.prediction) == ("pass", None, "fast")
    assert run.attempts == 1


def test_the_clock_starts_with_the_attempt_not_in_the_queue(store):
    # One slot, two runs: the second waits in the queue while the test holds the first's reply. Its
    # deadline is set when its own attempt starts, after the first was released: never in the queue.
    release, arrived = threading.Event(), threading.Event()
    deadlines: dict[int, float] = {}
    holder: dict[str, ExperimentRunner] = {}

    def replies(request):
        if request.index == 0:
            arrived.set()
            release.wait(60)
        else:  # the second run's request: its attempt has started, its deadline is set
            deadlines.update(holder["runner"].control.deadlines)
        return ANSWER

    with ScriptedOpenAIServer(replies) as server:
        exp = _experiment(store, server, cases=2, concurrency=1)
        runner = holder["runner"] = ExperimentRunner(store, store.experiments.get(exp.id))

        async def main() -> float:
            loop = asyncio.get_running_loop()
            work = asyncio.create_task(runner.run())
            await loop.run_in_executor(None, arrived.wait, 60)
            released_at = loop.time()
            release.set()
            await work
            return released_at

        released_at = asyncio.run(main())
    assert len(deadlines) == 1, deadlines  # the first run is through; the second holds the only deadline
    (second,) = deadlines.values()
    assert second >= released_at + TIMEOUT_S
    assert {r.state for r in store.runs.records(exp.id)} == {"pass"}

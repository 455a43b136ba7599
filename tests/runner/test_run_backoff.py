"""Run-level retries: the server's Retry-After is honoured, else exponential backoff with jitter;
permanent failures are not retried. The waits are watched through `ExperimentRunner.sleep`, never timed."""

from __future__ import annotations

import asyncio
import email.utils
import json
import sys
import time
from datetime import UTC, datetime, timedelta

import pytest

from abbench.runner import ExperimentRunner, create_experiment
from abbench.runner._scheduler import BACKOFF_BASE_S, MAX_RETRY_AFTER_S
from abbench.testing import Reply, ScriptedOpenAIServer
from abbench.types import Case

ANSWER = json.dumps({"prediction": "fast", "reason": "a command", "confidence": 0.9})


def _experiment(store, arm, retries=3):
    dataset = store.datasets.save("one", [Case("c0", "打开空调", "fast")], label_set=["fast", "slow"])
    spec = {"name": "backoff", "dataset": dataset.fingerprint, "retries": retries, "arms": {"a": arm}}
    return create_experiment(spec, store=store)


def _run(store, exp) -> list[float]:
    """Run `exp` with a runner whose waits are recorded instead of slept; the waits asked for."""
    asked: list[float] = []

    async def record(seconds: float) -> None:
        asked.append(seconds)

    runner = ExperimentRunner(store, store.experiments.get(exp.id))
    runner.sleep = record
    asyncio.run(runner.run())
    return asked


def _openai_arm(server) -> dict:
    # one attempt per request, so every 429 reaches the run-level retry
    return {"agent": "openai", "model": "scripted", "base_url": server.base_url, "max_retries": 0}


def test_a_retry_after_in_seconds_is_what_the_run_waits(store):
    script = [Reply.error(429, "slow down", retry_after=7), Reply.error(429, retry_after=2.5), ANSWER]
    with ScriptedOpenAIServer(script) as server:
        exp = _experiment(store, _openai_arm(server))
        asked = _run(store, exp)
    assert asked == [7.0, 2.5]
    (run,) = store.runs.records(exp.id)
    assert (run.state, run.attempts, run.output.prediction) == ("pass", 3, "fast")
    details = [e["detail"] for e in store.runs.events(run.id) if e["detail"]]
    assert any("retry in 7.0 s (the server's Retry-After)" in d for d in details), details


def test_a_retry_after_as_an_http_date_is_honoured(store):
    written: list[float] = []

    def replies(request):
        if request.index == 0:
            when = datetime.now(UTC) + timedelta(seconds=100)
            written.append(time.monotonic())
            return Reply(
                status=429,
                headers={"Retry-After": email.utils.format_datetime(when, usegmt=True)},
                body={"error": {"message": "rate limited", "type": "rate_limit_error"}},
            )
        return ANSWER

    with ScriptedOpenAIServer(replies) as server:
        exp = _experiment(store, _openai_arm(server))
        asked = _run(store, exp)
        read_by = time.monotonic()
    # The date has a resolution of one second, and the client read it some time after the server wrote
    # it: however slow the machine, the wait asked for is 100 s less that time (and that second).
    assert len(asked) == 1 and len(written) == 1, (asked, written)
    assert 100 - (read_by - written[0]) - 1 <= asked[0] <= 100, asked
    assert store.runs.records(exp.id)[0].state == "pass"


def test_without_retry_after_the_waits_grow_exponentially_with_jitter(store):
    script = [Reply.error(503, "overloaded")] * 3 + [ANSWER]
    with ScriptedOpenAIServer(script) as server:
        exp = _experiment(store, _openai_arm(server))
        asked = _run(store, exp)
    assert len(asked) == 3
    for n, wait in enumerate(asked):
        cap = BACKOFF_BASE_S * 2**n  # equal jitter: half of the cap fixed, half random
        assert cap / 2 <= wait <= cap, (n, wait, asked)
    assert store.runs.records(exp.id)[0].attempts == 4


def test_a_retry_after_longer_than_the_limit_fails_the_run_and_says_why(store):
    with ScriptedOpenAIServer([Reply.error(429, retry_after=MAX_RETRY_AFTER_S * 10), ANSWER]) as server:
        exp = _experiment(store, _openai_arm(server))
        asked = _run(store, exp)
        assert len(server.chat_requests) == 1
    assert asked == []
    (run,) = store.runs.records(exp.id)
    assert (run.state, run.attempts, run.failure_type) == ("fail", 1, "rate_limited")
    assert f"the server asked to wait {MAX_RETRY_AFTER_S * 10:g}s" in run.error


@pytest.mark.parametrize(
    ("code", "printed"),
    [
        (2, "usage: agent [-h] --case FILE"),
        (1, "Error: ANTHROPIC_API_KEY is not set"),
        (0, None),  # a file in argv that does not exist: python exits 2
    ],
)
def test_a_command_failing_for_a_permanent_cause_is_tried_once(store, tmp_path, code, printed):
    script = tmp_path / "agent.py"
    script.write_text(
        f"import sys\nprint({printed!r}, file=sys.stderr)\nsys.exit({code})\n", encoding="utf-8"
    )
    argv = [sys.executable, str(script if printed else tmp_path / "missing.py")]
    exp = _experiment(store, {"agent": "command", "argv": argv})
    asked = _run(store, exp)
    (run,) = store.runs.records(exp.id)
    assert (run.state, run.attempts, asked) == ("fail", 1, [])
    assert "Not retried:" in run.error


def test_a_transient_command_failure_is_retried(store, tmp_path):
    script = tmp_path / "agent.py"
    script.write_text(
        "import sys\nprint('model overloaded', file=sys.stderr)\nsys.exit(1)\n", encoding="utf-8"
    )
    exp = _experiment(store, {"agent": "command", "argv": [sys.executable, str(script)]}, retries=2)
    asked = _run(store, exp)
    (run,) = store.runs.records(exp.id)
    assert (run.state, run.attempts, len(asked)) == ("fail", 3, 2)


def test_a_cancel_ends_the_wait_before_a_retry(store):
    with ScriptedOpenAIServer([Reply.error(429, retry_after=MAX_RETRY_AFTER_S), ANSWER]) as server:
        exp = _experiment(store, _openai_arm(server))
        runner = ExperimentRunner(store, store.experiments.get(exp.id))
        asked: list[float] = []

        async def wait_forever(seconds: float) -> None:
            asked.append(seconds)
            store.experiments.set_control(
                exp.id, "cancel"
            )  # asked while the run waits, which never ends by itself
            await asyncio.Event().wait()

        runner.sleep = wait_forever
        summary = asyncio.run(runner.run())
        assert len(server.chat_requests) == 1
    assert asked == [MAX_RETRY_AFTER_S] and summary.status == "cancelled"
    (run,) = store.runs.records(exp.id)
    assert (run.state, run.attempts) == ("cancelled", 1)
    assert run.error == "cancelled while waiting to retry"

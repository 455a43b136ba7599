"""The ``opencode`` preset (npm ``opencode-ai``, installed by ``make agent-clis``) pointed at the real
model's server: what a real server does to opencode's accounting and to a prompt that does not fit."""

from __future__ import annotations

import asyncio

import pytest

from abbench.agents import Task, make_agent
from abbench.errors import AgentError
from abbench.types import Case
from tests.agents.test_cli_presets import cli_path
from tests.realmodel.conftest import MODEL, served_since, start

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("realmodel")]

TASK = Task(case=Case(case_id="c1", input="Close the window."), arm="a", label_set=("fast", "slow"))


def opencode(server, **kw):
    return make_agent(
        "command",
        preset="opencode",
        program=cli_path("opencode"),
        model=MODEL,
        base_url=server.base_url,
        prices={MODEL: {"input": 1.0, "output": 2.0}},
        timeout_s=900,
        **kw,
    )


def outcome(agent):
    """(usage, cost, failure type) of one run, answered or not (the 135M model rarely keeps the contract)."""
    try:
        out = asyncio.run(agent.run(TASK))
    except AgentError as exc:
        return exc.spent.usage, exc.spent.cost, exc.failure_type
    return out.usage, out.cost, None


def test_opencode_against_a_server_that_sends_no_usage_has_unknown_tokens_not_zero(local_model):
    mark = local_model.requests
    usage, cost, failure = outcome(opencode(local_model, max_tokens=16))
    served = served_since(local_model, mark)
    assert served and all(s.stream for s in served), served  # opencode streams; this server sends no usage
    assert all(s.status == 200 for s in served), served
    # max_tokens reached the answer's request; opencode may send requests of its own beside it (a
    # session title, with its own limit), and whether it does before the answer ends depends on timing
    assert any(s.completion_tokens is not None and s.completion_tokens <= 16 for s in served), served
    assert usage is None and cost is None  # opencode says 0 tokens: unknown, never 0 and $0
    assert failure in (None, "bad_output", "truncated")


def test_an_opencode_prompt_over_the_context_fails_once_as_a_bad_request():
    small = start(context=512)  # opencode's own system prompt is over 2,000 tokens
    try:
        agent = opencode(small, max_tokens=16)
        with pytest.raises(AgentError) as caught:
            asyncio.run(agent.run(TASK))
        served = small.log()
    finally:
        small.close()
    assert caught.value.failure_type == "bad_request" and not caught.value.retryable
    assert served and all(s.status == 400 for s in served)
    assert len(served) <= 3  # no retry storm: the overflow is not retried by opencode's client nor by abbench

"""opencode's accounting when its server sends no usage, and the arm's `max_tokens` reaching the server:
the real opencode CLI against the scripted server."""

from __future__ import annotations

import asyncio
import json

import pytest

from abbench.agents import make_agent
from abbench.errors import UsageError
from abbench.testing import Reply, ScriptedOpenAIServer
from tests.agents.adapter_fixtures import case, skill, task  # noqa: F401
from tests.agents.test_cli_presets import KEY_ENV, PRICES, agent, answer_request, cli_path, key  # noqa: F401

pytestmark = pytest.mark.slow

ANSWER = json.dumps({"prediction": "slow", "reason": "r"})


def reply_with(usage):
    def reply(request):
        if not answer_request(request):
            return Reply.text("Title")
        if usage is None:
            return Reply.text(ANSWER, include_usage=False)
        return Reply.text(ANSWER, usage=usage)

    return reply


def test_opencode_steps_without_usage_have_unknown_tokens_and_cost_not_zero(task):  # noqa: F811
    with ScriptedOpenAIServer(reply_with(None)) as server:
        out = asyncio.run(agent("opencode", server).run(task))
    assert out.prediction == "slow"
    assert out.usage is None and out.cost is None  # opencode itself says 0 tokens


def test_opencode_steps_with_usage_are_counted_and_priced(task):  # noqa: F811
    with ScriptedOpenAIServer(reply_with((1200, 30))) as server:
        out = asyncio.run(agent("opencode", server).run(task))
    assert (out.usage.input_tokens, out.usage.output_tokens) == (1200, 30)
    assert out.cost == pytest.approx((1200 * 2.0 + 30 * 8.0) / 1e6)


def test_opencode_max_tokens_is_sent_on_every_call(task):  # noqa: F811
    with ScriptedOpenAIServer(reply_with((100, 5))) as server:
        asyncio.run(agent("opencode", server, max_tokens=77).run(task))
        bodies = [r.body for r in server.chat_requests]
    assert bodies and all(b["max_tokens"] == 77 for b in bodies)


@pytest.mark.parametrize(
    ("preset", "value", "says"),
    [
        ("llm", 10, "does not apply to preset llm"),
        ("opencode", 0, "at least 1"),
        ("opencode", "9", "whole number"),
    ],
)
def test_max_tokens_is_refused_where_it_cannot_work(preset, value, says):
    with pytest.raises(UsageError, match=says):
        make_agent("command", preset=preset, program=cli_path(preset), model="m", max_tokens=value)

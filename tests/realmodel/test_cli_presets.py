"""The ``llm`` preset (PyPI ``llm``, installed by ``make agent-clis``) pointed at the real model's server:
what llm reports it spent equals what the server counted."""

from __future__ import annotations

import asyncio

import pytest

from abbench.agents import Task, make_agent
from abbench.errors import AgentError
from abbench.types import Case
from tests.agents.test_cli_presets import cli_path
from tests.realmodel.conftest import MODEL, served_since

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("realmodel")]


def test_the_llm_preset_against_the_real_model_counts_what_the_server_counted(local_model):
    agent = make_agent(
        "command",
        preset="llm",
        program=cli_path("llm"),
        model=MODEL,
        base_url=local_model.base_url,
        args=["-o", "max_tokens", "24", "-o", "temperature", "0"],
        prices={MODEL: {"input": 1.0, "output": 2.0}},
        timeout_s=300,
    )
    task = Task(case=Case(case_id="c1", input="Close the window."), arm="a", label_set=("fast", "slow"))
    mark = local_model.requests
    try:
        out = asyncio.run(agent.run(task))
        usage, cost = out.usage, out.cost
    except AgentError as exc:  # the 135M model rarely keeps the answer contract
        assert exc.failure_type in ("bad_output", "truncated")
        usage, cost = exc.spent.usage, exc.spent.cost
    (served,) = served_since(local_model, mark)
    assert (usage.input_tokens, usage.output_tokens) == (served.prompt_tokens, served.completion_tokens)
    assert cost == pytest.approx((served.prompt_tokens + 2 * served.completion_tokens) / 1e6)

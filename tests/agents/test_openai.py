"""The openai adapter against a real HTTP server: the tool loop, what was read, usage, cost, failures."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging

import pytest

from abbench.agents import Agent, OpenAIAgent, Task, make_agent
from abbench.errors import AgentError, UsageError
from abbench.testing import Reply, ScriptedOpenAIServer
from tests.agents.adapter_fixtures import FINAL, case, skill, task  # noqa: F401

PRICES = {"scripted": {"input": 2.0, "output": 8.0}}


def agent(server, **kw) -> OpenAIAgent:
    kw.setdefault("prices", PRICES)
    kw.setdefault("retry", {"base_delay_s": 0.01, "max_delay_s": 0.05})
    return make_agent("openai", model=kw.pop("model", "scripted"), base_url=server.base_url, **kw)


def run(a, t):
    return asyncio.run(a.run(t))


def test_a_multi_turn_tool_loop_reads_two_sections_and_answers(task):  # noqa: F811
    script = [
        Reply.tools(("list_files", {}), usage=(100, 10)),
        Reply.tools(
            ("read_section", {"ref": "SKILL.md#Rules"}),
            ("read_section", {"ref": "knowledge/domains.md#navigation"}),
            usage=(200, 20),
        ),
        Reply.text(FINAL, usage=(300, 30)),
    ]
    with ScriptedOpenAIServer(script) as server:
        out = run(agent(server), task)
    assert isinstance(make_agent("openai", model="m", base_url="http://127.0.0.1:9"), Agent)
    assert out.prediction == "slow" and out.reason == "需要路线与能耗数据" and out.confidence == 0.8
    assert out.evidence_refs == ("SKILL.md#Rules", "knowledge/domains.md#Navigation")
    assert out.sections_read == ("SKILL.md#Rules", "knowledge/domains.md#Navigation")
    assert out.files_read == ()
    assert (out.usage.input_tokens, out.usage.output_tokens) == (600, 60)
    assert out.cost == pytest.approx((600 * 2.0 + 60 * 8.0) / 1e6)
    assert out.session_id == "sess-1" and out.model == "scripted" and out.latency_ms > 0
    assert out.raw_output == FINAL

    # what the model was sent: the tools, then each tool result in the next request
    first, _, third = server.chat_requests
    assert [t["function"]["name"] for t in first.tools] == ["list_files", "read_file", "read_section"]
    tool_results = [m for m in third.messages if m["role"] == "tool"]
    assert len(tool_results) == 3
    assert "knowledge/domains.md#车控" in tool_results[0]["content"]
    assert "Direct vehicle control" in tool_results[1]["content"]
    assert "需要路线与能耗数据" in tool_results[2]["content"]
    assert third.messages[:4] == first.messages  # the session grows; nothing is dropped

    calls = [e for e in out.transcript if e["type"] == "tool_call"]
    assert [(c["name"], c["ok"], c["turn"]) for c in calls] == [
        ("list_files", True, 1),
        ("read_section", True, 2),
        ("read_section", True, 2),
    ]
    assert [e["turn"] for e in out.transcript if e["type"] == "llm_call"] == [1, 2, 3]
    roles = [e["role"] for e in out.transcript if e["type"] == "message"]
    assert roles == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "tool",
        "assistant",
        "tool",
        "tool",
        "assistant",
    ]
    assert out.transcript[-1] == {
        "type": "answer",
        "method": "json",
        "format": "strict",
        "prediction": "slow",
        "in_label_set": True,
        "cost_known": True,
    }


def test_read_file_and_helpful_tool_errors(task):  # noqa: F811
    script = [
        Reply.tools(
            ("read_file", {"path": "./knowledge/domains.md"}),
            ("read_file", {"path": "knowledge/missing.md"}),
            ("read_section", {"ref": "SKILL.md#No such heading"}),
            ("read_file", {"path": "assets/logo.png"}),
            ("read_file", "{not json"),
            ("delete_everything", {}),
        ),
        '{"prediction": "slow"}',
    ]
    with ScriptedOpenAIServer(script) as server:
        out = run(agent(server), task)
    results = [m["content"] for m in server.chat_requests[1].messages if m["role"] == "tool"]
    assert results[0].startswith("# 车控")
    assert (
        "no file 'knowledge/missing.md'; its files: SKILL.md, assets/logo.png, knowledge/domains.md"
        in results[1]
    )
    assert "the sections of SKILL.md: SKILL.md#Routing, SKILL.md#Rules, SKILL.md#Fast system" in results[2]
    assert "binary file" in results[3]
    assert "not valid JSON" in results[4]
    assert "unknown tool 'delete_everything'" in results[5]
    assert out.files_read == ("knowledge/domains.md",) and out.sections_read == ()
    assert [c["ok"] for c in out.transcript if c["type"] == "tool_call"] == [
        True,
        False,
        False,
        False,
        False,
        False,
    ]


def test_no_skill_means_no_tools(case):  # noqa: F811
    with ScriptedOpenAIServer(['{"prediction": "fast"}']) as server:
        out = run(agent(server), Task(case=case, label_set=("fast", "slow")))
    assert server.requests[0].tools == [] and "tool_choice" not in server.requests[0].body
    assert out.prediction == "fast" and out.files_read == () and out.sections_read == ()


def test_a_tool_call_in_a_no_skill_session_gets_a_tool_error_and_the_loop_goes_on(case):  # noqa: F811
    # a model (or a proxy that adds its own tools) calls a tool although the arm offers none
    script = [Reply.tools(("read_file", {"path": "SKILL.md"}), ("web_search", {"q": "x"})), FINAL]
    with ScriptedOpenAIServer(script) as server:
        out = run(agent(server), Task(case=case, label_set=("fast", "slow")))
    assert out.prediction == "slow"
    second = server.chat_requests[1]
    assert second.tools == []
    answers = [m for m in second.messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in answers] == ["call_0_0", "call_0_1"]
    assert all("this arm offers no tools" in m["content"] for m in answers)
    assert [e["ok"] for e in out.transcript if e["type"] == "tool_call"] == [False, False]


def test_a_no_skill_model_that_keeps_calling_tools_is_not_retried_as_an_empty_reply(case):  # noqa: F811
    stray = Reply.tools(("read_file", {"path": "SKILL.md"}))
    with ScriptedOpenAIServer([stray, stray]) as server, pytest.raises(AgentError) as info:
        run(agent(server, max_turns=2), Task(case=case, label_set=("fast", "slow")))
    err = info.value
    assert (err.failure_type, err.retryable) == ("max_turns", False)
    assert "empty" not in str(err) and "offers no tools" in str(err)
    nudge = server.chat_requests[-1].messages[-1]
    assert nudge["role"] == "user" and "this arm offers no tools" in nudge["content"]
    assert "tool_choice" not in server.chat_requests[-1].body  # no tools offered, so none to refuse


def test_the_last_turn_must_answer(task):  # noqa: F811
    keep_reading = Reply.tools(("read_section", {"ref": "SKILL.md#Rules"}))
    with ScriptedOpenAIServer([keep_reading, keep_reading]) as server, pytest.raises(AgentError) as info:
        run(agent(server, max_turns=2), task)
    err = info.value
    assert (err.failure_type, err.retryable) == ("max_turns", False)
    assert "max_turns=2" in str(err)
    last = server.chat_requests[-1]
    assert last.body["tool_choice"] == "none"
    assert last.messages[-1] == {
        "role": "user",
        "content": "You have no tool calls left. Answer now with the JSON object only.",
    }
    assert any(e["type"] == "tool_call" for e in err.transcript)


@pytest.mark.parametrize(
    ("reply", "match"),
    [
        (Reply.text("I am not sure what you mean."), "no answer"),
        (Reply.text(""), "empty"),
        (Reply.text('{"prediction": "sl', finish_reason="length"), "raise it"),
    ],
)
def test_unreadable_final_replies_are_bad_output_with_raw_text(task, reply, match):  # noqa: F811
    with ScriptedOpenAIServer([reply]) as server, pytest.raises(AgentError, match=match) as info:
        run(agent(server, max_tokens=5), task)
    err = info.value
    # a reply cut at max_tokens is truncated, never read loosely
    assert err.failure_type == ("truncated" if reply.finish_reason == "length" else "bad_output")
    assert err.retryable
    assert err.raw_output == reply.content
    assert [e["type"] for e in err.transcript][-3:] == ["llm_call", "message", "answer"]
    assert err.transcript[-1]["format"] in ("bad_output", "truncated")


def test_a_malformed_body_is_bad_output_with_its_text(task):  # noqa: F811
    with (
        ScriptedOpenAIServer([Reply.raw("<html>gateway</html>")]) as server,
        pytest.raises(AgentError) as info,
    ):
        run(agent(server), task)
    assert info.value.failure_type == "bad_output" and info.value.raw_output == "<html>gateway</html>"


def test_retries_show_in_the_transcript(task):  # noqa: F811
    with ScriptedOpenAIServer([Reply.error(429, "slow down", retry_after=0), FINAL]) as server:
        out = run(agent(server), task)
    (call,) = [e for e in out.transcript if e["type"] == "llm_call"]
    assert call["retries"][0]["failure_type"] == "rate_limited" and call["retries"][0]["status"] == 429


def test_exhausted_retries_are_retryable_and_keep_the_transcript(task):  # noqa: F811
    with ScriptedOpenAIServer([Reply.error(503, "down")] * 2) as server, pytest.raises(AgentError) as info:
        run(agent(server, max_retries=1), task)
    assert (info.value.failure_type, info.value.retryable) == ("server_error", True)
    assert info.value.transcript[0]["role"] == "system"


def test_a_slow_endpoint_times_out_within_the_runs_timeout(task):  # noqa: F811
    with ScriptedOpenAIServer([Reply.slow(FINAL, 5)]) as server, pytest.raises(AgentError) as info:
        run(agent(server, max_retries=0), dataclasses.replace(task, timeout_s=0.3))
    assert info.value.failure_type == "timeout" and "0.3" in str(info.value)


def test_the_key_appears_nowhere_but_the_header(task, monkeypatch, caplog):  # noqa: F811
    secret = "sk-adapter-0123456789"
    monkeypatch.setenv("ARM_KEY", secret)
    caplog.set_level(logging.DEBUG)
    script = [
        Reply.tools(("read_section", {"ref": "SKILL.md#Rules"})),
        FINAL,
        Reply.error(401, f"bad key {secret}"),
    ]
    with ScriptedOpenAIServer(script) as server:
        a = agent(server, api_key_env="ARM_KEY")
        out = run(a, task)
        with pytest.raises(AgentError) as info:
            run(a, task)
    assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {secret}"}
    dumped = json.dumps(dataclasses.asdict(out), ensure_ascii=False, default=str)
    assert secret not in dumped
    err = info.value
    assert secret not in str(err) + (err.raw_output or "") + json.dumps(err.transcript, default=str)
    assert secret not in caplog.text and secret not in repr(a)
    assert err.failure_type == "auth" and "ARM_KEY" in str(err)


def test_response_format_json_schema_carries_the_labels(task):  # noqa: F811
    with ScriptedOpenAIServer([FINAL]) as server:
        run(agent(server, response_format="json_schema", temperature=0, seed=3), task)
    body = server.requests[0].body
    assert body["response_format"]["json_schema"]["schema"]["properties"]["prediction"]["enum"] == [
        "fast",
        "slow",
    ]
    assert (body["temperature"], body["seed"]) == (0, 3)


def test_auto_response_format_is_off_for_local_servers(task):  # noqa: F811
    with ScriptedOpenAIServer([FINAL]) as server:
        run(agent(server), task)
    assert "response_format" not in server.requests[0].body


def test_an_unknown_models_cost_is_unknown_not_zero(task, caplog):  # noqa: F811
    with ScriptedOpenAIServer([FINAL]) as server:
        out = run(agent(server, model="model-with-no-price-xyz", prices=None), task)
    assert out.cost is None and out.transcript[-1]["cost_known"] is False
    assert "model-with-no-price-xyz" in caplog.text


def test_runs_are_independent_sessions(task):  # noqa: F811
    with ScriptedOpenAIServer(lambda request: FINAL) as server:
        a = agent(server)

        async def both():
            return await asyncio.gather(a.run(task), a.run(dataclasses.replace(task, session_id="sess-2")))

        one, two = asyncio.run(both())
    assert (one.session_id, two.session_id) == ("sess-1", "sess-2")
    assert all(len(r.messages) == 4 for r in server.requests)  # system, 2 history turns, the case


@pytest.mark.parametrize(
    ("settings", "match"),
    [
        ({}, "needs a model"),
        ({"model": "m", "temprature": 0}, "no setting 'temprature'; valid settings: api_key_env"),
        ({"model": "m", "max_turns": 0}, "max_turns"),
        ({"model": "m", "response_format": "yaml"}, "auto, json_schema, json_object, none"),
        ({"model": "m", "retry": {"tries": 3}}, "unknown retry setting"),
        ({"model": "m", "base_url": "ftp://x"}, "not an http"),
    ],
)
def test_bad_settings_are_usage_errors(settings, match):
    with pytest.raises(UsageError, match=match):
        make_agent("openai", **settings)

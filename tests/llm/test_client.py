"""The chat client over real HTTP: replies, retries, timeouts, error kinds, secrets and pooling."""

from __future__ import annotations

import asyncio
import json
import logging
import time
from datetime import UTC, datetime

import pytest

from abbench.errors import AgentError, UsageError
from abbench.llm import (
    FAILURE_TYPES,
    ChatClient,
    FailureType,
    RetryPolicy,
    classify_failure,
    close_connections,
    normalize_base_url,
    parse_retry_after,
    tool_spec,
)
from abbench.llm._pool import _POOLS, shared_http_client
from abbench.testing import Reply, ScriptedOpenAIServer
from tests.llm.conftest import FAST, HI, PRICES, client


def chat(c: ChatClient, messages=HI, **kw):
    return asyncio.run(c.chat(messages, **kw))


def fails(c: ChatClient, messages=HI, **kw) -> AgentError:
    with pytest.raises(AgentError) as info:
        chat(c, messages, **kw)
    return info.value


def test_reply_usage_cost_and_request_body():
    with ScriptedOpenAIServer([Reply.text("hello", usage=(1000, 500))]) as server:
        r = chat(client(server), temperature=0.2, max_tokens=50, seed=7, extra_body={"top_p": 0.9})
    assert r.content == "hello" and r.finish_reason == "stop" and r.model == "m"
    assert (r.usage.input_tokens, r.usage.output_tokens, r.usage_reported) == (1000, 500, True)
    assert r.cost == pytest.approx((1000 * 1.0 + 500 * 2.0) / 1e6)
    assert r.retries == () and r.latency_ms > 0
    body = server.requests[0].body
    assert body == {
        "model": "m",
        "messages": HI,
        "temperature": 0.2,
        "max_tokens": 50,
        "seed": 7,
        "top_p": 0.9,
    }


def test_tools_go_out_and_tool_calls_come_back():
    tools = [
        tool_spec("read_file", "Read a file.", {"type": "object", "properties": {"path": {"type": "string"}}})
    ]
    script = [Reply.tools(("read_file", {"path": "知识.md"}), ("read_file", "{not json"))]
    with ScriptedOpenAIServer(script) as server:
        r = chat(client(server), tools=tools, tool_choice="auto")
    assert server.requests[0].body["tools"] == tools
    assert server.requests[0].body["tool_choice"] == "auto"
    assert [c.name for c in r.tool_calls] == ["read_file", "read_file"]
    assert r.tool_calls[0].parsed_arguments() == {"path": "知识.md"}
    with pytest.raises(ValueError):
        r.tool_calls[1].parsed_arguments()
    assert r.message["tool_calls"][1]["function"]["arguments"] == "{not json"
    assert r.finish_reason == "tool_calls" and r.content is None


def test_429_waits_as_long_as_retry_after_says():
    with ScriptedOpenAIServer([Reply.error(429, "slow down", retry_after=1), "ok"]) as server:
        r = chat(client(server))
        waited = server.requests[1].received_at - server.requests[0].received_at
    assert r.content == "ok"
    assert waited >= 1.0, waited  # a busy machine only waits longer; how long it meant to wait is below
    (retry,) = r.retries
    assert (retry.failure_type, retry.status, retry.retry_after_s, retry.wait_s) == (
        "rate_limited",
        429,
        1.0,
        1.0,
    )


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "3"}, 3.0),
        ({"retry-after": "0.5"}, 0.5),
        ({"Retry-After": "Wed, 21 Oct 2026 07:28:10 GMT"}, 10.0),
        ({"Retry-After": "Wed, 21 Oct 2026 07:27:00 GMT"}, 0.0),  # in the past: no wait
        ({"retry-after-ms": "250", "Retry-After": "9"}, 0.25),
        ({"Retry-After": "soon"}, None),
        ({}, None),
    ],
)
def test_parse_retry_after(headers, expected):
    now = datetime(2026, 10, 21, 7, 28, 0, tzinfo=UTC)
    assert parse_retry_after(headers, now=now) == expected


def test_retry_after_as_an_http_date_is_honoured():
    before = time.time()
    when = int(before) + 3
    date = datetime.fromtimestamp(when, UTC).strftime("%a, %d %b %Y %H:%M:%S GMT")
    with ScriptedOpenAIServer([Reply.error(503, "busy", retry_after=date), "ok"]) as server:
        r = chat(client(server))
    # the second request went out no earlier than the date, after a wait no longer than the date asked
    assert r.content == "ok" and time.time() >= when
    (retry,) = r.retries
    assert retry.wait_s == retry.retry_after_s and 0 < retry.wait_s <= when - before


def test_server_errors_are_retried_then_succeed():
    script = [Reply.error(500, "boom"), Reply.error(502, "bad gateway"), "fine"]
    with ScriptedOpenAIServer(script) as server:
        r = chat(client(server))
    assert r.content == "fine" and len(server.requests) == 3
    assert [(x.failure_type, x.status) for x in r.retries] == [("server_error", 500), ("server_error", 502)]
    assert all(0 < x.wait_s <= 0.05 for x in r.retries)


@pytest.mark.parametrize(
    ("reply", "failure_type"),
    [
        (Reply.error(503, "overloaded"), "server_error"),
        (Reply.error(429, "slow down"), "rate_limited"),
        (Reply.hang_up(), "connection_error"),
    ],
)
def test_exhausted_retries_raise_a_retryable_error(reply, failure_type):
    with ScriptedOpenAIServer([reply] * 3) as server:
        err = fails(client(server))
        base = server.base_url
    assert (err.failure_type, err.retryable) == (failure_type, True)
    assert len(server.requests) == 3  # one attempt + max_retries=2
    assert "after 3 attempts" in str(err) and base in str(err)


def test_a_retry_after_longer_than_allowed_gives_up_at_once():
    policy = RetryPolicy(max_retries=3, max_retry_after_s=5)
    with ScriptedOpenAIServer([Reply.error(429, "come back tomorrow", retry_after=3600)]) as server:
        err = fails(client(server, retry=policy))
        assert len(server.requests) == 1  # no second attempt: it did not wait to try again
    assert (err.failure_type, err.retryable, err.retry_after) == ("rate_limited", True, 3600.0)
    assert "max_retry_after_s=5" in str(err)


def test_a_slow_reply_times_out():
    # the reply comes after an hour: only the client's timeout can end this call
    with ScriptedOpenAIServer([Reply.slow("late", 3600)]) as server:
        err = fails(client(server, timeout_s=0.3, retry=RetryPolicy(max_retries=0)))
    assert (err.failure_type, err.retryable) == ("timeout", True)
    assert "timeout_s=0.3" in str(err)


def test_a_timed_out_request_is_sent_again_fresh():
    # the first reply never comes; the second must beat the timeout, which is ample for that on a busy machine
    with ScriptedOpenAIServer([Reply.slow("late", 3600), "on time"]) as server:
        r = chat(client(server, timeout_s=5))
    assert r.content == "on time" and r.retries[0].failure_type == "timeout"
    assert len(server.chat_requests) == 2


def test_per_call_timeout_is_tighter_than_the_clients():
    with ScriptedOpenAIServer([Reply.slow("late", 5)]) as server:
        err = fails(client(server, timeout_s=30, retry=RetryPolicy(max_retries=0)), timeout_s=0.2)
    assert err.failure_type == "timeout"


@pytest.mark.parametrize(
    ("reply", "failure_type", "retryable", "advice"),
    [
        (Reply.error(400, "model 'x' does not exist"), "bad_request", False, "check the model name"),
        (Reply.error(422, "messages: field required"), "bad_request", False, "rejected"),
        (Reply.error(401, "Incorrect API key provided"), "auth", False, "api_key_env"),
        (Reply.error(403, "forbidden"), "auth", False, "api_key_env"),
        (Reply.error(404, "no such route"), "not_found", False, "ends in /v1"),
        (
            Reply.error(429, "You exceeded your current quota", code="insufficient_quota"),
            "quota",
            False,
            "billing",
        ),
    ],
)
def test_error_kinds(reply, failure_type, retryable, advice):
    with ScriptedOpenAIServer([reply]) as server:
        err = fails(client(server))
    assert (err.failure_type, err.retryable) == (failure_type, retryable)
    assert len(server.requests) == 1  # never retried
    assert advice in str(err)
    assert err.raw_output and "error" in err.raw_output


@pytest.mark.parametrize(
    ("body", "what"),
    [
        ("this is not json", "not JSON"),
        ('{"id": "x"}', "no choices"),
        ('{"choices": [{"index": 0}]}', "no message"),
        ("[1, 2]", "not a JSON object"),
    ],
)
def test_malformed_bodies_are_bad_output_with_the_raw_text(body, what):
    with ScriptedOpenAIServer([Reply.raw(body)]) as server:
        err = fails(client(server))
    assert (err.failure_type, err.retryable, err.raw_output) == ("bad_output", True, body)
    assert what in str(err)


def test_an_error_object_in_a_200_body_is_a_server_error():
    with ScriptedOpenAIServer([{"error": {"message": "upstream died", "type": "server_error"}}]) as server:
        err = fails(client(server))
    assert (err.failure_type, err.retryable) == ("server_error", True)
    assert "upstream died" in str(err)


def test_empty_content_and_missing_usage_are_reported_as_such():
    with ScriptedOpenAIServer([Reply.text("", include_usage=False)]) as server:
        r = chat(client(server))
    assert r.content == "" and r.text == ""
    assert (r.usage.total_tokens, r.usage_reported) == (0, False)


def test_content_parts_are_joined():
    body = {
        "choices": [
            {"message": {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"text": "b"}]}}
        ]
    }
    with ScriptedOpenAIServer([body]) as server:
        assert chat(client(server)).content == "ab"


def test_connection_refused_is_a_retryable_connection_error():
    with ScriptedOpenAIServer() as server:
        base = server.base_url
    c = ChatClient("m", base_url=base, retry=RetryPolicy(max_retries=1, base_delay_s=0.01), prices=PRICES)
    err = fails(c)
    assert (err.failure_type, err.retryable) == ("connection_error", True)
    assert "check base_url" in str(err)


def test_the_key_is_sent_but_never_leaked(monkeypatch, caplog):
    secret = "sk-test-9f8e7d6c5b4a"
    monkeypatch.setenv("MY_LLM_KEY", secret)
    echo = Reply.error(401, f"Incorrect API key provided: {secret}")
    slow = Reply.error(500, f"internal error for key {secret}")
    caplog.set_level(logging.DEBUG)
    with ScriptedOpenAIServer([slow, f"ok {secret}", echo]) as server:
        c = client(server, api_key_env="MY_LLM_KEY", headers={"X-Org": "${MY_LLM_KEY}"})
        ok = chat(c)
        err = fails(c)
    assert all(r.headers["authorization"] == f"Bearer {secret}" for r in server.requests)
    assert server.requests[0].headers["x-org"] == secret
    assert secret not in ok.raw and secret not in str(ok.content) and secret not in repr(ok)
    assert secret not in str(err) and secret not in (err.raw_output or "")
    assert "***" in str(err)
    assert secret not in caplog.text and secret not in repr(c)
    assert "MY_LLM_KEY" in repr(c)


def test_a_missing_key_variable_is_an_auth_error_naming_it(monkeypatch):
    monkeypatch.delenv("NOPE_KEY", raising=False)
    with ScriptedOpenAIServer(["unused"]) as server:
        err = fails(client(server, api_key_env="NOPE_KEY"))
    assert (err.failure_type, err.retryable) == ("auth", False)
    assert "NOPE_KEY" in str(err) and server.requests == []


def test_the_openai_key_goes_only_to_openai(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-stay-home")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with ScriptedOpenAIServer(["ok"]) as server:
        chat(client(server))
    assert "authorization" not in server.requests[0].headers
    assert ChatClient("gpt-4o").api_key_env == "OPENAI_API_KEY"
    assert ChatClient("gpt-4o", base_url="https://api.openai.com/v1/").base_url == "https://api.openai.com/v1"


def test_openai_base_url_from_the_environment_uses_the_openai_key(monkeypatch):
    with ScriptedOpenAIServer(["ok"]) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-local-proxy")
        c = ChatClient("m", retry=FAST, prices=PRICES)
        chat(c)
    assert c.base_url == server.base_url
    assert server.requests[0].headers["authorization"] == "Bearer sk-local-proxy"


def test_a_refused_response_format_is_dropped_and_remembered():
    def reply(request):
        if "response_format" in request.body:
            return Reply.error(400, "response_format is not supported by this model")
        return '{"prediction": "x"}'

    schema = {"type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}}
    with ScriptedOpenAIServer(reply) as server:
        c = client(server, model="refuses-formats")
        chat(c, response_format=schema)
        chat(c, response_format=schema)
    formats = [r.body.get("response_format") for r in server.requests]
    # json_schema refused -> json_object (with the same schema) refused -> none; the next call goes straight to none
    assert formats == [schema, {"type": "json_object", "schema": {"type": "object"}}, None, None]


def test_max_tokens_becomes_max_completion_tokens_where_required():
    def reply(request):
        if "max_tokens" in request.body:
            return Reply.error(
                400, "Unsupported parameter: 'max_tokens'. Use 'max_completion_tokens' instead."
            )
        return "ok"

    with ScriptedOpenAIServer(reply) as server:
        chat(client(server, model="reasoner-1"), max_tokens=64)
    assert [sorted(r.body) for r in server.requests][-1] == ["max_completion_tokens", "messages", "model"]
    assert server.requests[-1].body["max_completion_tokens"] == 64


def test_connections_are_pooled_per_loop_and_closed_with_it():
    seen = []

    async def main(server):
        a = client(server)
        b = client(server, model="other")
        await a.chat(HI)
        await b.chat(HI)
        seen.append(await shared_http_client())

    with ScriptedOpenAIServer(["1", "2"]) as server:
        asyncio.run(main(server))
    assert server.requests[0].client_port == server.requests[1].client_port  # one kept-alive connection
    assert seen[0].is_closed  # asyncio.run shut the loop down, and the pool with it
    assert all(pooled is not seen[0] for pooled, _ in _POOLS.values())


def test_list_models():
    with ScriptedOpenAIServer(models=["qwen2.5:7b", "llama3"]) as server:
        assert asyncio.run(client(server).list_models()) == ["qwen2.5:7b", "llama3"]


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/v1"),
        ("http://127.0.0.1:8000/", "http://127.0.0.1:8000/v1"),
        ("http://localhost:11434/v1/", "http://localhost:11434/v1"),
        ("https://example.com/openai/v1/chat/completions", "https://example.com/openai/v1"),
        ("https://proxy.example.com/api", "https://proxy.example.com/api"),
    ],
)
def test_normalize_base_url(given, expected):
    assert normalize_base_url(given) == expected


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"model": ""}, "needs a model id"),
        ({"model": "m", "base_url": "localhost:8000"}, "not an http"),
        ({"model": "m", "timeout_s": 0}, "timeout_s"),
    ],
)
def test_invalid_settings(kwargs, match):
    with pytest.raises(UsageError, match=match):
        ChatClient(**kwargs)


def test_close_connections_closes_now_and_the_next_call_reopens():
    async def main(server):
        c = client(server)
        await c.chat(HI)
        first = await shared_http_client()
        await close_connections()
        await c.chat(HI)
        return first, await shared_http_client()

    with ScriptedOpenAIServer(["1", "2"]) as server:
        first, second = asyncio.run(main(server))
    assert first.is_closed and first is not second
    assert server.requests[0].client_port != server.requests[1].client_port


def test_failure_types_are_stored_as_their_words():
    # FailureType is a StrEnum: what the store, exports and reports see is the plain word
    assert FAILURE_TYPES == (
        "auth",
        "bad_output",
        "bad_request",
        "connection_error",
        "not_found",
        "quota",
        "rate_limited",
        "server_error",
        "stream_interrupted",
        "timeout",
        "truncated",
    )
    assert FailureType.TIMEOUT == "timeout" and json.dumps(FailureType.AGENT_ERROR) == '"agent_error"'
    assert f"{FailureType.MAX_TURNS}" == "max_turns"
    assert classify_failure(429, "You exceeded your current quota", None) == ("quota", False)
    assert classify_failure(503, "busy", None) == (FailureType.SERVER_ERROR, True)

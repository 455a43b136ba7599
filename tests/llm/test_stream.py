"""Streamed chat completions over real HTTP: deltas, tool calls split over chunks, the usage chunk,
keep-alives, [DONE], a stream cut in the middle, and servers that refuse or ignore streaming."""

from __future__ import annotations

import asyncio
import json
import random

import pytest

from abbench.agents import Spending, make_agent
from abbench.errors import AgentError
from abbench.graders import JudgeSettings
from abbench.llm import ChatClient, RetryPolicy
from abbench.llm._stream import StreamAssembler, StreamError
from abbench.testing import Reply, ScriptedOpenAIServer
from abbench.testing._openai_server import stream_chunks
from tests.agents.adapter_fixtures import case, skill, task  # noqa: F401

FAST = RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.05)
PRICES = {"m": {"input": 1.0, "output": 2.0}}
HI = [{"role": "user", "content": "hi"}]
TEXT = "路线规划需要实时数据, so this one is slow — 需要 routing and energy data."


def chat(server, replies_stream=True, **kw):
    c = ChatClient("m", base_url=server.base_url, retry=FAST, prices=PRICES, stream=replies_stream)
    return asyncio.run(c.chat(HI, **kw))


def sse(chunks: list[dict], done: bool = True) -> bytes:
    body = b"".join(b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\n\n" for c in chunks)
    return body + (b"data: [DONE]\n\n" if done else b"")


def test_a_streamed_reply_equals_the_same_reply_unstreamed():
    reply = Reply.text(TEXT, usage=(1234, 56), chunk_chars=3, keepalive=True)
    with ScriptedOpenAIServer([reply, reply]) as server:
        streamed = chat(server)
        plain = chat(server, replies_stream=False)
    body = server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "stream" not in server.requests[1].body
    assert streamed.streamed and not plain.streamed
    # role chunk + ceil(len/3) text chunks + finish + usage
    assert streamed.chunks == 1 + -(-len(TEXT) // 3) + 1 + 1
    for field in ("content", "tool_calls", "finish_reason", "model", "usage", "usage_reported", "cost"):
        assert getattr(streamed, field) == getattr(plain, field), field
    assert streamed.cost == pytest.approx((1234 * 1.0 + 56 * 2.0) / 1e6)


def test_tool_calls_split_over_many_chunks_are_assembled_by_index():
    args = {"ref": "knowledge/domains.md#Navigation", "note": "一二三四五六七八九十" * 3}
    reply = Reply.tools(
        {"name": "read_section", "arguments": args, "id": "call_a"},
        {"name": "list_files", "arguments": {}, "id": "call_b"},
        chunk_chars=1,
        usage=(10, 90),
    )
    with ScriptedOpenAIServer([reply, reply]) as server:
        streamed = chat(server)
        plain = chat(server, replies_stream=False)
    assert streamed.chunks > len(json.dumps(args, ensure_ascii=False))  # one character a chunk
    assert [(c.name, json.loads(c.arguments)) for c in streamed.tool_calls] == [
        ("read_section", args),
        ("list_files", {}),
    ]
    assert streamed.tool_calls == plain.tool_calls and streamed.finish_reason == "tool_calls"
    assert streamed.message == plain.message


def test_a_stream_cut_in_the_middle_is_stream_interrupted_with_what_arrived():
    reply = Reply.cut(Reply.text(TEXT, chunk_chars=4), after_chunks=5)
    with ScriptedOpenAIServer([reply]) as server, pytest.raises(AgentError) as info:
        chat(server)
    err = info.value
    assert err.failure_type == "stream_interrupted" and err.retryable
    assert err.raw_output == TEXT[:16]  # the role chunk, then four chunks of four characters
    assert err.partial.content == TEXT[:16] and err.partial.chunks == 5 and not err.partial.usage_reported
    assert "broke off after 5 chunks" in str(err)
    assert len(server.chat_requests) == 1  # not sent again by the client: the run's retry decides


def test_a_body_that_ends_without_finish_or_done_is_interrupted():
    # a proxy that closes a well-formed chunked body early: no transport error, but no end either
    def reply(request):
        return Reply.raw(
            sse(stream_chunks(_completion("partial text"), 4)[:3], done=False),
            content_type="text/event-stream",
        )

    with ScriptedOpenAIServer(reply) as server, pytest.raises(AgentError) as info:
        chat(server)
    assert (
        info.value.failure_type == "stream_interrupted" and info.value.raw_output == "partial "
    )  # role, "part", "ial "


def test_a_server_that_refuses_stream_options_is_asked_again_without_them():
    refusal = Reply.error(400, "Unrecognized request argument supplied: stream_options")
    with ScriptedOpenAIServer([refusal, Reply.text("ok", usage=(3, 1))]) as server:
        c = ChatClient(
            "m-refuses",
            base_url=server.base_url,
            retry=FAST,
            prices={"m-refuses": {"input": 1, "output": 1}},
            stream=True,
        )
        r = asyncio.run(c.chat(HI))
    assert r.content == "ok" and r.streamed
    assert "stream_options" in server.requests[0].body and "stream_options" not in server.requests[1].body
    assert server.requests[1].body["stream"] is True


def test_a_server_that_ignores_stream_answers_one_body_and_is_read_as_such():
    body = _completion("plain body")
    with ScriptedOpenAIServer([body]) as server:
        r = chat(server)
    assert r.content == "plain body" and not r.streamed


def test_an_error_streamed_as_an_event_is_classified():
    payload = b'data: {"error": {"message": "Rate limit reached", "type": "rate_limit_error", "code": "rate_limit_exceeded"}}\n\n'
    with (
        ScriptedOpenAIServer([Reply.raw(payload, content_type="text/event-stream")]) as server,
        pytest.raises(AgentError) as info,
    ):
        chat(server)
    assert "Rate limit reached" in str(info.value)


def test_the_assembler_reads_the_same_reply_however_the_bytes_are_split():
    completion = _completion(TEXT, calls=[("read_file", '{"path": "a.md"}')], usage=(7, 9))
    body = sse(stream_chunks(completion, 2, include_usage=True)).replace(b"\n", b"\r\n")
    body = b": keep-alive\r\n\r\n" + body
    whole = StreamAssembler()
    whole.feed(body)
    rng = random.Random(14)
    for _ in range(20):
        pieces = StreamAssembler()
        i = 0
        while i < len(body):
            n = rng.randint(1, 40)
            pieces.feed(body[i : i + n])
            i += n
        pieces.close()
        assert pieces.as_completion() == whole.as_completion()
        assert pieces.done and pieces.comments == 1 and pieces.bytes_read == len(body)
    got = whole.as_completion()
    assert got["choices"][0]["message"]["content"] == TEXT
    assert got["choices"][0]["message"]["tool_calls"][0]["function"] == {
        "name": "read_file",
        "arguments": '{"path": "a.md"}',
    }
    assert got["usage"]["prompt_tokens"] == 7


def test_a_data_event_over_several_lines_is_joined_and_bad_json_is_refused():
    a = StreamAssembler()
    a.feed(b'data: {"choices": [{"delta":\ndata: {"content": "x"}}]}\n\n')
    assert a.content == "x"
    with pytest.raises(StreamError, match="not JSON"):
        StreamAssembler().feed(b"data: {nope\n\n")


def test_the_openai_agent_streams_its_tool_loop(task):  # noqa: F811
    final = json.dumps(
        {"prediction": "slow", "reason": "需要路线", "evidence_refs": ["SKILL.md#Rules"]}, ensure_ascii=False
    )
    script = [
        Reply.tools(("read_section", {"ref": "SKILL.md#Rules"}), usage=(100, 10), chunk_chars=2),
        Reply.text(final, usage=(200, 20), chunk_chars=2, keepalive=True),
    ]
    with ScriptedOpenAIServer(script) as server:
        agent = make_agent("openai", model="m", base_url=server.base_url, prices=PRICES, stream=True)
        out = asyncio.run(agent.run(task))
    assert all(r.body["stream"] for r in server.chat_requests)
    assert out.prediction == "slow" and out.sections_read == ("SKILL.md#Rules",)
    assert (out.usage.input_tokens, out.usage.output_tokens) == (300, 30)
    calls = [e for e in out.transcript if e["type"] == "llm_call"]
    assert [c["streamed"] for c in calls] == [True, True] and calls[1]["chunks"] > 10


def test_an_agent_whose_stream_breaks_keeps_what_it_spent(task):  # noqa: F811
    script = [
        Reply.tools(("read_section", {"ref": "SKILL.md#Rules"}), usage=(100, 10)),
        Reply.cut(Reply.text('{"prediction": "slow", "reason": "long"}', chunk_chars=3), after_chunks=6),
    ]
    spending = Spending()
    import dataclasses

    with ScriptedOpenAIServer(script) as server:
        agent = make_agent("openai", model="m", base_url=server.base_url, prices=PRICES, stream=True)
        with pytest.raises(AgentError) as info:
            asyncio.run(agent.run(dataclasses.replace(task, spending=spending)))
    err = info.value
    assert err.failure_type == "stream_interrupted" and err.retryable and err.spent is spending
    assert spending.calls == 2 and (spending.input_tokens, spending.output_tokens) == (100, 10)
    assert spending.cost is None  # the broken call's usage never came: unknown, not zero
    assert spending.sections_read == ["SKILL.md#Rules"]
    partial = [e for e in err.transcript if e.get("partial")]
    assert partial and partial[0]["content"] == '{"prediction": "slow"'[:15]  # role + 5 chunks of 3


def test_a_judge_streams_when_its_settings_say_so():
    with ScriptedOpenAIServer([Reply.text('{"correctness": 4}', usage=(50, 5), chunk_chars=1)]) as server:
        judge = JudgeSettings.build(
            "llm_judge", model="m", base_url=server.base_url, prices=PRICES, stream=True
        )
        r = asyncio.run(judge.ask("llm_judge", HI))
    assert server.requests[0].body["stream"] is True
    assert r.content == '{"correctness": 4}' and r.usage.input_tokens == 50 and r.chunks > 15


def _completion(text: str, calls=(), usage=None) -> dict:
    message = {"role": "assistant", "content": text}
    if calls:
        message["tool_calls"] = [
            {"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": a}}
            for i, (n, a) in enumerate(calls)
        ]
    out = {
        "id": "x",
        "object": "chat.completion",
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    if usage:
        out["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1], "total_tokens": sum(usage)}
    return out

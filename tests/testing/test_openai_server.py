"""The scripted OpenAI-compatible server answers real HTTP from its script and records what it got."""

from __future__ import annotations

import json
import threading

import httpx
import pytest

from abbench.testing import Reply, ScriptedOpenAIServer


def post(server, body, path="/v1/chat/completions", **kw):
    return httpx.post(server.url + path, json=body, timeout=10, **kw)


def test_replies_in_order_then_a_clear_500():
    with ScriptedOpenAIServer(["first", Reply.text("second", usage=(7, 3))]) as server:
        a = post(server, {"model": "m", "messages": [{"role": "user", "content": "hi"}]}).json()
        b = post(server, {"model": "m", "messages": []}).json()
        c = post(server, {"model": "m", "messages": []})
    assert a["choices"][0]["message"] == {"role": "assistant", "content": "first"}
    assert a["model"] == "m" and a["usage"]["prompt_tokens"] >= 1
    assert b["usage"] == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    assert c.status_code == 500 and "no reply left for request #3" in c.json()["error"]["message"]
    assert [r.index for r in server.chat_requests] == [0, 1, 2]


def test_tool_calls_are_sent_in_openai_shape():
    reply = Reply.tools(("read_file", {"path": "a.md"}), {"name": "x", "arguments": "{bad", "id": "c9"})
    with ScriptedOpenAIServer([reply]) as server:
        body = post(server, {"model": "m", "messages": []}).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    calls = choice["message"]["tool_calls"]
    assert calls[0]["function"] == {"name": "read_file", "arguments": '{"path": "a.md"}'}
    assert calls[1] == {"id": "c9", "type": "function", "function": {"name": "x", "arguments": "{bad"}}


def test_a_callable_script_sees_the_request():
    def reply(request):
        return f"you said {request.messages[-1]['content']} to {request.model}"

    with ScriptedOpenAIServer(reply) as server:
        body = post(server, {"model": "qwen", "messages": [{"role": "user", "content": "你好"}]}).json()
    assert body["choices"][0]["message"]["content"] == "you said 你好 to qwen"
    assert server.requests[0].headers["content-type"] == "application/json"


def test_errors_retry_after_raw_bodies_and_models():
    script = [Reply.error(429, "slow down", retry_after=2), Reply.raw("<html>proxy</html>", status=502)]
    with ScriptedOpenAIServer(script, models=["a", "b"]) as server:
        limited = post(server, {"messages": []})
        proxy = post(server, {"messages": []})
        models = httpx.get(server.base_url + "/models").json()
        missing = httpx.get(server.url + "/nope")
    assert limited.status_code == 429 and limited.headers["retry-after"] == "2"
    assert limited.json()["error"]["type"] == "rate_limit_error"
    assert proxy.status_code == 502 and proxy.text == "<html>proxy</html>"
    assert [m["id"] for m in models["data"]] == ["a", "b"]
    assert missing.status_code == 404


def test_slow_replies_wait_and_close_does_not():
    # A slow reply still arrives whole; that it waits is shown below by a client that gives up first
    # (no duration is asserted: the machine's speed must not decide the test).
    with ScriptedOpenAIServer([Reply.slow("late", 0.4)]) as server:
        late = post(server, {"messages": []})
    assert late.status_code == 200 and late.json()["choices"][0]["message"]["content"] == "late"
    server2 = ScriptedOpenAIServer([Reply.slow("never", 3600)]).start()
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(server2.url + "/chat/completions", json={"messages": []}, timeout=0.3)
    closing = threading.Thread(target=server2.close)
    closing.start()
    closing.join(120)  # a safety net: a close that waited for the reply would take an hour
    assert not closing.is_alive()


def test_hang_up_and_streaming():
    script = [Reply.hang_up(), Reply.tools(("read_file", {"path": "a.md"}), chunk_chars=4, keepalive=True)]
    with ScriptedOpenAIServer(script) as server:
        with pytest.raises(httpx.TransportError):
            post(server, {"messages": []})
        streamed = post(server, {"messages": [], "stream": True, "stream_options": {"include_usage": True}})
    assert streamed.status_code == 200 and streamed.headers["content-type"] == "text/event-stream"
    events = [e for e in streamed.text.split("\n\n") if e]
    assert events[-1] == "data: [DONE]" and ": keep-alive" in events
    chunks = [json.loads(e[len("data: ") :]) for e in events if e.startswith("data: {")]
    pieces = [c["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"] for c in chunks[2:-2]]
    assert "".join(pieces) == '{"path": "a.md"}' and all(len(p) == 4 for p in pieces)
    assert chunks[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "read_file"
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert chunks[-1]["choices"] == [] and chunks[-1]["usage"]["completion_tokens"] > 0


def test_port_and_urls_need_a_running_server():
    server = ScriptedOpenAIServer()
    with pytest.raises(RuntimeError, match="never started"):
        server.base_url  # noqa: B018
    with server:
        assert server.base_url == f"http://127.0.0.1:{server.port}/v1"

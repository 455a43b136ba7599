"""The response cache at the client: keys by round (never by attempt), the four modes, what is never kept.

Every test counts the requests the scripted server on 127.0.0.1 received.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from abbench.errors import AgentError, UsageError
from abbench.llm import (
    CallCache,
    ChatClient,
    MemoryCache,
    RetryPolicy,
    cache_endpoint,
    cache_key,
    check_cache_mode,
    default_cache_mode,
)
from abbench.testing import Reply, ScriptedOpenAIServer
from tests.llm.conftest import FAST, HI, client


def chat(c: ChatClient, cache: CallCache | None, **kw):
    kw.setdefault("temperature", 0)
    return asyncio.run(c.chat(HI, cache=cache, **kw))


def numbered(request):
    """A different reply for every request: the n-th says ``reply n``."""
    return Reply.text(f"reply {request.index}", usage=(100, 10))


@pytest.fixture
def numbered_client():
    """A scripted server that numbers its replies, and a chat client of it."""
    with ScriptedOpenAIServer(numbered) as server:
        yield server, client(server)


def test_a_second_call_is_answered_from_the_cache_and_saves_its_cost(numbered_client):
    server, c = numbered_client
    memory = MemoryCache()
    first = chat(c, CallCache(memory, round=0, mode="on"))
    second = chat(c, CallCache(memory, round=0, mode="on"))
    assert len(server.chat_requests) == 1
    assert (first.content, first.cached) == ("reply 0", False)
    assert (second.content, second.cached) == ("reply 0", True)
    assert second.cost == pytest.approx(first.cost) and second.usage == first.usage
    assert second.cache_key == first.cache_key and second.retries == ()
    assert (memory.hits, memory.saved) == (1, pytest.approx(first.cost))


def test_rounds_are_distinct_samples_and_attempts_are_not(numbered_client):
    server, c = numbered_client
    memory = MemoryCache()
    replies = [chat(c, CallCache(memory, round=r, mode="on")).content for r in (0, 1, 2)]
    assert len(server.chat_requests) == 3
    again = [chat(c, CallCache(memory, round=r, mode="on")).content for r in (0, 1, 2)]
    assert len(server.chat_requests) == 3  # a second attempt of each round asks nothing
    assert replies == ["reply 0", "reply 1", "reply 2"] and again == replies
    assert len(memory.replies) == 3


def test_refresh_calls_again_and_overwrites(numbered_client):
    server, c = numbered_client
    memory = MemoryCache()
    chat(c, CallCache(memory, mode="on"))
    fresh = chat(c, CallCache(memory, mode="refresh"))
    assert len(server.chat_requests) == 2 and not fresh.cached
    kept = chat(c, CallCache(memory, mode="on"))
    assert len(server.chat_requests) == 2
    assert (fresh.content, kept.content, kept.cached) == ("reply 1", "reply 1", True)


def test_read_only_reads_but_never_writes(numbered_client):
    server, c = numbered_client
    memory = MemoryCache()
    chat(c, CallCache(memory, mode="read-only"))
    chat(c, CallCache(memory, mode="read-only"))
    assert len(server.chat_requests) == 2 and memory.replies == {}
    chat(c, CallCache(memory, mode="on"))
    hit = chat(c, CallCache(memory, mode="read-only"))
    assert len(server.chat_requests) == 3 and hit.cached and hit.content == "reply 2"
    assert len(memory.replies) == 1


def test_off_never_reads_nor_writes(numbered_client):
    server, c = numbered_client
    memory = MemoryCache()
    chat(c, CallCache(memory, mode="on"))
    kept = dict(memory.replies)
    off = chat(c, CallCache(memory, mode="off"))
    assert len(server.chat_requests) == 2 and not off.cached and off.cache_key is None
    assert memory.replies == kept and memory.hits == 0


def test_the_default_mode_follows_the_temperature(numbered_client):
    server, c = numbered_client
    memory = MemoryCache()
    chat(c, CallCache(memory), temperature=0.7)
    chat(c, CallCache(memory), temperature=0.7)
    assert len(server.chat_requests) == 2 and memory.replies == {}  # sampled: measured, not cached
    chat(c, CallCache(memory), temperature=0)
    assert chat(c, CallCache(memory), temperature=0).cached
    assert len(server.chat_requests) == 3
    assert default_cache_mode(None) == "off" and default_cache_mode(0.0) == "on"
    assert default_cache_mode(1.0, judge=True) == "on"


@pytest.mark.parametrize(
    "error",
    [
        Reply.error(400, "bad model"),
        Reply.error(401, "no key"),
        Reply.raw("<html>proxy error</html>"),
        Reply.text('{"prediction": "fast"}', cut_after=2),
    ],
    ids=["400", "401", "not-json", "stream-cut"],
)
def test_an_error_is_never_kept(error):
    memory = MemoryCache()
    with ScriptedOpenAIServer([error, error]) as server:
        c = client(server, retry=RetryPolicy(max_retries=0), stream=error.cut_after is not None)
        for _ in range(2):
            with pytest.raises(AgentError):
                chat(c, CallCache(memory, mode="on"))
        assert len(server.chat_requests) == 2  # the second call asked again
    assert memory.replies == {}


def test_a_429_retried_is_kept_once_it_succeeds():
    memory = MemoryCache()
    script = [Reply.error(429, "slow down", retry_after=0), Reply.text("at last", usage=(5, 5))]
    with ScriptedOpenAIServer(script) as server:
        c = client(server)
        first = chat(c, CallCache(memory, mode="on"))
        assert len(server.chat_requests) == 2 and len(first.retries) == 1
        second = chat(c, CallCache(memory, mode="on"))
        assert len(server.chat_requests) == 2
    (kept,) = memory.replies.values()
    assert json.loads(kept.response)["choices"][0]["message"]["content"] == "at last"
    assert second.cached and second.content == "at last"


def test_a_streamed_reply_is_kept_as_its_assembled_completion_and_serves_a_plain_call():
    memory = MemoryCache()
    calls = [("read_section", {"ref": "SKILL.md#Rules"})]
    with ScriptedOpenAIServer([Reply.tools(*calls, content="looking", chunk_chars=3)]) as server:
        streamed = chat(client(server, stream=True), CallCache(memory, mode="on"))
        assert streamed.streamed and streamed.chunks > 3
        plain = chat(client(server), CallCache(memory, mode="on"))
        assert len(server.chat_requests) == 1
    (kept,) = memory.replies.values()
    assert kept.streamed and json.loads(kept.response)["choices"][0]["message"]["content"] == "looking"
    assert plain.cached and plain.content == "looking" and plain.tool_calls == streamed.tool_calls


def test_the_key_is_the_endpoint_model_body_and_round():
    body = {"model": "m", "messages": HI, "temperature": 0}
    base = cache_key("http://h/v1", "m", body, 0)
    assert cache_key("http://h/v1", "m", dict(reversed(body.items())), 0) == base  # canonical
    assert cache_key("http://h/v1", "m", {**body, "stream": True, "stream_options": {}}, 0) == base
    assert cache_key("http://h/v1", "m", body, 1) != base
    assert cache_key("http://other/v1", "m", body, 0) != base
    assert cache_key("http://h/v1", "m2", body, 0) != base
    assert cache_key("http://h/v1", "m", {**body, "temperature": 0.5}, 0) != base
    assert cache_endpoint("https://user:sk-secret@h:8443/v1?key=sk-secret") == "https://h:8443/v1"


def test_a_feature_the_server_refused_does_not_change_the_key():
    memory = MemoryCache()
    refuse = Reply.error(400, "response_format is not supported by this model")
    with ScriptedOpenAIServer([refuse, Reply.text("ok")]) as server:
        c = ChatClient("refuser", base_url=server.base_url, retry=FAST)
        fmt = {"type": "json_object"}
        first = asyncio.run(c.chat(HI, response_format=fmt, temperature=0, cache=CallCache(memory)))
        # a new process would not know of the refusal: the key is the same either way
        key = cache_key(
            c.base_url,
            "refuser",
            {"model": "refuser", "messages": HI, "response_format": fmt, "temperature": 0},
            0,
        )
        assert first.cache_key == key and key in memory.replies


@pytest.mark.parametrize(
    ("value", "mode"),
    [("on", "on"), ("READ_ONLY", "read-only"), ("readonly", "read-only"), (False, "off"), (None, None)],
)
def test_cache_modes_are_read_leniently(value, mode):
    assert check_cache_mode(value) == mode


def test_an_unknown_mode_is_refused_with_the_choices():
    with pytest.raises(
        UsageError, match=r"arms\.a\.cache: 'sometimes' is not a cache mode; choose one of: on, off"
    ):
        check_cache_mode("sometimes", "arms.a.cache")


class Held:
    """A reply callable that holds every request until the test lets it go (the n-th gets `script[n]`)."""

    def __init__(self, *script: Reply):
        import threading

        self.script = list(script)
        self.arrived = threading.Semaphore(0)
        self.release = threading.Event()

    def __call__(self, request):
        self.arrived.release()
        self.release.wait(60)
        return self.script[min(request.index, len(self.script) - 1)]


async def _twins(c: ChatClient, memory: MemoryCache, held: Held):
    first = asyncio.create_task(c.chat(HI, cache=CallCache(memory, mode="on"), temperature=0))
    await asyncio.to_thread(held.arrived.acquire)  # the first call is at the server, held there
    second = asyncio.create_task(c.chat(HI, cache=CallCache(memory, mode="on"), temperature=0))
    await asyncio.sleep(0)  # the second has started: it waits for the first (or, without that, asks)
    held.release.set()
    return await asyncio.gather(first, second, return_exceptions=True)


def test_two_identical_calls_in_flight_at_once_are_asked_once():
    memory, held = MemoryCache(), Held(Reply.text("only once", usage=(100, 10)))
    with ScriptedOpenAIServer(held) as server:
        first, second = asyncio.run(_twins(client(server), memory, held))
        assert len(server.chat_requests) == 1
    assert (first.content, first.cached) == ("only once", False)
    assert (second.content, second.cached) == ("only once", True)
    assert (memory.hits, memory.saved) == (1, pytest.approx(first.cost))


def test_a_twin_whose_first_call_failed_asks_itself():
    memory = MemoryCache()
    held = Held(Reply.error(400, "bad request"), Reply.text("second try", usage=(100, 10)))
    with ScriptedOpenAIServer(held) as server:
        first, second = asyncio.run(_twins(client(server, retry=RetryPolicy(max_retries=0)), memory, held))
        assert len(server.chat_requests) == 2
    assert isinstance(first, AgentError) and first.failure_type == "bad_request"
    assert (second.content, second.cached) == ("second try", False)
    assert memory.hits == 0 and len(memory.replies) == 1

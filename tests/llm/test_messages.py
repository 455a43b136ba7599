"""The client's error messages read as sentences: one full stop, cuts at word boundaries with one "…"."""

from __future__ import annotations

import asyncio

import pytest

from abbench.errors import AgentError
from abbench.llm import ChatClient, RetryPolicy
from abbench.testing import Reply, ScriptedOpenAIServer


def _fail(reply: Reply) -> AgentError:
    with ScriptedOpenAIServer([reply]) as server:
        client = ChatClient("scripted", base_url=server.base_url, retry=RetryPolicy(max_retries=0))
        with pytest.raises(AgentError) as info:
            asyncio.run(client.chat([{"role": "user", "content": "hi"}]))
    return info.value


def test_a_server_message_that_ends_its_sentence_gets_no_second_full_stop():
    err = _fail(Reply.error(400, "Invalid value for 'model'."))
    assert "Invalid value for 'model'. The server rejected" in str(err)
    assert ".." not in str(err)


def test_a_long_error_body_is_cut_at_a_word_boundary_with_one_ellipsis():
    page = "<html><body>" + " ".join(f"proxy-word{i}" for i in range(200)) + "</body></html>"
    err = _fail(Reply.raw(page, status=502, content_type="text/html"))
    message = str(err)
    cut = message[message.index("<html>") :]
    assert "…" in cut and cut.count("…") == 1 and ".." not in message
    word = cut[: cut.index("…")].split()[-1]
    assert word.startswith("proxy-word") and word in page.split()  # a whole word before the cut

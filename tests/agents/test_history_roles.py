"""What a model is sent of a dialogue's history: user and assistant turns only, by the mapping's roles."""

from __future__ import annotations

import asyncio
import json
import logging

from abbench.agents import Task, make_agent
from abbench.dataset import convert_file
from abbench.testing import ScriptedOpenAIServer
from abbench.types import Case
from tests.agents.adapter_fixtures import FINAL


def sent_messages(case: Case) -> list[dict]:
    """The messages a real OpenAI-compatible server on 127.0.0.1 received for `case`."""
    task = Task(case=case, skill=None, arm="a", label_set=("fast", "slow"), session_id="s-1")
    with ScriptedOpenAIServer([FINAL]) as server:
        agent = make_agent("openai", model="scripted", base_url=server.base_url)
        asyncio.run(agent.run(task))
    (request,) = server.chat_requests
    return request.messages


def test_sgd_system_turns_reach_the_model_as_assistant_turns(realdata):
    path = realdata / "dialogues" / "sgd_dev_001_head20.json"
    cases = {c.case_id: c for c in convert_file(path, recipe="conversations").cases}
    messages = sent_messages(cases["1_00000:6"])
    turns = json.loads(path.read_text(encoding="utf-8"))[0]["turns"]
    assert [m["role"] for m in messages] == ["system", *(["user", "assistant"] * 3), "user"]
    said = [(m["role"], m["content"]) for m in messages[1:-1]]
    assert said == [("user" if t["speaker"] == "USER" else "assistant", t["utterance"]) for t in turns[:6]]
    assert turns[6]["utterance"] in messages[-1]["content"]


def test_the_mappings_roles_decide_when_the_assistant_speaks_first(tmp_path):
    # An operator greets first: by turn order the greeting would be the user's. The mapping says it.
    turns = [{"who": "Operator", "text": "Bank line, hello."}, {"who": "Member", "text": "Lost my card"}]
    path = tmp_path / "calls.json"
    path.write_text(json.dumps([{"id": "call-1", "turns": turns}]), encoding="utf-8")
    profile = {
        "conversation": {"turns": "turns", "speaker": "who", "text": "text", "id": "id"},
        "roles": {"Operator": "assistant", "Member": "user"},
    }
    (case,) = convert_file(path, profile).cases
    messages = sent_messages(case)
    assert [(m["role"], m["content"]) for m in messages[1:-1]] == [("assistant", "Bank line, hello.")]
    assert [m["role"] for m in messages] == ["system", "assistant", "user"]


def test_an_unknown_speaker_in_a_stored_history_is_logged_and_never_a_system_message(caplog):
    case = Case(
        case_id="old-7",
        input="and tomorrow?",
        history=[
            {"speaker": "system", "text": "Sunny today."},
            {"speaker": "Operator", "text": "Anything else?"},
        ],
    )
    with caplog.at_level(logging.WARNING, logger="abbench.agents._prompt"):
        messages = sent_messages(case)
    assert [m["role"] for m in messages] == ["system", "assistant", "assistant", "user"]
    (record,) = [r for r in caplog.records if "Operator" in r.getMessage()]
    assert (
        "case old-7" in record.getMessage() and "roles: {Operator: user or assistant}" in record.getMessage()
    )

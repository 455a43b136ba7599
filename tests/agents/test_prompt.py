"""The task prompt: skill injected, case and history as turns, labels, answer contract, no gold."""

from __future__ import annotations

import dataclasses
import json

import pytest

from abbench.agents import Task, answer_schema, build_prompt, history_turns
from abbench.types import Case
from tests.agents.adapter_fixtures import case, skill, task  # noqa: F401


def test_the_skill_is_injected_with_its_files_and_references(task):  # noqa: F811
    prompt = build_prompt(task, tools=True)
    system = prompt.system
    assert "# Skill: routing" in system
    assert "Route each in-car request." in system and "name: routing" not in system  # no front matter
    assert "- SKILL.md#Rules" in system and "- SKILL.md#Fast system" in system
    assert (
        "knowledge/domains.md — sections: knowledge/domains.md#车控, knowledge/domains.md#Navigation"
        in system
    )
    assert "assets/logo.png (binary)" in system
    assert "read_section(ref)" in system
    assert 'exactly one of "fast", "slow"' in system


def test_history_becomes_prior_turns_and_the_case_comes_last(task):  # noqa: F811
    messages = build_prompt(task).messages
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[1]["content"] == "我要去机场" and messages[2]["content"] == "好的"
    last = messages[-1]["content"]
    assert last.endswith("Input:\n到目的地电量够不够")
    assert '"battery": "40%"' in last


def test_the_gold_answer_never_reaches_the_agent(task):  # noqa: F811
    prompt = build_prompt(task, tools=True)
    everything = prompt.text + json.dumps(prompt.messages, ensure_ascii=False)
    assert "GOLD" not in everything


def test_plain_text_form_for_command_line_agents(task):  # noqa: F811
    text = build_prompt(task, skill_dir="/tmp/ws/skill").text
    assert "They are in the folder /tmp/ws/skill" in text
    assert "# Conversation so far\nuser: 我要去机场\nassistant: 好的" in text
    assert text.rstrip().endswith("到目的地电量够不够")


def test_no_skill_no_tools_no_labels(case):  # noqa: F811
    prompt = build_prompt(Task(case=dataclasses.replace(case, history=None, context=None)))
    assert "No skill is provided" in prompt.system
    assert "evidence_refs: [] (no skill is provided)" in prompt.system
    assert "prediction: your answer to the case" in prompt.system
    assert [m["role"] for m in prompt.messages] == ["system", "user"]
    assert prompt.user == "Input:\n到目的地电量够不够"


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        (None, []),
        ("earlier question", [("user", "earlier question")]),
        (["hi", "hello", "and?"], [("user", "hi"), ("assistant", "hello"), ("user", "and?")]),
        (
            [{"role": "human", "content": "q"}, {"role": "bot", "text": "a"}],
            [("user", "q"), ("assistant", "a")],
        ),
        ('[{"role": "用户", "content": "开空调"}]', [("user", "开空调")]),
        ({"messages": [{"role": "assistant", "content": "a"}]}, [("assistant", "a")]),
        ([{"role": "user", "content": ""}], []),
    ],
)
def test_history_turns(history, expected):
    assert [(t["role"], t["content"]) for t in history_turns(history)] == expected


def test_answer_schema_lists_the_labels():
    schema = answer_schema(("fast", "slow"))
    assert schema["properties"]["prediction"]["enum"] == ["fast", "slow"]
    assert schema["required"] == ["prediction", "reason", "confidence", "evidence_refs"]
    assert "enum" not in answer_schema()["properties"]["prediction"]


def test_cases_without_a_skill_md_still_list_their_files(tmp_path):
    from tests.agents.adapter_fixtures import write_skill

    snap = write_skill(tmp_path / "s", {"notes.md": "# A\ntext\n"})
    prompt = build_prompt(Task(case=Case("c", "q"), skill=snap), tools=True)
    assert "<skill" not in prompt.system and "- notes.md — sections: notes.md#A" in prompt.system

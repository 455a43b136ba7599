"""The trajectory view: a transcript's tool calls in order with their results, reads, turns and tokens."""

from __future__ import annotations

import json

import pytest

from abbench.transcript import (
    MessageEvent,
    ModelEvent,
    OtherEvent,
    ToolEvent,
    read_transcript,
    to_dicts,
    trajectory_of,
)
from abbench.types import Usage


def session(result="- 快系统能做的，走 fast\n" * 3):
    """A tool-loop session: a read, a failed read, the same read again, then the answer."""
    calls = [
        {
            "id": f"c{n}",
            "type": "function",
            "function": {"name": "read_section", "arguments": json.dumps({"ref": ref})},
        }
        for n, ref in enumerate(["SKILL.md#规则", "knowledge/x.md#nope", "SKILL.md#规则"], start=1)
    ]
    events = [
        MessageEvent(role="user", content="打开空调"),
        ModelEvent(turn=1, model="m", usage=Usage(10, 5)),
        MessageEvent(role="assistant", content=None, tool_calls=tuple(calls)),
    ]
    for call, ok in zip(calls, (True, False, True), strict=True):
        text = result if ok else "no such section"
        fn = call["function"]
        events.append(
            ToolEvent(
                turn=1,
                id=call["id"],
                name=fn["name"],
                arguments=fn["arguments"],
                ok=ok,
                result_chars=len(text),
            )
        )
        events.append(MessageEvent(role="tool", name=fn["name"], tool_call_id=call["id"], content=text))
    events += [
        ModelEvent(turn=2, model="m"),
        MessageEvent(role="assistant", content='{"prediction": "fast"}'),
    ]
    return events


def test_steps_come_in_order_with_arguments_results_and_how_they_went():
    t = trajectory_of(session(), sections_read=("SKILL.md#规则",), usage=Usage(30, 9), skills_loaded=())
    assert [(s.index, s.name, s.ok, s.turn, s.id) for s in t.steps] == [
        (1, "read_section", True, 1, "c1"),
        (2, "read_section", False, 1, "c2"),
        (3, "read_section", True, 1, "c3"),
    ]
    assert t.steps[1].result == "no such section" and t.steps[0].result.startswith("- 快系统")
    assert (t.turns, t.failed_steps, t.repeated_steps) == (2, 1, 1)
    text = t.text().text
    assert "steps: 3 tool calls (1 failed, 1 repeated)" in text
    assert "tokens: 30 in, 9 out" in text and "sections read: SKILL.md#规则" in text
    assert "skills loaded: (none)" in text
    assert '[2] read_section({"ref": "knowledge/x.md#nope"}) → FAILED (turn 1)' in text


def test_the_text_is_cut_to_its_budget_and_says_so():
    t = trajectory_of(session(result="x" * 5000))
    shown = t.text(budget=500, result_budget=100)
    assert len(shown.text) <= 500 + 80  # the closing line says what was cut
    assert shown.cut and shown.steps_shown < 3
    assert f"{3 - shown.steps_shown} more steps cut to keep within 500 characters" in shown.text
    assert "[4900 characters cut]" in shown.text
    whole = t.text(budget=100_000, result_budget=100)
    assert whole.steps_shown == 3 and whole.cut  # a result was still cut


def test_openai_style_messages_alone_give_the_steps_and_their_results():
    events = [e for e in session() if not isinstance(e, ToolEvent | ModelEvent)]
    t = trajectory_of(events)
    assert [(s.name, s.ok, s.result) for s in t.steps][1] == ("read_section", None, "no such section")
    assert t.turns is None


def test_untyped_entries_are_read_too_and_a_file_reads_the_same(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(
        "\n".join(json.dumps(d, ensure_ascii=False) for d in to_dicts(session())), encoding="utf-8"
    )
    assert trajectory_of(read_transcript(path)) == trajectory_of(session())
    foreign = OtherEvent(
        {"role": "assistant", "tool_calls": [{"id": "z", "function": {"name": "bash", "arguments": "ls"}}]}
    )
    (step,) = trajectory_of(
        [foreign, OtherEvent({"role": "tool", "tool_call_id": "z", "content": "a b"})]
    ).steps
    assert (step.name, step.arguments, step.result) == ("bash", "ls", "a b")


@pytest.mark.parametrize("budget", [100, 300, 1000])
def test_no_step_is_dropped_silently(budget):
    t = trajectory_of(session(result="y" * 200))
    shown = t.text(budget=budget)
    said = shown.text.count("\n[")
    assert said == shown.steps_shown
    if shown.steps_shown < 3:
        assert "more steps cut" in shown.text

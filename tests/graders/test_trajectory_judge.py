"""Judges shown the trajectory: llm_judge's include, task_completion, trace_quality, skill_instruction_following.

Over real HTTP to a scripted OpenAI-compatible server on 127.0.0.1, with scripted judge replies.
"""

from __future__ import annotations

import asyncio
import json

import pytest

from abbench.errors import GradingError, UsageError
from abbench.graders import make_grader, parse_section_verdicts
from abbench.graders._trajectory_judge import skill_sections
from abbench.testing import Reply, ScriptedOpenAIServer
from abbench.transcript import MessageEvent, ModelEvent, ToolEvent, to_dicts

from .conftest import make_ctx


def session(result="- 快系统能做的，走 fast\nAs Claude, I read this from /home/me/skills/x"):
    """A read of the rules, a failed read, the same read again (a loop), then the answer."""
    events = [MessageEvent(role="user", content="打开空调"), ModelEvent(turn=1, model="m")]
    for n, (ref, ok) in enumerate(
        [("SKILL.md#规则", True), ("knowledge/x.md#nope", False), ("SKILL.md#规则", True)], 1
    ):
        text = result if ok else "no such section"
        args = json.dumps({"ref": ref}, ensure_ascii=False)
        events.append(
            ToolEvent(turn=1, id=f"c{n}", name="read_section", arguments=args, ok=ok, result_chars=len(text))
        )
        events.append(MessageEvent(role="tool", name="read_section", tool_call_id=f"c{n}", content=text))
    events += [
        ModelEvent(turn=2, model="m"),
        MessageEvent(role="assistant", content='{"prediction": "fast"}'),
    ]
    return to_dicts(events)


def judge(server, kind, **options):
    return make_grader({"type": kind, "model": "judge-m", "base_url": server.base_url, **options})


def run(grader, ctx):
    return asyncio.run(grader(ctx))


def ctx_with(skill, **kw):
    kw.setdefault("transcript", session())
    kw.setdefault("sections_read", ("SKILL.md#规则",))
    return make_ctx("fast", skill=skill, reason="空调是车控", usage=(120, 30), **kw)


def test_llm_judge_can_be_shown_the_trajectory_anonymised_within_its_budget(skill):
    with ScriptedOpenAIServer(['{"correctness": 5}']) as server:
        grader = judge(
            server, "llm_judge", rubric={"correctness": "right?"}, include=["trajectory"], anonymise=True
        )
        result = run(grader, ctx_with(skill, model="qwen-max"))
        user = server.chat_requests[0].messages[1]["content"]
    block = user[user.index("<trajectory") :]
    assert block.startswith('<trajectory budget="8000">')
    assert '[1] read_section({"ref": "SKILL.md#规则"}) → ok (turn 1)' in block  # the skill's own
    assert '[2] read_section({"ref": "[path]"}) → FAILED (turn 1)' in block  # not the skill's: masked
    assert "result: - 快系统能做的，走 fast" in block
    assert "sections read: SKILL.md#规则" in block and "tokens: 120 in, 30 out" in block
    # masked like the pairwise judge's inputs; the skill's own references are kept
    assert "Claude" not in block and "/home/me" not in block
    assert result.details["masked"]["self_references"] >= 1 and result.details["masked"]["paths"] >= 1


def test_without_include_trajectory_the_judge_sees_no_tool_call(skill):
    with ScriptedOpenAIServer(['{"correctness": 5}']) as server:
        run(judge(server, "llm_judge", rubric={"correctness": "right?"}), ctx_with(skill))
        assert "read_section" not in server.chat_requests[0].messages[1]["content"]


def test_the_trajectory_budget_is_kept_and_said():
    with ScriptedOpenAIServer(['{"completion": 5}']) as server:
        grader = judge(server, "task_completion", trajectory_budget=400)
        run(grader, make_ctx(transcript=session(result="z" * 3000)))
        user = server.chat_requests[0].messages[1]["content"]
    block = user[user.index("<trajectory") : user.index("</trajectory>")]
    assert '<trajectory budget="400" cut="true">' in block and "more steps cut to keep within 400" in block
    assert len(block) < 400 + 150


def test_task_completion_passes_at_its_min_score_and_keeps_the_counts(skill):
    with ScriptedOpenAIServer(
        ['{"scores": {"completion": 4}, "comment": "done"}', '{"completion": 2}']
    ) as server:
        grader = judge(server, "task_completion")
        done = run(grader, ctx_with(skill))
        not_done = run(grader, ctx_with(skill))
        system, user = server.chat_requests[0].messages
    assert done.passed is True and done.dimensions == {"completion": 4}
    assert done.details["trajectory"] == {"steps": 3, "failed_steps": 1, "repeated_steps": 1}
    assert not_done.passed is False and not_done.comment.startswith("completion 2 < 4")
    assert "achieved what the case asked" in system["content"]
    assert (
        "<reference_answer>\nfast\n</reference_answer>" in user["content"]
        and "<trajectory" in user["content"]
    )


def test_trace_quality_scores_three_dimensions_without_a_verdict(skill):
    reply = '{"scores": {"efficiency": 2, "errors": 3, "loops": 1}, "comment": "read the rules twice"}'
    with ScriptedOpenAIServer([reply]) as server:
        result = run(judge(server, "trace_quality"), ctx_with(skill))
        system = server.chat_requests[0].messages[0]["content"]
    assert result.passed is None and result.dimensions == {"efficiency": 2, "errors": 3, "loops": 1}
    assert result.details["trajectory"]["repeated_steps"] == 1
    assert "loops" in system and "wasted steps" in system


# -- skill instruction-following -------------------------------------------------------------------------


def test_skill_following_is_judged_section_by_section_and_records_what_was_skipped(skill):
    reply = json.dumps(
        {
            "sections": [
                {"ref": "SKILL.md#快慢路由", "verdict": "followed", "note": "step 1 reads the rules"},
                {"ref": "SKILL.md#规则", "verdict": "skipped", "note": "did not check slow"},
            ],
            "comment": "ignored the rules' fallback",
        },
        ensure_ascii=False,
    )
    with ScriptedOpenAIServer([Reply.text(reply, usage=(900, 40))]) as server:
        grader = judge(
            server, "skill_instruction_following", min_followed=0.75, prices={"input": 1, "output": 2}
        )
        result = run(grader, ctx_with(skill, skills_loaded=("fast-slow-routing",)))
        system, user = server.chat_requests[0].messages
    assert result.details["followed"] == ["SKILL.md#快慢路由"]
    assert result.details["skipped"] == ["SKILL.md#规则"]
    assert result.details["not_applicable"] == [] and result.details["not_judged"] == []
    assert result.details["sections"]["SKILL.md#规则"] == {"verdict": "skipped", "note": "did not check slow"}
    assert result.score == 0.5 and result.passed is False
    assert (
        result.comment
        == "followed 1 of 2 applicable sections; skipped SKILL.md#规则 — ignored the rules' fallback"
    )
    assert result.judge_cost == pytest.approx((900 + 80) / 1e6)
    assert "[2] SKILL.md#规则 — 规则\n## 规则\n- 快系统能做的，走 fast" in user["content"]
    assert "<trajectory" in user["content"] and "followed | skipped | not_applicable" in system["content"]
    # the skill's name and hash are masked from the judge; its references are not
    assert "fast-slow-routing" not in user["content"] and skill.hash[:12] not in user["content"]


@pytest.mark.parametrize(
    ("reply", "method", "verdicts"),
    [
        ('{"SKILL.md#快慢路由": "遵循", "SKILL.md#规则": "不适用"}', "json", ("followed", "not_applicable")),
        (
            'Here:\n```json\n{"steps": [{"section": 1, "followed": true}, {"section": "规则", "followed": false}]}\n```',
            "fenced_json",
            ("followed", "skipped"),
        ),
        (
            '<section ref="SKILL.md#快慢路由" verdict="followed">ok</section>\n'
            '<section ref="SKILL.md#规则" verdict="跳过">没查</section>',
            "tagged",
            ("followed", "skipped"),
        ),
        ("1. followed — read it\n2. skipped — no check", "lines", ("followed", "skipped")),
    ],
)
def test_section_verdicts_are_read_in_many_forms(skill, reply, method, verdicts):
    read = parse_section_verdicts(reply, skill_sections(skill, 40))
    assert read.method == method
    assert tuple(read.verdicts[r][0] for r in ("SKILL.md#快慢路由", "SKILL.md#规则")) == verdicts


def test_an_unreadable_reply_is_a_grading_failure_with_its_text_and_cost(skill):
    replies = [Reply.text("The agent mostly did fine.", usage=(100, 5))]
    with ScriptedOpenAIServer(replies) as server, pytest.raises(GradingError) as info:
        run(judge(server, "skill_instruction_following"), ctx_with(skill))
    assert "no section verdicts" in str(info.value) and info.value.raw_output == "The agent mostly did fine."
    assert info.value.spent["input_tokens"] == 100


def test_a_run_that_loaded_no_skill_is_not_assessed_and_no_judge_is_asked():
    with ScriptedOpenAIServer([]) as server:
        result = run(judge(server, "skill_instruction_following"), make_ctx(skills_loaded=()))
        assert server.chat_requests == []
    assert result.passed is None and result.score is None and result.details["assessed"] is False


@pytest.mark.parametrize(
    ("kind", "options", "message"),
    [
        ("skill_instruction_following", {"min_followed": 2}, "min_followed must be a share between 0 and 1"),
        (
            "task_completion",
            {"trajectory_budget": 5},
            "trajectory_budget must be a whole number of characters",
        ),
        ("trace_quality", {"include": ["gold"]}, "include has 'gold'"),
    ],
)
def test_options_are_checked_when_defined(kind, options, message):
    with pytest.raises(UsageError) as info:
        make_grader({"type": kind, "model": "judge-m", "base_url": "http://127.0.0.1:9/v1", **options})
    assert message in str(info.value)

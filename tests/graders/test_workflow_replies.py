"""The double-blind workflow's judge reply formats (issue 42, item 10), read by the pairwise judge."""

from __future__ import annotations

import asyncio

import pytest

from abbench.errors import GradingError
from abbench.graders import Rubric, make_grader, parse_pair
from abbench.graders._pair_reply import MAX_SCAN_CHARS, free_text_winner, winner_tag
from abbench.testing import ScriptedOpenAIServer

from .test_pairwise import pair

TEN = Rubric.parse({"准确性": {"scale": "0-10"}, "完整性": {"scale": "0-10"}})

PLAN_SCORES = "plan1-准确性: 9/10\nplan1-完整性: 7/10\nplan2-准确性: 6/10\nplan2-完整性: 8/10\n"


@pytest.mark.parametrize(
    ("reply", "slot", "method"),
    [
        ("[WINNER]plan1[/WINNER]", 1, "winner_tag"),
        ("[WINNER]2[/WINNER]", 2, "winner_tag"),
        ("[WINNER]平局[/WINNER]", None, "winner_tag"),
        ("对比如下……\n[winner] 方案二 [/winner]\n理由：更完整", 2, "winner_tag"),
        ("胜者：方案2", 2, "key_value"),
        ("winner: plan2", 2, "key_value"),
        ("Winner: Plan 1\nComment: clearer", 1, "key_value"),
        ("经过比较，plan2 更好，因为它更完整。", 2, "free_text"),
        ("方案一更优。", 1, "free_text"),
        ("I prefer response 2.", 2, "free_text"),
        ("两者不分上下。", None, "free_text"),
    ],
)
def test_the_workflow_reply_formats_are_read(reply, slot, method):
    parsed = parse_pair(reply)
    assert (parsed.winner_slot, parsed.method) == (slot, method)


def test_scores_per_plan_and_dimension_are_read():
    parsed = parse_pair(PLAN_SCORES + "[WINNER]plan1[/WINNER]\n理由：更准确", TEN)
    assert parsed.winner_slot == 1 and parsed.method == "winner_tag" and parsed.comment == "更准确"
    assert parsed.scores == {1: {"准确性": 9, "完整性": 7}, 2: {"准确性": 6, "完整性": 8}}
    chinese = PLAN_SCORES.replace("plan", "方案").replace(": ", "：") + "总的来说，plan2 更好"
    parsed = parse_pair(chinese, TEN)
    assert parsed.winner_slot == 2 and parsed.method == "free_text"
    assert parsed.scores[2] == {"准确性": 6, "完整性": 8}
    with pytest.raises(GradingError, match="no score for response 2 完整性"):
        parse_pair("plan1-准确性: 9/10\nplan1-完整性: 7/10\nplan2-准确性: 6/10\n胜者：方案1", TEN)
    with pytest.raises(GradingError, match="off its scale"):
        parse_pair(PLAN_SCORES.replace("9/10", "12/10") + "[WINNER]1[/WINNER]", TEN)


@pytest.mark.parametrize(
    "reply", ["plan1 更好，不，plan2 更好", "Both plans have merits.", "[WINNER]maybe[/WINNER]"]
)
def test_prose_that_names_no_single_winner_is_not_read(reply):
    with pytest.raises(GradingError, match="no winner"):
        parse_pair(reply)


def test_the_workflow_readers_scan_a_bounded_prefix():
    far = "x" * MAX_SCAN_CHARS + " plan2 更好 [WINNER]2[/WINNER]"
    assert free_text_winner(far) is None and winner_tag(far) is None
    # long hostile lines (many near-matches, no end) are read and refused, not backtracked over
    hostile = ("plan1-" * 50_000) + "\n" + ("[WINNER]" + "a" * 39) * 5_000 + "\n" + "方案1 " * 50_000
    with pytest.raises(GradingError):
        parse_pair(hostile, TEN)


def test_a_prose_verdict_is_marked_in_the_grade_over_http():
    with ScriptedOpenAIServer(["经过比较，plan1 更好。"]) as server:
        grader = make_grader(
            {"type": "pairwise_judge", "model": "judge-m", "base_url": server.base_url, "backoff_s": 0}
        )
        result = asyncio.run(grader(pair(3)))
    assert result.details["judgements"][0]["parsed"] == "free_text" and result.details["free_text"] is True
    assert result.comment.startswith("the winner was read from the judge's prose, as a last resort")
    assert result.verdict in ("a", "b")


def test_workflow_tags_and_scores_come_back_per_arm_over_http():
    with ScriptedOpenAIServer([PLAN_SCORES + "[WINNER]plan1[/WINNER]"]) as server:
        grader = make_grader(
            {
                "type": "pairwise_judge",
                "model": "judge-m",
                "base_url": server.base_url,
                "rubric": {"准确性": {"scale": "0-10"}, "完整性": {"scale": "0-10"}},
            }
        )
        result = asyncio.run(grader(pair(3)))
    first = result.details["slots"][0]
    second = "b" if first == "a" else "a"
    assert result.verdict == first and "free_text" not in result.details
    assert result.dimensions[f"{first}.准确性"] == 9 and result.dimensions[f"{second}.完整性"] == 8

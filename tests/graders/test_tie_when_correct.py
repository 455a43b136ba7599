"""Tie when both are correct (issue 42, item 6): two right answers tie whatever their polish."""

from __future__ import annotations

import asyncio
import json

import pytest

from abbench.errors import UsageError
from abbench.graders import GradeContext, PairContext, make_grader
from abbench.testing import ScriptedOpenAIServer
from abbench.types import AgentOutput, Case


def side(arm, prediction, reason, *, expected="slow", run_id=1, label_set=None):
    return GradeContext(
        case=Case("c1", "到目的地电量够不够", expected),
        output=AgentOutput(prediction=prediction, reason=reason),
        arm=arm,
        run_id=run_id,
        label_set=label_set,
    )


def pair(pred_a, pred_b, *, expected="slow", label_set=None, seed=3):
    a = side("control", pred_a, "够。", expected=expected, label_set=label_set)
    b = side(
        "treatment",
        pred_b,
        "需要路线、能耗与天气数据，综合考虑后给出详细而礼貌的解释。" * 4,
        expected=expected,
        run_id=2,
        label_set=label_set,
    )
    return PairContext(case=a.case, a=a, b=b, seed=seed)


def prefers_longer(request):
    """A judge swayed by length: the longer response wins, with scores to match."""
    user = request.messages[-1]["content"]
    one = user.split('<response id="1">')[1].split("</response>")[0]
    two = user.split('<response id="2">')[1].split("</response>")[0]
    longer = "1" if len(one) > len(two) else "2"
    return json.dumps({"winner": longer, "comment": "more thorough"})


def judge(server, **options):
    spec = {"type": "pairwise_judge", "model": "judge-m", "base_url": server.base_url, "backoff_s": 0}
    return make_grader(spec | options)


@pytest.mark.parametrize("both_orders", [False, True])
def test_two_right_labels_tie_however_the_judge_leans(both_orders):
    with ScriptedOpenAIServer(prefers_longer) as server:
        result = asyncio.run(judge(server, both_orders=both_orders)(pair("slow", " SLOW ")))
        asked = len(server.chat_requests)
    assert asked == (2 if both_orders else 1)  # the judge is still asked: the audits keep the pair
    assert result.verdict == "tie" and result.score == 0.5
    d = result.details
    assert d["tie_rule"] == "both answers equal the gold label" and d["judge_verdict"] == "b"
    assert {j["winner"] for j in d["judgements"]} == {"b"}
    assert result.comment.startswith("both answers equal the gold label: a tie whatever their polish")
    assert d["lengths"]["b"] > d["lengths"]["a"]


def test_the_rule_leaves_other_pairs_and_can_be_turned_off():
    with ScriptedOpenAIServer(prefers_longer) as server:
        one_wrong = asyncio.run(judge(server)(pair("fast", "slow")))
        off = asyncio.run(judge(server, tie_when_both_correct=False)(pair("slow", "slow")))
        declared = asyncio.run(judge(server)(pair("慢", "慢", expected="慢", label_set=("快", "慢"))))
        answer = asyncio.run(judge(server)(pair("x" * 60, "x" * 60, expected="x" * 60)))
    assert one_wrong.verdict == "b" and "tie_rule" not in one_wrong.details
    assert off.verdict == "b" and "tie_rule" not in off.details
    assert declared.verdict == "tie"
    # a long gold value is an answer, not a label: off by default there
    assert answer.verdict == "b"


def test_on_answer_tasks_both_meeting_every_functional_criterion_tie():
    def scored(request):
        return json.dumps(
            {
                "winner": "2",
                "scores": {
                    "1": {"accuracy": 10, "completeness": 6, "relevance": 9, "expression": 4},
                    "2": {"accuracy": 10, "completeness": 9, "relevance": 9, "expression": 9},
                },
            }
        )

    gold = "到达目的地需要约 42 kWh，当前电量 60 kWh，足够，但遇到低温请预留 20% 余量。"
    with ScriptedOpenAIServer(scored) as server:
        on = judge(server, rubric={"template": "qa"}, tie_when_both_correct=True)
        tied = asyncio.run(on(pair("够", "够", expected=gold)))
        default = asyncio.run(judge(server, rubric={"template": "qa"})(pair("够", "够", expected=gold)))
    assert tied.verdict == "tie" and tied.details["tie_rule"] == (
        "both answers meet every functional criterion (accuracy)"
    )
    assert default.verdict in ("a", "b")  # off by default for answers


def test_the_option_is_checked():
    with pytest.raises(UsageError, match="tie_when_both_correct is true, false or left out"):
        make_grader({"type": "pairwise_judge", "model": "m", "tie_when_both_correct": "yes"})

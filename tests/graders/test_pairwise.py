"""The blind pairwise judge: reading verdicts, seeded slot order, anonymised prompts, both orders — over real HTTP."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys

import pytest

from abbench.errors import GradingError, UsageError
from abbench.graders import (
    GradeContext,
    PairContext,
    Rubric,
    make_grader,
    pair_seed,
    parse_pair,
    read_winner,
    slot_order,
)
from abbench.testing import ScriptedOpenAIServer
from abbench.types import AgentOutput, Case
from tests.conftest import subprocess_env

RUBRIC = Rubric.parse({"correctness": "right?", "clarity": "clear?"})


@pytest.mark.parametrize(
    ("value", "slot"),
    [
        ("1", "1"),
        (2, "2"),
        ("Response 2", "2"),
        ("response_1", "1"),
        ("[[1]]", "1"),
        ("[[C]]", "tie"),
        ("Tie", "tie"),
        ("both are equally good", None),
        ("平局", "tie"),
        ("回答2", "2"),
        ("第一个", "1"),
        ("Response 1 is better", "1"),
        ("A", "1"),
        ("neither", "tie"),
        ("unclear", None),
        (True, None),
    ],
)
def test_read_winner(value, slot):
    assert read_winner(value) == slot


@pytest.mark.parametrize(
    ("reply", "fmt", "winner", "method"),
    [
        (
            '{"winner": "2", "scores": {"1": {"correctness": 2, "clarity": 3}, "2": {"correctness": 5, "clarity": 4}}}',
            "json",
            2,
            "json",
        ),
        (
            '{"Winner": "tie", "scores": {"response 1": {"correctness": 3, "clarity": 3}, "response 2": {"correctness": 3, "clarity": 3}}}',
            "json",
            None,
            "json",
        ),
        (
            "<winner>1</winner>\n"
            '<score response="1" name="correctness">5</score><score response="1" name="clarity">4</score>\n'
            '<score response="2" name="correctness">2</score><score response="2" name="clarity">2</score>',
            "tagged",
            1,
            "tagged",
        ),
        (
            'Let me compare.\n```json\n{"better": "Response 1", "scores": {"1": {"correctness": 4, "clarity": 4}, "2": {"correctness": 3, "clarity": 3}}}\n```',
            "json",
            1,
            "fenced_json",
        ),
    ],
)
def test_parse_pair(reply, fmt, winner, method):
    parsed = parse_pair(reply, RUBRIC, fmt)
    assert parsed.winner_slot == winner and parsed.method == method
    assert set(parsed.scores) == {1, 2}


def test_parse_pair_without_rubric_and_failures():
    assert parse_pair("After careful thought: [[2]]").winner_slot == 2
    assert parse_pair("Winner: Response 1\nComment: clearer").winner_slot == 1
    for reply, message in [
        ("", "reply is empty"),
        ("Both have merits.", "no winner (1, 2 or tie) could be read"),
        (
            '{"winner": "1", "scores": {"1": {"correctness": 4, "clarity": 4}}}',
            "no score for response 2 correctness",
        ),
        (
            '{"winner": "1", "scores": {"1": {"correctness": 9, "clarity": 4}, "2": {"correctness": 1, "clarity": 1}}}',
            "off its scale",
        ),
    ]:
        with pytest.raises(GradingError) as info:
            parse_pair(reply, RUBRIC if "scores" in reply else None)
        assert message in str(info.value) and info.value.raw_output == reply


def test_pair_seeds_are_reproducible_across_processes_and_balanced():
    seeds = [pair_seed(7, f"c{i:03d}", r) for i in range(200) for r in range(2)]
    assert seeds == [pair_seed(7, f"c{i:03d}", r) for i in range(200) for r in range(2)]
    # Python's str hash changes per process; the seed must not
    code = "from abbench.graders import pair_seed; print(pair_seed(7, 'c001', 1))"
    outs = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            env=subprocess_env(PYTHONHASHSEED=h),
            check=True,
        ).stdout.strip()
        for h in (1, 2)
    }
    assert outs == {str(pair_seed(7, "c001", 1))}
    first = [slot_order(s)[0] for s in seeds]
    assert 150 < first.count("a") < 250  # about half the pairs show arm a first
    assert pair_seed(8, "c001", 1) != pair_seed(7, "c001", 1)


def side(arm, prediction, reason, *, model=None, run_id=1):
    return GradeContext(
        case=Case("c1", "到目的地电量够不够", "slow"),
        output=AgentOutput(prediction=prediction, reason=reason, model=model),
        arm=arm,
        run_id=run_id,
        model=model,
    )


def pair(seed=0, **kw):
    a = side(
        "control", "fast", "As GPT-4o I say fast; see /home/ann/skills/v1/SKILL.md", model="gpt-4o", run_id=1
    )
    b = side(
        "router-v2", "slow", "需要路线与能耗数据 —— 我是通义千问，由阿里云开发。", model="qwen-max", run_id=2
    )
    return PairContext(case=a.case, a=a, b=b, seed=seed)


def judge(server, **options):
    spec = {
        "type": "pairwise_judge",
        "model": "judge-m",
        "base_url": server.base_url,
        "prices": {"input": 1, "output": 1},
    }
    spec.update(options)
    return make_grader(spec)


def always_first(request):
    return '{"winner": "1", "comment": "the first one"}'


def by_content(request):
    """A fair judge: prefers the response that says slow, wherever it sits."""
    user = request.messages[-1]["content"]
    first = user.split('<response id="1">')[1].split("</response>")[0]
    return json.dumps({"winner": "1" if "slow" in first else "2", "comment": "slow is right"})


def seed_with_first(letter):
    return next(s for s in range(100) if slot_order(s)[0] == letter)


@pytest.mark.parametrize("letter", ["a", "b"])
def test_verdicts_are_mapped_back_to_arms(letter):
    seed = seed_with_first(letter)
    with ScriptedOpenAIServer(always_first) as server:
        result = asyncio.run(judge(server)(pair(seed)))
    assert result.verdict == letter  # the judge picked slot 1, which held arm `letter`
    assert result.score == (1.0 if letter == "a" else 0.0) and result.passed is None
    assert result.details["slots"] == [letter, "b" if letter == "a" else "a"]
    assert result.details["judgements"] == [
        {"slots": result.details["slots"], "winner_slot": 1, "winner": letter, "parsed": "json"}
    ]
    assert result.details["seed"] == seed and result.details["arms"] == ["control", "router-v2"]
    first_name = "control" if letter == "a" else "router-v2"
    assert result.comment.startswith(f"[1={first_name}, ")


def test_the_judge_sees_anonymised_answers_in_the_seeded_order():
    seed = seed_with_first("b")
    with ScriptedOpenAIServer(by_content) as server:
        result = asyncio.run(judge(server)(pair(seed)))
        body = server.chat_requests[0].body
    text = json.dumps(body, ensure_ascii=False)
    for name in ("GPT", "gpt-4o", "通义千问", "阿里云", "qwen", "router-v2", "/home/ann", "SKILL.md"):
        assert name not in text, name
    user = body["messages"][-1]["content"]
    assert user.index("Answer: slow") < user.index("Answer: fast")  # arm b in slot 1
    assert "需要路线与能耗数据" in user and "<reference_answer>\nslow\n</reference_answer>" in user
    assert result.verdict == "b"
    assert result.details["masked"]["a"] == {"self_references": 1, "paths": 1}


def test_both_orders_turn_a_position_bias_into_a_tie():
    with ScriptedOpenAIServer(always_first) as server:
        result = asyncio.run(judge(server, both_orders=True)(pair(3)))
        assert len(server.chat_requests) == 2
    assert result.verdict == "tie" and result.score == 0.5
    d = result.details
    assert d["consistent"] is False and d["flipped"] is True
    assert [j["slots"] for j in d["judgements"]] == [d["slots"], d["slots"][::-1]]
    assert {j["winner"] for j in d["judgements"]} == {"a", "b"}
    assert result.comment.startswith("the verdict changed with the order")
    assert result.judge_cost == pytest.approx((result.input_tokens + result.output_tokens) / 1e6)
    assert "--- order 1=" in result.raw_output


def test_both_orders_keep_a_consistent_verdict():
    with ScriptedOpenAIServer(by_content) as server:
        result = asyncio.run(judge(server, both_orders=True)(pair(3)))
    assert (
        result.verdict == "b" and result.details["consistent"] is True and result.details["flipped"] is False
    )


def test_rubric_scores_are_reported_per_arm_and_averaged_over_orders():
    def scored(request):
        user = request.messages[-1]["content"]
        first_is_slow = "slow" in user.split('<response id="1">')[1].split("</response>")[0]
        good, bad = {"correctness": 5, "clarity": 4}, {"correctness": 1, "clarity": 2}
        return json.dumps(
            {
                "winner": "1" if first_is_slow else "2",
                "scores": {"1": good if first_is_slow else bad, "2": bad if first_is_slow else good},
            }
        )

    with ScriptedOpenAIServer(scored) as server:
        result = asyncio.run(
            judge(server, both_orders=True, rubric={"correctness": "?", "clarity": "?"})(pair(1))
        )
    assert result.dimensions == {"a.clarity": 2, "a.correctness": 1, "b.clarity": 4, "b.correctness": 5}


def test_an_unreadable_reply_in_either_order_fails_the_pair_with_both_texts():
    replies = ['{"winner": "1"}', "I cannot decide."]
    with ScriptedOpenAIServer(replies) as server, pytest.raises(GradingError) as info:
        asyncio.run(judge(server, both_orders=True)(pair(0)))
    assert "no winner" in str(info.value) and "I cannot decide." in info.value.raw_output
    assert info.value.spent["input_tokens"] > 0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"arms": ["control"]}, "arms must name two different arms"),
        ({"arms": ["x", "x"]}, "arms must name two different arms"),
        ({"mask_patterns": ["("]}, "mask pattern '(' is not a valid regular expression"),
        ({"output_format": "yaml"}, "output_format must be one of json, tagged"),
        ({"model": ""}, "a judge needs a model"),
    ],
)
def test_pairwise_options_are_checked(options, message):
    with pytest.raises(UsageError) as info:
        make_grader({"type": "pairwise_judge", "model": "m", "base_url": "http://127.0.0.1:9/v1", **options})
    assert message in str(info.value)

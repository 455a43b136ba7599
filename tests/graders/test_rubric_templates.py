"""Rubric templates per task type (issue 42, item 11): chosen by name, scored /10, read in either language."""

from __future__ import annotations

import asyncio
import json

import pytest

from abbench.errors import UsageError
from abbench.graders import RUBRIC_TEMPLATES, Rubric, make_grader, parse_pair, parse_scores
from abbench.testing import ScriptedOpenAIServer

from .test_pairwise import pair


@pytest.mark.parametrize("name", ["writing", "code", "reasoning", "qa", "creative"])
def test_each_task_type_has_a_template_on_ten(name):
    rubric = Rubric.parse({"template": name})
    assert rubric.name == name and rubric.dimensions == RUBRIC_TEMPLATES[name]
    assert len(rubric.dimensions) == 4
    assert all((d.low, d.high) == (0, 10) and d.aliases for d in rubric.dimensions)
    assert rubric.as_dict()["template"] == name
    assert sum(d.functional for d in rubric.dimensions) == (0 if name == "creative" else 1)


def test_the_writing_template_is_the_workflows_dimensions():
    rubric = Rubric.template("Writing")
    assert [(d.name, d.aliases) for d in rubric.dimensions] == [
        ("accuracy", ("准确性",)),
        ("completeness", ("完整性",)),
        ("expression", ("表达",)),
        ("depth", ("深度",)),
    ]
    assert "- accuracy / 准确性 (0-10, 10 is best)" in rubric.describe()
    assert Rubric.parse({"template": "qa", "pass_threshold": 0.6}).pass_threshold == 0.6


def test_an_unknown_template_lists_the_choices():
    with pytest.raises(UsageError) as info:
        Rubric.parse({"template": "poetry"}, where="blind.rubric")
    assert str(info.value) == (
        "blind.rubric: no rubric template 'poetry'; choose one of writing, code, reasoning, qa, creative"
    )


def test_a_judge_may_name_the_dimensions_in_chinese_or_english():
    rubric = Rubric.template("writing")
    lines = [
        f"plan{s}-{n}: {v}/10"
        for s, names in ((1, "准确性 完整性 表达 深度"), (2, "accuracy 完整性 expression 深度"))
        for n, v in zip(names.split(), (9, 7, 8, 6), strict=True)
    ]
    parsed = parse_pair("\n".join([*lines, "[WINNER]plan1[/WINNER]"]), rubric)
    assert (
        parsed.scores[1]
        == parsed.scores[2]
        == {"accuracy": 9, "completeness": 7, "expression": 8, "depth": 6}
    )
    scores = parse_scores(
        json.dumps({"正确性": 9, "完整性": 8, "可读性": 7, "效率": 6}), Rubric.template("code")
    )
    assert scores.scores == {"correctness": 9, "completeness": 8, "readability": 7, "efficiency": 6}


def test_the_pairwise_judge_takes_a_template_by_name_over_http():
    reply = {
        "winner": "2",
        "scores": {
            "1": dict.fromkeys(["准确性", "完整性", "相关性", "表达"], 5),
            "2": dict.fromkeys(["accuracy", "completeness", "relevance", "expression"], 9),
        },
    }
    with ScriptedOpenAIServer([json.dumps(reply, ensure_ascii=False)]) as server:
        grader = make_grader(
            {
                "type": "pairwise_judge",
                "model": "judge-m",
                "base_url": server.base_url,
                "rubric": {"template": "qa"},
            }
        )
        result = asyncio.run(grader(pair(3)))
        system = server.chat_requests[0].messages[0]["content"]
    assert "- relevance / 相关性 (0-10, 10 is best)" in system
    second = result.details["slots"][1]
    assert result.verdict == second and result.dimensions[f"{second}.relevance"] == 9

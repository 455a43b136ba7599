"""The offline stand-in for the skill-following judge: a documented rule over the trajectory and the answer,
whose grades have the judge's shape and name themselves a stand-in."""

from __future__ import annotations

import json

import pytest

from abbench.errors import UsageError
from abbench.graders import STAND_IN, make_grader
from abbench.snapshot import build_snapshot

from .conftest import make_ctx

SKILL = """---
name: route
description: route requests
---

# Route

## Background

Two systems answer: a fast one and a slow one.

## Steps

1. Check the general rules first.
2. Read the domain file in knowledge/.

## General rules

- Two actions in one request ("然后", "顺便") → slow
- Conditions ("如果……就……") → slow

## Output

```json
{"prediction": "fast"}
```
"""


@pytest.fixture
def route(tmp_path):
    (tmp_path / "route" / "knowledge").mkdir(parents=True)
    (tmp_path / "route" / "SKILL.md").write_text(SKILL, encoding="utf-8")
    (tmp_path / "route" / "knowledge" / "car.md").write_text(
        "# Car\n\n## AC\n\n- 打开空调 → fast\n", encoding="utf-8"
    )
    return build_snapshot(tmp_path / "route")


def grade(ctx, **options):
    return make_grader({"type": "skill_following_stand_in", **options})(ctx)  # a rule: no awaiting


def answer(**kw):
    return json.dumps({"prediction": "fast", **kw}, ensure_ascii=False)


@pytest.mark.parametrize(
    ("case_input", "cited", "reason", "expect"),
    [
        # no trigger phrase: the general rules do not apply; the procedure is followed (cited evidence read)
        ("打开空调", ["knowledge/car.md#AC"], "AC", {"followed": ["SKILL.md#Steps", "SKILL.md#Output"],
         "skipped": [], "not_applicable": ["SKILL.md#Background", "SKILL.md#General rules"]}),
        # a trigger phrase in the input, and the answer relied on a domain list instead: skipped
        ("打开空调然后导航回家", ["knowledge/car.md#AC"], "AC", {"followed": ["SKILL.md#Steps", "SKILL.md#Output"],
         "skipped": ["SKILL.md#General rules"], "not_applicable": ["SKILL.md#Background"]}),
        # the same, citing the general rules: followed; "如果……就……" needs both of its parts
        ("如果下雨就关窗", ["SKILL.md#General rules"], "依据 SKILL.md#General rules", {"followed":
         ["SKILL.md#Steps", "SKILL.md#General rules", "SKILL.md#Output"], "skipped": [],
         "not_applicable": ["SKILL.md#Background"]}),
        # evidence the run never read: the procedure was not followed
        ("打开空调", ["knowledge/other.md#X"], "X", {"followed": ["SKILL.md#Output"], "skipped": ["SKILL.md#Steps"],
         "not_applicable": ["SKILL.md#Background", "SKILL.md#General rules"]}),
    ],
)  # fmt: skip
def test_a_section_applies_by_its_trigger_phrases_and_is_followed_when_the_answer_reflects_it(
    route, case_input, cited, reason, expect
):
    ctx = make_ctx(
        "fast", case_input=case_input, skill=route, evidence_refs=tuple(cited), reason=reason,
        raw_output=answer(), files_read=("SKILL.md", "knowledge/car.md"), sections_read=("knowledge/car.md#AC",),
    )  # fmt: skip
    r = grade(ctx)
    got = {k: r.details[k] for k in ("followed", "skipped", "not_applicable")}
    assert got == expect
    assert r.details["judge"] == STAND_IN and "stand-in" in r.comment
    applicable = len(expect["followed"]) + len(expect["skipped"])
    assert r.score == pytest.approx(len(expect["followed"]) / applicable) and r.passed is None
    assert set(r.details["sections"]) == {*expect["followed"], *expect["skipped"], *expect["not_applicable"]}


def test_a_run_without_a_skill_is_not_assessed_and_min_followed_gives_a_verdict(route):
    r = grade(make_ctx("fast"))
    assert r.score is None and r.details["assessed"] is False
    ctx = make_ctx(
        "fast", case_input="打开空调然后导航", skill=route, raw_output=answer(), files_read=("SKILL.md",)
    )
    assert grade(ctx, min_followed=1.0).passed is False
    with pytest.raises(UsageError, match="min_followed must be a share"):
        make_grader({"type": "skill_following_stand_in", "min_followed": 2})

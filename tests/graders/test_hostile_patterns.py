"""Every pattern a grader takes from a person runs on RE2 (issue 36, item 2): a pattern that backtracks
exponentially in Python answers at once, and one RE2 cannot run is refused when the grader is made."""

from __future__ import annotations

import json

import pytest

from abbench.errors import UsageError
from abbench.graders import Anonymiser, make_grader
from tests.test_regex import CATASTROPHIC, HOSTILE_TEXT

from .conftest import make_ctx


def test_the_regex_grader_answers_at_once_on_a_pattern_that_backtracks():
    result = make_grader({"type": "regex", "pattern": CATASTROPHIC})(make_ctx(HOSTILE_TEXT))
    assert result.passed is False
    result = make_grader({"type": "regex", "pattern": CATASTROPHIC, "negate": True})(make_ctx(HOSTILE_TEXT))
    assert result.passed is True


@pytest.mark.parametrize("engine", ["builtin", "jsonschema"])
def test_a_json_schema_pattern_answers_at_once(engine):
    schema = {
        "type": "object",
        "properties": {"label": {"type": "string", "pattern": CATASTROPHIC}},
        "patternProperties": {"^(x+x+)+y$": {"type": "string"}},
        "additionalProperties": False,
    }
    raw = json.dumps({"label": HOSTILE_TEXT, "x" * 40: "z"})
    result = make_grader({"type": "json_schema", "schema": schema, "engine": engine})(
        make_ctx("x", raw_output=raw)
    )
    assert result.passed is False
    assert "does not match" in result.comment


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        (
            {"type": "regex", "pattern": r"(?<!不)抱歉"},
            "regex: the pattern '(?<!不)抱歉' uses a lookahead or lookbehind",
        ),
        ({"type": "regex", "pattern": r"(\w+) \1"}, "uses a backreference"),
        (
            {
                "type": "json_schema",
                "schema": {"properties": {"a": {"pattern": r"(?=x)"}}},
                "engine": "builtin",
            },
            "the JSON schema is invalid at #/properties/a/pattern: '(?=x)' uses a lookahead",
        ),
        (
            {"type": "json_schema", "schema": {"patternProperties": {r"(a)\1": {}}}, "engine": "jsonschema"},
            "the JSON schema is invalid at #/patternProperties: '(a)\\\\1' uses a backreference",
        ),
        ({"type": "pairwise_judge", "mask_patterns": [r"a++"]}, "mask pattern 'a++' uses an atomic group"),
        ({"type": "pairwise_judge", "identities": [r"(?<=x)gpt"]}, "identity '(?<=x)gpt' uses a lookahead"),
    ],
)
def test_a_pattern_re2_cannot_run_is_refused_when_the_grader_is_made(spec, said):
    with pytest.raises(UsageError) as caught:
        make_grader(spec)
    assert said in str(caught.value)


def test_a_judges_mask_pattern_answers_at_once_and_masks_as_before():
    masker = Anonymiser(patterns=(r"(a+)+b", r"agent-\d+"), identities=(), mask_paths=False)
    assert masker.anonymise(HOSTILE_TEXT).text == HOSTILE_TEXT
    masked = masker.anonymise("aaab, agent-7 and xagent-7 (agent-12)")
    assert masked.text == "[redacted], [redacted] and xagent-7 ([redacted])"


def test_a_command_agents_answer_pattern_answers_at_once():
    from abbench.agents import make_agent
    from abbench.agents._command_output import read_stdout
    from abbench.errors import AgentError

    agent = make_agent("command", argv=["echo"], pattern=r"^(?P<prediction>(a+)+)$")
    with pytest.raises(AgentError, match="does not match the pattern"):
        read_stdout(HOSTILE_TEXT, agent.pattern, None)
    with pytest.raises(UsageError, match=r"pattern '\(\?P<prediction>a\)\(\?=b\)' uses a lookahead"):
        make_agent("command", argv=["echo"], pattern=r"(?P<prediction>a)(?=b)")

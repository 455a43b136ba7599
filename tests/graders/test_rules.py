"""Rule graders: output checks, trajectory checks, option validation, and their comments."""

from __future__ import annotations

import json

import pytest

from abbench.errors import GradingError, UsageError
from abbench.graders import make_grader, parse_number, tool_calls_in

from .conftest import make_ctx


def grade(spec, ctx):
    result = make_grader(spec)(ctx)
    assert not hasattr(result, "__await__"), "rule graders answer at once"
    return result


@pytest.mark.parametrize(
    ("spec", "prediction", "expected", "passed"),
    [
        ("exact", "fast", "fast", True),
        ("exact", "  fast\n", "fast", True),
        ("exact", "Fast", "fast", False),
        ({"type": "exact", "case_sensitive": False}, "Fast", "fast", True),
        ("exact", "ｆａｓｔ", "fast", True),  # full-width is the same text
        ("exact", "快", "fast", False),  # no label value map here, unlike label_match
        ("label_match", "ｆａｓｔ", "fast", True),  # full-width, as an IME types it: the same label
        ("label_match", " ＦＡＳＴ　", "fast", True),
        ({"type": "exact", "value": "slow"}, "slow", "fast", True),
        ({"type": "exact", "field": "reason", "value": "because"}, "fast", None, False),
        ("contains", "the answer is FAST.", "fast", True),
        ({"type": "contains", "case_sensitive": True}, "FAST", "fast", False),
        ({"type": "contains", "value": ["空调", "fast"]}, "打开空调 → fast", None, True),
        ({"type": "contains", "value": ["空调", "车窗"]}, "打开空调", None, False),
        ({"type": "contains", "value": ["空调", "车窗"], "require": "any"}, "打开空调", None, True),
        ({"type": "regex", "pattern": r"^(fast|slow)$"}, "fast", None, True),
        ({"type": "regex", "pattern": r"^(fast|slow)$"}, "fast!", None, False),
        ({"type": "regex", "pattern": "FAST", "flags": "i"}, "fast", None, True),
        ({"type": "regex", "pattern": "fa", "full_match": True}, "fast", None, False),
        ({"type": "regex", "pattern": "sorry|抱歉", "negate": True}, "抱歉，我不知道", None, False),
        ({"type": "regex", "pattern": "sorry|抱歉", "negate": True}, "fast", None, True),
        ("numeric", "42", "42", True),
        ("numeric", "about 41.9 km", "42", False),
        ({"type": "numeric", "tolerance": 0.1}, "about 41.9 km", "42", True),
        ({"type": "numeric", "tolerance": 0.05, "relative": True}, "1,050", "1000", True),
        ({"type": "numeric", "tolerance": 0.05, "relative": True}, "1,051", "1000", False),
        ({"type": "numeric", "value": -3}, "－3 度", None, True),  # full-width minus and digit
        ("numeric", "no idea", "42", False),
    ],
)
def test_output_rules(spec, prediction, expected, passed):
    result = grade(spec, make_ctx(prediction, expected=expected))
    assert result.passed is passed
    assert result.score == (1.0 if passed else 0.0)
    # a failure always says why; a pass needs no explanation
    assert (result.comment is not None) is (not passed)


def test_comments_say_what_was_wrong():
    assert "'Fast' is not exactly 'fast'" in grade("exact", make_ctx("Fast")).comment
    assert "'车窗'" in grade({"type": "contains", "value": ["空调", "车窗"]}, make_ctx("打开空调")).comment
    r = grade({"type": "regex", "pattern": "抱歉", "negate": True}, make_ctx("抱歉，不行"))
    assert "must not" in r.comment and "抱歉" in r.comment
    r = grade({"type": "numeric", "tolerance": 0.5}, make_ctx("43.2", expected="42"))
    assert r.comment == "prediction 43.2 is 1.2 from 42, more than the tolerance 0.5"
    assert r.details == {
        "expected": 42.0,
        "got": 43.2,
        "difference": pytest.approx(1.2),
        "read": "the only number",
    }
    assert "has no number" in grade("numeric", make_ctx("不知道", expected="42")).comment


@pytest.mark.parametrize("spec", ["exact", "contains", "numeric"])
def test_a_case_without_gold_is_a_grading_failure_not_a_pass(spec):
    with pytest.raises(GradingError, match="case c1 has no gold value") as info:
        grade(spec, make_ctx("fast", expected=None))
    assert info.value.retryable is False


def test_numeric_gold_without_a_number_is_a_grading_failure():
    with pytest.raises(GradingError, match="has no number for numeric"):
        grade("numeric", make_ctx("3", expected="三"))


@pytest.mark.parametrize(
    ("prediction", "gold", "pick", "passed"),
    [
        # a worked solution answers with its last number, not its first (GSM8K's gold ends in "#### 18")
        ("16 - 3 - 4 = 9 eggs; 9 * 2 = 18", "She sells 16 - 3 - 4 = <<16-3-4=9>>9.\n#### 18", "answer", True),
        ("The answer is 18, from 16 - 3 - 4 = 9 eggs at $2", "18", "answer", True),
        ("so the total is \\boxed{1,200} dollars (3 boxes)", "1200", "answer", True),
        ("Final answer: -3. (I checked 5 times)", "-3", "answer", True),
        ("答案是 12 个，共 3 盒", "12", "answer", True),
        ("I answered 3 questions, 7 left", "7", "answer", True),  # "answered" is no answer mark
        ("16 - 3 - 4 = 9 eggs; 9 * 2 = 18", "#### 18", "first", False),
        ("16 - 3 - 4 = 9 eggs; 9 * 2 = 18", "16", "first", True),
        ("18 dollars, from 9 eggs", "9", "last", True),
    ],
)
def test_numeric_reads_the_final_answer(prediction, gold, pick, passed):
    result = grade({"type": "numeric", "pick": pick}, make_ctx(prediction, expected=gold))
    assert result.passed is passed, result.comment


def test_numeric_says_which_number_it_read():
    r = grade("numeric", make_ctx("16 - 3 - 4 = 9 eggs; 9 * 2 = 19", expected="#### 18"))
    assert r.comment == "prediction 19 (the last number) is 1 from 18, more than the tolerance 0"
    assert r.details["read"] == "the last number"
    with pytest.raises(UsageError, match="pick must be one of answer, first, last, not 'middle'"):
        make_grader({"type": "numeric", "pick": "middle"})


def test_numeric_gold_of_gsm8k_is_its_final_answer(realdata):
    """On GSM8K's own test file, the gold the grader reads is what lm-eval's `#### (-?[0-9.,]+)` takes."""
    import re

    from abbench.graders import answer_number

    lines = (realdata / "gsm8k" / "test_head60.jsonl").read_text(encoding="utf-8").splitlines()
    rows = [json.loads(line) for line in lines]
    assert len(rows) == 60
    for row in rows:
        want = float(re.search(r"#### (\-?[0-9\.\,]+)", row["answer"]).group(1).replace(",", ""))
        assert answer_number(row["answer"]) == (want, "after '####'")
        assert grade("numeric", make_ctx(f"{want:g}", expected=row["answer"])).passed
    # the first number of a solution (what the grader used to read) is seldom its answer
    assert sum(parse_number(r["answer"]) != answer_number(r["answer"])[0] for r in rows) > 50


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("42", 42.0),
        ("1,234.5 km", 1234.5),
        ("-0.5", -0.5),
        ("¥ 12", 12.0),
        ("１２３", 123.0),
        ("3e2", 300.0),
        ("abc", None),
    ],
)
def test_parse_number(text, number):
    assert parse_number(text) == number


SCHEMA = {
    "type": "object",
    "properties": {
        "prediction": {"enum": ["fast", "slow"]},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
    },
    "required": ["prediction"],
}


@pytest.mark.parametrize("engine", ["builtin", "jsonschema"])
@pytest.mark.parametrize(
    ("raw", "passed", "parsed"),
    [
        ('{"prediction": "fast", "confidence": 0.8}', True, "json"),
        ('Here you go:\n```json\n{"prediction": "slow"}\n```', True, "fenced_json"),
        ('I think {"prediction": "fast"} is right', True, "embedded_json"),
        ('{"prediction": "maybe"}', False, "json"),
        ('{"confidence": 1.5}', False, "json"),
        ("fast", False, None),
        ("", False, None),
    ],
)
def test_json_schema(engine, raw, passed, parsed):
    result = grade({"type": "json_schema", "schema": SCHEMA, "engine": engine}, make_ctx("x", raw_output=raw))
    assert result.passed is passed
    if parsed:
        assert result.details["parsed"] == parsed
    if not passed:
        assert result.comment


def test_json_schema_lists_every_problem_and_reads_schema_files(tmp_path):
    path = tmp_path / "answer.yaml"
    path.write_text(
        "type: object\nrequired: [prediction, reason]\nproperties:\n  confidence: {type: number, maximum: 1}\n",
        encoding="utf-8",
    )
    result = grade(
        {"type": "json_schema", "schema": str(path), "engine": "builtin"},
        make_ctx(raw_output='{"confidence": 2}'),
    )
    assert result.passed is False
    assert "'prediction' is a required property" in result.comment
    assert "'reason' is a required property" in result.comment
    assert "$.confidence: 2 is greater than the maximum of 1" in result.comment


def test_json_schema_strict_mode_wants_the_whole_field():
    spec = {"type": "json_schema", "extract": False}
    assert grade(spec, make_ctx(raw_output='{"a": 1}')).passed is True
    assert grade(spec, make_ctx(raw_output='sure: {"a": 1}')).passed is False


# -- trajectory checks --------------------------------------------------------------------------------------


def openai_transcript(*calls):
    """A transcript as the openai adapter writes it: the injected skill, assistant tool calls, tool results."""
    out = [
        {
            "type": "message",
            "role": "user",
            "content": '<skill file="SKILL.md">knowledge/车控.md</skill> 打开空调',
        }
    ]
    for i, (name, args) in enumerate(calls):
        call = {
            "id": f"call_{i}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        out.append({"type": "message", "role": "assistant", "content": None, "tool_calls": [call]})
        out.append({"type": "tool_call", "id": f"call_{i}", "name": name, "arguments": json.dumps(args)})
        out.append({"type": "message", "role": "tool", "tool_call_id": f"call_{i}", "content": "..."})
    return out


def test_read_skill_counts_reads_not_the_injected_skill(skill):
    # the prompt names knowledge/车控.md and injects SKILL.md, but the agent opened nothing
    ctx = make_ctx(skill=skill, transcript=openai_transcript())
    result = grade("read_skill", ctx)
    assert result.passed is False
    assert "answered without opening the skill" in result.comment
    assert grade("read_skill", make_ctx(skill=skill, sections_read=("SKILL.md#规则",))).passed is True
    assert grade("read_skill", make_ctx(skill=skill, files_read=("knowledge/车控.md",))).passed is True
    # adapters list the injected SKILL.md as read; having it is not reading it
    injected = make_ctx(skill=skill, files_read=("SKILL.md",))
    assert grade("read_skill", injected).passed is False
    assert grade({"type": "read_skill", "count_skill_md": True}, injected).passed is True
    asked = make_ctx(skill=skill, transcript=openai_transcript(("read_section", {"ref": "SKILL.md#规则"})))
    result = grade("read_skill", asked)
    assert result.passed is True and result.details["reads"] == ["SKILL.md#规则"]


def test_read_skill_sees_reads_made_with_the_agents_own_tools(skill):
    # Claude Code style: tool_use blocks with absolute paths into the workspace copy of the skill
    transcript = [
        {
            "type": "assistant",
            "message": {
                "content": [
                    {
                        "type": "tool_use",
                        "id": "t1",
                        "name": "Read",
                        "input": {"file_path": "/tmp/ws/knowledge/车控.md"},
                    }
                ]
            },
        }
    ]
    result = grade("read_skill", make_ctx(skill=skill, transcript=transcript))
    assert result.passed is True and result.details["reads"] == ["knowledge/车控.md"]
    # a JSON-escaped CJK path in the arguments still counts; a file merely named alike does not
    escaped = openai_transcript(("read_file", {"path": "knowledge/\u8f66\u63a7.md"}))
    escaped[2]["arguments"] = json.dumps({"path": "knowledge/车控.md"}, ensure_ascii=True)
    assert grade("read_skill", make_ctx(skill=skill, transcript=escaped)).passed is True
    lookalike = openai_transcript(("read_file", {"path": "knowledge/other-media.md"}))
    assert grade("read_skill", make_ctx(skill=skill, transcript=lookalike)).passed is False


def test_read_skill_options(skill):
    ctx = make_ctx(skill=skill, sections_read=("knowledge/车控.md#空调",), files_read=("knowledge/车控.md",))
    # a section and its whole file are one read of that file
    assert grade({"type": "read_skill", "min_reads": 2}, ctx).passed is False
    ctx = make_ctx(skill=skill, sections_read=("SKILL.md#规则",), files_read=("SKILL.md",))
    r = grade({"type": "read_skill", "files": "knowledge/*"}, ctx)
    assert r.passed is False and "matching knowledge/*" in r.comment
    ctx = make_ctx(skill=skill, files_read=("knowledge/车控.md", "knowledge/media.md"))
    assert grade({"type": "read_skill", "files": ["knowledge/*"], "min_reads": 2}, ctx).passed is True


def test_trajectory_checks_do_not_apply_without_a_skill():
    for spec in ("read_skill", "cited_evidence"):
        result = grade(spec, make_ctx(arm="control"))
        assert result.passed is None and result.score is None
        assert "arm control has no skill" in result.comment


def test_cited_evidence(skill):
    ok = grade(
        "cited_evidence", make_ctx(skill=skill, evidence_refs=("knowledge/车控.md#空调", "SKILL.md#nope"))
    )
    assert ok.passed is True
    assert "SKILL.md#nope" in ok.comment  # an invented reference is reported even on a pass
    assert ok.details["resolved"] == {"knowledge/车控.md#空调": "knowledge/车控.md#空调"}
    strict = {"type": "cited_evidence", "all_must_resolve": True}
    assert (
        grade(strict, make_ctx(skill=skill, evidence_refs=("knowledge/车控.md#空调", "SKILL.md#nope"))).passed
        is False
    )
    none = grade("cited_evidence", make_ctx(skill=skill))
    assert none.passed is False and "cites 0 existing reference(s), needs 1" in none.comment
    # forgiving resolution inside a file (case, slug) counts as existing
    assert (
        grade("cited_evidence", make_ctx(skill=skill, evidence_refs=("knowledge/media.md#play",))).passed
        is True
    )
    two = {"type": "cited_evidence", "min_refs": 2}
    same = ("knowledge/media.md#Play", "knowledge/media.md#play")
    assert grade(two, make_ctx(skill=skill, evidence_refs=same)).passed is False  # one section, cited twice


def test_tool_calls_are_counted_once_whatever_the_transcript_shape():
    transcript = openai_transcript(
        ("list_files", {}), ("read_file", {"path": "SKILL.md"}), ("read_file", {"path": "x"})
    )
    assert len(tool_calls_in(transcript)) == 3  # each call appears twice in the transcript
    assert grade({"type": "max_tool_calls", "n": 3}, make_ctx(transcript=transcript)).passed is True
    r = grade({"type": "max_tool_calls", "n": 2}, make_ctx(transcript=transcript))
    assert r.passed is False and r.comment == "made 3 tool calls, more than 2"
    # without a transcript the stored count is used
    assert grade({"type": "max_tool_calls", "n": 2}, make_ctx(tool_calls=5)).passed is False


@pytest.mark.parametrize(
    ("which", "n", "passed"),
    [("total", 150, True), ("total", 149, False), ("input", 100, True), ("output", 49, False)],
)
def test_max_tokens(which, n, passed):
    r = grade({"type": "max_tokens", "n": n, "which": which}, make_ctx(usage=(100, 50)))
    assert r.passed is passed


# -- options are checked when the experiment is defined ------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"type": "exact", "field": "answer"}, "field 'answer' is not one of prediction, reason, raw_output"),
        (
            {"type": "exact", "colour": "red"},
            "grader 'exact' has no option 'colour'; its options: value, field",
        ),
        ({"type": "contains", "require": "most"}, "require must be 'all' or 'any'"),
        (
            {"type": "regex", "pattern": "(unclosed"},
            "is not a valid regular expression: missing ), unterminated subpattern at position 0",
        ),
        ({"type": "regex", "pattern": "x", "flags": "iq"}, "unknown regex flag(s) 'q'"),
        ({"type": "regex"}, "missing 1 required positional argument: 'pattern'"),
        ({"type": "numeric", "tolerance": -1}, "tolerance must be a number ≥ 0"),
        ({"type": "numeric", "value": "lots"}, "value 'lots' is not a number"),
        (
            {"type": "json_schema", "schema": {"type": "thing"}, "engine": "builtin"},
            "'thing' is not one of array",
        ),
        ({"type": "json_schema", "schema": "missing.json"}, "schema file 'missing.json' does not exist"),
        ({"type": "json_schema", "engine": "fast"}, "engine 'fast' is not one of auto, jsonschema, builtin"),
        ({"type": "max_tool_calls", "n": -1}, "n must be a whole number ≥ 0"),
        ({"type": "max_tokens", "n": 10, "which": "all"}, "which must be one of total, input, output"),
        ({"type": "read_skill", "min_reads": "one"}, "min_reads must be a whole number"),
        # (a did-you-mean may stand between: it names the closest grader this process registered)
        ("no_such_grader", "unknown grader 'no_such_grader'"),
    ],
)
def test_bad_options_are_refused_with_the_choices(spec, message):
    with pytest.raises(UsageError) as info:
        make_grader(spec)
    assert message in str(info.value)
    if spec == "no_such_grader":  # the choices are facts of the error, the built-in graders first
        assert info.value.kind == "grader" and info.value.name == "no_such_grader"
        assert list(info.value.choices)[:3] == ["cited_evidence", "contains", "exact"]
        assert "choose one of: cited_evidence, contains, exact" in str(info.value)


def test_named_graders_keep_their_names():
    g = make_grader({"type": "regex", "pattern": "抱歉", "negate": True, "name": "no_apology"})
    assert (g.name, g.kind) == ("no_apology", "rule")


def test_a_users_function_is_a_grader():
    g = make_grader({"type": "tests.graders.callables:shouty", "name": "shouty"})
    assert (g.name, g.kind) == ("shouty", "rule")
    assert g(make_ctx("FAST")).passed is True and g(make_ctx("fast")).score == 0.0
    with pytest.raises(UsageError, match="takes only `name` and `kind`, not colour"):
        make_grader({"type": "tests.graders.callables:shouty", "colour": "red"})
    with pytest.raises(UsageError, match="kind 'oracle' is not one of rule, judge, pairwise"):
        make_grader({"type": "tests.graders.callables:shouty", "kind": "oracle"})
    with pytest.raises(UsageError, match="has no function 'missing'"):
        make_grader("tests.graders.callables:missing")

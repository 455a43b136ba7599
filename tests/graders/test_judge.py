"""The pointwise LLM judge: rubrics, reading replies, and real HTTP to a scripted OpenAI-compatible server."""

from __future__ import annotations

import asyncio
import dataclasses
import json

import pytest

from abbench.errors import GradingError, UsageError
from abbench.graders import JUDGE_OPTIONS, JudgeSettings, Rubric, llm_judge, make_grader, parse_scores
from abbench.testing import Reply, ScriptedOpenAIServer

from .conftest import make_ctx

RUBRIC = {
    "correctness": {"description": "Is the routing decision right?", "scale": [1, 5], "min": 3},
    "clarity": "Is the reason clear?",
}
PRICES = {"input": 1.0, "output": 2.0}  # USD per million tokens


# -- rubrics ---------------------------------------------------------------------------------------------


def test_rubric_forms():
    r = Rubric.parse(RUBRIC, pass_threshold=0.5)
    assert [(d.name, d.low, d.high, d.min) for d in r.dimensions] == [
        ("correctness", 1, 5, 3),
        ("clarity", 1, 5, None),
    ]
    assert r.score({"correctness": 5, "clarity": 1}) == 0.5
    assert r.passed({"correctness": 5, "clarity": 1}) == (True, [])
    assert r.passed({"correctness": 2, "clarity": 5}) == (False, ["correctness 2 < 3"])
    assert Rubric.parse("Is it good?").dimensions[0].name == "overall"
    listed = Rubric.parse(
        [{"name": "准确性", "scale": "0-10", "weight": 2}, {"name": "简洁", "scale": [0, 1]}]
    )
    assert listed.score({"准确性": 10, "简洁": 0}) == pytest.approx(2 / 3)
    wrapped = Rubric.parse({"dimensions": {"overall": [1, 10]}, "pass_threshold": 0.8})
    assert wrapped.pass_threshold == 0.8 and wrapped.dimensions[0].high == 10
    assert Rubric.parse({"a": None}).passed({"a": 1}) == (None, [])  # no threshold: scores only


@pytest.mark.parametrize(
    ("rubric", "threshold", "message"),
    [
        ({}, None, "needs at least one dimension"),
        ({"a": {"scale": [5, 1]}}, None, "scale [5, 1] must go from low to high"),
        ({"a": {"scale": "one to five"}}, None, "should look like '1-5'"),
        ({"a": {"weight": 0}}, None, "weight must be a positive number"),
        ({"a": {"min": 9}}, None, "min 9 must be a number on the scale 1-5"),
        ({"a": {"descripton": "typo"}}, None, "unknown key(s) descripton"),
        ({"Correct ness": "x", "correct_ness": "y"}, None, "dimension names must differ"),
        ({"a": "x"}, 3, "pass_threshold is the overall score (0 to 1)"),
        (42, None, "expected a mapping of dimension"),
    ],
)
def test_bad_rubrics_are_refused(rubric, threshold, message):
    with pytest.raises(UsageError) as info:
        Rubric.parse(rubric, pass_threshold=threshold)
    assert message in str(info.value)


# -- reading replies ---------------------------------------------------------------------------------------


R2 = Rubric.parse(RUBRIC)


@pytest.mark.parametrize(
    ("reply", "fmt", "scores", "method"),
    [
        (
            '{"scores": {"correctness": 4, "clarity": 5}, "comment": "ok"}',
            "json",
            {"correctness": 4, "clarity": 5},
            "json",
        ),
        ('{"correctness": 4, "clarity": 5}', "json", {"correctness": 4, "clarity": 5}, "json"),
        (
            '{"scores": [{"name": "correctness", "score": 3}, {"name": "clarity", "score": 2}]}',
            "json",
            {"correctness": 3, "clarity": 2},
            "json",
        ),
        (
            '{"Correctness_score": "4/5", "CLARITY": {"score": 2, "why": "terse"}}',
            "json",
            {"correctness": 4, "clarity": 2},
            "json",
        ),
        (
            'Sure!\n```json\n{"scores": {"correctness": 2, "clarity": 3}}\n```\nHope it helps',
            "json",
            {"correctness": 2, "clarity": 3},
            "fenced_json",
        ),
        (
            'My grades are {"correctness": 5, "clarity": 4}.',
            "json",
            {"correctness": 5, "clarity": 4},
            "embedded_json",
        ),
        (
            '<think>{"correctness": 1}</think>{"correctness": 5, "clarity": 4}',
            "json",
            {"correctness": 5, "clarity": 4},
            "json",
        ),
        (
            '<score name="correctness">4</score>\n<score name="clarity">3</score>\n<comment>fine</comment>',
            "tagged",
            {"correctness": 4, "clarity": 3},
            "tagged",
        ),
        (
            '<score name="correctness">4</score><score name="clarity">3</score>',
            "json",
            {"correctness": 4, "clarity": 3},
            "tagged",
        ),
        (
            "**Correctness**: 4/5\n- Clarity: 3 out of 5\nComment: good",
            "json",
            {"correctness": 4, "clarity": 3},
            "key_value",
        ),
    ],
)
def test_replies_are_read_expected_format_first_then_tolerantly(reply, fmt, scores, method):
    parsed = parse_scores(reply, R2, fmt)
    assert parsed.scores == scores and parsed.method == method


def test_comments_are_kept():
    assert parse_scores('{"correctness": 4, "clarity": 4, "explanation": "right"}', R2).comment == "right"
    tagged = '<score name="correctness">4</score><score name="clarity">4</score><comment>clear</comment>'
    assert parse_scores(tagged, R2, "tagged").comment == "clear"


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("", "the judge's reply is empty"),
        ("   \n", "the judge's reply is empty"),
        ("<think>hmm</think>", "the judge's reply is empty"),
        (
            "The answer looks fine to me.",
            "no scores for correctness, clarity in the judge's reply (expected json)",
        ),
        ('{"scores": {"correctness": 4}}', "scores only 1 of the dimensions correctness, clarity"),
        ('{"correctness": 7, "clarity": 3}', "correctness 7 is off its scale 1-5"),
        ('{"correctness": 0, "clarity": 3}', "correctness 0 is off its scale 1-5"),
        ('{"correctness": "good", "clarity": "bad"}', "no scores for correctness, clarity"),
    ],
)
def test_unreadable_replies_are_grading_failures_with_the_raw_text(reply, message):
    with pytest.raises(GradingError) as info:
        parse_scores(reply, R2)
    assert message in str(info.value)
    assert info.value.raw_output == reply and info.value.retryable is False


# -- over HTTP ---------------------------------------------------------------------------------------------


def judge_with(server, **options):
    spec = {
        "type": "llm_judge",
        "model": "judge-m",
        "base_url": server.base_url,
        "rubric": RUBRIC,
        "prices": PRICES,
    }
    spec.update(options)
    return make_grader(spec)


def run(judge, ctx):
    return asyncio.run(judge(ctx))


def test_well_formed_reply_is_scored_and_costed():
    reply = Reply.text(
        '{"scores": {"correctness": 4, "clarity": 2}, "comment": "right, terse"}', usage=(1000, 50)
    )
    with ScriptedOpenAIServer([reply]) as server:
        result = run(
            judge_with(server, pass_threshold=0.5), make_ctx("fast", expected="fast", reason="空调是车控")
        )
        (request,) = server.chat_requests
    assert result.dimensions == {"correctness": 4, "clarity": 2}
    assert result.score == pytest.approx((0.75 + 0.25) / 2)
    assert result.passed is True  # correctness 4 ≥ 3 and overall 0.5 ≥ 0.5
    assert result.comment == "right, terse"
    assert result.judge_model == "judge-m"
    assert result.judge_cost == pytest.approx((1000 * 1.0 + 50 * 2.0) / 1e6)
    assert (result.input_tokens, result.output_tokens) == (1000, 50)
    assert result.raw_output.startswith('{"scores"')
    assert result.details["parsed"] == "json"
    system, user = request.messages
    assert "correctness (1-5, 5 is best): Is the routing decision right?" in system["content"]
    assert '"scores": {"correctness": "<1-5>", "clarity": "<1-5>"}' in system["content"]
    assert "<input>\n打开空调\n</input>" in user["content"]
    assert "<reference_answer>\nfast\n</reference_answer>" in user["content"]
    assert "Reasoning: 空调是车控" in user["content"]
    assert request.body["temperature"] == 0


def test_a_failing_dimension_fails_the_run_and_says_why():
    with ScriptedOpenAIServer(['{"correctness": 2, "clarity": 5, "comment": "wrong system"}']) as server:
        result = run(judge_with(server), make_ctx())
    assert result.passed is False
    assert result.comment == "correctness 2 < 3 — wrong system"


def test_the_reference_is_shown_only_when_included():
    with ScriptedOpenAIServer(['{"correctness": 5, "clarity": 5}']) as server:
        run(judge_with(server, include=["reason"]), make_ctx(expected="GOLD-LABEL"))
        assert "GOLD-LABEL" not in json.dumps(server.chat_requests[0].body, ensure_ascii=False)


def test_tagged_format():
    reply = '<score name="correctness">5</score>\n<score name="clarity">4</score>\n<comment>good</comment>'
    with ScriptedOpenAIServer([reply]) as server:
        result = run(judge_with(server, output_format="tagged"), make_ctx())
        system = server.chat_requests[0].messages[0]["content"]
    assert '<score name="correctness">1-5</score>' in system
    assert result.dimensions == {"correctness": 5, "clarity": 4} and result.details["parsed"] == "tagged"


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("I would give it a good score.", "no scores for correctness, clarity"),
        ('{"scores": {"clarity": 4}}', "scores only 1 of the dimensions"),
        ("", "the judge's reply is empty"),
    ],
)
def test_malformed_partial_and_empty_replies_fail_with_raw_text_and_cost(reply, message):
    with ScriptedOpenAIServer([Reply.text(reply, usage=(500, 10))]) as server:
        with pytest.raises(GradingError) as info:
            run(judge_with(server), make_ctx())
        assert len(server.chat_requests) == 1  # an unreadable reply is not asked again silently
    err = info.value
    assert message in str(err) and err.retryable is False
    assert err.raw_output == reply
    assert err.spent == {
        "judge_model": "judge-m",
        "judge_cost": pytest.approx(520 / 1e6),
        "input_tokens": 500,
        "output_tokens": 10,
    }


def test_a_slow_judge_is_asked_again_on_a_fresh_request():
    good = '{"correctness": 4, "clarity": 4}'
    # the first answer never comes; the second must beat the timeout, which is ample for that on a busy machine
    with ScriptedOpenAIServer([Reply.slow(good, 3600), good]) as server:
        result = run(judge_with(server, timeout_s=5, retries=2, backoff_s=0), make_ctx())
        requests = server.chat_requests
    assert result.dimensions == {"correctness": 4, "clarity": 4}
    assert result.details["retries"] == 1
    assert len(requests) == 2


def test_a_judge_that_never_answers_in_time_is_a_retryable_failure():
    with ScriptedOpenAIServer([Reply.slow("{}", 2.0)] * 3) as server:
        with pytest.raises(GradingError) as info:
            run(judge_with(server, timeout_s=0.2, retries=1, backoff_s=0), make_ctx())
        assert len(server.chat_requests) == 2  # bounded: 1 + retries
    assert info.value.retryable is True
    assert "timeout" in str(info.value) and "no answer within timeout_s=0.2s" in str(info.value)


def test_rate_limits_are_waited_out():
    replies = [Reply.error(429, "slow down", retry_after=0), '{"correctness": 3, "clarity": 3}']
    with ScriptedOpenAIServer(replies) as server:
        result = run(judge_with(server, backoff_s=0), make_ctx())
    assert result.dimensions == {"correctness": 3, "clarity": 3} and result.details["retries"] == 1


@pytest.mark.parametrize(("status", "retryable"), [(500, True), (429, True), (401, False), (400, False)])
def test_transport_errors_become_grading_errors(status, retryable):
    with (
        ScriptedOpenAIServer([Reply.error(status, "nope", retry_after=0)] * 3) as server,
        pytest.raises(GradingError) as info,
    ):
        run(judge_with(server, retries=1, backoff_s=0), make_ctx())
    assert info.value.retryable is retryable
    assert str(info.value).startswith("the judge call failed")


def test_anonymise_option_masks_the_answer():
    with ScriptedOpenAIServer(['{"correctness": 4, "clarity": 4}']) as server:
        result = run(judge_with(server, anonymise=True), make_ctx("fast", reason="As Claude, I say fast"))
        body = json.dumps(server.chat_requests[0].body, ensure_ascii=False)
    assert "Claude" not in body and result.details["masked"] == {"self_references": 1}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"model": None}, "llm_judge: a judge needs a model"),
        ({"base_url": "ftp://x"}, "llm_judge: base_url 'ftp://x' is not an http(s) URL"),
        ({"output_format": "xml"}, "output_format must be one of json, tagged"),
        (
            {"include": ["gold"]},
            "include has 'gold'; choose from reference, reason, evidence, context, history",
        ),
        ({"retries": -1}, "retries must be a whole number ≥ 0"),
        ({"timeout_s": 0}, "timeout_s must be a positive number"),
        ({"prices": {"input": -1, "output": 1}}, "price of 'judge-m' is invalid"),
        ({"rubric": {"a": {"scale": [3, 1]}}}, "llm_judge.rubric.a: scale [3, 1]"),
    ],
)
def test_judge_options_are_checked_when_defined(options, message):
    spec = {"type": "llm_judge", "model": "judge-m", "base_url": "http://127.0.0.1:9/v1", **options}
    with pytest.raises(UsageError) as info:
        make_grader(spec)
    assert message in str(info.value)


@pytest.mark.parametrize("kind", ["llm_judge", "pairwise_judge"])
def test_both_judges_take_the_connection_settings_as_one_judge_settings(kind):
    spec = {
        "type": kind,
        "model": "judge-m",
        "base_url": "http://127.0.0.1:9/v1",
        "timeout_s": 7,
        "retries": 0,
        "temperature": 0.3,
        "seed": 11,
        "json_mode": True,
        "cache": "off",
    }
    settings = make_grader(spec).settings
    assert isinstance(settings, JudgeSettings)
    assert (settings.model, settings.timeout_s, settings.retries, settings.temperature) == (
        "judge-m",
        7,
        0,
        0.3,
    )
    assert (settings.seed, settings.json_mode, settings.cache) == (11, True, "off")
    assert settings.client.timeout_s == 7 and settings.client.retry.max_retries == 0
    # an option that is neither the judge's nor a connection setting is named with the valid ones
    with pytest.raises(UsageError) as info:
        make_grader({**spec, "colour": "red"})
    assert f"grader {kind!r} has no option 'colour'" in str(info.value)
    assert all(option in str(info.value) for option in ("instructions", *JUDGE_OPTIONS))


def test_the_judge_options_are_the_judge_settings_fields():
    fields = [f.name for f in dataclasses.fields(JudgeSettings) if f.name != "client"]
    assert list(JUDGE_OPTIONS) == fields
    # called directly, an unknown keyword is refused as Python refuses one, naming the settings
    with pytest.raises(
        TypeError, match="llm_judge: no option 'colour'; the judge's connection settings: model"
    ):
        llm_judge(model="m", base_url="http://127.0.0.1:9/v1", colour="red")  # type: ignore[call-arg]


def test_default_rubric_and_repr():
    judge = llm_judge(model="m", base_url="http://127.0.0.1:9/v1")
    assert [d.name for d in judge.rubric.dimensions] == ["correctness"]
    assert judge.kind == "judge" and "correctness" in repr(judge)

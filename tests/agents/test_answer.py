"""Tolerant reading of final answers, and label matching."""

from __future__ import annotations

import json

import pytest

from abbench.agents import answer_format, canonical_refs, match_label, parse_answer
from abbench.errors import AgentError
from abbench.types import Usage
from tests.agents.adapter_fixtures import skill  # noqa: F401

LABELS = ("fast", "slow")


@pytest.mark.parametrize(
    ("text", "prediction", "method"),
    [
        (
            '{"prediction": "fast", "reason": "控制", "confidence": 0.9, "evidence_refs": ["SKILL.md#Rules"]}',
            "fast",
            "json",
        ),
        ('{"Prediction": " SLOW. "}', "slow", "json"),
        ('Here you go:\n```json\n{"label": "fast",}\n```\nanything else?', "fast", "fenced_json"),
        ('```\n{"answer": "slow"}\n```', "slow", "fenced_json"),
        ('I think {"answer": {"prediction": "fast"}} fits.', "fast", "embedded_json"),
        ("{'prediction': 'slow', 'confidence': 85}", "slow", "lenient_json"),
        ('{"note": "x"} then {"prediction": "fast"}', "fast", "embedded_json"),
        ("Prediction: **fast**\nReason: one command\nConfidence: 80%", "fast", "key_value"),
        (
            "- **Label**: Slow\n- Evidence: SKILL.md#Rules, knowledge/domains.md#Navigation",
            "slow",
            "key_value",
        ),
        ("预测：slow\n理由：需要规划", "slow", "key_value"),
        ("FAST", "fast", "label"),
        ("<think>could be fast or slow</think>\nslow", "slow", "label"),
        ("The right system here is slow.", "slow", "label_mention"),
        ('{"prediction": "fast (because it is a command)"}', "fast", "json"),
    ],
)
def test_answers_are_read_from_many_shapes(text, prediction, method):
    answer = parse_answer(text, LABELS)
    assert (answer.prediction, answer.method, answer.in_label_set) == (prediction, method, True)


def test_fields_are_read_and_normalised():
    text = '{"label": "fast", "rationale": "车控", "confidence": "80%", "evidence": "SKILL.md#Rules; SKILL.md#Rules, k.md#A"}'
    answer = parse_answer(text, LABELS)
    assert answer.reason == "车控"
    assert answer.confidence == pytest.approx(0.8)
    assert answer.evidence_refs == ("SKILL.md#Rules", "k.md#A")


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (0.7, 0.7),
        ("0.7", 0.7),
        (70, 0.7),
        ("70%", 0.7),
        (1, 1.0),
        ("high", None),
        (-1, None),
        (250, None),
        (True, None),
    ],
)
def test_confidence(value, expected):
    answer = parse_answer(json.dumps({"prediction": "fast", "confidence": value}), LABELS)
    assert answer.confidence == (pytest.approx(expected) if expected is not None else None)


def test_a_prediction_outside_the_labels_is_bad_output():
    with pytest.raises(AgentError, match="'medium' is not one of the labels") as caught:
        parse_answer('{"prediction": "medium"}', LABELS)
    assert caught.value.failure_type == "bad_output" and caught.value.retryable


@pytest.mark.parametrize(
    "text",
    [
        # what SmolLM2-135M wrote and the key-value fallback once read as labels, graded wrong, never retried
        "prediction: {",
        "prediction: 306897524",
        'prediction: exactly one of "fast", "slow", copied exactly.',
        '{"prediction": "<one of the labels>", "reason": "fast is wrong"}',
        # an explicit prediction is the answer: a label mentioned later is not read past it
        '{"prediction": "medium"}\nSo it is fast.',
    ],
)
def test_garbage_labels_are_bad_output_not_answers(text):
    with pytest.raises(AgentError) as caught:
        parse_answer(text, LABELS)
    assert caught.value.failure_type == "bad_output"


def test_an_explicit_prediction_wins_over_later_noise():
    answer = parse_answer('{"prediction": "slow"}\nprediction: 306897524\nfast fast fast', LABELS)
    assert (answer.prediction, answer.method) == ("slow", "embedded_json")


def test_strict_reading_takes_only_one_whole_json_object():
    assert parse_answer('{"prediction": "fast"}', LABELS, strict=True).method == "json"
    for text in ('Sure: {"prediction": "fast"}', "prediction: fast", "fast", '{"prediction": "fast", "rea'):
        with pytest.raises(AgentError, match="not one JSON object"):
            parse_answer(text, LABELS, strict=True)


@pytest.mark.parametrize(
    ("method", "structured", "word"),
    [
        ("json", False, "strict"),
        ("json", True, "structured"),
        ("lenient_json", False, "fallback"),
        ("key_value", True, "fallback"),
        ("label_mention", False, "fallback"),
    ],
)
def test_answer_format_words(method, structured, word):
    assert answer_format(method, structured=structured) == word


def test_without_labels_plain_text_is_the_answer():
    answer = parse_answer("巴黎是法国的首都。")
    assert (answer.prediction, answer.method, answer.in_label_set) == (
        "巴黎是法国的首都。",
        "plain_text",
        None,
    )


@pytest.mark.parametrize(
    ("text", "labels", "match"),
    [
        ("", LABELS, "empty"),
        ("   \n", None, "empty"),
        ("<think>hmm</think>", LABELS, "only a <think> block"),
        ("it is not fast, it is slow", LABELS, "no answer"),
        ("I cannot decide.", LABELS, "one of fast, slow"),
        ('{"prediction": ""}', LABELS, "empty prediction"),
        ('{"prediction": null, "reason": "x"}', LABELS, "empty prediction"),
        ('{"predic', None, "looks like JSON"),
        ('{"reason": "no prediction here"}', None, "looks like JSON"),
    ],
)
def test_unreadable_answers_are_bad_output_with_the_raw_text(text, labels, match):
    with pytest.raises(AgentError, match=match) as info:
        parse_answer(text, labels, retryable=False)
    err = info.value
    assert err.failure_type == "bad_output"
    assert err.raw_output is not None and (err.raw_output == text or text.strip("{}") in err.raw_output)


@pytest.mark.parametrize(
    ("value", "labels", "anywhere", "expected"),
    [
        (" Fast! ", ("fast", "slow"), False, "fast"),
        ("fast_system", ("Fast System", "Slow System"), False, "Fast System"),
        ("ＦＡＳＴ", ("fast",), False, "fast"),
        ("very slow", ("slow", "very slow"), False, "very slow"),
        ("fast, clearly", ("fast", "slow"), False, "fast"),
        ("not fast", ("fast", "slow"), False, None),
        ("not fast", ("fast", "slow"), True, "fast"),
        ("fast or slow", ("fast", "slow"), True, None),
        ("breakfast", ("fast",), True, None),
        ("快系统", ("快", "慢"), False, "快"),
        ("不快", ("快", "慢"), False, None),
        ("anything", None, False, None),
    ],
)
def test_match_label(value, labels, anywhere, expected):
    assert match_label(value, labels, anywhere=anywhere) == expected


def test_canonical_refs_resolve_what_they_can(skill):  # noqa: F811
    refs = canonical_refs(
        ["SKILL.md#rules", "knowledge/domains.md#车控", "SKILL.md#Nope", "SKILL.md#Rules"], skill
    )
    assert refs == ("SKILL.md#Rules", "knowledge/domains.md#车控", "SKILL.md#Nope")
    assert canonical_refs(["a#b"], None) == ("a#b",)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"confidence": 0.5}, {"confidence": 0.5}),
        ({"confidence": "80%"}, {"confidence": 0.8}),
        ({"confidence": 80}, {"confidence": 0.8}),
        ({"confidence": float("nan")}, {"confidence": None}),
        ({"prediction": 3}, {"prediction": "3"}),
        ({"prediction": ["a", "b"]}, {"prediction": '["a", "b"]'}),
        ({"reason": {"why": "规则"}}, {"reason": '{"why": "规则"}'}),
        ({"evidence_refs": "SKILL.md#A"}, {"evidence_refs": ("SKILL.md#A",)}),
        ({"files_read": ["a.md", None, 3]}, {"files_read": ("a.md", "3")}),
        ({"cost": 1}, {"cost": 1.0}),
        ({"cost": "0.25"}, {"cost": 0.25}),
        ({"usage": Usage(3, 4.0)}, {"usage": Usage(3, 4)}),
    ],
)
def test_check_output_converts_what_can_be_read(fields, expected):
    from abbench.agents import check_output
    from abbench.types import AgentOutput

    out = check_output(AgentOutput(**{"prediction": "fast", **fields}))
    assert {k: getattr(out, k) for k in expected} == expected


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"confidence": "very"}, "confidence"),
        ({"confidence": 7000}, "confidence"),
        ({"cost": "cheap"}, "cost"),
        ({"cost": -0.5}, "cost"),
        ({"cost": float("inf")}, "cost"),
        ({"latency_ms": "fast"}, "latency_ms"),
        ({"usage": Usage("many", 1)}, "usage.input_tokens"),
        ({"usage": 12}, "usage"),
    ],
)
def test_check_output_refuses_numbers_it_cannot_read(fields, named):
    from abbench.agents import check_output
    from abbench.types import AgentOutput

    with pytest.raises(AgentError) as err:
        check_output(AgentOutput(prediction="fast", **fields))
    assert err.value.failure_type == "bad_output" and not err.value.retryable
    assert named in str(err.value)


def test_check_output_leaves_a_clean_answer_as_it_is():
    from abbench.agents import check_output
    from abbench.types import AgentOutput

    out = AgentOutput(
        "fast",
        "r",
        0.9,
        ("SKILL.md#A",),
        "raw",
        ({"role": "user"},),
        ("SKILL.md",),
        (),
        Usage(1, 2),
        0.1,
        5.0,
    )
    assert check_output(out) == out

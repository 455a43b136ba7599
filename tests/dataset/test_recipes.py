"""Recipes for layouts that are not one row per case."""

from __future__ import annotations

import pytest

from abbench.dataset import RECIPES, convert_file, get_recipe
from abbench.errors import ImportFailed, UsageError


def test_intent_blocks_in_a_csv_without_header(write):
    text = "greetings\nhello\nhi there\n\n\nbook_flight\nI need a flight to 上海\n"
    cases = convert_file(write("i.csv", text), recipe="intent-blocks").cases
    assert [(c.input, c.expected, c.source_line) for c in cases] == [
        ("hello", "greetings", "line 2"),
        ("hi there", "greetings", "line 3"),
        ("I need a flight to 上海", "book_flight", "line 7"),
    ]


def test_intent_blocks_in_a_sheet_with_padding_rows_above(write_xlsx):
    path = write_xlsx(
        "b.xlsx", {"s": [["trip"], ["go to Paris"], [None], ["name"], ["I am Bob"]]}, start=(3, 2)
    )
    cases = convert_file(path, recipe="intent-blocks").cases
    assert [(c.expected, c.input, c.source_line) for c in cases] == [
        ("trip", "go to Paris", "s!row 4"),
        ("name", "I am Bob", "s!row 7"),
    ]


def test_a_profile_can_override_the_recipe_mapping(write):
    text = "greetings\nhello\n"
    profile = {"fields": {"domain": {"const": "闲聊"}}, "label_map": {"greetings": "greeting"}}
    (case,) = convert_file(write("i.csv", text), profile, recipe="intent-blocks").cases
    assert (case.input, case.expected, case.domain) == ("hello", "greeting", "闲聊")


def test_openai_evals_ideal_lists_and_plain_text_input(write_jsonl):
    rows = [
        {"input": "2+2?", "ideal": ["4", "four"]},
        {"input": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}], "ideal": "x"},
    ]
    first, second = convert_file(write_jsonl("o.jsonl", rows), recipe="openai-evals").cases
    assert (first.input, first.expected, first.history, first.metadata) == (
        "2+2?",
        "4",
        None,
        {"acceptable": ["4", "four"]},
    )
    assert (second.input, second.history, second.metadata) == (
        "q",
        [{"role": "system", "content": "s"}],
        None,
    )
    assert second.source_row == rows[1]


def test_inspect_samples(write_jsonl):
    rows = [
        {"id": "s1", "input": "Which?", "target": ["A", "B"], "choices": ["x", "y"], "metadata": {"k": 1}}
    ]
    (case,) = convert_file(write_jsonl("s.jsonl", rows), recipe="inspect").cases
    assert case.expected == "A"
    assert case.context == {"choices": ["x", "y"]}
    assert case.metadata == {"k": 1, "targets": ["A", "B"], "id": "s1"}


def test_recipe_on_the_wrong_layout_says_so(write):
    with pytest.raises(ImportFailed, match=r"reads evals\.json, not csv"):
        convert_file(write("x.csv", "a\n1\n"), recipe="skill-creator")
    with pytest.raises(ImportFailed, match="has no 'evals' list"):
        convert_file(write("x.json", '{"train": [{"prompt": "p"}]}'), recipe="skill-creator")
    with pytest.raises(UsageError, match="unknown recipe 'nope'; recipes: intent-blocks"):
        get_recipe("nope")


def test_every_recipe_has_a_description_and_maps_input():
    for recipe in RECIPES.values():
        assert recipe.description and "input" in recipe.profile.fields

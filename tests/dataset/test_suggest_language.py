"""One rule for the input in every format: the column that reads most as language; a name never beats the values."""

from __future__ import annotations

import csv
import json

import openpyxl
import pytest

from abbench.dataset import suggest_mapping
from abbench.dataset._prose import is_text, not_text
from abbench.store import open_store

# issue 41's mini.csv: an aspect-sentiment file whose integer column is named like the input.
HEADER = ["pair_id", "sentence_no", "review_sentence", "aspect_category", "polarity"]
ROWS = [
    ["t1-food", 1, "The food was good, but the service was slow.", "food", "positive"],
    ["t1-service", 1, "The food was good, but the service was slow.", "service", "negative"],
    ["t2-staff", 2, "Waiter took our drink order and then vanished for 15 minutes.", "staff", "negative"],
    ["t3-price", 3, "Prices are fair for the portion size.", "price", "positive"],
]


def _write(tmp_path, fmt):
    path = tmp_path / f"mini.{fmt}"
    if fmt in ("csv", "tsv"):
        with path.open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh, delimiter="," if fmt == "csv" else "\t").writerows([HEADER, *ROWS])
    elif fmt == "xlsx":
        wb = openpyxl.Workbook()
        for row in [HEADER, *ROWS]:
            wb.active.append(row)
        wb.save(path)
    else:  # jsonl, once with the number kept and once written as a string
        path.write_text("".join(json.dumps(dict(zip(HEADER, r, strict=True))) + "\n" for r in ROWS))
    return path


@pytest.mark.parametrize("fmt", ["csv", "tsv", "xlsx", "jsonl"])
def test_an_integer_column_named_like_the_input_is_never_the_input(tmp_path, fmt):
    suggestion = suggest_mapping(_write(tmp_path, fmt))
    assert suggestion.profile.fields["input"] == "review_sentence"
    assert "sentence_no" in suggestion.reasons["metadata"]
    # the same words whatever the format kept the cell as (Excel's 1, CSV's "1")
    assert (
        "'sentence_no' is named like input but its values are mostly numbers ('1', '2', '3' …); not mapped"
        in (suggestion.notes)
    )


def test_import_without_mapping_stores_the_sentences_not_the_numbers(cli, tmp_path):
    """Issue 41: `abbench import mini.csv` stored cases whose inputs were "1", "2", "3", exit 0."""
    result = cli("import", _write(tmp_path, "csv"))
    assert result.exit_code == 0, result.output
    with open_store(cli.store_dir) as store:
        inputs = [c.input for c in store.datasets.load_cases("mini")]
    assert inputs[2] == "Waiter took our drink order and then vanished for 15 minutes."
    assert not any(i in ("1", "2", "3") for i in inputs)


def test_a_code_column_named_like_the_input_yields_to_the_sentences(tmp_path):
    """Letters are not enough: `text` holding tags like ``t1-food`` reads far less as language than the
    review beside it, whose name says nothing."""
    path = tmp_path / "codes.csv"
    rows = [("text", "review", "polarity")] + [(f"r{i}-{a}", s, p) for i, (_, _, s, a, p) in enumerate(ROWS)]
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    suggestion = suggest_mapping(path)
    assert suggestion.profile.fields["input"] == "review"
    assert "no column named like a query reads as language" in suggestion.reasons["input"]
    assert any(
        n.startswith("'text' is named like input but its values read little as language")
        for n in suggestion.notes
    )


def test_a_short_query_column_keeps_its_name_beside_long_answers(tmp_path):
    """The name still decides between columns that both read as language: short queries, long answers."""
    path = tmp_path / "qa.csv"
    rows = [
        ("query", "answer"),
        ("balance?", "Your balance is shown on the home screen of the app, under the card picture."),
        ("hi there", "Hello! How can I help you with your account or your card today?"),
        ("lost card", "Freeze the card in the app at once, then order a new one from the card menu."),
    ]
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows(rows)
    assert suggest_mapping(path).profile.fields["input"] == "query"


def test_a_file_of_numbers_only_gets_no_input_in_any_format(tmp_path):
    """A CSV of numbers is not a column of inputs, as an Excel sheet of numbers was not."""
    path = tmp_path / "n.csv"
    path.write_text("question,score\n1,2\n2,3\n3,4\n", encoding="utf-8")
    suggestion = suggest_mapping(path)
    assert not suggestion.has_input
    assert any("no column looks like the input" in n for n in suggestion.notes)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("1", False),
        (1, False),
        ("2.5", False),
        ("2024-05-01", False),
        ("hi", True),
        ("打开空调", True),
        (None, False),
    ],
)
def test_is_text(value, text):
    assert is_text(value) is text


def test_not_text_names_the_values():
    assert not_text(["1", "2", "x1"]) is not None
    assert not_text(["a", "b", "c", "d", "5"]) is None
    assert not_text([None, ""]) == "it is empty"

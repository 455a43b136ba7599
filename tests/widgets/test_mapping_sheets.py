"""The mapping widget holds the saved profiles against the sheet chosen (issue 41, item 10) and offers the
keys inside objects as columns (item 3)."""

from __future__ import annotations

import csv
import json
import re
from html import unescape

import pytest

from abbench.dataset import match_profiles, read_table
from abbench.widgets import MappingWidget


def _said(widget: MappingWidget) -> str:
    return unescape(re.sub(r"<[^>]+>", "", widget.match_html.value))


@pytest.fixture
def workbook(realdata, tmp_path):
    """A workbook of two real data sheets: AskUbuntu's questions (text, intent) first, then the first
    40 banking77 test rows (text, category)."""
    import openpyxl

    sentences = json.loads((realdata / "nlu_corpora" / "AskUbuntuCorpus.json").read_text(encoding="utf-8"))
    with (realdata / "banking77" / "test.csv").open(encoding="utf-8", newline="") as fh:
        banking = list(csv.DictReader(fh))[:40]
    book = openpyxl.Workbook()
    first = book.active
    first.title = "askubuntu"
    first.append(["text", "intent"])
    for s in sentences["sentences"][:40]:
        first.append([s["text"], s["intent"]])
    second = book.create_sheet("banking")
    second.append(["text", "category"])
    for row in banking:
        second.append([row["text"], row["category"]])
    path = tmp_path / "two-sheets.xlsx"
    book.save(path)
    return path, banking


def test_choosing_the_sheet_a_saved_profile_fits_proposes_it(store, realdata, workbook):
    path, banking = workbook
    saver = MappingWidget(store, path=realdata / "banking77" / "test.csv")
    saver.profile_name.value = "banking77"
    saver.save_button.click()
    assert saver.errors.message is None and store.profiles.get("banking77").read.sheet is None

    widget = MappingWidget(store, path=path)
    assert widget.errors.message is None
    assert widget.sheet.value == "askubuntu" and widget.start_from.value == "suggested"
    assert _said(widget).startswith(
        "no saved profile matches: the closest, profile 'banking77@1' needs column"
    )

    widget.sheet.select("banking")
    assert widget.errors.message is None
    # the library's answer on the sheet chosen, and the widget's, are the same
    library = match_profiles(read_table(path, sheet="banking"), [p.profile for p in store.profiles.all()])
    assert library.best is not None and library.best.ref == "banking77@1"
    assert widget.start_from.value == "banking77@1"
    assert _said(widget) == (
        f"proposed {library.best.reason}; choose 'suggested mapping' under Start from to ignore it"
    )
    assert "on sheet 'banking'" in _said(widget)
    assert "saved profile banking77@1 · matches this file" in widget.start_from.labels
    assert [c.input for c in widget.preview.cases] == [
        r["text"] for r in banking[: len(widget.preview.cases)]
    ]
    assert widget.profile.read.sheet == "banking"

    # back on the first sheet, the profile does not fit: the form says so and starts from the suggestion
    widget.sheet.select("askubuntu")
    assert widget.errors.message is None and widget.start_from.value == "suggested"
    assert _said(widget).startswith(
        "banking77@1 was not kept for this sheet: profile 'banking77@1' needs column"
    )
    assert widget.fields["input"].source == "text" and widget.fields["expected"].source == "intent"


def test_the_keys_inside_objects_are_offered_and_chosen_like_columns(store, realdata):
    path = realdata / "mintaka" / "routing_nested.jsonl"
    widget = MappingWidget(store, path=path)
    assert widget.errors.message is None
    assert widget.fields["input"].choice.value == "col:data.query"
    assert widget.fields["domain"].source == "data.vertical"
    assert "data.translations.de" in widget.columns
    first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert widget.preview.cases[0].input == first["data"]["query"]
    widget.set_field("input", "data.translations.de")  # the German questions instead
    assert widget.errors.message is None
    assert widget.fields["input"].choice.value == "col:data.translations.de"
    assert widget.preview.cases[0].input == first["data"]["translations"]["de"]

"""Sorting 04's list starts at page 1 and keeps the chosen case chosen, open and reviewable."""

from __future__ import annotations

import pytest

from abbench.review import reviews
from abbench.widgets import ReviewWidget


@pytest.fixture
def paged(store, ab, monkeypatch):
    """The review widget with pages of two cases: the six gold cases make three pages."""
    monkeypatch.setattr("abbench.widgets._review.PAGE_SIZE", 2)
    w = ReviewWidget(store, experiment="ab")
    assert w.errors.message is None
    return w


def test_a_sort_starts_at_page_1_with_the_chosen_case_still_chosen(store, ab, paged):
    paged.select_case("c17")  # on page 3 in dataset order
    assert paged.page_number == 3 and paged.detail.case_id == "c17"
    paged.sort.value = "wrong"
    assert paged.page_number == 1 and paged.page.page_of("c17") != 1
    assert "c17" not in [d.case_id for d in paged.shown]
    assert paged.chosen_case_id == "c17" and paged.cases.missing == "c17"
    assert paged.detail.case_id == "c17"  # its detail stays open
    assert "is not in this list" not in paged.count_html.value  # listed, on another page
    assert not paged.verdict_buttons["gold_correct"].disabled
    paged.shortcuts.press("2")  # a verdict on the chosen case, from page 1
    assert reviews(ab.id, store=store, case_id="c17")[-1].verdict == "model_correct"
    assert paged.errors.message is None


def test_a_sort_back_to_dataset_order_also_starts_at_page_1(paged):
    paged.select_case("c04")  # page 2
    paged.sort.value = "confidence"
    paged.sort.value = "order"
    assert paged.page_number == 1 and paged.chosen_case_id == "c04" and paged.detail.case_id == "c04"
    paged.next_case()  # j walks on from the chosen case, wherever the page is
    assert paged.cases.value == "c07" and paged.page_number == 3


def test_paging_away_keeps_the_chosen_case_open(paged):
    paged.select_case("c17")
    paged.go_to_page(1)
    assert paged.chosen_case_id == "c17" and paged.detail.case_id == "c17"

"""ReviewWidget's blind second review: assign a case to a second reviewer, who sees no other verdict on it."""

from __future__ import annotations

from abbench.review import add_review, review_assignments, reviews
from abbench.widgets import ReviewWidget
from tests.widgets.conftest import without_errors


def test_a_case_assigned_to_a_second_reviewer_hides_the_first_verdict(store, ab):
    first = without_errors(ReviewWidget(store, experiment="ab", case="c01", reviewer="alice"))
    first.review_arm.value = "a"
    first.note.value = "the gold is wrong"
    first.advance.value = False
    first.save("gold_correct")
    first.second_reviewer.value = "bob"
    first.assign()
    assert [(a.case_id, a.arm, a.reviewer) for a in review_assignments(ab.id, store=store)] == [
        ("c01", "a", "bob")
    ]
    assert "the gold is wrong" in first.detail.summary_html.value + first.saved_html.value

    second = without_errors(ReviewWidget(store, experiment="ab", case="c01", reviewer="bob"))
    shown = second.detail.summary_html.value + second.saved_html.value + second.detail.case_html.value
    assert "gold_correct" not in shown and "the gold is wrong" not in shown
    assert "blind second review for bob" in second.blind_html.value
    second.review_arm.value = "a"
    second.advance.value = False
    second.save("model_correct")
    assert "model_correct" in second.saved_html.value and "gold_correct" not in second.saved_html.value
    mine = [(r.reviewer, r.verdict) for r in reviews(ab.id, store=store, latest=False)]
    assert mine == [("alice", "gold_correct"), ("bob", "model_correct")]

    # a case not assigned to bob shows him what others said, as before
    add_review(ab.id, "c02", "unsure", arm="a", reviewer="alice", store=store)
    second.select_case("c02")
    assert "unsure" in second.detail.summary_html.value and second.blind_html.value == ""


def test_assigning_needs_another_person(store, ab):
    widget = without_errors(ReviewWidget(store, experiment="ab", case="c01", reviewer="alice"))
    widget.second_reviewer.value = "alice"
    widget.guard("assigning", widget.assign)()
    assert "a second review needs another person" in (widget.errors.message or "")

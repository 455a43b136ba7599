"""04's low-confidence threshold: a control whose default fits the label count, said beside the count."""

from __future__ import annotations

from abbench.widgets import ReviewWidget
from tests.review.test_threshold import _trigger_experiment


def test_the_threshold_is_a_control_with_a_default_for_the_label_count(store, realdata):
    exp, frame = _trigger_experiment(store, realdata, declared=False)
    below_default = sorted(frame.loc[frame.confidence < 0.75, "case_id"].unique())
    widget = ReviewWidget(store, experiment=exp.id, kind="low_confidence")

    assert widget.threshold_box.value == 0.75 and widget.chosen_threshold is None
    assert [d.case_id for d in widget.shown] == below_default
    label = dict((v, k) for k, v in widget.kind.options)["low_confidence"]
    assert label == f"low confidence < 0.75 ({len(below_default)})"
    assert "halfway between chance (1/2) and certainty for 2 labels" in widget.count_html.value
    assert widget.default_threshold_button.disabled

    widget.threshold_box.value = 0.6  # the person types another threshold
    below_chosen = sorted(frame.loc[frame.confidence < 0.6, "case_id"].unique())
    assert [d.case_id for d in widget.shown] == below_chosen
    assert "below 0.6 (chosen)" in widget.count_html.value and not widget.default_threshold_button.disabled
    widget.reload()
    assert widget.threshold_box.value == 0.6  # a reload keeps the choice

    widget.default_threshold_button.click()
    assert widget.threshold_box.value == 0.75 and [d.case_id for d in widget.shown] == below_default
    assert not widget.errors.value


def test_the_box_shows_the_threshold_to_three_places_and_filters_on_it_whole(store, realdata):
    exp, frame = _trigger_experiment(store, realdata, declared=False)
    widget = ReviewWidget(store, experiment=exp.id, kind="low_confidence")
    widget.threshold_box.value = 2 / 3  # as a default of 2/3 (three labels) would set it
    assert widget.threshold_box.value == 0.667 and widget.threshold == 2 / 3  # not 0.6666666666666666
    below = sorted(frame.loc[frame.confidence < 2 / 3, "case_id"].unique())
    assert [d.case_id for d in widget.shown] == below
    assert "below 0.667 (chosen)" in widget.count_html.value

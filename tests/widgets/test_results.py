"""ResultsWidget: per-arm metrics with intervals, confusion heatmaps, domains, stability, cost, decision and gate."""

from __future__ import annotations

import pytest

from abbench.metrics import experiment_metrics
from abbench.runner import create_experiment, run_experiment
from abbench.widgets import ResultsWidget
from abbench.widgets._results import fmt_estimate
from tests.widgets.conftest import python_arm


@pytest.fixture
def widget(store, ab):
    w = ResultsWidget(store, experiment="ab")
    assert w.errors.message is None
    return w


def test_each_arm_shows_its_accuracy_with_its_interval(store, ab, widget):
    a, b = widget.arm("a"), widget.arm("b")
    assert a.accuracy.value == pytest.approx(20 / 24)  # wrong on c01, c02, c07, c17 in both rounds
    assert b.accuracy.value == pytest.approx(19.5 / 24)  # wrong on c02, c03, c07, c17, and c04 once
    assert a.accuracy.low < a.accuracy.value < a.accuracy.high
    fresh = experiment_metrics(ab.id, store=store)
    for arm in fresh.arms:
        assert fmt_estimate(arm.accuracy) in widget.arms_html.value
    assert "per-case means" in widget.arms_html.value and "#1 ab" in widget.summary_html.value
    # Shares read as percentages, as in the report (they were 0.833 [0.7..., ...]).
    assert f">{100 * a.accuracy.value:.1f}% [{100 * a.accuracy.low:.1f}%, " in widget.arms_html.value


def test_confusion_matrices_side_by_side_as_counts_and_row_shares(widget):
    fig = widget.figures["confusion"]
    heatmaps = [t for t in fig.data if t.type == "heatmap"]
    assert len(heatmaps) == 4  # two arms × (counts, shares)
    counts_a = heatmaps[0].z
    assert sum(map(sum, counts_a)) == 48  # every graded run of arm a once
    shares_a = heatmaps[1].z
    assert all(sum(row) == pytest.approx(1.0) for row in shares_a)
    titles = [s.text for s in fig.layout.annotations]
    assert titles == ["a: counts", "b: counts", "a: share of each gold row", "b: share of each gold row"]
    assert "precision" in widget.classes_html.value


def test_domains_with_intervals_and_stability_across_rounds(widget):
    fig = widget.figures["domains"]
    assert [t.name for t in fig.data] == ["a", "b"]
    assert set(fig.data[0].x) == {"导航", "车控", "媒体"} and fig.data[0].error_y.array is not None
    assert "导航" in widget.domains_html.value
    assert widget.arm("b").stability.flipped == ("c04",)
    assert "c04" in widget.stability_html.value
    rounds = widget.figures["rounds"]
    assert [list(t.x) for t in rounds.data] == [[1, 2], [1, 2]]
    assert "latency p50" in widget.usage_html.value and widget.figures["latency"] is not None
    assert " ms</td>" in widget.usage_html.value  # a unit with every latency


def test_the_decision_follows_the_arms_chosen_and_keeps_them_across_reloads(widget):
    g = widget.gate_result
    # Two arms: the first is the baseline without anyone naming it; the banner opens with the pair.
    assert (g.a.arm, g.b.arm) == ("a", "b") and g.pair.named_by == "the experiment's two arms"
    # 1 fixed, 2 regressed of 24: not worse; stable enough; but no cost recorded, so not a plain pass.
    assert g.outcome == "pass with warnings" and [r.rule.name for r in g.not_assessed] == [
        "cost",
        "cost up at most 25%",
    ]
    assert "b vs a: gate PASS WITH WARNINGS — decided on 48 of 48 runs per arm" in widget.decision_html.value
    cost = g.decision.cost
    assert cost.conclusion == "not assessed" and "not assessed (allowed)" in widget.decision_html.value
    for d in g.decision.dimensions:
        assert d.summary.replace("<", "&lt;")[:30] in widget.decision_html.value
    widget.tabs.selected_index = 5
    widget.baseline.select("b")
    widget.candidate.select("a")
    assert (widget.gate_result.a.arm, widget.gate_result.b.arm) == ("b", "a")
    widget.reload_button.click()
    assert (widget.baseline.value, widget.candidate.value, widget.tabs.selected_index) == ("b", "a", 5)
    assert (widget.gate_result.a.arm, widget.gate_result.b.arm) == ("b", "a")
    widget.candidate.select("b")
    assert widget.gate_result is None and "two different arms" in widget.decision_html.value


def test_a_gate_that_blocks_says_why(store, ab):
    w = ResultsWidget(store, experiment="ab", gate=[{"metric": "accuracy", "op": ">=", "value": 0.99}])
    assert w.errors.message is None
    assert w.gate_result.outcome == "block" and "b vs a: gate BLOCK" in w.decision_html.value
    value = w.gate_result.rules[0].value
    assert (
        "accuracy ≥ 99.0%" in w.decision_html.value and f">{100 * value:.1f}%</td>" in w.decision_html.value
    )


def test_the_chosen_experiment_is_kept_when_others_arrive(store, ab, small):
    w = ResultsWidget(store, experiment=ab.id)
    one = create_experiment(
        {"name": "one-arm", "dataset": small.fingerprint, "arms": {"x": python_arm()}}, store=store
    )
    run_experiment(one.id, store=store)
    w.reload_button.click()
    assert w.chooser.value == ab.id and w.metrics.experiment == "ab"
    w.select_experiment("one-arm")  # one arm: no comparison, and no error either
    assert w.errors.message is None and w.baseline.value == w.candidate.value == "x"
    assert w.gate_result is not None and w.gate_result.a is None
    assert "one arm" in w.decision_html.value


def test_no_experiment_chosen_shows_a_hint(store):
    w = ResultsWidget(store)
    assert w.metrics is None and "choose an experiment" in w.summary_html.value
    with pytest.raises(Exception, match="choose an experiment"):
        w.arm("a")

"""ResultsWidget: per-arm metrics with intervals, confusion heatmaps, domains, stability, cost, decision and gate."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from abbench.agents import stand_in_note
from abbench.gate import DEFAULT_RULES, evaluate_gate
from abbench.metrics import experiment_metrics
from abbench.runner import cancel_experiment, create_experiment, run_experiment
from abbench.store import open_store
from abbench.store.bulk._outcomes import KEPT_CODES
from abbench.widgets import ResultsWidget
from abbench.widgets._gate import DEFAULTS, OWN, find_gate_files
from abbench.widgets._results import fmt_estimate
from tests.conftest import DEMO, REPO, run_abbench
from tests.widgets.conftest import python_arm, without_errors

GATE = DEMO / "gate.yaml"


def _text(value: str) -> str:
    """An HTML value as people read it (entities decoded)."""
    return html.unescape(value)


@pytest.fixture
def widget(store, ab):
    return without_errors(ResultsWidget(store, experiment="ab"))


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
    # pass@k / pass^k for k = 1, 2: b is wrong on c04 once in two rounds, so pass@2 > pass^2 for b
    b2 = widget.arm("b").stability.pass_at(2)
    assert b2.pass_hat_k == pytest.approx(19 / 24) and b2.pass_at_k == pytest.approx(20 / 24)
    stab = _text(widget.stability_html.value)
    assert "pass^k (all k right)" in stab and f"{100 * b2.pass_hat_k:.1f}% [" in stab
    rounds = widget.figures["rounds"]
    assert [list(t.x) for t in rounds.data] == [[1, 2], [1, 2]]
    assert "latency p50" in widget.usage_html.value and widget.figures["latency"] is not None
    assert " ms</td>" in widget.usage_html.value  # a unit with every latency


def test_a_chart_tab_is_drawn_when_first_shown_with_the_figure_drawn_at_once_before(store, ab):
    import plotly.io as pio

    from abbench._plotly import FIGURE_CONFIG
    from abbench.widgets._figures import (
        confusion_figure,
        domain_figure,
        label_distribution_figure,
        latency_figure,
        rounds_figure,
    )

    MIME = "application/vnd.plotly.v1+json"

    widget = ResultsWidget(store, experiment="ab")
    assert widget.tabs.selected_index == 0
    assert widget.charts["labels"].outputs  # the Arms tab's chart is shown at once
    assert all(not out.outputs for n, out in widget.charts.items() if n != "labels")  # nothing not shown
    assert len(widget.confusion.children) == 1 and "precision" in widget.classes_html.value
    m = widget.metrics
    expected = {
        "confusion": confusion_figure(m.arms),
        "labels": label_distribution_figure(m.arms),
        "domains": domain_figure(m),
        "rounds": rounds_figure(m),
        "latency": latency_figure(m.arms),
    }
    for tab, name in ((2, "domains"), (3, "rounds"), (4, "latency")):
        widget.tabs.selected_index = tab
        (shown,) = widget.charts[name].outputs
        want = pio.renderers["plotly_mimetype"].to_mimebundle(expected[name].to_dict())
        drawn = dict(shown["data"][MIME])
        assert drawn.pop("config") == FIGURE_CONFIG  # no Share button, no logo (abbench._plotly)
        want[MIME].pop("config", None)  # the renderer's config, once abbench.report has set it
        assert drawn == want[MIME]  # the chart shown is the one drawn at once before
    assert not widget.confusion.figures  # the Confusion tab has not been shown yet
    widget.tabs.selected_index = 1
    assert len(widget.confusion.children) == 2 and widget.confusion.children[0].outputs
    figures = widget.figures
    assert list(figures) == ["confusion", "labels", "domains", "rounds", "latency"]
    assert {k: f.to_dict() for k, f in figures.items()} == {k: f.to_dict() for k, f in expected.items()}
    widget.reload()  # a reload draws the tab shown, and only it
    assert widget.confusion.children[0].outputs and not widget.charts["domains"].outputs
    assert widget.figures["domains"].to_dict() == expected["domains"].to_dict()
    assert widget.charts["domains"].outputs  # reading `figures` drew every chart


def test_the_decision_follows_the_arms_chosen_and_keeps_them_across_reloads(widget):
    g = widget.gate_result
    # Two arms: the first is the baseline without anyone naming it; the banner opens with the pair.
    assert (g.a.arm, g.b.arm) == ("a", "b") and g.pair.named_by == "the experiment's two arms"
    # 1 fixed, 2 regressed of 24: the interval (about −15 to +11 points) straddles the 2-point margin, so
    # capability is inconclusive, never a pass; stable enough; no cost recorded, so cost is not assessed.
    assert g.outcome == "inconclusive" and [r.rule.name for r in g.not_assessed] == [
        "cost",
        "cost up at most 25%",
    ]
    assert g.decision.capability.conclusion == "inconclusive"
    assert "b vs a: gate INCONCLUSIVE — decided on 48 of 48 runs per arm" in widget.decision_html.value
    # The headline says why, and about how many more cases would settle it (the comparison's own figure).
    n_more = g.comparison.verdict.n_more
    headline = _text(widget.headline_html.value)
    assert "b vs a: gate INCONCLUSIVE" in headline and "PASS" not in headline
    assert "inconclusive: not decided by the evidence: capability: the 95% CI" in headline
    assert "straddles the margin of −2.0 points" in headline
    assert n_more and f"about {n_more:,} more paired cases would likely settle it" in headline
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


# -- the gate: the experiment's own, abbench's defaults, or a file picked in the widget ------------------


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    """The store `abbench demo` makes (priced builtin arms no-skill, v1, v2; three rounds), without reports."""
    from abbench.demo import run_demo

    folder = tmp_path_factory.mktemp("demo") / "store"
    with open_store(folder) as store:
        run_demo(store=store, report=False)
    return folder


def _gate_json(store_dir, *options) -> dict:
    done = run_abbench("--store", store_dir, "gate", "demo-routing", *options, "--json")
    assert done.returncode in (0, 1), done.stderr
    return json.loads(done.stdout)


def _same_decision(widget_result, other: dict) -> None:
    """The widget's `GateResult` and another view's (as JSON) agree on pair, outcome, coverage and rules."""
    mine = widget_result.as_dict()
    for key in ("outcome", "coverage"):
        assert mine[key] == other[key], key
    assert (mine["pair"]["baseline"], mine["pair"]["candidate"]) == (
        other["pair"]["baseline"],
        other["pair"]["candidate"],
    )
    # named by the same gate file, whether written as an absolute path or relative to the current folder
    assert Path(mine["pair"]["named_by"]).resolve() == Path(other["pair"]["named_by"]).resolve()
    assert [(r["rule"]["metric"], r["value"], r["status"]) for r in mine["rules"]] == [
        (r["rule"]["metric"], r["value"], r["status"]) for r in other["rules"]
    ]
    assert mine["decision"]["conclusion"] == other["decision"]["conclusion"]


def test_the_decision_counts_the_runs_the_figures_read_and_is_a_fresh_gates(store, ab):
    """Opening an experiment reads its runs once: the gate's comparison counts each case from what the
    figures read (no second pass summing the outcomes), and decides exactly as `evaluate_gate` does
    on the store read afresh."""
    KEPT_CODES.clear()
    sql: list[str] = []
    store.conn.set_trace_callback(sql.append)
    try:
        w = ResultsWidget(store, experiment="ab")
    finally:
        store.conn.set_trace_callback(None)
    assert w.errors.message is None and w.gate_result is not None
    assert any("GROUP BY arm_id, case_idx" in q for q in sql)  # the sums no code carries: latency
    assert not any("16777216" in q for q in sql)  # the outcome counts summed in SQL: not asked for
    with open_store(store.path, create=False) as fresh:
        g = evaluate_gate("ab", store=fresh)

    def plain(value):
        return json.dumps(value.as_dict(), sort_keys=True, default=repr)

    assert plain(w.gate_result) == plain(g)
    assert plain(w.gate_result.comparison) == plain(g.comparison)


@pytest.mark.slow
def test_a_gate_file_picked_in_the_widget_decides_as_abbench_gate_and_evaluate_gate_do(
    demo_store, monkeypatch
):
    monkeypatch.chdir(REPO)  # the notebook's folder: gate files are looked for here and next to the store
    with open_store(demo_store) as store:
        w = ResultsWidget(store, experiment="demo-routing")
        assert f"file: {GATE.relative_to(REPO).as_posix()}" in w.gate.choice.labels
        assert "rules: abbench's defaults" in _text(w.rules_html.value)  # the demo names no gate of its own
        defaults = w.gate_result
        _same_decision(defaults, _gate_json(demo_store))
        assert [r.rule.name for r in defaults.rules] == [r["name"] for r in DEFAULT_RULES]

        w.tabs.selected_index = 5
        w.gate.choice.select(str(GATE))
        g = w.gate_result
        assert w.errors.message is None and w.tabs.selected_index == 5
        assert (g.a.arm, g.b.arm, g.outcome) == ("v1", "v2", "pass with warnings")
        assert [r.rule.name for r in g.warnings] == ["cost up at most 25%"]
        assert "rules: data/demo/gate.yaml" in _text(w.rules_html.value)
        assert "v2 vs v1: gate PASS WITH WARNINGS" in _text(w.headline_html.value)
        assert "rules: data/demo/gate.yaml" in _text(w.headline_html.value)
        _same_decision(g, _gate_json(demo_store, "--rules", "data/demo/gate.yaml"))
        _same_decision(g, evaluate_gate("demo-routing", GATE, store=store).as_dict())
        # What Render report is given is what the widget decided with.
        assert w.report_options() == {"experiment": w.experiment.id, "arms": ["v1", "v2"], "gate": str(GATE)}

        w.gate.choice.select(OWN)  # back: the defaults again, the seven rules gone
        assert len(w.gate_result.rules) == len(DEFAULT_RULES)


@pytest.mark.slow
def test_the_builtin_stand_in_is_named_whenever_an_arm_uses_it(demo_store, store, ab):
    with open_store(demo_store) as demo:
        w = ResultsWidget(demo, experiment="demo-routing")
        assert (
            "arms no-skill, v1 and v2 use the builtin stand-in agent (offline BM25 lookup, not a model): their "
            "figures show the workflow, not an agent's quality"
        ) in _text(w.summary_html.value)
    assert "stand-in" not in _text(ResultsWidget(store, experiment="ab").summary_html.value)  # python arms
    assert stand_in_note(["v1"]) == (
        "arm v1 uses the builtin stand-in agent (offline BM25 lookup, not a model): its figures show the "
        "workflow, not an agent's quality"
    )
    assert stand_in_note([]) is None


def test_the_experiments_own_gate_decides_by_default_and_the_defaults_can_be_chosen(store, small):
    exp = create_experiment(
        {
            "name": "own-gate",
            "dataset": small.fingerprint,
            "arms": {"a": python_arm(), "b": python_arm(wrong=["c01", "c02", "c03"])},
            "gate": [{"metric": "accuracy", "op": ">=", "value": 0.99, "name": "b nearly perfect"}],
        },
        store=store,
    )
    run_experiment(exp.id, store=store)
    w = ResultsWidget(store, experiment="own-gate")
    assert w.gate_result.outcome == "block" and w.gate_result.source == "experiment gate"
    assert "rules: the experiment's own" in _text(w.rules_html.value)
    assert "b vs a: gate BLOCK" in _text(w.headline_html.value) and "abbench-error" in _text(
        w.headline_html.value
    )
    w.gate.choice.select(DEFAULTS)
    assert "rules: abbench's defaults" in _text(w.rules_html.value)
    assert [r.rule.name for r in w.gate_result.rules] == [r["name"] for r in DEFAULT_RULES]
    assert w.gate_result.outcome == evaluate_gate(exp.id, list(DEFAULT_RULES), store=store).outcome
    assert w.report_options()["gate"] == [dict(r) for r in DEFAULT_RULES]


def test_a_bad_gate_file_says_what_where_and_what_to_do_and_leaves_no_verdict(store, ab, tmp_path):
    w = ResultsWidget(store, experiment="ab")
    # default rules: 24 cases cannot show b is not worse (the interval straddles the margin): inconclusive
    assert w.gate_result.outcome == "inconclusive" and "gate INCONCLUSIVE" in _text(w.headline_html.value)
    bad = tmp_path / "release.yaml"
    bad.write_text(
        "rules:\n  - {metric: accuracy, op: '>=', value: 0.9}\n  - {metric: acuracy, op: '>=', value: 1}\n"
    )
    w.gate.path_box.value = str(bad)  # typed, then Enter
    assert w.gate.choice.value == str(bad.resolve())
    message = w.errors.message
    assert str(bad) in message and "rule 2 (line 3)" in message and "acuracy" in message
    assert w.gate_result is None
    for shown in (w.decision_html.value, w.headline_html.value):
        assert "PASS" not in shown and "no decision" in shown
    assert "Fix it and press Reload" in _text(w.decision_html.value)

    bad.write_text("rules:\n  - {metric: accuracy, op: '>=', value: 0.5}\n")  # fixed on disk: Reload reads it
    w.reload_button.click()
    assert w.errors.message is None and w.gate_result.outcome == "pass"
    assert "rules: release.yaml" in _text(w.rules_html.value)  # shown relative to the store's folder

    w.gate.path_box.value = str(tmp_path / "nowhere.yaml")
    assert "does not exist" in w.errors.message and w.gate_result is None


def test_a_cancelled_experiment_is_incomplete_and_never_green(store, small):
    exp = create_experiment(
        {"name": "stopped", "dataset": small.fingerprint, "arms": {"a": python_arm(), "b": python_arm()}},
        store=store,
    )
    cancel_experiment(exp.id, store=store)
    w = ResultsWidget(store, experiment="stopped")
    assert w.gate_result.outcome == "incomplete" and not w.gate_result.passed
    for shown in (w.headline_html.value, w.decision_html.value):
        assert "INCOMPLETE" in shown and "abbench-ok" not in shown and "abbench-muted" in shown


def test_gate_files_are_found_by_their_content(tmp_path):
    (tmp_path / "gates").mkdir()
    (tmp_path / "gates" / "release.yml").write_text("- accuracy >= 0.9\n")
    (tmp_path / "gates" / "mapping.yaml").write_text("fields: {input: q}\n")  # a mapping profile, not a gate
    (tmp_path / ".hidden").mkdir()
    (tmp_path / ".hidden" / "gate.yaml").write_text("rules: []\n")
    found = find_gate_files([REPO / "data", tmp_path])
    assert GATE.resolve() in found and (tmp_path / "gates" / "release.yml").resolve() in found
    assert not any(p.name in ("mapping-csv.yaml", "experiment.yaml", "mapping.yaml") for p in found)
    assert not any(".hidden" in p.parts for p in found)


def test_figures_follow_the_notebooks_width_and_labels_are_not_cut(widget):
    assert widget.figures["confusion"].layout.width is None and widget.figures["confusion"].layout.autosize
    assert all("abbench-chart" in out._dom_classes for out in widget.charts.values())  # wide ones scroll
    for choice in (widget.baseline, widget.candidate, widget.gate.choice):
        assert choice.widget.style.description_width == "initial"  # "Candidate (B)", not "Candidate…"
    assert "abbench-view" in widget._dom_classes and "flex-wrap:wrap" in widget.children[0].value  # tabs wrap


def test_arms_nobody_chose_follow_the_pair_a_gate_file_names(store, ab, tmp_path):
    reverse = tmp_path / "reverse.yaml"
    reverse.write_text("baseline: b\ncandidate: a\nrules:\n  - accuracy >= 0.5\n", encoding="utf-8")
    w = ResultsWidget(store, experiment="ab")
    assert (w.baseline.value, w.candidate.value) == ("a", "b")
    w.gate.select(str(reverse))
    assert (w.baseline.value, w.candidate.value) == ("b", "a")
    assert w.gate_result.pair.named_by == str(reverse.resolve()) and "pair named by the gate file" in _text(
        w.headline_html.value
    )
    w.gate.select(OWN)  # the file's pair goes with it
    assert (w.baseline.value, w.candidate.value) == ("a", "b")
    w.candidate.select("a")  # a person's choice stays, whatever gate comes next
    w.baseline.select("b")
    w.gate.select(DEFAULTS)
    assert (w.gate_result.a.arm, w.gate_result.b.arm) == ("b", "a")


def test_cases_without_domains_get_a_note_in_the_domains_tab(store, no_domains):
    from abbench.widgets import ResultsWidget

    w = ResultsWidget(store, experiment=no_domains)
    w.tabs.selected_index = w.tabs.titles.index("Domains")
    assert "no per-domain breakdown: the cases have no domains" in w.domains_html.value
    assert "(none)" not in w.domains_html.value
    assert w.figures.get("domains") is None  # no chart of one "(none)" bar either

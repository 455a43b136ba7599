"""Report sections from real analysis results: what each shows, and the sentence it says when empty."""

from __future__ import annotations

import pytest

from abbench import report as section
from tests.experiments import HOSTILE_DOMAIN, HOSTILE_SCRIPT

# One worker renders and analyses the fixtures once (make test runs with --dist loadgroup).
pytestmark = pytest.mark.xdist_group("reports")


def _html(parts) -> str:
    return "".join(p for p in parts if isinstance(p, str))


def _figures(parts) -> list:
    return [p for p in parts if not isinstance(p, str)]


@pytest.fixture(scope="module")
def results(report_store):
    from abbench.compare import compare_all, compare_arms
    from abbench.gate import evaluate_gate
    from abbench.metrics import experiment_metrics

    store, ids, _ = report_store
    out = {}
    for shape, exp_id in ids.items():
        exp = store.experiments.get(exp_id)
        comparison = compare_arms(exp, exp.arms[0].name, exp.arms[-1].name, store=store, details=True)
        out[shape] = {
            "metrics": experiment_metrics(exp, store=store),
            "compared": comparison,
            "gate": evaluate_gate(exp, store=store, arms=(exp.arms[0].name, exp.arms[-1].name)),
            "multi": compare_all(exp, store=store) if len(exp.arms) > 2 else None,
        }
    return out


def test_decision_blocks_with_the_rules_that_block(report_store):
    from abbench.gate import evaluate_gate

    store, ids, _ = report_store
    rules = [
        {"metric": "accuracy", "op": ">=", "value": 0.99, "name": "near perfect"},
        {"metric": "regressed", "op": "<=", "value": 0, "severity": "warn"},
        {"metric": "p95_latency_ms", "op": "<=", "value": 8000},
    ]
    gate = evaluate_gate(ids["two-arm"], rules, store=store)
    html = _html(section.decision_section(gate))
    assert 'class="abb-decision block"' in html and ">BLOCK<" in html
    assert "near perfect" in html and "BLOCKS" in html and "(warning)" in html
    assert html.count("abb-card ") == 3


def test_the_banner_names_what_warns_and_every_value_is_in_its_unit(report_store):
    from abbench.gate import evaluate_gate

    store, ids, _ = report_store
    rules = [
        {"metric": "accuracy", "op": ">=", "value": 0.5, "name": "accuracy at least 50%"},
        {"metric": "p95_latency_ms", "op": "<=", "value": 8000, "name": "p95 under 8 s"},
        {"metric": "diff_ci_low", "op": ">=", "value": -0.5, "name": "not much worse"},
        {"metric": "avg_cost", "op": "<=", "value": 0.0001, "severity": "warn", "name": "cheap runs"},
    ]
    gate = evaluate_gate(ids["two-arm"], rules, store=store)
    assert gate.outcome == "pass with warnings"
    html = _html(section.decision_section(gate))
    banner = html.split('<div class="abb-cards">')[0]
    assert ">PASS WITH WARNINGS<" in banner
    # The banner opens with its pair and the runs the decision rests on.
    assert '<span class="abb-pair">treatment vs control:</span> <span>PASS WITH WARNINGS</span>' in banner
    assert "decided on 60 of 60 runs per arm (pair named by the experiment&#x27;s two arms)" in banner
    # The banner itself says which rule warns and by how much (it only said "with warnings").
    assert "Warnings</b> (they do not block)" in banner
    # The metric by its label in the sentence, never its id (avg_cost stays in the rules table's condition).
    assert (
        "cheap runs — mean agent cost per executed run: $0.00" in banner
        and "avg_cost" not in banner
        and "(the rule asks for ≤ $0.000100)" in banner
    )
    table = html.split("Gate rules")[1]
    value = gate.rules[0].value
    assert "accuracy ≥ 50.0%" in table and f">{100 * value:.1f}%<" in table  # not 0.8333
    assert "p95_latency_ms ≤ 8.0 s" in table and " ms<" in table
    assert "diff_ci_low ≥ -50.0 pts" in table and " pts<" in table
    # The cost card passes on its own terms, but the gate warns about cost: the card says so.
    cost_card = html.split("cost · ")[1].split("</div></div>")[0]
    assert cost_card.startswith("pass · gate warns") and "The gate warns: cheap runs." in cost_card
    assert 'class="abb-card warn"' in html


def test_decision_without_gate_says_why():
    html = _html(section.decision_section(None, reason="experiment x ran on another dataset"))
    assert "NO GATE" in html and "another dataset" in html


@pytest.mark.parametrize(
    "shape", ["two-arm", "three-arm", "failures", "judges", "no-discordant", "single-case"]
)
def test_every_section_builds(results, shape):
    r = results[shape]
    parts = [
        *section.decision_section(r["gate"]),
        *section.arms_section(r["metrics"]),
        *section.comparison_section(r["compared"]),
        *section.multi_section(r["multi"]),
        *section.confusion_section(r["metrics"]),
        *section.domain_section(r["metrics"]),
        *section.stability_section(r["metrics"]),
        *section.usage_section(r["metrics"]),
        *section.judges_section(r["metrics"]),
        *section.pairwise_section(r["compared"].pairwise, []),
    ]
    html = _html(parts)
    assert HOSTILE_SCRIPT not in html and "<b onmouseover" not in html
    assert "nan" not in html.lower().replace("nanoseconds", "")
    assert ">None<" not in html
    for fig in _figures(parts):
        fig.to_dict()  # a valid figure


def test_zero_discordant_pairs_are_said_in_words(results):
    html = _html(section.comparison_section(results["no-discordant"]["compared"]))
    assert "no discordant case" in html
    assert "0 fixed · 0 regressed" in html
    # The interval shown is the comparison's (Newcombe's), never a point at zero claiming certainty.
    iv = results["no-discordant"]["compared"].interval
    assert iv.low < 0 < iv.high and f"[{100 * iv.low:+.1f} pts" in html
    assert "[+0.0 pts, +0.0 pts]" not in html


def test_one_case_and_one_round(results):
    r = results["single-case"]
    assert "Each case ran once" in _html(section.stability_section(r["metrics"]))
    assert "no domains (or only one)" in _html(section.domain_section(r["metrics"]))
    assert "1 paired case," in _html(section.comparison_section(r["compared"]))


def test_three_arms_list_every_pair(results):
    html = _html(section.multi_section(results["three-arm"]["multi"]))
    assert "v1 vs none" in html and "v2 vs none" in html and "Cochran" in html


def test_judges_and_position_bias(results):
    r = results["judges"]
    html = _html(section.judges_section(r["metrics"]))
    assert "fixture_judge" in html and "clarity" in html
    from abbench.graders import PositionBias
    from abbench.stats import Interval

    bias = [
        PositionBias(
            grader="fixture_pairwise",
            pairs=60,
            judgements=60,
            first_wins=44,
            second_wins=16,
            ties=0,
            first_win_rate=0.73,
            first_win_interval=Interval(0.55, 0.86, 0.95),
            both_orders=0,
            inconsistent=0,
            flips=0,
            flip_rate=None,
            flip_interval=None,
            verdicts={"a": 30, "b": 30},
        )
    ]
    assert bias[0].biased
    html = _html(section.pairwise_section(r["compared"].pairwise, bias))
    assert "B preferred" in html and "favours a slot" in html and "73.0%" in html
    assert "No judge score" in _html(section.judges_section(results["two-arm"]["metrics"]))
    assert "No pairwise judge" in _html(section.pairwise_section([], []))


def test_failures_count_apart(results):
    html = _html(section.arms_section(results["failures"]["metrics"]))
    assert "strict accuracy" in html


def test_domains_escape_hostile_names(results):
    html = _html(section.domain_section(results["two-arm"]["metrics"]))
    assert "&lt;b onmouseover=alert(2)&gt;media&lt;/b&gt;" in html and HOSTILE_DOMAIN not in html


def test_empty_case_lists_say_so():
    assert "No case regressed" in _html(
        section.cases_section([], {}, "a", "b", total=0, empty="No case regressed: b is right wherever a is.")
    )
    assert "agrees with the gold" in _html(
        section.disagreements_section([], "b", empty="b agrees with the gold.")
    )
    assert "No one has reviewed" in _html(section.reviews_section([], None))


def test_rounds_that_answered_alike_are_shown_once():
    from abbench.compare import CaseChange
    from abbench.review import CaseDetail, CaseView, Evidence, RunView

    def run(rnd, prediction, passed, reason="按规则判为 fast", arm="v2"):
        return RunView(
            run_id=rnd, arm=arm, round=rnd, state="pass" if passed else "fail",
            outcome="passed" if passed else "failed", failure_type=None, error=None,
            prediction=prediction, reason=reason, confidence=0.9, passed=passed, score=None,
            evidence=(Evidence("SKILL.md#规则", found=True),), files_read=(), sections_read=(),
            tool_calls=0, transcript_path=None, cost=None, latency_ms=None, tokens=None,
        )  # fmt: skip

    def detail(case_id, text, runs):
        case = CaseView(case_id, text, "fast", None, None, None, None, None, None, None)
        return CaseDetail("e", case, (), tuple(runs), (), ())

    details = {
        "FS-1": detail(
            "FS-1", "打开空调", [run(0, "fast", True), run(1, "fast", True), run(2, "fast", True)]
        ),
        "FS-2": detail(
            "FS-2", "放首歌", [run(0, "fast", True), run(1, "slow", False, "需要推理"), run(2, "fast", True)]
        ),
    }
    changes = [
        CaseChange("FS-1", "车控", "fixed", 0, 3, 3, 3, 0.0, 1.0, 1.0),
        CaseChange("FS-2", "媒体", "fixed", 0, 3, 2, 3, 0.0, 2 / 3, 2 / 3),
    ]
    html = _html(section.cases_section(changes, details, "v1", "v2", total=2, empty="none"))
    assert "0/3 → 3/3" in html and "0/3 → 2/3" in html and "打开空调" in html
    stable, flaky = html.split("FS-2")
    assert "rounds 1–3: fast ✓" in stable and stable.count("按规则判为 fast") == 1  # was three times
    assert "rounds 1, 3: fast ✓" in flaky and "round 2: slow ✗" in flaky and "需要推理" in flaky


def test_stability_draws_a_pass_k_curve_per_arm(store):
    from abbench.metrics import experiment_metrics
    from tests.results import cases_of, make_experiment

    runs = {"control": [[True, False, True], [True, True, True]], "treatment": [[True, True, True]] * 2}
    exp = make_experiment(
        store, "pk", cases_of(2), {**runs, "solo": [["exec_fail", True, True], [False] * 3]}
    )
    parts = section.stability_section(experiment_metrics(exp, store=store))
    figures = [f.to_dict() for f in _figures(parts)]
    titles = [f["layout"]["yaxis"]["title"]["text"] for f in figures if f["layout"].get("yaxis")]
    assert "pass@k: one of k attempts right" in titles and "pass^k: all k right" in titles
    hat = next(f for f in figures if f["layout"]["yaxis"]["title"]["text"] == "pass^k: all k right")
    assert [t["name"] for t in hat["data"]] == ["control", "treatment", "solo"]
    control = hat["data"][0]["y"]
    assert control == pytest.approx([100 * 5 / 6, 100 * (1 / 3 + 1) / 2, 50.0])
    # the failed execution is an attempt that did not pass (else the first case would give pass^2 = 1)
    assert hat["data"][2]["y"] == pytest.approx([100 / 3, 100 / 6, 0.0])
    assert "failed to execute is an attempt that was not right" in _html(parts)


def test_skill_section_reads_the_snapshot_diff(report_store):
    from abbench.snapshot import diff_snapshots

    store, ids, _ = report_store
    exp = store.experiments.get(ids["three-arm"])
    diff = diff_snapshots(
        store.snapshots.get(exp.arm("v1").snapshot), store.snapshots.get(exp.arm("v2").snapshot)
    )
    html = _html(section.skill_section(diff))
    changed = diff.sections_changed
    assert changed and f"{len(changed)} changed" in html
    for c in changed:
        assert f"+{c.lines_added} −{c.lines_removed}" in html
    assert "Both arms use the same skill text" in _html(section.skill_section(diff_snapshots(diff.a, diff.a)))
    assert "uses no skill" in _html(section.skill_section(None, reason="control uses no skill"))


def test_reviews_and_disagreements_read_the_review_records(report_store):
    from abbench.review import disagreements, judge_agreement, reviews

    store, ids, _ = report_store
    exp = store.experiments.get(ids["judges"])
    items = reviews(exp, store=store)
    html = _html(section.reviews_section(items, judge_agreement(exp, store=store)))
    assert f"{len(items):,} reviewed cases" in html
    assert "the gold label is wrong here" in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "(whole case)" in html and "ambiguous standard" in html
    sample = disagreements(exp, "gold", store=store, arms=["treatment"])
    html = _html(section.disagreements_section(sample, "treatment", empty="none"))
    assert "c005" in html and "model_correct (the gold label is wrong here)" in html

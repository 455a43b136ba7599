"""The gate: rule files (good and bad), the metric namespace, the three dimensions, warnings that never block."""

from __future__ import annotations

import json

import numpy as np
import pytest

from abbench.compare import compare_arms
from abbench.errors import ComparisonRefused, UsageError
from abbench.gate import (
    DEFAULT_RULES,
    GATE_KEYS,
    METRICS,
    DecisionPolicy,
    evaluate_gate,
    load_rules,
    metric_names,
    parse_metric,
    parse_rules,
)
from tests.results import cases_of, make_experiment, one_round, table_2x2


@pytest.fixture
def better(store):
    """Treatment clearly better: 12 fixed, 3 regressed over 50 cases."""
    a, b = table_2x2(30, 12, 3, 5)
    return make_experiment(store, "better", cases_of(50), {"control": a, "treatment": b})


@pytest.fixture
def worse(store):
    """Treatment clearly worse and dearer: 20 regressed, nothing fixed."""
    a, b = table_2x2(30, 0, 20, 10)
    b = [[{"passed": r[0], "cost": 0.05}] for r in b]
    return make_experiment(store, "worse", cases_of(60), {"control": a, "treatment": b}, dataset="w")


def test_default_rules_are_the_three_dimensions(store, better):
    result = evaluate_gate(better, store=store)
    assert result.source == "default rules" and result.passed
    assert [r.rule.metric for r in result.rules] == [r["metric"] for r in DEFAULT_RULES]
    assert result.decision.capability.conclusion == "pass"
    assert not result.decision.stability.assessed
    json.dumps(result.as_dict(), allow_nan=False)


def test_a_significant_regression_blocks_capability_and_a_dearer_worse_arm_blocks_cost(store, worse):
    result = evaluate_gate(worse, store=store)
    assert not result.passed
    d = result.decision
    assert d.capability.conclusion == "block" and "significantly worse" in d.capability.summary
    assert d.cost.conclusion == "block" and "costs more" in d.cost.summary
    assert "+$0.040 per case (+400%), 95% CI +$0.040 to +$0.040" in d.cost.summary  # dollars, not +0.04
    assert {r.rule.metric for r in result.blocking} == {"capability_pass", "cost_pass"}


def test_stability_blocks_when_the_candidate_flips_more(store):
    control = [[True, True, True]] * 10
    treatment = [[True, False, True]] * 5 + [[True, True, True]] * 5
    exp = make_experiment(store, "e", cases_of(10), {"control": control, "treatment": treatment})
    d = evaluate_gate(exp, store=store).decision
    assert d.stability.conclusion == "block" and "50%" in d.stability.summary
    relaxed = evaluate_gate(exp, store=store, policy=DecisionPolicy(flip_tolerance=0.6)).decision
    assert relaxed.stability.conclusion == "pass"


def test_non_inferiority_margin(store, better):
    strict = evaluate_gate(better, store=store, policy=DecisionPolicy(capability_margin=0.0))
    assert strict.decision.capability.conclusion == "pass"  # the lower bound is above 0
    a, b = table_2x2(40, 2, 2, 6)
    even = make_experiment(store, "even", cases_of(50), {"control": a, "treatment": b}, dataset="even")
    margin = evaluate_gate(even, store=store, policy=DecisionPolicy(capability_margin=0.02))
    assert margin.decision.capability.conclusion == "block" and "margin" in margin.decision.capability.summary


def test_no_moved_case_on_a_few_cases_does_not_prove_non_inferiority(store):
    # Nothing changed on 20 cases: that cannot rule out a 2-point loss (a t interval of [0, 0] claimed it could).
    a, b = table_2x2(15, 0, 0, 5)
    same = make_experiment(store, "same", cases_of(20), {"control": a, "treatment": b}, dataset="same")
    result = evaluate_gate(
        same, ["diff_ci_low >= -0.02"], store=store, policy=DecisionPolicy(capability_margin=0.02)
    )
    assert result.rules[0].status == "fail" and result.rules[0].value < -0.02
    assert result.decision.capability.conclusion == "block" and "margin" in result.decision.capability.summary


def test_rules_from_yaml_with_warnings_that_never_block(store, better, tmp_path):
    gate = tmp_path / "gate.yaml"
    gate.write_text(
        "rules:\n"
        "  - {metric: diff_ci_low, op: '>=', value: 0, severity: block, name: not worse}\n"
        "  - {metric: regressed, op: '<=', value: 2, severity: warn}\n"
        "  - 'p95_latency_ms <= 8000'\n"
        "  - {metric: avg_cost, op: '<=', value: 0.5}\n"
        "  - {metric: no_domain_significant_regression, op: '==', value: true}\n"
        "  - {metric: control.accuracy, op: '<', value: 0.7}\n"
        "  - {metric: flip_rate, op: '<=', value: 0.1, severity: warn}\n",
        encoding="utf-8",
    )
    result = evaluate_gate(better, gate, store=store)
    assert result.passed and result.source == str(gate)
    by_metric = {r.rule.metric: r for r in result.rules}
    assert by_metric["regressed"].status == "fail" and not by_metric["regressed"].blocks
    assert by_metric["flip_rate"].status == "missing" and not by_metric["flip_rate"].blocks
    assert by_metric["diff_ci_low"].value == pytest.approx(better_ci_low(store, better))
    assert by_metric["control.accuracy"].value == pytest.approx(0.66)
    assert by_metric["p95_latency_ms"].message == "p95_latency_ms <= 8000: 100 → pass"
    assert [w.rule.metric for w in result.warnings] == ["regressed", "flip_rate"]


def better_ci_low(store, exp) -> float:
    from abbench.stats import paired_proportion_interval

    # One round of pass/fail: the gate reads the score interval on the 2×2 table of the `better` fixture.
    return paired_proportion_interval(30, 12, 3, 5, method="score").low


def test_json_rules_and_a_missing_value_blocks_unless_allowed(store, better, tmp_path):
    gate = tmp_path / "gate.json"
    gate.write_text(json.dumps([{"metric": "flip_rate", "op": "<=", "value": 0.1}]), encoding="utf-8")
    blocked = evaluate_gate(better, gate, store=store)
    assert not blocked.passed and "no value (one round per case" in blocked.rules[0].message
    allowed = evaluate_gate(
        better,
        [{"metric": "flip_rate", "op": "<=", "value": 0.1, "allow_missing": True}, "diff >= 0"],
        store=store,
    )
    # Allowed to have no value, so it does not block; but not assessed is never a plain pass.
    assert allowed.outcome == "pass with warnings" and allowed.passed and allowed.rules[0].status == "missing"
    assert allowed.not_assessed == (allowed.rules[0],) and "not assessed: flip_rate" in allowed.reason
    assessed = evaluate_gate(better, ["diff >= 0"], store=store)
    assert assessed.outcome == "pass" and not assessed.not_assessed
    # A gate in which no rule could be assessed is inconclusive, never a pass (allowed or not).
    alone = evaluate_gate(
        better, [{"metric": "flip_rate", "op": "<=", "value": 0.1, "allow_missing": True}], store=store
    )
    assert alone.outcome == "inconclusive" and not alone.passed


def test_the_experiments_own_gate_is_used_when_no_file_is_given(store):
    a, b = table_2x2(30, 12, 3, 5)
    exp = make_experiment(
        store,
        "own",
        cases_of(50),
        {"control": a, "treatment": b},
        gate=[{"metric": "fixed", "op": ">=", "value": 20}],
    )
    result = evaluate_gate(exp, store=store)
    assert result.source == "experiment gate" and not result.passed
    assert result.rules[0].message == "fixed >= 20: 12 → BLOCK"


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"metric": "p95_latency", "op": "<=", "value": 1}, "did you mean p95_latency_ms"),
        ({"metric": "nope", "op": "<=", "value": 1}, "valid metrics: accuracy, accuracy_ci_low"),
        (
            {"metric": "accuracy", "op": "=>", "value": 1},
            "op '=>' is not an operator; use one of >=, >, <=, <, ==, !=",
        ),
        ({"metric": "accuracy", "op": ">=", "value": "high"}, "value: accuracy is a number"),
        (
            {"metric": "no_domain_significant_regression", "op": ">=", "value": True},
            "compare it with == or !=",
        ),
        ({"metric": "no_domain_significant_regression", "op": "==", "value": 1}, "must be true or false"),
        (
            {"metric": "accuracy", "op": ">=", "value": 1, "severity": "fatal"},
            "severity 'fatal' is not one of block, warn",
        ),
        ({"metric": "accuracy", "op": ">="}, "missing field 'value'"),
        ({"metric": "accuracy", "op": ">=", "value": 1, "sev": "warn"}, "unknown field(s) sev"),
        ({"metric": "a.diff", "op": ">=", "value": 0}, "takes no arm prefix"),
        ({"metric": "ghost.accuracy", "op": ">=", "value": 0}, "no arm 'ghost'"),
        ({"metric": "f1", "op": ">=", "value": 0}, "takes a parameter"),
        ("accuracy is high", "is not a rule"),
    ],
)
def test_bad_rules_say_which_rule_and_field(rule, message):
    with pytest.raises(UsageError) as err:
        parse_rules(
            [{"metric": "accuracy", "op": ">=", "value": 0}, rule],
            origin="g.yaml",
            arms=("control", "treatment"),
        )
    assert "g.yaml, rule 2" in str(err.value)
    assert message in str(err.value)


def test_bad_rule_files_name_the_line(tmp_path):
    gate = tmp_path / "gate.yaml"
    gate.write_text(
        "rules:\n  - metric: accuracy\n    op: '>='\n    value: 0\n  - metric: accuracy\n    op: '=<'\n    value: 0\n"
    )
    with pytest.raises(UsageError, match=r"gate.yaml, rule 2 \(line 5\): op '=<'"):
        load_rules(gate)
    broken = tmp_path / "broken.yaml"
    broken.write_text("rules: [\n  {metric: accuracy\n")
    with pytest.raises(UsageError, match=r"broken.yaml, line \d+, column \d+: not valid YAML"):
        load_rules(broken)
    with pytest.raises(UsageError, match="does not exist"):
        load_rules(tmp_path / "absent.yaml")
    wrong = tmp_path / "wrong.json"
    wrong.write_text('{"rule": []}')
    with pytest.raises(UsageError) as unknown:
        load_rules(wrong)
    assert (unknown.value.kind, unknown.value.name, unknown.value.choices) == ("gate key", "rule", GATE_KEYS)


def test_every_metric_is_documented_and_parses():
    for name in metric_names():
        ref = parse_metric(name.replace("[LABEL]", "[fast]").replace("[DOMAIN]", "[nav]"))
        assert ref.definition.description
    assert len(metric_names()) == len(METRICS)


def test_per_class_and_per_domain_metrics(store, better):
    result = evaluate_gate(
        better,
        [
            "f1[fast] >= 0.5",
            "recall[slow] >= 0",
            "domain_accuracy[nav] >= 0.5",
            "domain_diff[car] >= 0",
            "a.f1[fast] >= 0",
        ],
        store=store,
    )
    assert all(r.status == "pass" for r in result.rules), [r.message for r in result.rules]
    # A misspelt class or domain is a usage error with "did you mean", not a rule that blocks.
    with pytest.raises(UsageError, match=r"rule 1: f1\[fats\]: .* \(did you mean 'fast'\?\)") as no_class:
        evaluate_gate(better, ["f1[fats] >= 0.5"], store=store)
    assert no_class.value.facts() == {"kind": "class", "name": "fats", "choices": ["fast", "slow"]}
    with pytest.raises(UsageError, match=r"\(did you mean 'car'\?\)") as no_domain:
        evaluate_gate(better, ["domain_diff[cars] >= 0"], store=store)
    assert (no_domain.value.kind, no_domain.value.name) == (
        "domain",
        "cars",
    ) and "car" in no_domain.value.choices


def test_gate_against_a_baseline_experiment(store):
    cases = cases_of(40)
    base = make_experiment(
        store,
        "v1",
        cases,
        {"control": one_round([True] * 40), "treatment": one_round([True] * 30 + [False] * 10)},
    )
    cand = make_experiment(
        store, "v2", cases, {"control": one_round([True] * 40), "treatment": one_round([True] * 40)}
    )
    result = evaluate_gate(cand, ["fixed >= 10", "a.accuracy <= 0.75", "accuracy == 1"], store=store, vs=base)
    assert result.passed, [r.message for r in result.rules]
    assert result.a.arm == "v1/treatment" and result.b.arm == "v2/treatment"
    other = make_experiment(store, "x", cases_of(3), {"a": one_round([True] * 3)}, dataset="other")
    with pytest.raises(ComparisonRefused):
        evaluate_gate(cand, store=store, vs=other)


def test_one_arm_experiment_has_no_comparison_metrics(store):
    exp = make_experiment(store, "solo", cases_of(5), {"only": one_round([True] * 5)})
    result = evaluate_gate(exp, ["accuracy >= 0.9", "diff >= 0"], store=store)
    assert result.rules[0].status == "pass"
    assert result.rules[1].status == "missing" and "no comparison" in result.rules[1].message
    assert not result.passed


def test_every_metric_is_named_in_the_readme():
    from tests.conftest import REPO

    readme = (REPO / "docs" / "analysis.md").read_text(encoding="utf-8")
    missing = [name for name in METRICS if name.replace("[]", "") not in readme]
    assert not missing, f"document these gate metrics in docs/analysis.md: {missing}"


def test_nothing_graded_is_incomplete_and_nothing_reads_as_passed(store):
    exp = make_experiment(store, "p", cases_of(4), {"a": [["pending"]] * 4, "b": [["exec_fail"]] * 4})
    result = evaluate_gate(exp, store=store)
    assert result.outcome == "incomplete" and not result.passed
    assert result.coverage.text == "decided on 0 of 4 runs per arm"
    assert result.coverage.gap == "a: 4 not finished; b: 4 execution failed"
    d = result.decision
    assert [x.conclusion for x in d.dimensions] == ["not assessed"] * 3 and d.conclusion == "inconclusive"
    assert "not assessed" in d.capability.summary
    # Nothing paired: no note about how several rounds are counted (there are no rounds to count).
    assert not any("several rounds" in n for n in compare_arms(exp, store=store).notes)
    # Allowing any coverage leaves a gate in which no rule could be assessed: inconclusive, not pass.
    lenient = evaluate_gate(exp, {"rules": list(DEFAULT_RULES), "min_coverage": 0.01}, store=store)
    assert lenient.outcome == "incomplete"  # 0 of 4 is below even 1%
    graded = make_experiment(
        store,
        "q",
        cases_of(4),
        {"a": [[True]] * 3 + [["exec_fail"]], "b": [["exec_fail"]] * 3 + [[True]]},
        dataset="q",
    )
    some = evaluate_gate(graded, {"rules": list(DEFAULT_RULES), "min_coverage": 0.25}, store=store)
    assert some.coverage.text == "decided on 3 (a) and 1 (b) of 4 runs per arm"
    assert some.outcome == "inconclusive" and [r.status for r in some.rules] == ["missing"] * 4


def _known(store):
    """Six cases × two rounds whose every figure can be worked out by hand (see the expected table)."""
    cases = cases_of(6, domains=("导航", "车控"))  # fast/slow alternate; 导航 holds c000, c002, c004
    control = [
        [True, True],
        [False, False],
        [True, False],
        ["exec_fail", True],
        [False, "grade_fail"],  # the run whose grading failed still answered (the gold label)
        [True, "cancelled"],
    ]
    spend = {"cost": 0.02, "latency_ms": 150.0}
    treatment = [[{"passed": p, **spend} for p in row] for row in
                 ([True, True], [True, True], [True, True], [True, False], [False, False], [True, True])]  # fmt: skip
    treatment[4][0]["prediction"] = "banana"  # outside the label set
    return make_experiment(store, "known", cases, {"control": control, "treatment": treatment})


def test_every_documented_metric_has_the_value_its_description_says(store):
    import scipy.stats as scipy_stats
    import sklearn.metrics as sklearn_metrics

    exp = _known(store)
    # Per-case pass rates over graded rounds (failures and cancellations left out).
    va, vb = np.array([1, 0, 0.5, 1, 0, 1]), np.array([1, 1, 1, 0.5, 0, 1])
    d = vb - va
    z = scipy_stats.norm.ppf(0.975)
    t = scipy_stats.ttest_rel(vb, va)
    # Treatment's graded runs: gold and prediction (the wrong ones answer "wrong", one "banana").
    gold = ["fast", "fast", "slow", "slow", "fast", "fast", "slow", "slow", "fast", "fast", "slow", "slow"]
    pred = [
        "fast",
        "fast",
        "slow",
        "slow",
        "fast",
        "fast",
        "slow",
        "wrong",
        "banana",
        "wrong",
        "slow",
        "slow",
    ]
    # labels=None: "wrong" and "banana" are classes with F1 0 in the macro average
    prf = {avg: sklearn_metrics.precision_recall_fscore_support(
        gold, pred, average=avg, zero_division=0) for avg in ("macro", "micro", "weighted")}  # fmt: skip
    per = sklearn_metrics.precision_recall_fscore_support(
        gold, pred, labels=["fast", "slow"], zero_division=0
    )
    # MDE (Miller): ω² = var(d) − σ²_A·mean(1/K_A) − σ²_B·mean(1/K_B), σ² the mean within-case variance.
    ka, kb = np.array([2, 2, 2, 1, 1, 1]), np.array([2] * 6)
    sa = np.mean([0, 0, 0.5])  # control's cases graded twice: c000 (1, 1), c001 (0, 0), c002 (1, 0)
    sb = np.mean([0, 0, 0, 0.5, 0, 0])
    omega2 = max(0.0, d.var(ddof=1) - sa * np.mean(1 / ka) - sb * np.mean(1 / kb))
    variance = omega2 + sa / (1 / np.mean(1 / ka)) + sb / 2
    mde = (scipy_stats.norm.ppf(0.975) + scipy_stats.norm.ppf(0.8)) * np.sqrt(variance / 6)
    expected = {
        "accuracy": vb.mean(),
        "a.accuracy": va.mean(),
        "accuracy_ci_low": vb.mean() - z * vb.std(ddof=1) / np.sqrt(6),
        "accuracy_ci_high": min(1.0, vb.mean() + z * vb.std(ddof=1) / np.sqrt(6)),
        "strict_accuracy": vb.mean(),
        "a.strict_accuracy": np.mean([1, 0, 0.5, 0.5, 0, 1]),  # failures count as wrong, cancelled left out
        "runs": 12,
        "n_cases": 6,
        "passed": 9,
        "a.passed": 5,
        "failed": 3,
        "a.failed": 4,
        "execution_failures": 0,
        "a.execution_failures": 1,
        "a.execution_failure_rate": 1 / 11,  # over finished runs: the cancelled one is not
        "a.grading_failures": 1,
        "a.grading_failure_rate": 1 / 11,
        "a.cancelled": 1,
        "unfinished": 0,
        "avg_cost": 0.02,
        "p50_cost": 0.02,
        "p95_cost": 0.02,
        "total_cost": 0.24,
        "a.total_cost": 0.10,  # ten executed runs
        "cost_per_correct": 0.24 / 9,
        "a.cost_per_correct": 0.10 / 5,
        "judge_cost": 0.0,
        "avg_latency_ms": 150.0,
        "a.p95_latency_ms": 100.0,
        "max_latency_ms": 150.0,
        "avg_tokens": 120.0,
        "p95_tokens": 120.0,
        "flip_rate": 2 / 6,  # c003 and c004 answered differently across rounds
        "a.flip_rate": 2
        / 4,  # four cases answered twice; c002 and c004 flip (a grading failure still answered)
        "agreement_rate": (4 + 0.5 + 0.5) / 6,
        "flaky_cases": 1,
        "a.flaky_cases": 1,
        "flaky_rate": 1 / 6,
        "a.flaky_rate": 1 / 3,  # of the three cases graded twice
        "low_confidence_rate": 0.0,
        "accuracy_when_not_read": 9 / 12,
        "a.accuracy_when_not_read": 5 / 9,
        "macro_f1": prf["macro"][2],
        "micro_f1": prf["micro"][2],
        "weighted_f1": prf["weighted"][2],
        "macro_precision": prf["macro"][0],
        "macro_recall": prf["macro"][1],
        "precision[fast]": per[0][0],
        "recall[fast]": per[1][0],
        "f1[slow]": per[2][1],
        "domain_accuracy[导航]": np.mean([1, 1, 0]),
        "a.domain_accuracy[车控]": np.mean([0, 1, 1]),
        "diff": d.mean(),
        "diff_ci_low": t.confidence_interval().low,
        "diff_ci_high": t.confidence_interval().high,
        "p_value": t.pvalue,
        "significant_improvement": False,  # 6 cases with rounds: too few for a verdict
        "significant_regression": False,
        "mcnemar_p": 1.0,  # majority outcomes: 2 fixed (c001, c002), 1 regressed (c003)
        "fixed": 2,
        "regressed": 1,
        "net_fixed": 1,
        "unchanged_right": 2,
        "unchanged_wrong": 1,
        "n_paired": 6,
        "excluded_cases": 0,
        "mde": mde,
        "cost_diff": 0.01,
        "cost_change": 1.0,
        "latency_diff_ms": 50.0,
        "latency_change": 0.5,
        "tokens_diff": 0.0,
        "tokens_change": 0.0,
        "no_domain_significant_regression": True,
        "domains_significant_regression": 0,
        "reason_changed": 0,
        "evidence_appeared": 0,
        "domain_diff[导航]": np.mean([0, 0.5, 0]),
        "capability_pass": None,  # not assessed on 6 cases: no value (its block rule blocks)
        "cost_pass": False,  # twice the cost, not significantly better
        "stability_pass": True,  # flips less than control
        "decision_pass": False,
    }
    missing = ["score", "score_diff", "no_evidence_rate", "skill_read_rate", "accuracy_when_read"]
    rules = [
        f"{m} >= -1000000 (warn)"
        for m in [*expected, *missing]
        if not isinstance(expected.get(m), bool) and (m in missing or expected[m] is not None)
    ]
    rules += [{"metric": m, "op": "==", "value": True, "severity": "warn"} for m, v in expected.items() if isinstance(v, bool) or v is None]  # fmt: skip
    result = evaluate_gate(exp, rules, store=store)
    got = {r.rule.metric: r.value for r in result.rules}
    wrong = {
        m: (got[m], v)
        for m, v in expected.items()
        if (got[m] != pytest.approx(v, abs=1e-12) if v is not None else got[m] is not None)
    }
    assert wrong == {}
    assert [got[m] for m in missing] == [None] * len(missing)


def test_every_metric_has_a_unit_views_can_show_it_in():
    from abbench.gate import METRICS, UNITS, metric_unit

    for name in METRICS:
        written = name.replace("[]", "[fast]")
        assert metric_unit(written) in UNITS, f"{name} has no unit: add it to _UNIT_OF"


@pytest.mark.parametrize(
    ("metric", "unit"),
    [
        ("accuracy", "share"),
        ("control.flip_rate", "share"),
        ("f1[fast]", "share"),
        ("diff_ci_low", "points"),
        ("domain_diff[导航]", "points"),
        ("p95_latency_ms", "ms"),
        ("cost_change", "relative"),
        ("a.avg_cost", "usd"),
        ("regressed", "count"),
        ("no_domain_significant_regression", "bool"),
        ("mcnemar_p", "p"),
        ("no_such_metric", "number"),
    ],
)
def test_metric_units(metric, unit):
    from abbench.gate import metric_unit

    assert metric_unit(metric) == unit


def test_figures_given_to_the_gate_are_reused_only_when_they_are_the_gate_s_own(store, better, monkeypatch):
    import abbench.gate._api as gate_api
    from abbench.gate import Measured
    from abbench.metrics import experiment_metrics

    fresh = evaluate_gate(better, store=store)
    metrics = experiment_metrics(better, store=store)
    comparison = compare_arms(better, "control", "treatment", store=store, details=True)
    calls: list[str] = []
    real_metrics, real_compare = gate_api.experiment_metrics, gate_api.compare_arms
    monkeypatch.setattr(
        gate_api, "experiment_metrics", lambda *a, **k: calls.append("m") or real_metrics(*a, **k)
    )
    monkeypatch.setattr(gate_api, "compare_arms", lambda *a, **k: calls.append("c") or real_compare(*a, **k))
    reused = evaluate_gate(better, store=store, measured=Measured(metrics=metrics, comparison=comparison))
    assert calls == []  # the report's figures were the gate's: nothing measured twice
    assert reused.as_dict() == fresh.as_dict()
    # figures of another pair, or made with other options, are not the gate's: measured afresh
    swapped = compare_arms(better, "treatment", "control", store=store)
    other = evaluate_gate(better, store=store, measured=Measured(metrics=metrics, comparison=swapped))
    assert calls == ["c"] and other.as_dict() == fresh.as_dict()
    calls.clear()
    at_90 = experiment_metrics(better, store=store, confidence=0.9)
    assert evaluate_gate(better, store=store, measured=Measured(metrics=at_90)).as_dict() == fresh.as_dict()
    assert calls == ["m", "c"]

"""Activation figures on constructed runs, checked against statsmodels (Wilson, exact McNemar) and by hand."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.proportion import proportion_confint

from abbench.errors import UsageError
from abbench.metrics import (
    NO_SKILL,
    ActivationRun,
    activation_report,
    arm_activation,
    compare_activation,
)


def run(arm, case, loaded, expected=None, offered=("pdf",), outcome="pass", rnd=0, turn=None, passed=None):
    """One constructed run; `offered=None` is an injected arm."""
    return ActivationRun(
        arm=arm,
        case_idx=case,
        case_id=f"c{case}",
        round=rnd,
        outcome=outcome,
        expected_skill=expected,
        skills_offered=offered,
        skills_loaded=None if offered is None else tuple(loaded),
        first_load_turn=turn,
        passed=(outcome == "pass") if passed is None else passed,
    )


def wilson(k, n):
    return proportion_confint(k, n, alpha=0.05, method="wilson")


def test_one_round_figures_match_hand_counts_and_statsmodels_wilson():
    # 12 should-trigger cases (9 loaded pdf), 8 must-not-trigger (2 loaded pdf), 3 unassessed (1 loaded).
    runs = [run("b", i, ["pdf"] if i < 9 else [], "pdf") for i in range(12)]
    runs += [run("b", 12 + i, ["pdf"] if i < 2 else [], NO_SKILL) for i in range(8)]
    runs += [run("b", 20 + i, ["pdf"] if i < 1 else []) for i in range(3)]
    # two execution failures and one cancelled run: never counted as a correct non-trigger
    runs += [
        run("b", 30, [], "pdf", outcome="execution_failed"),
        run("b", 31, [], NO_SKILL, outcome="execution_failed"),
    ]
    runs += [run("b", 32, [], "pdf", outcome="cancelled")]
    a = arm_activation(runs)
    assert (a.mode, a.runs, a.counted, a.execution_failed, a.not_executed) == ("offered", 26, 23, 2, 1)
    assert (a.should_trigger_cases, a.must_not_trigger_cases, a.cases) == (12, 8, 23)
    checks = {
        "activation": (12, 23),  # 9 + 2 + 1 loaded
        "recall": (9, 12),
        "precision": (9, 11),  # loads on assessed cases: 9 right, 2 on must-not cases
        "false_activation": (2, 8),
    }
    for name, (k, n) in checks.items():
        est = getattr(a, name)
        assert est.method == "wilson" and est.n_cases == n
        assert est.value == pytest.approx(k / n)
        assert (est.low, est.high) == pytest.approx(wilson(k, n), abs=1e-12)
    assert a.wrong_skill.value is None and "one skill offered" in a.wrong_skill.reason
    assert a.loads == {"pdf": 12}


def test_wrong_skill_counts_a_sibling_loaded_first():
    offered = ("pdf", "docx", "xlsx")
    runs = [
        run("p", 0, ["pdf"], "pdf", offered),
        run("p", 1, ["docx", "pdf"], "pdf", offered),  # sibling first, corrected
        run("p", 2, ["docx"], "pdf", offered),  # sibling only
        run("p", 3, [], "pdf", offered),  # missed
        run("p", 4, ["xlsx"], "xlsx", offered),
        run("p", 5, ["xlsx"], NO_SKILL, offered),
    ]
    a = arm_activation(runs)
    assert a.wrong_skill.value == pytest.approx(2 / 5) and a.corrected == 1
    assert a.recall.value == pytest.approx(3 / 5)
    assert a.precision.value == pytest.approx(3 / 5)  # five loading runs on assessed cases, three right
    assert a.false_activation.value == 1.0
    assert (a.wrong_skill.low, a.wrong_skill.high) == pytest.approx(wilson(2, 5))
    assert a.skills_offered == offered


def test_expected_skill_not_offered_is_left_out_and_said():
    runs = [run("b", 0, ["pdf"], "docx"), run("b", 1, [], "docx")]
    a = arm_activation(runs)
    assert a.expected_not_offered == 2
    assert a.recall.value is None and "were not offered (offered: pdf)" in a.recall.reason


def test_without_expected_skill_only_the_activation_rate_is_assessed():
    a = arm_activation([run("b", i, ["pdf"] if i % 2 else []) for i in range(6)])
    assert a.activation.value == 0.5
    for name in ("recall", "precision", "false_activation"):
        est = getattr(a, name)
        assert est.value is None and "no case has an expected_skill" in est.reason
    d = a.as_dict()
    assert d["recall"]["value"] is None and d["activation"]["value"] == 0.5


def test_injected_and_skill_less_arms_are_not_assessed_never_zero():
    injected = arm_activation([run("a", 0, [], "pdf", offered=None)])
    assert injected.mode == "injected" and injected.activation.value is None
    assert "injects its skill" in injected.reason
    bare = ActivationRun("n", 0, "c0", 0, "pass", "pdf", None, None, has_skill=False)
    assert arm_activation([bare]).mode == "none"


def test_rounds_use_per_case_means_with_the_standard_error_over_cases():
    # 3 rounds: per-case load counts 3, 2, 0, 1, 3 of 3 (should-trigger) → per-case means.
    loads = [3, 2, 0, 1, 3]
    runs = [
        run("b", c, ["pdf"] if r < k else [], "pdf", rnd=r) for c, k in enumerate(loads) for r in range(3)
    ]
    a = arm_activation(runs)
    means = np.array(loads) / 3
    assert a.recall.method == "per-case means" and a.recall.n_cases == 5 and a.recall.n_values == 15
    assert a.recall.value == pytest.approx(means.mean())
    # the standard error over cases of per-case means (Miller 2024, §3), a normal interval clipped to [0, 1]
    se = means.std(ddof=1) / np.sqrt(5)
    assert a.recall.se == pytest.approx(se, rel=1e-12)
    z = stats.norm.ppf(0.975)
    assert (a.recall.low, a.recall.high) == pytest.approx(
        (means.mean() - z * se, min(1.0, means.mean() + z * se))
    )


def test_paired_comparison_matches_statsmodels_exact_mcnemar():
    alone = [run("alone", i, ["pdf"] if i < 16 else [], "pdf") for i in range(20)]
    # in the plugin, a sibling takes 7 of the cases the skill alone loaded on, and wins 1 it missed
    plugin_loaded = [(i < 16 and i not in (1, 3, 5, 7, 9, 11, 13)) or i == 18 for i in range(20)]
    offered = ("pdf", "docx")
    plugin = [
        run("plugin", i, ["pdf"] if hit else ["docx"], "pdf", offered) for i, hit in enumerate(plugin_loaded)
    ]
    c = compare_activation(alone + plugin, "alone", "plugin", "correct")
    assert (c.n_paired, c.both, c.only_a, c.only_b, c.neither) == (20, 9, 7, 1, 3)
    table = [[c.both, c.only_a], [c.only_b, c.neither]]
    assert c.p_value == pytest.approx(mcnemar(table, exact=True).pvalue)
    assert c.diff == pytest.approx((1 - 7) / 20)
    loaded = compare_activation(alone + plugin, "alone", "plugin", "loaded")
    assert (
        loaded.only_a == 0
        and loaded.only_b == 4
        and loaded.p_value == pytest.approx(mcnemar([[16, 0], [4, 0]], exact=True).pvalue)
    )
    report = activation_report(alone + plugin, ["alone", "plugin"])
    assert [x.what for x in report.comparisons] == ["loaded", "correct"]


def test_paired_comparison_with_an_injected_arm_is_not_assessed():
    runs = [run("a", 0, [], "pdf", offered=None), run("b", 0, ["pdf"], "pdf")]
    c = compare_activation(runs, "a", "b")
    assert c.p_value is None and "'a' does not offer skills" in c.reason
    with pytest.raises(UsageError, match="what must be one of"):
        compare_activation(runs, "a", "b", "sometimes")


def test_execution_failures_leave_the_pair_and_are_counted():
    runs = [run("a", 0, [], "pdf"), run("b", 0, [], "pdf", outcome="execution_failed"), run("a", 1, ["pdf"], "pdf"),
            run("b", 1, ["pdf"], "pdf")]  # fmt: skip
    c = compare_activation(runs, "a", "b", "correct")
    assert c.n_paired == 1 and c.excluded == 1

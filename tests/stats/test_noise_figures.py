"""Issue 37 (items 8, 12, 13): the score interval and its test, exact coverage, the ratio of paired means,
pass@k without spread, and the rule of thumb beside the exact sample sizes — each against an independent
implementation (statsmodels, scipy, published figures) or a written-out formula."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import integrate, optimize, stats

from abbench.stats import (
    RULE_OF_THUMB,
    WHY_THEY_DIFFER,
    mcnemar_score,
    min_detectable_effect_two_proportions,
    paired_proportion_interval,
    paired_ratio_interval,
    paired_score_interval,
    pass_at_k,
    plan_experiment,
    sample_size_two_proportions,
)


@pytest.mark.parametrize(
    ("fixed", "regressed", "n", "confidence", "expected"),
    [
        # ratesci's own tests of pairbinci(x = c(4, 9, 3, 16), contrast = "RD") — Tango's interval
        (9, 3, 32, 0.95, (-0.027, 0.390)),
        # … and pairbinci(x = c(43, 0, 1, 0), contrast = "RD", level = 0.90)
        (0, 1, 44, 0.90, (-0.096, 0.037)),
    ],
)
def test_the_score_interval_equals_published_figures(fixed, regressed, n, confidence, expected):
    iv = paired_score_interval(fixed, regressed, n, confidence)
    assert (round(iv.low, 3), round(iv.high, 3)) == expected
    both_fail = n - fixed - regressed
    assert paired_proportion_interval(0, fixed, regressed, both_fail, confidence, method="score") == iv


def _restricted_score(c: int, b: int, n: int, delta: float) -> float:
    """Tango's statistic with the restricted likelihood maximised numerically (no closed form)."""

    def minus_loglik(q: float) -> float:
        # cells: only A right (q), only B right (q + Δ), both equal (1 − 2q − Δ)
        p = np.array([q, q + delta, 1 - 2 * q - delta])
        counts = np.array([b, c, n - b - c])
        return -float(np.sum(counts[counts > 0] * np.log(p[counts > 0])))

    low, high = max(0.0, -delta) + 1e-12, (1 - delta) / 2 - 1e-12
    q = optimize.minimize_scalar(
        minus_loglik, bounds=(low, high), method="bounded", options={"xatol": 1e-12}
    ).x
    return (c - b - n * delta) / math.sqrt(n * (2 * q + delta * (1 - delta)))


@pytest.mark.parametrize(
    ("fixed", "regressed", "n"), [(12, 3, 50), (0, 0, 60), (4, 0, 100), (2, 9, 30), (1, 7, 21)]
)
def test_the_score_interval_is_where_the_score_test_does_not_reject(fixed, regressed, n):
    iv = paired_score_interval(fixed, regressed, n)
    z = stats.norm.ppf(0.975)
    assert _restricted_score(fixed, regressed, n, iv.low) == pytest.approx(z, abs=1e-4)
    assert _restricted_score(fixed, regressed, n, iv.high) == pytest.approx(-z, abs=1e-4)


def test_mcnemar_score_and_its_interval_never_disagree():
    from statsmodels.stats.contingency_tables import mcnemar

    for b in range(0, 21):
        for c in range(0, 21):
            if b + c == 0:
                continue
            ref = mcnemar([[10, b], [c, 10]], exact=False, correction=False).pvalue
            ours = mcnemar_score(b, c)
            assert ours.p_value == pytest.approx(ref)
            iv = paired_score_interval(c, b, b + c + 20)
            assert iv.excludes_zero() == (ref < 0.05), (b, c)


def _cells(delta: float) -> tuple[float, float, float, float, float]:
    """Both right, only B, only A, neither — for cases whose pass rate is Beta(0.6, 0.4) and B's the
    clipped shift — and the true difference (one round each, independent given the case)."""

    def mean(g):
        return integrate.quad(lambda p: g(p) * stats.beta.pdf(p, 0.6, 0.4), 0, 1, limit=200)[0]

    def pb(p):
        return min(1.0, max(0.0, p + delta))

    both, only_b, only_a = (
        mean(lambda p: p * pb(p)),
        mean(lambda p: (1 - p) * pb(p)),
        mean(lambda p: p * (1 - pb(p))),
    )
    return both, only_b, only_a, 1 - both - only_b - only_a, only_b - only_a


@pytest.mark.parametrize(
    ("n", "delta"), [(20, 0.0), (20, 0.10), (40, 0.0), (40, 0.10), (300, 0.0), (300, 0.05)]
)
def test_the_interval_compare_reports_covers_within_a_point_of_nominal_exactly(n, delta):
    # Exact coverage, not a simulation: every (fixed, regressed) count weighted by its trinomial probability.
    # (The score interval depends on the table through n, fixed and regressed only.) Newcombe's interval,
    # reported before, covered 96.8 % at 20 cases.
    _, only_b, only_a, _, truth = _cells(delta)
    coverage = 0.0
    for fixed in range(n + 1):
        regressed = np.arange(n - fixed + 1)
        logp = (
            math.lgamma(n + 1) - math.lgamma(fixed + 1) - np.vectorize(math.lgamma)(regressed + 1)
            - np.vectorize(math.lgamma)(n - fixed - regressed + 1)
            + fixed * math.log(only_b) + regressed * math.log(only_a) + (n - fixed - regressed) * math.log(1 - only_b - only_a)
        )  # fmt: skip
        weights = np.exp(logp)
        keep = weights > 1e-13
        for r, w in zip(regressed[keep].tolist(), weights[keep].tolist(), strict=True):
            iv = paired_score_interval(fixed, r, n)
            coverage += w * (iv.low <= truth <= iv.high)
    assert abs(coverage - 0.95) <= 0.01, coverage


def test_the_ratio_of_paired_means_is_every_ratio_the_t_test_does_not_reject():
    rng = np.random.default_rng(37)
    a = rng.lognormal(-6, 0.5, 40)
    b = a * 1.15 * rng.lognormal(0, 0.3, 40)
    iv = paired_ratio_interval(a, b)
    for r in (iv.low, iv.high):  # Fieller's bounds: the paired t test of b − r·a sits exactly at 0.05
        assert stats.ttest_1samp(b - r * a, 0.0).pvalue == pytest.approx(0.05, abs=1e-9)
    inside = np.linspace(iv.low, iv.high, 7)[1:-1]
    assert all(stats.ttest_1samp(b - r * a, 0.0).pvalue > 0.05 for r in inside)
    assert paired_ratio_interval([0.01] * 10, [0.05] * 10).low == pytest.approx(5.0)  # no spread: a point
    assert paired_ratio_interval(rng.normal(0, 1, 10), rng.normal(0, 1, 10)) is None  # A's mean near 0


def test_pass_at_k_without_spread_is_wilson_over_the_cases_not_a_point():
    from statsmodels.stats.proportion import proportion_confint

    # every case passed all 3 attempts: the t interval over cases would be [1, 1]
    r = pass_at_k([3] * 12, [3] * 12, k=2)
    low, _ = proportion_confint(12, 12, alpha=0.05, method="wilson")
    assert (
        r.pass_at_k == 1.0
        and r.pass_at_k_interval.low == pytest.approx(low)
        and r.pass_hat_k_interval.high == 1.0
    )
    assert r.pass_at_k_interval.low < 0.8
    # k = 5 rests on the one case with five attempts: Wilson over one case, never a point or NaN
    one = pass_at_k([5, 1, 2], [5, 4, 4], k=5)
    low1, _ = proportion_confint(1, 1, alpha=0.05, method="wilson")
    assert one.n_cases == 1 and one.pass_hat_k == 1.0 and one.pass_hat_k_interval.low == pytest.approx(low1)


def test_the_rule_of_thumb_stands_beside_the_exact_figures():
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)
    up = min_detectable_effect_two_proportions(50, 0.85)
    down = min_detectable_effect_two_proportions(50, 0.85, direction="decrease")
    thumb = z * math.sqrt(2 * 0.85 * 0.15 / 50)
    assert up.rule_of_thumb == pytest.approx(thumb) == pytest.approx(0.2001, abs=1e-4)
    assert (
        round(up.delta, 3) == 0.147
        and round(down.delta, 3) == 0.247
        and down.rule_of_thumb == up.rule_of_thumb
    )
    rise, fall = sample_size_two_proportions(0.85, 0.90), sample_size_two_proportions(0.85, 0.80)
    n_thumb = math.ceil(z**2 * 2 * 0.85 * 0.15 / 0.05**2)
    assert (rise.n_a, fall.n_a) == (
        686,
        906,
    ) and rise.n_rule_of_thumb == fall.n_rule_of_thumb == n_thumb == 801
    plan = plan_experiment(0.85, 0.05)
    assert plan.n_rule_of_thumb == 801 and RULE_OF_THUMB in plan.text and WHY_THEY_DIFFER in plan.text
    assert "686 per arm on different cases" in plan.text

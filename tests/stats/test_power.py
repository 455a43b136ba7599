"""Power analysis: Miller's paired formula, its pilot estimates, and the independent-proportions version."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from statsmodels.stats.power import NormalIndPower, normal_power_het, normal_sample_size_one_tail
from statsmodels.stats.proportion import (
    power_proportions_2indep,
    proportion_effectsize,
    samplesize_proportions_2indep_onetail,
)

from abbench.errors import UsageError
from abbench.stats import (
    estimate_power_inputs,
    min_detectable_effect,
    min_detectable_effect_two_proportions,
    power_paired,
    sample_size_paired,
    sample_size_two_proportions,
)

PLANS = [
    # delta, omega2, sigma2_a, sigma2_b, rounds_a, rounds_b, alpha, power
    (0.05, 0.1, 0, 0, 1, 1, 0.05, 0.8),
    (0.02, 0.05, 0.1, 0.12, 5, 5, 0.05, 0.9),
    (0.1, 0.2, 0.25, 0.25, 1, 3, 0.01, 0.8),
    (-0.03, 0.08, 0.02, 0.0, 2, 1, 0.1, 0.5),
]


@pytest.mark.parametrize(("delta", "omega2", "sa", "sb", "ka", "kb", "alpha", "power"), PLANS)
def test_sample_size_paired_is_millers_formula(delta, omega2, sa, sb, ka, kb, alpha, power):
    result = sample_size_paired(delta, omega2, sa, sb, ka, kb, alpha, power)
    variance = omega2 + sa / ka + sb / kb
    expected = normal_sample_size_one_tail(abs(delta), power, alpha / 2, std_null=math.sqrt(variance))
    assert result.n_exact == pytest.approx(expected, rel=1e-12)
    assert result.n == max(2, math.ceil(expected))
    assert result.variance == pytest.approx(variance)
    # NormalIndPower with ratio=0 is the one-sample test on the per-case differences; it also counts
    # the far tail, so it needs a hair fewer cases than the textbook formula.
    both_tails = NormalIndPower().solve_power(abs(delta) / math.sqrt(variance), None, alpha, power, ratio=0)
    assert both_tails <= result.n_exact <= both_tails * 1.005


@pytest.mark.parametrize(("delta", "omega2", "sa", "sb", "ka", "kb", "alpha", "power"), PLANS)
def test_power_paired_matches_statsmodels(delta, omega2, sa, sb, ka, kb, alpha, power):
    variance = omega2 + sa / ka + sb / kb
    for n in (10, 100, 1000):
        expected = normal_power_het(abs(delta), n, alpha, std_null=math.sqrt(variance))
        assert power_paired(n, delta, omega2, sa, sb, ka, kb, alpha) == pytest.approx(expected, rel=1e-12)


def test_the_sample_size_reaches_the_power_asked_for():
    plan = sample_size_paired(0.05, 0.12, alpha=0.05, power=0.8)
    assert power_paired(plan.n, 0.05, 0.12) >= 0.8 > power_paired(plan.n - 1, 0.05, 0.12)


def test_more_rounds_shrink_only_the_within_case_part():
    one = sample_size_paired(0.05, 0.05, 0.2, 0.2, 1, 1)
    five = sample_size_paired(0.05, 0.05, 0.2, 0.2, 5, 5)
    floor = sample_size_paired(0.05, 0.05)
    assert one.n > five.n > floor.n
    assert five.variance == pytest.approx(0.05 + 0.08)


def test_mde_for_a_typical_eval():
    # 500 cases, pass/fail with p ≈ 0.7 both arms, 30 % discordance: omega2 ≈ Var(b − a) ≈ 0.3.
    result = min_detectable_effect(500, 0.3)
    assert result.delta == pytest.approx((1.959964 + 0.841621) * math.sqrt(0.3 / 500), rel=1e-6)
    assert result.se == pytest.approx(math.sqrt(0.3 / 500))


@given(
    n=st.integers(2, 100_000),
    omega2=st.floats(1e-4, 1.0),
    sigma2=st.floats(0, 0.25),
    rounds=st.integers(1, 10),
    alpha=st.floats(0.001, 0.2),
    power=st.floats(0.5, 0.99),
)
def test_mde_and_sample_size_invert_each_other(n, omega2, sigma2, rounds, alpha, power):
    mde = min_detectable_effect(n, omega2, sigma2, sigma2, rounds, rounds, alpha, power)
    back = sample_size_paired(mde.delta, omega2, sigma2, sigma2, rounds, rounds, alpha, power)
    assert back.n_exact == pytest.approx(n, rel=1e-9)
    assert back.n == max(2, n)


@given(n=st.integers(1, 10_000), more=st.integers(1, 10_000), omega2=st.floats(1e-4, 1.0))
def test_mde_decreases_with_more_cases(n, more, omega2):
    assert min_detectable_effect(n + more, omega2).delta < min_detectable_effect(n, omega2).delta


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: sample_size_paired(0, 0.1), "non-zero"),
        (lambda: sample_size_paired(0.1, -0.1), "omega2"),
        (lambda: sample_size_paired(0.1, 0.1, rounds_a=0), "rounds_a"),
        (lambda: sample_size_paired(0.1, 0.1, alpha=0), "alpha"),
        (lambda: sample_size_paired(0.1, 0.1, power=1), "power"),
        (lambda: min_detectable_effect(0, 0.1), "n must be a whole number"),
        (lambda: min_detectable_effect(10.5, 0.1), "n must be a whole number"),
        (lambda: sample_size_paired("big", 0.1), "delta"),
    ],
)
def test_power_functions_refuse_bad_input(call, message):
    with pytest.raises(UsageError, match=message):
        call()


def _pilot(seed, n, rounds_a, rounds_b, omega2, sigma2):
    """Scores with known omega2 (case-level difference variance) and within-case variance sigma2."""
    rng = np.random.default_rng(seed)
    level = rng.normal(0, 1, n)
    gap = rng.normal(0.1, math.sqrt(omega2), n)
    a = level[:, None] + rng.normal(0, math.sqrt(sigma2), (n, rounds_a))
    b = (level + gap)[:, None] + rng.normal(0, math.sqrt(sigma2), (n, rounds_b))
    return a, b


def test_estimate_power_inputs_recovers_known_variances():
    a, b = _pilot(0, 20_000, 4, 3, omega2=0.05, sigma2=0.2)
    inputs = estimate_power_inputs(a, b)
    assert inputs.omega2 == pytest.approx(0.05, rel=0.1)
    assert inputs.sigma2_a == pytest.approx(0.2, rel=0.03)
    assert inputs.sigma2_b == pytest.approx(0.2, rel=0.03)
    assert (inputs.rounds_a, inputs.rounds_b, inputs.n_cases) == (4, 3, 20_000)
    assert inputs.difference == pytest.approx(0.1, abs=0.01)
    assert inputs.within_identified
    plan = inputs.sample_size(0.05)
    assert plan.variance == pytest.approx(inputs.omega2 + inputs.sigma2_a / 4 + inputs.sigma2_b / 3)
    assert inputs.min_detectable_effect().n == 20_000
    assert inputs.min_detectable_effect(rounds_a=1, rounds_b=1).delta > inputs.min_detectable_effect().delta


def test_estimate_power_inputs_exactly_on_a_small_ragged_pilot():
    a = [[1, 0, 1], [0, 0], [1], [1, 1]]
    b = [[1, 1, 1], [1, 0], [1], [0, 1]]
    inputs = estimate_power_inputs(a, b)
    d = np.array([1 - 2 / 3, 0.5, 0, -0.5])
    sa = np.mean([np.var([1, 0, 1], ddof=1), 0.0, 0.0])
    sb = np.mean([0.0, np.var([1, 0], ddof=1), np.var([0, 1], ddof=1)])
    noise = sa * np.mean([1 / 3, 1 / 2, 1, 1 / 2]) + sb * np.mean([1 / 3, 1 / 2, 1, 1 / 2])
    assert inputs.sigma2_a == pytest.approx(sa) and inputs.sigma2_b == pytest.approx(sb)
    assert inputs.omega2 == pytest.approx(max(0.0, d.var(ddof=1) - noise))


def test_single_round_pilots_fold_the_noise_into_omega2():
    inputs = estimate_power_inputs([1, 0, 1, 1, 0], [1, 1, 1, 0, 1])
    assert not inputs.within_identified
    assert (inputs.sigma2_a, inputs.sigma2_b) == (0.0, 0.0)
    assert inputs.omega2 == pytest.approx(np.var([0, 1, 0, -1, 1], ddof=1))


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [([1, 0], [1], "a_by_case has 2 cases and b_by_case has 1"), ([1], [0], "at least 2 cases")],
)
def test_estimate_power_inputs_refuses_bad_pilots(a, b, message):
    with pytest.raises(UsageError, match=message):
        estimate_power_inputs(a, b)


@pytest.mark.parametrize(
    ("p_a", "p_b", "alpha", "power", "ratio"),
    [
        (0.7, 0.75, 0.05, 0.8, 1),
        (0.5, 0.4, 0.05, 0.9, 1),
        (0.9, 0.95, 0.01, 0.8, 2),
        (0.1, 0.2, 0.1, 0.8, 0.5),
    ],
)
def test_sample_size_two_proportions_matches_statsmodels(p_a, p_b, alpha, power, ratio):
    result = sample_size_two_proportions(p_a, p_b, alpha, power, ratio)
    expected = samplesize_proportions_2indep_onetail(p_a - p_b, p_b, power, ratio=ratio, alpha=alpha)
    assert result.n_exact == pytest.approx(expected, rel=1e-12)
    assert result.n_a == math.ceil(expected) and result.n_b == math.ceil(expected * ratio)
    if ratio == 1:
        # Cohen's arcsine h is a different approximation; the two agree within a few percent.
        h = proportion_effectsize(p_b, p_a)
        arcsine = NormalIndPower().solve_power(h, None, alpha, power, ratio=1)
        assert result.n_exact == pytest.approx(arcsine, rel=0.05)


@pytest.mark.parametrize(
    ("n", "p_a", "direction"), [(500, 0.7, "increase"), (2000, 0.9, "increase"), (300, 0.5, "decrease")]
)
def test_min_detectable_effect_two_proportions_inverts_the_sample_size(n, p_a, direction):
    result = min_detectable_effect_two_proportions(n, p_a, direction=direction)
    assert result.p_b == pytest.approx(p_a + result.delta * (1 if direction == "increase" else -1))
    assert sample_size_two_proportions(p_a, result.p_b).n_exact == pytest.approx(n, rel=1e-6)
    achieved = power_proportions_2indep(result.p_b - p_a, p_a, n, alpha=0.05).power
    assert achieved == pytest.approx(0.8, abs=1e-3)


def test_an_undetectable_direction_gives_nan():
    result = min_detectable_effect_two_proportions(5, 0.97)
    assert math.isnan(result.delta) and result.as_dict()["delta"] is None


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: sample_size_two_proportions(0.7, 0.7), "two different pass rates"),
        (lambda: sample_size_two_proportions(0, 0.7), "p_a"),
        (lambda: sample_size_two_proportions(0.6, 0.7, ratio=0), "ratio"),
        (lambda: min_detectable_effect_two_proportions(100, 0.5, direction="up"), "direction"),
    ],
)
def test_two_proportion_power_refuses_bad_input(call, message):
    with pytest.raises(UsageError, match=message):
        call()

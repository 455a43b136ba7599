"""Two independent proportions and the Holm correction against statsmodels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, strategies as st
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.proportion import confint_proportions_2indep, proportions_ztest

from abbench.errors import UsageError
from abbench.stats import holm_correction, two_proportion_test


@pytest.mark.parametrize(
    ("k_a", "n_a", "k_b", "n_b"),
    [(70, 100, 80, 100), (5, 50, 0, 60), (300, 1000, 280, 900), (1, 3, 2, 3), (0, 10, 10, 10)],
)
def test_two_proportion_test_matches_statsmodels(k_a, n_a, k_b, n_b):
    result = two_proportion_test(k_a, n_a, k_b, n_b)
    statistic, p = proportions_ztest([k_b, k_a], [n_b, n_a])
    assert result.statistic == pytest.approx(statistic, rel=1e-10)
    assert result.p_value == pytest.approx(p, rel=1e-9)
    low, high = confint_proportions_2indep(k_b, n_b, k_a, n_a, method="newcomb", compare="diff")
    assert (result.interval.low, result.interval.high) == pytest.approx((low, high), rel=1e-9, abs=1e-12)
    assert result.difference == pytest.approx(k_b / n_b - k_a / n_a)


def test_equal_extreme_rates_give_p_one():
    result = two_proportion_test(10, 10, 20, 20)
    assert (result.difference, result.statistic, result.p_value) == (0.0, 0.0, 1.0)


@pytest.mark.parametrize(("args", "message"), [((1, 0, 1, 2), "larger|exceeds"), ((0, 0, 1, 2), "n_a is 0")])
def test_two_proportion_test_refuses_bad_counts(args, message):
    with pytest.raises(UsageError, match=message):
        two_proportion_test(*args)


@pytest.mark.parametrize("seed", range(6))
def test_holm_matches_statsmodels(seed):
    rng = np.random.default_rng(seed)
    p_values = np.concatenate([rng.random(3 + 5 * seed) ** 3, [0.0, 1.0, 0.01, 0.01]])
    result = holm_correction(p_values, 0.05)
    reject, adjusted, _, _ = multipletests(p_values, alpha=0.05, method="holm")
    assert result.adjusted == pytest.approx(tuple(adjusted), abs=1e-12)
    assert result.reject == tuple(bool(r) for r in reject)
    assert result.n_tests == len(p_values)


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30), st.floats(0.001, 0.2))
def test_holm_follows_its_definition(p_values, alpha):
    # Holm: the i-th smallest p is multiplied by (m - i + 1), then made monotone, capped at 1.
    m = len(p_values)
    ranked = sorted(p_values)
    steps = [min(1.0, (m - i) * p) for i, p in enumerate(ranked)]
    monotone = [max(steps[: i + 1]) for i in range(m)]
    result = holm_correction(p_values, alpha)
    for p, adjusted in zip(p_values, result.adjusted, strict=True):
        assert adjusted == pytest.approx(monotone[ranked.index(p) + ranked.count(p) - 1], abs=1e-12)
        assert adjusted >= p
    assert result.reject == tuple(a <= alpha for a in result.adjusted)


def test_holm_keeps_domain_labels_and_skips_missing_tests():
    result = holm_correction({"导航": 0.01, "音乐": None, "车控": 0.04, "闲聊": float("nan")})
    assert result.labels == ("导航", "音乐", "车控", "闲聊")
    assert result.n_tests == 2
    assert result.adjusted[0] == pytest.approx(0.02) and result.adjusted[2] == pytest.approx(0.04)
    assert math.isnan(result.adjusted[1]) and not result.reject[1]
    assert result.by_label()["导航"] == pytest.approx(0.02)
    assert result.reject == (True, False, True, False)


@pytest.mark.parametrize(("p_values", "message"), [([0.5, 1.5], r"p_values\[1\] is 1.5"), (["x"], "numbers")])
def test_holm_refuses_bad_p_values(p_values, message):
    with pytest.raises(UsageError, match=message):
        holm_correction(p_values)


def test_holm_of_nothing_is_empty():
    result = holm_correction([])
    assert result.adjusted == () and result.n_tests == 0
    assert np.asarray(result.adjusted).size == 0

"""The paired difference b − a against scipy's paired t-test and statsmodels' clustered OLS."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import statsmodels.api as sm
from hypothesis import assume, given, strategies as st
from scipy import stats

from abbench.errors import UsageError
from abbench.stats import FewClustersWarning, mean_se, paired_difference


def _arms(seed, n, binary=True):
    rng = np.random.default_rng(seed)
    difficulty = rng.random(n)
    a = rng.random(n) < difficulty
    b = rng.random(n) < (difficulty + 0.05).clip(0, 1)
    if not binary:
        a, b = difficulty + rng.normal(0, 0.2, n), difficulty + 0.03 + rng.normal(0, 0.2, n)
    return a.astype(float), b.astype(float)


@pytest.mark.parametrize(
    ("seed", "n", "binary"), [(0, 30, True), (1, 200, True), (2, 1000, False), (3, 12, False)]
)
def test_t_method_matches_scipy_ttest_rel(seed, n, binary):
    a, b = _arms(seed, n, binary)
    expected = stats.ttest_rel(b, a)
    result = paired_difference(a, b, method="t")
    assert result.difference == pytest.approx(np.mean(b - a))
    assert result.statistic == pytest.approx(expected.statistic, rel=1e-10)
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-8)
    ci = expected.confidence_interval(0.95)
    assert (result.interval.low, result.interval.high) == pytest.approx((ci.low, ci.high), rel=1e-10)


@pytest.mark.parametrize("seed", range(4))
def test_z_method_is_the_normal_interval_of_the_differences(seed):
    a, b = _arms(seed, 400)
    result = paired_difference(a, b, confidence=0.9)
    d = b - a
    se = d.std(ddof=1) / math.sqrt(d.size)
    assert result.se == pytest.approx(se)
    z = stats.norm.ppf(0.95)
    assert (result.interval.low, result.interval.high) == pytest.approx(
        (d.mean() - z * se, d.mean() + z * se)
    )
    assert result.p_value == pytest.approx(2 * stats.norm.sf(abs(d.mean() / se)))
    assert result.mean_a == pytest.approx(a.mean()) and result.mean_b == pytest.approx(b.mean())
    assert result.unpaired_se == pytest.approx(math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size))
    assert result.correlation == pytest.approx(np.corrcoef(a, b)[0, 1])
    assert result.interval.confidence == 0.9 and result.method == "z"


def test_pairing_narrows_the_interval_when_cases_differ_in_difficulty():
    a, b = _arms(11, 2000, binary=False)
    result = paired_difference(a, b)
    # Var(b − a) = Var(a) + Var(b) − 2 Cov(a, b): pairing removes the shared difficulty.
    covariance = np.cov(a, b, ddof=1)[0, 1]
    assert result.se**2 == pytest.approx(result.unpaired_se**2 - 2 * covariance / a.size)
    assert result.se < 0.7 * result.unpaired_se


@pytest.mark.parametrize(("seed", "groups"), [(0, 5), (1, 40)])
def test_clustered_difference_matches_statsmodels(seed, groups):
    a, b = _arms(seed, 600)
    clusters = np.arange(600) % groups
    expected = sm.OLS(b - a, np.ones(600)).fit(cov_type="cluster", cov_kwds={"groups": clusters})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FewClustersWarning)
        result = paired_difference(a, b, clusters=clusters)
    assert result.se == pytest.approx(expected.bse[0], rel=1e-12)
    assert result.p_value == pytest.approx(expected.pvalues[0], rel=1e-9)
    assert result.n_clusters == groups and result.few_clusters == (groups < 30)


def test_clustered_difference_warns_and_refuses_one_cluster():
    a, b = _arms(0, 40)
    with pytest.warns(FewClustersWarning) as record:
        paired_difference(a, b, clusters=["x", "y"] * 20)
    assert record[0].filename == __file__
    with pytest.raises(UsageError, match="single value"):
        paired_difference(a, b, clusters=["x"] * 40)


def test_rounds_are_averaged_per_case_first():
    a = [[1, 0, 1], [0, 0], [1, 1, 1, 1], [0]]
    b = [[1, 1, 1], [1, 0], [1, 1, 1, 0], [1]]
    result = paired_difference(a, b)
    means_a = np.array([2 / 3, 0, 1, 0])
    means_b = np.array([1, 0.5, 0.75, 1])
    assert result.difference == pytest.approx((means_b - means_a).mean())
    assert result.se == pytest.approx(mean_se(means_b - means_a).se)
    assert result.n == 4
    assert result.rounds_a == pytest.approx(4 / (1 / 3 + 1 / 2 + 1 / 4 + 1))


def test_balanced_round_arrays_equal_lists():
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 2, (50, 5)), rng.integers(0, 2, (50, 5))
    assert paired_difference(a, b) == paired_difference(a.tolist(), b.tolist())


def test_identical_arms_show_no_difference():
    result = paired_difference([1, 0, 1, 1], [1, 0, 1, 1])
    assert (result.difference, result.se, result.p_value) == (0.0, 0.0, 1.0)
    assert not result.significant


def test_a_constant_nonzero_difference_is_certain():
    result = paired_difference([0.1, 0.2, 0.3], [0.6, 0.7, 0.8])
    assert result.difference == pytest.approx(0.5)
    assert result.p_value == 0.0 and result.significant


def test_a_single_case_has_no_standard_error():
    result = paired_difference([0], [1])
    assert result.difference == 1.0 and math.isnan(result.se) and math.isnan(result.p_value)
    assert result.as_dict()["p_value"] is None


@pytest.mark.parametrize(
    ("a", "b", "kwargs", "message"),
    [
        ([1, 0, 1], [1, 0], {}, "a has 3 cases and b has 2"),
        ([], [], {}, "empty"),
        ([1, float("nan")], [1, 0], {}, r"a\[1\] is nan"),
        ([1, 0], [1, 0], {"method": "bayes"}, "method must be 'z'"),
        ([1, 0], [1, 0], {"confidence": 95}, "strictly between 0 and 1"),
        ([1, 0], [1, 0], {"clusters": ["a"]}, "scores has 2, clusters has 1"),
    ],
)
def test_paired_difference_refuses_bad_input(a, b, kwargs, message):
    with pytest.raises(UsageError, match=message):
        paired_difference(a, b, **kwargs)


pairs = st.lists(st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=2, max_size=60)


@given(pairs)
def test_swapping_arms_flips_the_sign_and_keeps_the_p_value(rows):
    a, b = [x for x, _ in rows], [y for _, y in rows]
    forward, backward = paired_difference(a, b), paired_difference(b, a)
    assert forward.difference == pytest.approx(-backward.difference, abs=1e-12)
    assert forward.se == pytest.approx(backward.se, abs=1e-12)
    assert forward.p_value == pytest.approx(backward.p_value, abs=1e-12) or (
        math.isnan(forward.p_value) and math.isnan(backward.p_value)
    )
    assert forward.interval.low == pytest.approx(-backward.interval.high, abs=1e-12)


@given(pairs, st.sampled_from(["z", "t"]), st.floats(0.5, 0.995))
def test_interval_contains_the_difference(rows, method, confidence):
    a, b = [x for x, _ in rows], [y for _, y in rows]
    result = paired_difference(a, b, method=method, confidence=confidence)
    assume(not math.isnan(result.se))
    assert result.interval.low - 1e-12 <= result.difference <= result.interval.high + 1e-12
    assert 0.0 <= result.p_value <= 1.0

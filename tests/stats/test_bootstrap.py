"""The paired bootstrap: reproducible, close to the analytic interval, and to scipy's BCa."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from abbench.errors import UsageError
from abbench.stats import BOOTSTRAP_STATISTICS, paired_bootstrap, paired_difference
from abbench.stats._bootstrap import _uniform_indices


def _latency(seed, n):
    rng = np.random.default_rng(seed)
    base = rng.lognormal(7, 0.6, n)  # skewed, like latencies in ms
    return base, base * 0.95 + rng.normal(0, 80, n)


def test_same_seed_same_result_other_seed_other_replicates():
    a, b = _latency(0, 500)
    first, again = (
        paired_bootstrap(a, b, iterations=2000, seed=7),
        paired_bootstrap(a, b, iterations=2000, seed=7),
    )
    assert first == again
    assert np.array_equal(first.replicates, again.replicates)
    other = paired_bootstrap(a, b, iterations=2000, seed=8)
    assert not np.array_equal(first.replicates, other.replicates)
    assert other.estimate == first.estimate


def test_the_seed_fixes_the_result_regardless_of_threads(monkeypatch):
    import abbench.stats._bootstrap as module

    a, b = _latency(1, 3000)
    threaded = paired_bootstrap(a, b, iterations=1000, seed=3)
    monkeypatch.setattr(module.os, "cpu_count", lambda: 1)
    assert np.array_equal(paired_bootstrap(a, b, iterations=1000, seed=3).replicates, threaded.replicates)


def test_close_to_the_analytic_interval_on_a_large_sample():
    a, b = _latency(2, 20_000)
    boot = paired_bootstrap(a, b, iterations=4000, seed=1)
    analytic = paired_difference(a, b)
    assert boot.estimate == pytest.approx(analytic.difference)
    assert boot.se == pytest.approx(analytic.se, rel=0.05)
    width = analytic.interval.width
    assert boot.interval.low == pytest.approx(analytic.interval.low, abs=0.05 * width)
    assert boot.interval.high == pytest.approx(analytic.interval.high, abs=0.05 * width)
    assert abs(boot.bias) < 0.05 * analytic.se


def test_close_to_the_analytic_interval_for_pass_fail_outcomes():
    rng = np.random.default_rng(3)
    a = rng.random(5000) < 0.7
    b = np.where(rng.random(5000) < 0.9, a, rng.random(5000) < 0.8)
    boot = paired_bootstrap(a, b, iterations=5000, seed=2)
    analytic = paired_difference(a, b)
    assert boot.se == pytest.approx(analytic.se, rel=0.05)
    assert boot.interval.low == pytest.approx(analytic.interval.low, abs=0.05 * analytic.interval.width)


def test_bca_agrees_with_scipy():
    a, b = _latency(4, 300)
    ours = paired_bootstrap(a, b, iterations=20_000, seed=0)
    theirs = stats.bootstrap(
        (a, b),
        lambda x, y, axis: np.mean(y - x, axis=axis),
        paired=True,
        n_resamples=20_000,
        method="BCa",
        rng=0,
    ).confidence_interval
    width = ours.interval.width
    assert ours.bca_interval.low == pytest.approx(theirs.low, abs=0.03 * width)
    assert ours.bca_interval.high == pytest.approx(theirs.high, abs=0.03 * width)


@pytest.mark.parametrize("statistic", ["median", "p90"])
def test_percentile_statistics_agree_with_scipy(statistic):
    a, b = _latency(5, 400)
    q = 0.5 if statistic == "median" else 0.9
    ours = paired_bootstrap(a, b, iterations=5000, seed=0, statistic=statistic)
    assert ours.estimate == pytest.approx(np.quantile(b, q) - np.quantile(a, q))
    theirs = stats.bootstrap(
        (a, b),
        lambda x, y, axis: np.quantile(y, q, axis=axis) - np.quantile(x, q, axis=axis),
        paired=True,
        n_resamples=5000,
        method="percentile",
        rng=0,
    )
    width = ours.interval.width
    assert ours.interval.low == pytest.approx(theirs.confidence_interval.low, abs=0.1 * width)
    assert ours.interval.high == pytest.approx(theirs.confidence_interval.high, abs=0.1 * width)
    assert ours.se == pytest.approx(theirs.standard_error, rel=0.1)
    assert ours.bca_interval is None


def test_tied_and_continuous_paths_agree():
    # Scores on a 1–5 judge scale have few distinct differences (the exact multinomial path); adding a
    # tiny jitter makes every difference distinct (the index path). Same distribution, same figures.
    rng = np.random.default_rng(6)
    a = rng.integers(1, 6, 4000).astype(float)
    b = np.clip(a + rng.integers(-1, 3, 4000), 1, 5)
    tied = paired_bootstrap(a, b, iterations=4000, seed=1)
    jitter = paired_bootstrap(a, b + rng.normal(0, 1e-9, 4000), iterations=4000, seed=1)
    assert tied.se == pytest.approx(jitter.se, rel=0.06)
    assert tied.interval.low == pytest.approx(jitter.interval.low, abs=0.05 * tied.interval.width)


def test_identical_arms_have_a_zero_interval_and_p_one():
    result = paired_bootstrap([1, 2, 3, 4], [1, 2, 3, 4], iterations=500)
    assert (result.estimate, result.interval.low, result.interval.high, result.p_value) == (
        0.0,
        0.0,
        0.0,
        1.0,
    )


def test_a_clear_difference_has_a_small_p_value():
    a, b = _latency(7, 2000)
    result = paired_bootstrap(a, b + 200, iterations=2000)
    assert result.p_value == 0.0 and result.interval.low > 0


def test_rounds_are_averaged_first_and_as_dict_drops_replicates():
    result = paired_bootstrap([[1, 2], [3], [5, 5, 5]], [[2, 2], [4], [5, 6, 7]], iterations=200)
    assert result.estimate == pytest.approx(np.mean([0.5, 1, 1]))
    assert "replicates" not in result.as_dict()
    assert result.as_dict()["interval"]["confidence"] == 0.95


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"iterations": 10}, "≥ 100"),
        ({"iterations": 1000.5}, "whole number"),
        ({"seed": -1}, "seed"),
        ({"statistic": "mode"}, "choose one of: mean, median, p90, p95, p99"),
        ({"statistic": "p50"}, "unknown statistic"),
        ({"confidence": 1.5}, "strictly between"),
    ],
)
def test_bootstrap_refuses_bad_arguments(kwargs, message):
    with pytest.raises(UsageError, match=message):
        paired_bootstrap([1, 2, 3], [2, 3, 4], **kwargs)


def test_bootstrap_refuses_mismatched_arms():
    with pytest.raises(UsageError, match="a has 3 cases and b has 2"):
        paired_bootstrap([1, 2, 3], [2, 3])


def test_every_statistic_name_is_accepted():
    for statistic in BOOTSTRAP_STATISTICS:
        assert paired_bootstrap([1, 2, 3, 9], [2, 3, 4, 5], iterations=100, statistic=statistic).n == 4


@pytest.mark.parametrize("n", [1, 2, 7, 100_000, 3_000_017])
def test_uniform_indices_are_uniform_and_in_range(n):
    bitgen = np.random.PCG64(0)
    draws = _uniform_indices(bitgen, np.random.Generator(bitgen), n, 400_000)
    assert draws.min() >= 0 and draws.max() < n and draws.dtype == np.intp
    if n == 1:
        assert not draws.any()
    elif n <= 7:
        counts = np.bincount(draws, minlength=n)
        assert stats.chisquare(counts).pvalue > 1e-4
    else:
        assert stats.kstest(draws / n, "uniform").pvalue > 1e-4

"""pass@k and pass^k: the unbiased estimators against brute force, scipy, and the biased plug-in."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy.special import comb

from abbench.errors import UsageError
from abbench.stats import PassK, pass_at_k, pass_at_k_case, pass_at_k_curve, pass_hat_k_case
from abbench.stats._passk import _mean_interval


@pytest.mark.parametrize("n", range(1, 8))
def test_per_case_formulas_match_comb_and_subset_enumeration(n):
    for c in range(n + 1):
        attempts = [1] * c + [0] * (n - c)
        for k in range(1, n + 1):
            subsets = list(itertools.combinations(attempts, k))
            brute_any = sum(any(s) for s in subsets) / len(subsets)
            brute_all = sum(all(s) for s in subsets) / len(subsets)
            assert pass_at_k_case(n, c, k) == pytest.approx(1 - comb(n - c, k) / comb(n, k), abs=1e-12)
            assert pass_at_k_case(n, c, k) == pytest.approx(brute_any, abs=1e-12)
            assert pass_hat_k_case(n, c, k) == pytest.approx(comb(c, k) / comb(n, k), abs=1e-12)
            assert pass_hat_k_case(n, c, k) == pytest.approx(brute_all, abs=1e-12)


def test_large_n_is_stable():
    # Chen et al.'s product form: no overflow where C(n, k) would be huge.
    assert pass_at_k_case(200, 3, 100) == pytest.approx(1 - comb(197, 100) / comb(200, 100), rel=1e-9)
    assert pass_hat_k_case(200, 150, 10) == pytest.approx(comb(150, 10) / comb(200, 10), rel=1e-9)


@pytest.mark.parametrize("p, n, k", [(0.7, 3, 2), (0.7, 3, 3), (0.5, 4, 3), (0.9, 2, 2)])
def test_naive_plug_in_is_biased_the_estimator_is_not(p, n, k):
    # Exact expectations over c ~ Binomial(n, p): the worked example of why pass^k needs the estimator.
    cs = np.arange(n + 1)
    weight = comb(n, cs) * p**cs * (1 - p) ** (n - cs)
    unbiased_hat = float(np.sum(weight * pass_hat_k_case(np.full(n + 1, n), cs, k)))
    naive_hat = float(np.sum(weight * (cs / n) ** k))
    unbiased_at = float(np.sum(weight * pass_at_k_case(np.full(n + 1, n), cs, k)))
    naive_at = float(np.sum(weight * (1 - (1 - cs / n) ** k)))
    assert unbiased_hat == pytest.approx(p**k, abs=1e-12)
    assert unbiased_at == pytest.approx(1 - (1 - p) ** k, abs=1e-12)
    assert naive_hat - p**k > 0.01  # plug-in pass^k overstates reliability (Jensen)
    assert (1 - (1 - p) ** k) - naive_at > 0.005  # plug-in pass@k understates it


def test_seeded_simulation_agrees_with_exact_expectation():
    # p = 0.7, n = 3 rounds, k = 3: pass^3 is 0.343; the naive mean of (c/n)³ expects about 0.43.
    rng = np.random.default_rng(7)
    p, n, k, cases = 0.7, 3, 3, 20_000
    c = rng.binomial(n, p, size=cases)
    ours = pass_at_k(c, np.full(cases, n), k)
    assert ours.pass_hat_k == pytest.approx(p**k, abs=0.01)
    assert ours.pass_hat_k_interval.contains(p**k)
    naive = float(np.mean((c / n) ** k))
    assert naive - p**k > 0.05


def test_worked_example_and_curve():
    r = pass_at_k([1, 2, 0], [3, 3, 3], k=2)
    assert (r.pass_at_k, r.pass_hat_k) == pytest.approx((5 / 9, 1 / 9))
    assert (r.n_cases, r.n_short) == (3, 0)
    curve = pass_at_k_curve([1, 2, 0], [3, 3, 3])
    assert [x.k for x in curve] == [1, 2, 3]
    assert curve[0].pass_at_k == curve[0].pass_hat_k == pytest.approx(1 / 3)
    assert curve[2].pass_at_k == pytest.approx(2 / 3) and curve[2].pass_hat_k == 0.0
    at = [x.pass_at_k for x in curve]
    hat = [x.pass_hat_k for x in curve]
    assert at == sorted(at) and hat == sorted(hat, reverse=True)


def test_t_interval_over_cases():
    from scipy import stats

    c, n = [3, 2, 1, 3, 0, 2], [3] * 6
    r = pass_at_k(c, n, 2)
    values = pass_hat_k_case(np.array(n), np.array(c), 2)
    low, high = stats.t.interval(0.95, len(values) - 1, loc=values.mean(), scale=stats.sem(values))
    assert r.pass_hat_k_interval.low == pytest.approx(max(0.0, low))
    assert r.pass_hat_k_interval.high == pytest.approx(min(1.0, high))


def test_cases_with_fewer_attempts_than_k_are_left_out_and_counted():
    r = pass_at_k([2, 1, 1, 0], [3, 1, 2, 0], k=2)
    # case 1 has one attempt: left out; case 3 none: ignored
    assert (r.n_cases, r.n_short) == (2, 1)
    assert r.pass_hat_k == pytest.approx((1 / 3 + 0) / 2)
    assert math.isfinite(r.pass_at_k_interval.low)


@pytest.mark.parametrize(
    "args, match",
    [
        (([1], [1, 2], 1), "length mismatch"),
        (([3], [2], 1), "case 0"),
        (([1], [2], 0), "k must be"),
        (([1, 1], [2, 2], 3), "no case has 3 attempts"),
    ],
)
def test_bad_input_is_refused(args, match):
    with pytest.raises(UsageError, match=match):
        pass_at_k(*args)


@settings(max_examples=60, deadline=None)
@given(cases=st.integers(1, 3000), rounds=st.integers(1, 12), seed=st.integers(0, 2**32 - 1))
def test_figures_worked_out_once_per_pair_are_the_per_case_figures_averaged(cases, rounds, seed):
    """pass_at_k works out each distinct (attempts, passes) once: the same numbers, bit for bit, as
    the per-case functions averaged over every case with enough attempts."""
    rng = np.random.default_rng(seed)
    n = rng.integers(0, rounds + 1, cases)
    c = np.minimum((rng.random(cases) * (n + 1)).astype(np.int64), n)
    for k in range(1, int(n.max()) + 1):
        enough = n >= k
        at, hat = pass_at_k_case(n[enough], c[enough], k), pass_hat_k_case(n[enough], c[enough], k)
        (m_at, i_at), (m_hat, i_hat) = _mean_interval(at, 0.95), _mean_interval(hat, 0.95)
        short = int(((n > 0) & ~enough).sum())
        by_case = PassK(k, m_at, i_at, m_hat, i_hat, int(enough.sum()), short)
        assert json.dumps(pass_at_k(c, n, k).as_dict()) == json.dumps(by_case.as_dict())

"""The anytime-valid confidence sequence: against confseq, an independent loop, and simulations.

confseq (PyPI, 0.0.11) is the reference implementation of Waudby-Smith & Ramdas's PrPl-EB sequence. It
does not install here: its build needs Boost headers and a pybind11 that predates Python 3.11, and its
``misc`` module uses ``np.float_``, gone in numpy 2. The check against it runs where it imports; the
figures pinned below were produced by its ``predmix_empbern_twosided_cs`` (run from its source with
``np.float_`` aliased), and an independent case-by-case loop of the paper's formulas checks every bound.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from statsmodels.stats.power import TTestPower

from abbench.errors import UsageError
from abbench.stats import (
    SequentialTest,
    StoppingRule,
    confidence_sequence,
    confidence_sequence_bounds,
    sequential_order,
    simulate_stopping,
)

_I = np.arange(400)
A = ((_I * 7) % 10 < 7).astype(float)  # 70 % right, in a fixed pattern
B = ((_I * 3) % 10 < 8).astype(float)  # 80 % right

# confseq 0.0.11, predmix_empbern_twosided_cs(x=(B − A + 1)/2, alpha=0.05, running_intersection=True),
# mapped back to B − A = 2μ − 1: (t, lower, upper)
CONFSEQ = [
    (1, -1.0, 1.0),
    (10, -1.0, 1.0),
    (50, -0.30275180916551636, 0.5027518091655163),
    (100, -0.15245458506169585, 0.3521494088530279),
    (400, -0.024559934023467456, 0.22416908781763123),
]


def test_bounds_match_confseqs_published_figures():
    low, high, _ = confidence_sequence_bounds(A, B, alpha=0.05)
    for t, lo, hi in CONFSEQ:
        assert low[t - 1] == pytest.approx(lo, abs=1e-12)
        assert high[t - 1] == pytest.approx(hi, abs=1e-12)


def test_bounds_match_confseq_where_it_imports():
    predmix = pytest.importorskip("confseq.predmix")
    rng = np.random.default_rng(11)
    a, b = rng.random(700), (rng.random(700) < 0.6).astype(float)
    lo, hi = predmix.predmix_empbern_twosided_cs((b - a + 1) / 2, alpha=0.1, running_intersection=True)
    low, high, _ = confidence_sequence_bounds(a, b, alpha=0.1)
    np.testing.assert_allclose(low, 2 * lo - 1, atol=1e-12)
    np.testing.assert_allclose(high, 2 * hi - 1, atol=1e-12)


def _loop(x, alpha):
    """Waudby-Smith & Ramdas (2024) eq. (13)-(15) and confseq's predmix, one observation at a time."""
    log = math.log(2 / alpha)
    lows, highs = [], []
    sum_x = sum_sq = s_l = s_lx = s_vl = s_vh = 0.0
    low, high = 0.0, 1.0
    for t, xi in enumerate(x, start=1):
        sigma2_prev = (0.25 + sum_sq) / t  # (1/4 + Σ_{i<t} (x_i − μ̂_i)²) / (t − 1 + 1)
        lam = min(0.5, math.sqrt(2 * log / (t * math.log(1 + t) * sigma2_prev)))
        psi = -math.log(1 - lam) - lam
        mean_low = sum_x / (t - 1) if t > 1 else 0.0
        mean_high = (t - 1 - sum_x) / (t - 1) if t > 1 else 0.0  # the running mean of 1 − x
        sum_x += xi
        sum_sq += (xi - (0.5 + sum_x) / (t + 1)) ** 2
        s_l += lam
        s_lx += lam * xi
        s_vl += (xi - mean_low) ** 2 * psi
        s_vh += ((1 - xi) - mean_high) ** 2 * psi
        low = max(low, s_lx / s_l - (log + s_vl) / s_l)
        high = min(high, s_lx / s_l + (log + s_vh) / s_l)
        lows.append(2 * low - 1)
        highs.append(2 * high - 1)
    return np.array(lows), np.array(highs)


@pytest.mark.parametrize("alpha", [0.05, 0.2])
def test_bounds_match_an_independent_loop_of_the_papers_formulas(alpha):
    rng = np.random.default_rng(5)
    a, b = rng.integers(0, 3, 300) / 2, rng.integers(0, 4, 300) / 3  # rates over 2 and 3 rounds
    low, high, _ = confidence_sequence_bounds(a, b, alpha=alpha)
    ref_low, ref_high = _loop((b - a + 1) / 2, alpha)
    np.testing.assert_allclose(low, ref_low, atol=1e-12)
    np.testing.assert_allclose(high, ref_high, atol=1e-12)


@pytest.mark.parametrize("batch", [1, 7, 20, 300])
def test_batches_give_the_sequence_of_all_cases_at_once(batch):
    rng = np.random.default_rng(2)
    a, b = (rng.random(1000) < 0.7).astype(float), (rng.random(1000) < 0.75).astype(float)
    test = SequentialTest(alpha=0.05)
    for i in range(0, 1000, batch):
        cs = test.update(a[i : i + batch], b[i : i + batch])
    low, high, p = confidence_sequence_bounds(a, b)
    assert cs.n == 1000 and cs.difference == pytest.approx(b.mean() - a.mean())
    assert cs.interval.low == pytest.approx(low[-1], abs=1e-12)
    assert cs.interval.high == pytest.approx(high[-1], abs=1e-12)
    assert cs.p_value == pytest.approx(p[-1], rel=1e-9)


def test_the_anytime_p_value_is_below_alpha_exactly_when_the_sequence_excludes_zero():
    rng = np.random.default_rng(8)
    a, b = (rng.random((200, 600)) < 0.7).astype(float), (rng.random((200, 600)) < 0.76).astype(float)
    low, high, p = confidence_sequence_bounds(a, b, alpha=0.05)
    excludes = (low > 0) | (high < 0)
    assert excludes.any() and not excludes.all()
    np.testing.assert_array_equal(excludes, p <= 0.05)
    assert np.all(np.diff(p, axis=1) <= 1e-15)  # anytime: it never rises


def test_the_sequence_covers_the_truth_at_every_time_at_once():
    """P(∃t: Δ ∉ CS_t) ≤ α, checked over 1,000 seeded experiments of 1,000 cases with Δ = +0.05."""
    rng = np.random.default_rng(2024)
    u = rng.random((1000, 1000))
    a = ((u < 0.70) | ((u >= 0.90) & (u < 0.95))).astype(float)  # A right 75 %
    b = (u < 0.80).astype(float)  # B right 80 %: Δ = 0.05
    low, high, _ = confidence_sequence_bounds(a, b, alpha=0.05)
    missed = ((low > 0.05) | (high < 0.05)).any(axis=1).mean()
    assert missed <= 0.05


def test_aa_experiments_decide_better_or_worse_at_most_alpha_of_the_time():
    """1,000 seeded A/A experiments of 2,000 cases, looked at every 20 cases from 50 on."""
    rng = np.random.default_rng(16)
    a, b = (rng.random((1000, 2000)) < 0.8).astype(float), (rng.random((1000, 2000)) < 0.8).astype(float)
    result = simulate_stopping(a, b, StoppingRule(alpha=0.05, margin=0.02, min_cases=50, check_every=20))
    assert result.rate("better", "worse") <= 0.05
    # peeking at the fixed-n test at the same looks would have declared far more (the classic error)
    n = np.arange(1, 2001)
    d = np.cumsum(b - a, axis=1) / n
    sd = np.sqrt(np.maximum(np.cumsum((b - a) ** 2, axis=1) / n - d**2, 1e-12))
    looks = (n >= 50) & (n % 20 == 0)
    naive = (np.abs(d / (sd / np.sqrt(n)))[:, looks] > 1.96).any(axis=1).mean()
    assert naive > 3 * 0.05


def test_a_five_point_effect_stops_sooner_than_the_fixed_n_design_of_equal_power():
    rng = np.random.default_rng(5)
    u = rng.random((1000, 2000))
    a = (u < 0.80).astype(float)  # both right 75 %, only A 5 %, only B 10 %: Δ = +5 points
    b = ((u < 0.75) | ((u >= 0.80) & (u < 0.90))).astype(float)
    result = simulate_stopping(a, b, StoppingRule(alpha=0.05, margin=0.02, min_cases=50, check_every=20))
    power = result.rate("better")
    assert result.rate("worse") == 0 and power > 0.8
    sd = math.sqrt(0.15 - 0.05**2)
    fixed_n = TTestPower().solve_power(
        effect_size=0.05 / sd, alpha=0.05, power=power, alternative="two-sided"
    )
    assert result.stopped_at.mean() < 0.9 * fixed_n


def test_equivalent_when_the_sequence_lies_inside_the_margin():
    same = np.ones(2000)
    cs = confidence_sequence(same, same, alpha=0.05)
    assert cs.decide(0.02) == "equivalent" and cs.difference == 0
    rule = StoppingRule(alpha=0.05, margin=0.02, min_cases=50, check_every=20)
    result = simulate_stopping(same[None, :], same[None, :], rule)
    assert result.decision[0] == "equivalent" and result.stopped_at[0] % 20 == 0
    assert rule.decide(confidence_sequence(same[:30], same[:30]), 2000) is None  # before min_cases


def test_order_is_seeded_and_a_permutation():
    first = sequential_order(range(50), 3)
    assert sorted(first.tolist()) == list(range(50))
    assert first.tolist() == sequential_order(list(range(49, -1, -1)), 3).tolist()
    assert first.tolist() != sequential_order(range(50), 4).tolist()


def test_bad_values_say_where():
    with pytest.raises(UsageError, match=r"b\[2\] = 1.5"):
        confidence_sequence([0, 1, 1], [0, 1, 1.5])
    with pytest.raises(UsageError, match="length mismatch"):
        SequentialTest().update([0, 1], [1])
    with pytest.raises(UsageError, match="alpha"):
        SequentialTest(alpha=1.2)
    empty = SequentialTest().result()
    assert empty.n == 0 and empty.interval.low == -1 and empty.p_value == 1

"""Wilson intervals and proportions against statsmodels; the paired difference against Fagerland et al."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, strategies as st
from statsmodels.stats.proportion import proportion_confint

from abbench.errors import UsageError
from abbench.stats import Interval, paired_proportion_interval, proportion, wilson_interval

CASES = [
    (0, 1),
    (1, 1),
    (0, 10),
    (10, 10),
    (3, 10),
    (1, 2),
    (50, 100),
    (999, 1000),
    (1, 1000),
    (7, 13),
    (0, 5000),
]


@pytest.mark.parametrize("confidence", [0.5, 0.8, 0.9, 0.95, 0.99, 0.999])
@pytest.mark.parametrize(("k", "n"), CASES)
def test_wilson_matches_statsmodels(k, n, confidence):
    low, high = proportion_confint(k, n, alpha=1 - confidence, method="wilson")
    interval = wilson_interval(k, n, confidence)
    assert interval.low == pytest.approx(low, abs=1e-12)
    assert interval.high == pytest.approx(high, abs=1e-12)
    assert interval.confidence == confidence


def test_wilson_uses_the_exact_z_not_1_96():
    # At 95 % the exact z is 1.959964...; a hard-coded 1.96 moves the bound in the 6th decimal here.
    exact = wilson_interval(5000, 10000)
    low, _ = proportion_confint(5000, 10000, alpha=0.05, method="wilson")
    assert exact.low == pytest.approx(low, abs=1e-13)
    assert abs(exact.low - (0.5 - 1.96 * 0.005 / (1 + 1.96**2 / 10000))) > 1e-8


def test_wilson_with_no_trials_is_the_whole_unit_interval():
    assert wilson_interval(0, 0) == Interval(0.0, 1.0, 0.95)


def test_wilson_bounds_are_pinned_at_the_extremes():
    assert wilson_interval(0, 7).low == 0.0
    assert wilson_interval(7, 7).high == 1.0


@pytest.mark.parametrize(
    ("k", "n", "confidence", "message"),
    [
        (5, 3, 0.95, "exceeds n"),
        (-1, 3, 0.95, "≥ 0"),
        (1.5, 3, 0.95, "whole number"),
        (1, 3, 1.0, "strictly between 0 and 1"),
        (1, 3, 0, "strictly between 0 and 1"),
        ("a", 3, 0.95, "whole number"),
        (True, 3, 0.95, "boolean"),
    ],
)
def test_wilson_refuses_bad_input(k, n, confidence, message):
    with pytest.raises(UsageError, match=message):
        wilson_interval(k, n, confidence)


def test_proportion_bundles_estimate_se_and_interval():
    p = proportion(30, 40)
    assert p.estimate == 0.75
    assert p.se == pytest.approx(math.sqrt(0.75 * 0.25 / 40))
    assert p.interval == wilson_interval(30, 40)
    assert p.as_dict()["interval"] == {"low": p.interval.low, "high": p.interval.high, "confidence": 0.95}


def test_proportion_of_nothing_is_nan_with_the_whole_interval():
    p = proportion(0, 0)
    assert math.isnan(p.estimate) and math.isnan(p.se)
    assert p.as_dict()["estimate"] is None


@given(n=st.integers(1, 10_000), data=st.data(), confidence=st.floats(0.5, 0.999))
def test_wilson_contains_the_estimate_and_stays_in_the_unit_interval(n, data, confidence):
    k = data.draw(st.integers(0, n))
    interval = wilson_interval(k, n, confidence)
    assert 0.0 <= interval.low <= k / n <= interval.high <= 1.0


@given(n=st.integers(1, 2000), data=st.data())
def test_wilson_widens_with_confidence(n, data):
    k = data.draw(st.integers(0, n))
    assert wilson_interval(k, n, 0.99).width >= wilson_interval(k, n, 0.9).width


def _newcombe_as_published(table, confidence=0.95):
    """Newcombe's square-and-add interval for p1+ − p+1, written as Fagerland, Lydersen & Laake give it
    (R package contingencytables, Newcombe_square_and_add_CI_paired_2x2): rows are the first arm's
    pass/fail, columns the second's, and the difference is first − second."""
    (n11, n12), (n21, n22) = table
    n = n11 + n12 + n21 + n22
    row, col = n11 + n12, n11 + n21
    p1, p2 = row / n, col / n
    l1, u1 = proportion_confint(row, n, alpha=1 - confidence, method="wilson")
    l2, u2 = proportion_confint(col, n, alpha=1 - confidence, method="wilson")
    if 0 in (row, n - row, col, n - col):
        psi = 0.0
    else:
        a = n11 * n22 - n12 * n21
        prod = row * (n - row) * col * (n - col)
        psi = (a - n / 2) / math.sqrt(prod) if a > n / 2 else (0.0 if a >= 0 else a / math.sqrt(prod))
    low = p1 - p2 - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2 - 2 * psi * (p1 - l1) * (u2 - p2))
    high = p1 - p2 + math.sqrt((p2 - l2) ** 2 + (u1 - p1) ** 2 - 2 * psi * (p2 - l2) * (u1 - p1))
    return low, high


def test_paired_interval_reproduces_the_published_example():
    # Cavo et al. (2012), complete response before (A) and after (B) consolidation therapy: Fagerland et al.
    # report before − after = −0.0621 (95% CI −0.1186 to −0.0046); B − A is the mirror image.
    interval = paired_proportion_interval(both_pass=59, fixed=16, regressed=6, both_fail=80)
    assert (round(interval.low, 4), round(interval.high, 4)) == (0.0046, 0.1186)


@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
@pytest.mark.parametrize(
    "cells",
    [(59, 16, 6, 80), (1, 7, 1, 12), (30, 12, 3, 5), (10, 0, 0, 4), (5, 1, 6, 0), (0, 9, 1, 2), (3, 3, 0, 2)],
)
def test_paired_interval_equals_the_published_formula(cells, confidence):
    both, fixed, regressed, neither = cells
    # The published formula's first arm is B here (its difference is first − second = B − A).
    low, high = _newcombe_as_published([[both, fixed], [regressed, neither]], confidence)
    interval = paired_proportion_interval(both, fixed, regressed, neither, confidence)
    assert interval.low == pytest.approx(max(-1.0, low), abs=1e-12)
    assert interval.high == pytest.approx(min(1.0, high), abs=1e-12)


@pytest.mark.parametrize(("both", "neither"), [(50, 0), (0, 50), (40, 20), (1, 0)])
def test_paired_interval_with_no_discordant_case_is_not_a_point(both, neither):
    # d̄ ± t·se is [0, 0] here, which would claim the arms are certainly equal; they are only alike on these cases.
    interval = paired_proportion_interval(both, 0, 0, neither)
    assert interval.low < 0 < interval.high
    low, high = _newcombe_as_published([[both, 0], [0, neither]])
    assert (interval.low, interval.high) == pytest.approx((max(-1.0, low), min(1.0, high)), abs=1e-12)
    # fewer cases alike, a wider interval (half of (1, 0) is no case at all: the interval is everything)
    assert interval.width < paired_proportion_interval(both // 2, 0, 0, neither // 2).width


def test_paired_interval_of_nothing_is_everything_and_bad_counts_are_refused():
    assert paired_proportion_interval(0, 0, 0, 0) == Interval(-1.0, 1.0, 0.95)
    with pytest.raises(UsageError, match="fixed"):
        paired_proportion_interval(3, -1, 0, 0)


@given(
    cells=st.tuples(*[st.integers(0, 60)] * 4).filter(lambda c: sum(c) > 0), confidence=st.floats(0.5, 0.999)
)
def test_paired_interval_contains_the_difference_and_stays_within_minus_one_and_one(cells, confidence):
    both, fixed, regressed, neither = cells
    interval = paired_proportion_interval(both, fixed, regressed, neither, confidence)
    diff = (fixed - regressed) / sum(cells)
    assert -1.0 <= interval.low <= diff + 1e-12 and diff - 1e-12 <= interval.high <= 1.0

"""Wilson intervals and proportions against statsmodels."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from abbench.errors import UsageError
from abbench.stats import Interval, proportion, wilson_interval

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

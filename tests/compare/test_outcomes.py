"""Four outcomes (better, not worse, worse, inconclusive) and per-case votes, checked against scipy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from abbench.compare import (
    DEFAULT_MARGIN,
    cases_to_settle,
    compare_arms,
    settle,
    vote_decision,
)
from abbench.errors import UsageError
from tests.results import cases_of, make_experiment, table_2x2


def _rounds(rng, n: int, p: float, rounds: int = 3) -> list[list[bool]]:
    return [list(map(bool, rng.random(rounds) < p)) for _ in range(n)]


@pytest.fixture
def close(store):
    """Three rounds, B about as good as A: a Student t interval on per-case differences."""
    rng = np.random.default_rng(7)
    a, b = _rounds(rng, 60, 0.8), _rounds(rng, 60, 0.78)
    return make_experiment(store, "close", cases_of(60), {"control": a, "treatment": b})


def _per_case_differences(c) -> np.ndarray:
    t = c.case_table
    return t.b_value - t.a_value


@pytest.mark.parametrize("margin", [0.0, 0.01, 0.02, 0.05, 0.08, 0.12, 0.2])
def test_not_worse_is_the_one_sided_t_test_at_half_alpha(store, close, margin):
    # The independent check: non-inferiority at margin m is scipy's one-sided t test of the per-case
    # differences against −m at 2.5 % (a two-sided 95 % interval's lower bound above −m).
    c = compare_arms(close, "control", "treatment", store=store, margin=margin)
    assert c.interval_method == "t"
    d = _per_case_differences(c)
    p = stats.ttest_1samp(d, popmean=-margin, alternative="greater").pvalue
    low = stats.t.interval(0.95, d.size - 1, loc=d.mean(), scale=stats.sem(d))[0]
    assert c.interval.low == pytest.approx(low, abs=1e-9)
    settled = c.verdict.outcome in ("better", "not worse")
    assert settled == (p < 0.025), (margin, p, c.verdict.outcome_text)
    assert c.settle(margin).outcome == c.verdict.outcome and c.verdict.margin == margin


def test_the_outcomes_cover_the_verdicts(store, close):
    c = compare_arms(close, "control", "treatment", store=store)
    assert c.verdict.code == "no_detectable_difference"
    # The interval here is about −17 to +7 points: it straddles −2 points, so the outcome is inconclusive,
    # and a wide margin makes it not worse.
    assert c.verdict.outcome == "inconclusive" and c.verdict.margin == DEFAULT_MARGIN
    assert "straddles the margin of −2.0 points" in c.verdict.outcome_text
    assert f"about {c.verdict.n_more:,} more paired cases would likely settle it" in c.verdict.outcome_text
    assert c.settle(0.3).outcome == "not worse"


def test_better_worse_and_too_few(store):
    a, b = table_2x2(30, 12, 3, 5)
    better = make_experiment(store, "b", cases_of(50), {"control": a, "treatment": b})
    c = compare_arms(better, store=store)
    assert c.verdict.code == "b_better" and c.verdict.outcome == "better" and c.verdict.n_more is None
    a, b = table_2x2(30, 0, 20, 10)
    worse = make_experiment(store, "w", cases_of(60), {"control": a, "treatment": b}, dataset="w")
    c = compare_arms(worse, store=store)
    assert c.verdict.code == "b_worse" and c.verdict.outcome == "worse"
    assert c.settle(0.5).outcome == "not worse"  # a loss smaller than a (very) wide margin
    few = make_experiment(store, "f", cases_of(4), {"control": [[True, False]] * 4, "treatment": [[True, True]] * 4},
                          dataset="f")  # fmt: skip
    c = compare_arms(few, store=store)
    assert c.verdict.code == "insufficient_data" and c.verdict.outcome == "inconclusive"
    assert "too few paired cases (4)" in c.verdict.outcome_text


def test_a_significant_loss_within_the_margin_is_not_worse():
    s = settle(name_a="A", name_b="B", n_cases=5000, unit="points", difference=-0.01, low=-0.015,
               high=-0.005, significant=True, margin=0.02)  # fmt: skip
    assert s.outcome == "not worse" and "significantly lower" in s.text
    s = settle(name_a="A", name_b="B", n_cases=5000, unit="points", difference=-0.01, low=-0.025,
               high=-0.005, significant=True, margin=0.02)  # fmt: skip
    assert s.outcome == "worse"


def test_cases_to_settle_worked_example():
    # n = 100, d = −1 point, 95 % CI −5 to +3: w = 4 points on each side. Not worse needs w·√(100/N) <
    # d + m = 1 point → N = 100·4² = 1,600; worse needs w·√(100/N) < 1 point too: 1,500 more either way.
    assert cases_to_settle(100, -0.01, -0.05, 0.03, 0.02) == 1500
    # d = +1 point, margin 2: not worse needs w·√(100/N) < 3 points → N = 100·(4/3)² = 177.8 → 78 more.
    assert cases_to_settle(100, 0.01, -0.03, 0.05, 0.02) == 78
    assert cases_to_settle(100, None, None, None, 0.02) is None
    with pytest.raises(UsageError, match="margin must be a number ≥ 0"):
        settle(name_a="A", name_b="B", n_cases=10, unit="points", difference=0.0, low=-0.1, high=0.1,
               significant=False, margin=-0.02)  # fmt: skip


@pytest.mark.slow
def test_the_projected_cases_do_settle_it(store, close):
    # The projection holds the difference and the per-case spread: the same cases repeated k times have
    # both, and their interval shrinks as 1/√(k·n). With k·n at least n + n_more it is settled.
    c = compare_arms(close, "control", "treatment", store=store)
    n_more = c.verdict.n_more
    assert c.verdict.outcome == "inconclusive" and n_more is not None
    k = math.ceil((c.n_cases + n_more) / c.n_cases)
    d = np.tile(_per_case_differences(c), k)
    low, high = stats.t.interval(0.95, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    assert low > -DEFAULT_MARGIN or high < 0
    d = np.tile(_per_case_differences(c), max(1, k - 2))  # well short of it: still straddling
    low, high = stats.t.interval(0.95, d.size - 1, loc=d.mean(), scale=stats.sem(d))
    assert low < -DEFAULT_MARGIN and high > 0


def test_votes_match_scipys_sign_test():
    cat = ["fixed"] * 14 + ["regressed"] * 3 + ["unchanged_right"] * 80 + ["unchanged_wrong"] * 3
    v = vote_decision(cat, margin=0.2, min_cases=5)
    assert (v.wins, v.losses, v.ties, v.decided) == (14, 3, 83, 17)
    assert v.p_value == pytest.approx(stats.binomtest(14, 17, 0.5, alternative="greater").pvalue)
    assert v.p_value == pytest.approx(0.006362, abs=1e-6)
    assert v.net == pytest.approx(11 / 17) and v.outcome == "better" and v.passed
    assert v.text.startswith(
        "votes: 14 wins, 3 losses, 83 ties; net +11 (+65 % of decided) · sign test p = 0.006"
    )


@pytest.mark.parametrize(
    ("wins", "losses", "ties", "outcome"),
    [
        (14, 3, 83, "better"),
        (6, 4, 90, "inconclusive"),  # net +20 % meets the margin, the sign test does not
        (30, 20, 50, "inconclusive"),  # p = 0.10 and net +20 %
        (60, 40, 0, "better"),  # net +20 %, p = 0.028
        (55, 45, 0, "inconclusive"),  # p = 0.18, net +10 % below the margin
        (3, 14, 83, "worse"),
        (4, 0, 96, "inconclusive"),  # fewer decided cases than min_cases
    ],
)
def test_vote_outcomes(wins, losses, ties, outcome):
    v = vote_decision(
        ["fixed"] * wins + ["regressed"] * losses + ["unchanged"] * ties, margin=0.2, min_cases=5
    )
    assert v.outcome == outcome, v.text
    if v.decided:
        assert v.p_value == pytest.approx(stats.binomtest(wins, wins + losses, alternative="greater").pvalue)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"margin": 1.5}, "votes margin must be a share in"),
    ({"min_cases": 0}, "votes min_cases must be a whole number"),
])  # fmt: skip
def test_vote_options_are_checked(kwargs, message):
    with pytest.raises(UsageError, match=message):
        vote_decision(["fixed"], **kwargs)

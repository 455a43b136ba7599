"""McNemar (exact, mid-p), the paired 2×2 table, and Cochran's Q against statsmodels and scipy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import cochrans_q as sm_cochrans_q, mcnemar as sm_mcnemar

from abbench.errors import UsageError
from abbench.stats import cochrans_q, mcnemar_exact, mcnemar_midp, paired_outcomes

PAIRS = [(0, 0), (0, 1), (1, 0), (3, 3), (0, 12), (5, 17), (40, 25), (100, 130), (1, 1000), (500, 520)]


@pytest.mark.parametrize(("b", "c"), PAIRS)
def test_mcnemar_exact_matches_statsmodels_and_scipy(b, c):
    result = mcnemar_exact(b, c)
    expected = sm_mcnemar([[10, b], [c, 7]], exact=True)
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-10, abs=1e-300)
    assert result.statistic == expected.statistic == min(b, c)
    if b + c:
        assert result.p_value == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue, rel=1e-9)
    assert (result.b, result.c, result.n_discordant, result.method) == (b, c, b + c, "exact")


def test_no_discordant_pairs_give_p_one_not_zero():
    table = [[10, 0], [0, 7]]
    assert mcnemar_exact(0, 0).p_value == sm_mcnemar(table, exact=True).pvalue == 1.0
    assert mcnemar_midp(0, 0).p_value == 1.0
    # The continuity-corrected chi-square is what goes wrong here (p = 0, "certainly different"):
    # ours must not follow it.
    with np.errstate(divide="ignore"):
        assert sm_mcnemar(table, exact=False, correction=True).pvalue == 0.0


@pytest.mark.parametrize(("b", "c"), PAIRS)
def test_mcnemar_midp_is_exact_minus_the_point_probability(b, c):
    n, m = b + c, min(b, c)
    expected = 1.0 if n == 0 else min(1.0, 2 * stats.binom.cdf(m, n, 0.5) - stats.binom.pmf(m, n, 0.5))
    result = mcnemar_midp(b, c)
    assert result.p_value == pytest.approx(expected, rel=1e-9, abs=1e-300)
    assert result.p_value <= mcnemar_exact(b, c).p_value
    assert result.method == "mid-p"


@given(b=st.integers(0, 3000), c=st.integers(0, 3000))
def test_mcnemar_is_symmetric_and_a_probability(b, c):
    for test in (mcnemar_exact, mcnemar_midp):
        p = test(b, c).p_value
        assert 0.0 <= p <= 1.0
        assert p == test(c, b).p_value


@pytest.mark.parametrize(("b", "c"), [(-1, 2), (1.5, 2), (None, 2)])
def test_mcnemar_refuses_bad_counts(b, c):
    with pytest.raises(UsageError, match="b \\(A-only successes\\)"):
        mcnemar_exact(b, c)


def test_paired_outcomes_counts_each_cell():
    a = [True, True, False, False, True, 1]
    b = [True, False, True, False, True, 0]
    table = paired_outcomes(a, b)
    assert (table.both_pass, table.fixed, table.regressed, table.both_fail) == (2, 1, 2, 1)
    assert (table.b, table.c, table.n_discordant, table.n) == (2, 1, 3, 6)
    assert mcnemar_exact(table.b, table.c).p_value == 1.0


@pytest.mark.parametrize(
    ("a", "b", "message"),
    [
        ([1, 0], [1], "a has 2, b has 1"),
        ([1, 0.5], [1, 0], "pass/fail"),
        ([], [], "empty"),
        ([1, None], [1, 0], r"a\[1\] is None"),
        ([1, float("nan")], [1, 0], r"a\[1\] is nan"),
    ],
)
def test_paired_outcomes_refuses_bad_input(a, b, message):
    with pytest.raises(UsageError, match=message):
        paired_outcomes(a, b)


def _random_matrix(seed, rows, arms):
    rng = np.random.default_rng(seed)
    skill = rng.random(rows)[:, None]
    return (rng.random((rows, arms)) < (skill + rng.normal(0, 0.2, arms))).astype(int)


@pytest.mark.parametrize(
    ("seed", "rows", "arms"), [(0, 10, 3), (1, 50, 3), (2, 200, 4), (3, 1000, 6), (4, 5, 2)]
)
def test_cochrans_q_matches_statsmodels(seed, rows, arms):
    x = _random_matrix(seed, rows, arms)
    expected = sm_cochrans_q(x)
    result = cochrans_q(x)
    assert result.statistic == pytest.approx(expected.statistic, rel=1e-10)
    assert result.p_value == pytest.approx(expected.pvalue, rel=1e-9)
    assert result.df == expected.df == arms - 1
    assert result.pass_rates == pytest.approx(tuple(x.mean(axis=0)))


def test_cochrans_q_with_two_arms_is_mcnemar_without_correction():
    x = _random_matrix(7, 300, 2)
    expected = sm_mcnemar(
        np.array(
            [[np.sum(x[:, 0] & x[:, 1]), np.sum(x[:, 0] & ~x[:, 1] & 1)], [np.sum(~x[:, 0] & 1 & x[:, 1]), 0]]
        ),
        exact=False,
        correction=False,
    )
    assert cochrans_q(x).statistic == pytest.approx(expected.statistic, rel=1e-10)


def test_cochrans_q_with_no_separating_case_is_zero_with_p_one():
    result = cochrans_q([[1, 1, 1], [0, 0, 0], [True, True, True]])
    assert (result.statistic, result.p_value) == (0.0, 1.0)


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        ([[1, 0, 1], [1, 0]], "rectangular"),
        ([[1], [0]], "1 arm"),
        ([], "non-empty"),
        ([[1, 0, 2]], "pass/fail"),
        ([1, 0, 1], "cases × arms"),
    ],
)
def test_cochrans_q_refuses_bad_matrices(matrix, message):
    with pytest.raises(UsageError, match=message):
        cochrans_q(matrix)

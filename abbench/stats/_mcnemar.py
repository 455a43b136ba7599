"""Tests on paired pass/fail outcomes: the 2×2 table, McNemar for two arms, Cochran's Q for more."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import special

from abbench.errors import UsageError
from abbench.stats._base import _Result, as_scores, check_count, check_same_length


def _binary(values: Any, name: str) -> np.ndarray:
    array = as_scores(values, name)
    bad = np.flatnonzero((array != 0.0) & (array != 1.0))
    if bad.size:
        i = int(bad[0])
        raise UsageError(
            f"{name}[{i}] is {array[i]:g}: outcomes must be pass/fail (True/False or 1/0); "
            "for fractional scores use paired_difference or paired_bootstrap"
        )
    return array.astype(bool)


@dataclass(frozen=True)
class PairedOutcomes(_Result):
    """The 2×2 table of two arms' pass/fail outcomes on the same cases.

    Attributes:
        n: Cases.
        both_pass: Cases both arms got right.
        fixed: Wrong in arm A, right in arm B (wrong → right).
        regressed: Right in arm A, wrong in arm B (right → wrong).
        both_fail: Cases both arms got wrong.
    """

    n: int
    both_pass: int
    fixed: int
    regressed: int
    both_fail: int

    @property
    def b(self) -> int:
        """McNemar's ``b``: the discordant cells' A-only successes (= ``regressed``)."""
        return self.regressed

    @property
    def c(self) -> int:
        """McNemar's ``c``: the discordant cells' B-only successes (= ``fixed``)."""
        return self.fixed

    @property
    def n_discordant(self) -> int:
        """Cases where the arms disagree: ``fixed + regressed``."""
        return self.fixed + self.regressed


def paired_outcomes(a: Any, b: Any) -> PairedOutcomes:
    """Count how two arms' pass/fail outcomes on the same cases agree and disagree.

    Args:
        a: Arm A's outcome per case (True/False or 1/0).
        b: Arm B's outcome per case, in the same case order.

    Raises:
        UsageError: the sequences differ in length, are empty, or hold anything but pass/fail values.
    """
    a_arr, b_arr = _binary(a, "a"), _binary(b, "b")
    check_same_length(a=a_arr, b=b_arr)
    both = int(np.count_nonzero(a_arr & b_arr))
    fixed = int(np.count_nonzero(~a_arr & b_arr))
    regressed = int(np.count_nonzero(a_arr & ~b_arr))
    return PairedOutcomes(len(a_arr), both, fixed, regressed, len(a_arr) - both - fixed - regressed)


@dataclass(frozen=True)
class McNemarResult(_Result):
    """McNemar's test on the discordant pairs of two arms.

    Attributes:
        b: Cases only arm A got right (regressed).
        c: Cases only arm B got right (fixed).
        n_discordant: ``b + c``.
        statistic: ``min(b, c)``, the binomial test statistic (as statsmodels reports it); for the score
            test, the chi-square statistic ``(b − c)² / (b + c)``.
        p_value: Two-sided p-value.
        method: ``"exact"``, ``"mid-p"`` or ``"score"``.
    """

    b: int
    c: int
    n_discordant: int
    statistic: float
    p_value: float
    method: Literal["exact", "mid-p", "score"]


def _discordant(b: int, c: int) -> tuple[int, int, int, int]:
    b, c = check_count(b, "b (A-only successes)"), check_count(c, "c (B-only successes)")
    return b, c, b + c, min(b, c)


def mcnemar_exact(b: int, c: int) -> McNemarResult:
    """McNemar's exact test: a two-sided binomial test of ``min(b, c)`` among ``b + c`` at p = 1/2.

    Only discordant cases carry evidence about which arm is better. With no discordant case
    (``b = c = 0``) the p-value is 1.0, never the chi-square approximation's spurious result.

    Args:
        b: Cases arm A got right and arm B got wrong.
        c: Cases arm B got right and arm A got wrong.

    Raises:
        UsageError: a count is negative or fractional.
    """
    b, c, n, m = _discordant(b, c)
    p = 1.0 if n == 0 else min(1.0, 2.0 * float(special.bdtr(m, n, 0.5)))
    return McNemarResult(b, c, n, m, p, "exact")


def mcnemar_midp(b: int, c: int) -> McNemarResult:
    """McNemar's mid-p test: the exact p-value minus the probability of the observed table.

    The exact test is conservative (its true size is below alpha, markedly so for few discordant pairs);
    the mid-p version (Fagerland, Lydersen & Laake 2013) keeps close to the nominal size and is what
    they recommend for routine use. ``b = c`` gives 1.0.

    Args:
        b: Cases arm A got right and arm B got wrong.
        c: Cases arm B got right and arm A got wrong.

    Raises:
        UsageError: a count is negative or fractional.
    """
    b, c, n, m = _discordant(b, c)
    if n == 0:
        return McNemarResult(b, c, n, m, 1.0, "mid-p")
    cdf = float(special.bdtr(m, n, 0.5))
    below = float(special.bdtr(m - 1, n, 0.5)) if m > 0 else 0.0
    p = min(1.0, 2.0 * cdf - (cdf - below))
    return McNemarResult(b, c, n, m, p, "mid-p")


def mcnemar_score(b: int, c: int) -> McNemarResult:
    """McNemar's asymptotic (score) test, without continuity correction: ``(b − c)² / (b + c)`` against
    chi-square with 1 degree of freedom, as statsmodels' ``mcnemar(table, exact=False, correction=False)``.

    It is the score test of no difference between two paired pass rates, so it rejects exactly when
    Tango's score interval (`paired_proportion_interval` with ``method="score"``) excludes 0: a decision
    and its interval come from one statistic. Fagerland, Lydersen & Laake (2013, *BMC Med Res Methodol*
    13:91) found it keeps close to the nominal size, where the exact test is markedly conservative with
    few discordant pairs. ``b = c = 0`` gives 1.0.

    Args:
        b: Cases arm A got right and arm B got wrong.
        c: Cases arm B got right and arm A got wrong.

    Raises:
        UsageError: a count is negative or fractional.
    """
    b, c, n, _ = _discordant(b, c)
    if n == 0:
        return McNemarResult(b, c, n, 0.0, 1.0, "score")
    statistic = (b - c) ** 2 / n
    return McNemarResult(b, c, n, statistic, float(special.chdtrc(1, statistic)), "score")


@dataclass(frozen=True)
class CochransQ(_Result):
    """Cochran's Q test that three or more arms have the same pass rate on the same cases.

    Attributes:
        statistic: Q, chi-square distributed with ``df`` degrees of freedom under the null.
        df: ``n_arms - 1``.
        p_value: Upper-tail chi-square p-value (1.0 when no case separates the arms).
        n_cases: Cases (rows).
        n_arms: Arms (columns).
        pass_rates: Each arm's pass rate, in column order.
    """

    statistic: float
    df: int
    p_value: float
    n_cases: int
    n_arms: int
    pass_rates: tuple[float, ...]


def cochrans_q(matrix: Any) -> CochransQ:
    """Cochran's Q test over a cases × arms matrix of pass/fail outcomes.

    With two arms it equals McNemar's chi-square without continuity correction; use
    :func:`mcnemar_exact` there. Cases where every arm agrees carry no information; when no case
    separates the arms the statistic is 0 and the p-value 1.0 (statsmodels returns NaN).

    Args:
        matrix: One row per case, one column per arm, entries True/False or 1/0 (list of rows or 2-D array).

    Raises:
        UsageError: the matrix is ragged, empty, has fewer than two arms, or holds non-binary values.
    """
    try:
        x = np.asarray(matrix, dtype=float)
    except (TypeError, ValueError):
        raise UsageError(
            "matrix must be a rectangular table of pass/fail outcomes: one row per case, one column per arm, "
            "every row the same length"
        ) from None
    if x.ndim != 2 or x.shape[0] == 0:
        raise UsageError(f"matrix must be a non-empty cases × arms table; got shape {x.shape}")
    rows, k = x.shape
    if k < 2:
        raise UsageError(f"matrix has {k} arm column(s): Cochran's Q compares two or more arms")
    _binary(x.ravel(), "matrix (flattened)")
    col = x.sum(axis=0)
    row = x.sum(axis=1)
    total = col.sum()
    denominator = k * total - float(np.sum(row * row))
    if denominator == 0:
        q, p = 0.0, 1.0
    else:
        q = (k - 1) * (k * float(np.sum(col * col)) - total * total) / denominator
        p = float(special.chdtrc(k - 1, q))
    return CochransQ(q, k - 1, p, rows, k, tuple(float(v) for v in col / rows))

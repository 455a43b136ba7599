"""The paired difference of two arms scored on the same cases: mean, standard error, interval, p-value."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from abbench.errors import UsageError
from abbench.stats._base import (
    Interval,
    _Result,
    check_confidence,
    check_method,
    critical_value,
    estimate_interval,
    ratio_statistic,
    two_sided_p,
)
from abbench.stats._errors import _cluster_codes, _cr1_se, _std, _warn_few, harmonic_rounds, paired_cases


@dataclass(frozen=True)
class PairedDifference(_Result):
    """How much arm B's mean score differs from arm A's on the same cases.

    The direction is always **b − a**: a positive difference means arm B (treatment) scores higher.

    Attributes:
        difference: Mean of the per-case differences ``b_i − a_i`` (= mean_b − mean_a).
        se: Standard error of that mean: sample std of the differences / sqrt(n), or CR1 cluster-robust
            when clusters are given.
        interval: ``difference ± critical × se``.
        statistic: ``difference / se`` (z or t).
        p_value: Two-sided p-value against no difference.
        mean_a: Arm A's mean (of per-case means when there are rounds).
        mean_b: Arm B's mean.
        n: Cases.
        rounds_a: Arm A's effective rounds per case (harmonic mean; 1 for one score per case).
        rounds_b: Arm B's effective rounds per case.
        correlation: Pearson correlation of the arms' per-case scores (NaN when one arm is constant);
            the higher it is, the more pairing narrows the interval.
        unpaired_se: The standard error had the arms been scored on different cases, for contrast.
        n_clusters: Clusters when clustered, else None.
        few_clusters: True when clustered on fewer than 30 clusters.
        method: ``"z"`` or ``"t"`` (t with n − 1, or G − 1 when clustered, degrees of freedom).
    """

    difference: float
    se: float
    interval: Interval
    statistic: float
    p_value: float
    mean_a: float
    mean_b: float
    n: int
    rounds_a: float
    rounds_b: float
    correlation: float
    unpaired_se: float
    n_clusters: int | None
    few_clusters: bool
    method: str

    @property
    def significant(self) -> bool:
        """Whether the interval excludes zero (the difference is significant at ``1 − confidence``)."""
        return self.interval.excludes_zero()


def _correlation(x: np.ndarray, y: np.ndarray) -> float:
    if x.size < 2 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return math.nan
    # Spreads so tiny that the standard deviation underflows leave the correlation undefined too.
    with np.errstate(divide="ignore", invalid="ignore"):
        r = float(np.corrcoef(x, y)[0, 1])
    return r if math.isfinite(r) else math.nan


def paired_difference(
    a: Any,
    b: Any,
    clusters: Any = None,
    confidence: float = 0.95,
    method: Literal["z", "t"] = "z",
) -> PairedDifference:
    """The mean paired difference ``b − a`` of two arms on the same cases (Miller 2024, §4).

    Each case is its own control: the standard error comes from the per-case differences, which removes
    the variance due to some cases simply being harder, so a paired comparison detects far smaller
    differences than comparing two independent means. When ``a``/``b`` hold several round scores per
    case, per-case means are taken first (rounds are not cases). The interval uses the normal
    critical value by default, as Miller does and as the power formulas assume; pass ``method="t"`` for
    Student's t on few cases (or few clusters).

    Args:
        a: Arm A (control): one score per case, or per-case lists of round scores (ragged allowed).
        b: Arm B (treatment), same cases in the same order.
        clusters: Optional cluster label per case (e.g. domain): the standard error becomes cluster-robust.
        confidence: Coverage of the interval.
        method: ``"z"`` or ``"t"``.

    Raises:
        UsageError: the arms have different numbers of cases, input is empty or holds NaN/None/text,
            ``clusters`` has the wrong length or fewer than 2 distinct values.
    """
    confidence, method = check_confidence(confidence), check_method(method)
    arm_a, arm_b = paired_cases(
        a, b, ("a", "b"), "a paired comparison needs both arms scored on the same cases, in the same order"
    )
    n = arm_a.means.size
    d = arm_b.means - arm_a.means
    diff = float(d.mean())
    if clusters is None:
        se = _std(d) / math.sqrt(n)
        df, n_clusters, few = n - 1, None, False
    else:
        codes, n_clusters = _cluster_codes(clusters, n)
        if n_clusters < 2:
            raise UsageError(
                f"clusters has a single value for all {n} cases: clustering needs at least 2 clusters "
                "(pass clusters=None, or cluster on another field)"
            )
        few = _warn_few(n_clusters, stacklevel=2)
        se = _cr1_se(d, codes, n_clusters)
        df = n_clusters - 1
    statistic = ratio_statistic(diff, se)
    unpaired = math.sqrt((_std(arm_a.means) ** 2 + _std(arm_b.means) ** 2) / n)
    return PairedDifference(
        difference=diff,
        se=se,
        interval=estimate_interval(diff, se, confidence, method, df),
        statistic=statistic,
        p_value=two_sided_p(statistic, method, df),
        mean_a=float(arm_a.means.mean()),
        mean_b=float(arm_b.means.mean()),
        n=n,
        rounds_a=harmonic_rounds(arm_a.counts),
        rounds_b=harmonic_rounds(arm_b.counts),
        correlation=_correlation(arm_a.means, arm_b.means),
        unpaired_se=unpaired,
        n_clusters=n_clusters,
        few_clusters=few,
        method=method,
    )


def paired_ratio_interval(a: Any, b: Any, confidence: float = 0.95) -> Interval | None:
    """Fieller's interval for the ratio of two paired means, ``mean(b) / mean(a)`` (e.g. B's cost over A's).

    Every ratio ``r`` that the paired t test of ``b − r·a`` does not reject (Fieller 1954): the roots of
    ``(m_b − r·m_a)² = t²·(s_bb − 2r·s_ab + r²·s_aa)/n`` with the sample (co)variances of the per-case
    values and Student's t with n − 1 df. Unlike dividing the difference's interval by A's mean, it
    carries A's own uncertainty; a test of "B costs more than 10 % extra" is its lower bound above 1.10.

    Args:
        a: Arm A's per-case values (one per case; for rounds, per-case means).
        b: Arm B's, same cases in the same order.
        confidence: Coverage of the interval.

    Returns:
        The interval, or None when it is not a finite interval: fewer than 2 cases, or A's mean is not
        significantly different from 0 (the set of ratios is then unbounded).

    Raises:
        UsageError: the arms have different numbers of cases, or hold NaN/None/text.
    """
    confidence = check_confidence(confidence)
    arm_a, arm_b = paired_cases(a, b, ("a", "b"), "pair them case by case")
    x, y = arm_a.means, arm_b.means
    n = x.size
    if n < 2:
        return None
    t2 = critical_value(confidence, "t", n - 1) ** 2 / n
    mx, my = float(x.mean()), float(y.mean())
    cov = np.cov(x, y, ddof=1)
    sxx, sxy, syy = float(cov[0, 0]), float(cov[0, 1]), float(cov[1, 1])
    qa = mx * mx - t2 * sxx
    qb = mx * my - t2 * sxy
    qc = my * my - t2 * syy
    if qa <= 0:
        return None
    # With qa > 0 the ratio of the means satisfies the inequality, so two real roots exist: a negative
    # discriminant is rounding (no spread at all gives a point), never an empty set.
    root = math.sqrt(max(0.0, qb * qb - qa * qc))
    return Interval((qb - root) / qa, (qb + root) / qa, confidence)

"""Tests between independent groups and corrections for testing many at once (per-domain tables)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from abbench.errors import UsageError
from abbench.stats._base import (
    Interval,
    _Result,
    check_confidence,
    check_count,
    check_probability,
    normal_p_value,
    ratio_statistic,
)
from abbench.stats._intervals import wilson_interval


@dataclass(frozen=True)
class TwoProportionTest(_Result):
    """Two pass rates measured on *different* cases, compared.

    The direction is **b − a**: a positive difference means arm B passes more often.

    Attributes:
        difference: ``p_b − p_a``.
        interval: Newcombe's hybrid score interval for the difference (built from the two Wilson
            intervals; stays within [−1, 1] and behaves at 0 % and 100 %).
        statistic: Pooled two-proportion z statistic.
        p_value: Two-sided p-value of the z test (1.0 when both rates are equal).
        se: Unpooled standard error of the difference.
        p_a: Arm A's pass rate ``k_a / n_a``.
        p_b: Arm B's pass rate.
        k_a: Arm A's passes.
        n_a: Arm A's cases.
        k_b: Arm B's passes.
        n_b: Arm B's cases.
    """

    difference: float
    interval: Interval
    statistic: float
    p_value: float
    se: float
    p_a: float
    p_b: float
    k_a: int
    n_a: int
    k_b: int
    n_b: int


def two_proportion_test(
    k_a: int, n_a: int, k_b: int, n_b: int, confidence: float = 0.95
) -> TwoProportionTest:
    """Compare pass rates ``k_a/n_a`` and ``k_b/n_b`` from two independent sets of cases.

    Use it only when the arms ran on different cases; two arms on the same cases are compared with
    :func:`mcnemar_exact` and :func:`paired_difference`, which are far more sensitive.

    Args:
        k_a: Passes in arm A.
        n_a: Cases in arm A (≥ 1).
        k_b: Passes in arm B.
        n_b: Cases in arm B (≥ 1).
        confidence: Coverage of the interval.

    Raises:
        UsageError: a count is negative or fractional, a k exceeds its n, or an arm has no cases.
    """
    confidence = check_confidence(confidence)
    interval_a = wilson_interval(k_a, n_a, confidence)
    interval_b = wilson_interval(k_b, n_b, confidence)
    k_a, n_a, k_b, n_b = (
        check_count(v, name) for v, name in ((k_a, "k_a"), (n_a, "n_a"), (k_b, "k_b"), (n_b, "n_b"))
    )
    for name, n in (("n_a", n_a), ("n_b", n_b)):
        if n == 0:
            raise UsageError(f"{name} is 0: each arm needs at least one case to compare pass rates")
    p_a, p_b = k_a / n_a, k_b / n_b
    diff = p_b - p_a
    pooled = (k_a + k_b) / (n_a + n_b)
    se0 = math.sqrt(pooled * (1.0 - pooled) * (1.0 / n_a + 1.0 / n_b))
    statistic = ratio_statistic(diff, se0)
    # Newcombe (1998) method 10: combine each rate's Wilson distance to its bounds.
    low = diff - math.sqrt((p_b - interval_b.low) ** 2 + (interval_a.high - p_a) ** 2)
    high = diff + math.sqrt((interval_b.high - p_b) ** 2 + (p_a - interval_a.low) ** 2)
    return TwoProportionTest(
        difference=diff,
        interval=Interval(low, high, confidence),
        statistic=statistic,
        p_value=normal_p_value(statistic),
        se=math.sqrt(p_a * (1 - p_a) / n_a + p_b * (1 - p_b) / n_b),
        p_a=p_a,
        p_b=p_b,
        k_a=k_a,
        n_a=n_a,
        k_b=k_b,
        n_b=n_b,
    )


@dataclass(frozen=True)
class HolmCorrection(_Result):
    """P-values adjusted for testing several hypotheses at once (Holm 1979).

    Attributes:
        p_values: The raw p-values, in input order.
        adjusted: Holm-adjusted p-values, in input order (NaN where the raw one was NaN).
        reject: Whether each hypothesis is rejected at ``alpha`` after adjustment.
        alpha: Family-wise error rate.
        labels: The keys when a mapping was given (e.g. domain names), else None.
        n_tests: Hypotheses counted in the correction (NaN p-values are not counted).
    """

    p_values: tuple[float, ...]
    adjusted: tuple[float, ...]
    reject: tuple[bool, ...]
    alpha: float
    labels: tuple[Any, ...] | None
    n_tests: int

    def by_label(self) -> dict[Any, float]:
        """``{label: adjusted p-value}`` (positions 0, 1, ... when no labels were given)."""
        keys = self.labels if self.labels is not None else range(len(self.adjusted))
        return dict(zip(keys, self.adjusted, strict=True))


def holm_correction(p_values: Any, alpha: float = 0.05) -> HolmCorrection:
    """Holm's step-down adjustment of p-values, e.g. one per domain.

    Testing twenty domains at 5 % each finds about one "significant" regression by chance alone; Holm
    keeps the chance of any false alarm at ``alpha`` and is uniformly more powerful than Bonferroni.
    NaN p-values (a domain with nothing to test) stay NaN and do not count as tests.

    Args:
        p_values: A sequence of p-values, or a mapping ``{label: p}`` (labels are kept on the result).
        alpha: Family-wise error rate.

    Raises:
        UsageError: a p-value outside [0, 1] or not a number, or ``alpha`` outside (0, 1).
    """
    alpha = check_probability(alpha, "alpha", "0.05")
    labels = None
    if isinstance(p_values, Mapping):
        labels = tuple(p_values.keys())
        p_values = list(p_values.values())
    try:
        raw = np.asarray([math.nan if v is None else v for v in p_values], dtype=float)
    except (TypeError, ValueError):
        raise UsageError(f"p_values must be numbers between 0 and 1; got {p_values!r}") from None
    if raw.ndim != 1:
        raise UsageError(f"p_values must be a flat sequence or a mapping; got shape {raw.shape}")
    bad = np.flatnonzero(~np.isnan(raw) & ((raw < 0) | (raw > 1)))
    if bad.size:
        i = int(bad[0])
        raise UsageError(
            f"p_values[{labels[i] if labels else i}] is {raw[i]}: a p-value lies between 0 and 1"
        )
    present = np.flatnonzero(~np.isnan(raw))
    m = present.size
    adjusted = np.full(raw.shape, math.nan)
    if m:
        order = present[np.argsort(raw[present], kind="stable")]
        stepped = np.minimum(1.0, (m - np.arange(m)) * raw[order])
        adjusted[order] = np.maximum.accumulate(stepped)
    reject = tuple(bool(x <= alpha) if not math.isnan(x) else False for x in adjusted)
    return HolmCorrection(
        tuple(float(x) for x in raw), tuple(float(x) for x in adjusted), reject, alpha, labels, int(m)
    )

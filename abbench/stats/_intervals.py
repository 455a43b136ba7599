"""Proportions and their Wilson score intervals."""

from __future__ import annotations

import math
from dataclasses import dataclass

from abbench.errors import UsageError
from abbench.stats._base import Interval, _Result, check_confidence, check_count, z_value


def _counts(k: int, n: int) -> tuple[int, int]:
    k, n = check_count(k, "k (successes)"), check_count(n, "n (trials)")
    if k > n:
        raise UsageError(f"k (successes) = {k} exceeds n (trials) = {n}; k must lie between 0 and n")
    return k, n


def wilson_interval(k: int, n: int, confidence: float = 0.95) -> Interval:
    """The Wilson score interval for a proportion ``k / n``.

    Unlike the Wald interval (p ± z·se) it stays inside [0, 1] and keeps its coverage near 0 and 1, where
    agent accuracies often sit. ``z`` is computed from ``confidence`` (1.959964 for 0.95, not a rounded
    1.96); the bounds are clipped to [0, 1] against rounding.

    Args:
        k: Successes (e.g. correct answers), 0 ≤ k ≤ n.
        n: Trials (cases).
        confidence: Coverage, strictly between 0 and 1.

    Returns:
        The interval; ``Interval(0, 1, confidence)`` when ``n == 0`` (nothing is known).

    Raises:
        UsageError: ``k`` or ``n`` is negative or fractional, ``k > n``, or ``confidence`` is not in (0, 1).
    """
    k, n = _counts(k, n)
    confidence = check_confidence(confidence)
    if n == 0:
        return Interval(0.0, 1.0, confidence)
    z = z_value(confidence)
    p = k / n
    z2n = z * z / n
    center = (p + z2n / 2.0) / (1.0 + z2n)
    half = z / (1.0 + z2n) * math.sqrt(p * (1.0 - p) / n + z2n / (4.0 * n))
    # At k = 0 or k = n one bound is exactly 0 or 1 in exact arithmetic; pin it rather than trust rounding.
    low = 0.0 if k == 0 else max(0.0, center - half)
    high = 1.0 if k == n else min(1.0, center + half)
    return Interval(low, high, confidence)


@dataclass(frozen=True)
class Proportion(_Result):
    """A proportion with its standard error and Wilson interval.

    Attributes:
        k: Successes.
        n: Trials.
        estimate: ``k / n`` (NaN when ``n == 0``).
        se: The binomial standard error ``sqrt(p (1 - p) / n)`` (NaN when ``n == 0``); it is 0 at p = 0 or 1,
            which is why the interval is Wilson's and not ``estimate ± z·se``.
        interval: The Wilson score interval.
    """

    k: int
    n: int
    estimate: float
    se: float
    interval: Interval


def proportion(k: int, n: int, confidence: float = 0.95) -> Proportion:
    """Bundle the estimate, standard error and Wilson interval of ``k`` successes in ``n`` trials.

    Args:
        k: Successes, 0 ≤ k ≤ n.
        n: Trials; 0 gives a NaN estimate and the interval (0, 1).
        confidence: Coverage of the interval.

    Raises:
        UsageError: as for :func:`wilson_interval`.
    """
    interval = wilson_interval(k, n, confidence)
    k, n = int(k), int(n)
    if n == 0:
        return Proportion(k, n, math.nan, math.nan, interval)
    p = k / n
    return Proportion(k, n, p, math.sqrt(p * (1.0 - p) / n), interval)

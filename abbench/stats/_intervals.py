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


def paired_proportion_interval(
    both_pass: int, fixed: int, regressed: int, both_fail: int, confidence: float = 0.95
) -> Interval:
    """Newcombe's square-and-add interval for the difference of two pass rates on the same cases (B − A).

    The cells are those of :func:`paired_outcomes`: ``fixed`` cases fail in A and pass in B,
    ``regressed`` the reverse. The difference is ``(fixed − regressed) / n``. The interval combines each
    arm's Wilson interval with a correction for their correlation (Newcombe 1998, method 10, with the
    continuity-corrected φ recommended by Fagerland, Lydersen & Laake 2014). Unlike ``d̄ ± t·se`` it does
    not collapse to a point when no case changed, or when every case changed the same way: with no
    discordant pair in 60 cases it still spans a few points either side of zero, as it should.

    Args:
        both_pass: Cases both arms got right.
        fixed: Cases only arm B got right.
        regressed: Cases only arm A got right.
        both_fail: Cases both arms got wrong.
        confidence: Coverage, strictly between 0 and 1.

    Returns:
        The interval for ``p_B − p_A``, within [−1, 1]; ``Interval(-1, 1, confidence)`` when there is no case.

    Raises:
        UsageError: a count is negative or fractional, or ``confidence`` is not in (0, 1).
    """
    named = {"both_pass": both_pass, "fixed": fixed, "regressed": regressed, "both_fail": both_fail}
    # A pass & B pass, A fail & B pass, A pass & B fail, both fail.
    n11, n01, n10, n00 = (check_count(v, name) for name, v in named.items())
    n = n11 + n01 + n10 + n00
    confidence = check_confidence(confidence)
    if n == 0:
        return Interval(-1.0, 1.0, confidence)
    a_pass, b_pass = n11 + n10, n11 + n01
    p_a, p_b = a_pass / n, b_pass / n
    wa, wb = wilson_interval(a_pass, n, confidence), wilson_interval(b_pass, n, confidence)
    margins = a_pass * (n - a_pass) * b_pass * (n - b_pass)
    phi = 0.0
    if margins > 0:
        # The correlation of the two margins, continuity-corrected when positive (as Fagerland et al.).
        cross = n11 * n00 - n10 * n01
        if cross > n / 2:
            phi = (cross - n / 2) / math.sqrt(margins)
        elif cross < 0:
            phi = cross / math.sqrt(margins)
    diff = p_b - p_a
    down_b, up_a = p_b - wb.low, wa.high - p_a
    up_b, down_a = wb.high - p_b, p_a - wa.low
    low = diff - math.sqrt(max(0.0, down_b**2 + up_a**2 - 2.0 * phi * down_b * up_a))
    high = diff + math.sqrt(max(0.0, up_b**2 + down_a**2 - 2.0 * phi * up_b * down_a))
    return Interval(max(-1.0, low), min(1.0, high), confidence)


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

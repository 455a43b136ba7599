"""Proportions and their Wilson score intervals; the difference of two paired proportions."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

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


PAIRED_INTERVAL_METHODS = ("newcombe", "score")
"""Intervals for the difference of two paired pass rates: Newcombe's square-and-add, Tango's score."""


def paired_proportion_interval(
    both_pass: int,
    fixed: int,
    regressed: int,
    both_fail: int,
    confidence: float = 0.95,
    method: Literal["newcombe", "score"] = "newcombe",
) -> Interval:
    """An interval for the difference of two pass rates on the same cases (B − A).

    The cells are those of :func:`paired_outcomes`: ``fixed`` cases fail in A and pass in B,
    ``regressed`` the reverse. The difference is ``(fixed − regressed) / n``. Neither method collapses to
    a point when no case changed, or when every case changed the same way: with no discordant pair in 60
    cases the interval still spans a few points either side of zero, as it should.

    ``newcombe``: each arm's Wilson interval combined with a correction for their correlation (Newcombe
    1998, method 10, with the continuity-corrected φ recommended by Fagerland, Lydersen & Laake 2014).
    ``score``: Tango's (1998) asymptotic score interval, every difference the score test does not reject
    (see `paired_score_interval`); it excludes 0 exactly when McNemar's score test (`mcnemar_score`)
    rejects at ``1 − confidence``, so a verdict, its test and its interval never disagree.

    Args:
        both_pass: Cases both arms got right.
        fixed: Cases only arm B got right.
        regressed: Cases only arm A got right.
        both_fail: Cases both arms got wrong.
        confidence: Coverage, strictly between 0 and 1.
        method: ``newcombe`` or ``score``.

    Returns:
        The interval for ``p_B − p_A``, within [−1, 1]; ``Interval(-1, 1, confidence)`` when there is no case.

    Raises:
        UsageError: a count is negative or fractional, ``confidence`` is not in (0, 1), or an unknown method.
    """
    named = {"both_pass": both_pass, "fixed": fixed, "regressed": regressed, "both_fail": both_fail}
    # A pass & B pass, A fail & B pass, A pass & B fail, both fail.
    n11, n01, n10, n00 = (check_count(v, name) for name, v in named.items())
    n = n11 + n01 + n10 + n00
    confidence = check_confidence(confidence)
    if method not in PAIRED_INTERVAL_METHODS:
        raise UsageError(f"method must be one of {', '.join(PAIRED_INTERVAL_METHODS)}; got {method!r}")
    if n == 0:
        return Interval(-1.0, 1.0, confidence)
    if method == "score":
        return _tango(n01, n10, n, confidence)
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


def paired_score_interval(fixed: int, regressed: int, n: int, confidence: float = 0.95) -> Interval:
    """Tango's (1998) asymptotic score interval for the difference of two paired pass rates (B − A).

    Every difference ``Δ`` the score test does not reject: ``|T(Δ)| ≤ z`` with
    ``T(Δ) = (c − b − nΔ) / √(n(2q̃ + Δ(1 − Δ)))``, where ``c`` = fixed, ``b`` = regressed and ``q̃`` is the
    maximum-likelihood share of regressed cases under ``Δ``, the positive root of
    ``2n·q² + (−b − c + (2n − c + b)Δ)·q − bΔ(1 − Δ) = 0`` (Tango 1998, eq. 3). At ``Δ = 0``,
    ``T`` is McNemar's score statistic ``(c − b)/√(b + c)``, so the interval excludes 0 exactly when
    `mcnemar_score` rejects. Fagerland, Lydersen & Laake (2014, *Stat Methods Med Res* 24:224) recommend it
    among the intervals for paired proportions: its coverage stays near nominal down to a few dozen cases.

    Args:
        fixed: Cases only arm B got right.
        regressed: Cases only arm A got right.
        n: All paired cases (at least ``fixed + regressed``).
        confidence: Coverage, strictly between 0 and 1.

    Raises:
        UsageError: a count is negative or fractional, ``n`` is smaller than the discordant cases, or
            ``confidence`` is not in (0, 1).
    """
    fixed, regressed, n = (
        check_count(fixed, "fixed"),
        check_count(regressed, "regressed"),
        check_count(n, "n"),
    )
    if fixed + regressed > n:
        raise UsageError(
            f"n = {n} is smaller than fixed + regressed = {fixed + regressed}; n counts every case"
        )
    confidence = check_confidence(confidence)
    if n == 0:
        return Interval(-1.0, 1.0, confidence)
    return _tango(fixed, regressed, n, confidence)


def _tango(c: int, b: int, n: int, confidence: float) -> Interval:
    """Tango's score interval for ``(c − b)/n`` (c: B-only passes, b: A-only passes), solved with Brent."""
    from scipy import optimize

    z = z_value(confidence)

    def score(delta: float) -> float:
        # The restricted maximum-likelihood q̃ of the B-worse cell (Tango 1998, eq. 3), as Δ = p_B − p_A.
        qa = 2.0 * n
        qb = -b - c + (2.0 * n - c + b) * delta
        qc = -b * delta * (1.0 - delta)
        q = (-qb + math.sqrt(max(0.0, qb * qb - 4.0 * qa * qc))) / (2.0 * qa)
        variance = n * (2.0 * q + delta * (1.0 - delta))
        gap = c - b - n * delta
        if variance <= 0.0:
            return math.copysign(math.inf, gap) if gap else 0.0
        return gap / math.sqrt(variance)

    estimate, edge = (c - b) / n, 1.0 - 1e-12
    low = (
        -1.0
        if estimate <= -edge or score(-edge) <= z
        else float(optimize.brentq(lambda d: score(d) - z, -edge, estimate, xtol=1e-12))
    )
    high = (
        1.0
        if estimate >= edge or score(edge) >= -z
        else float(optimize.brentq(lambda d: score(d) + z, estimate, edge, xtol=1e-12))
    )
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

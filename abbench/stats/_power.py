"""Power analysis: cases needed, smallest detectable difference, and their inputs estimated from a pilot."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import optimize, special

from abbench.errors import UsageError
from abbench.stats._base import _Result, check_probability
from abbench.stats._errors import _std, harmonic_rounds, paired_cases, within_variance


def _at_least(value: Any, name: str, low: float, what: str, meaning: str) -> float:
    """`value` as a finite float ≥ `low`, or a `UsageError` saying what `name` must be."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be {what}; got {value!r}") from None
    if not math.isfinite(x) or x < low:
        raise UsageError(f"{name} must be {meaning}; got {value!r}")
    return x


def _nonnegative(value: Any, name: str) -> float:
    return _at_least(value, name, 0.0, "a number ≥ 0", "a finite number ≥ 0 (a variance)")


def _rounds(value: Any, name: str) -> float:
    return _at_least(value, name, 1.0, "a number of rounds ≥ 1", "≥ 1 (answers per case)")


def _z_sum(alpha: float, power: float) -> float:
    """``z_{α/2} + z_β``: the two-sided critical value plus the power quantile."""
    return float(special.ndtri(1.0 - alpha / 2.0)) + float(special.ndtri(power))


def _paired_variance(
    omega2: float, sigma2_a: float, sigma2_b: float, rounds_a: float, rounds_b: float
) -> float:
    omega2 = _nonnegative(omega2, "omega2")
    sigma2_a, sigma2_b = _nonnegative(sigma2_a, "sigma2_a"), _nonnegative(sigma2_b, "sigma2_b")
    return omega2 + sigma2_a / _rounds(rounds_a, "rounds_a") + sigma2_b / _rounds(rounds_b, "rounds_b")


@dataclass(frozen=True)
class SampleSize(_Result):
    """How many cases a paired comparison needs.

    Attributes:
        n: Cases needed, rounded up (at least 2, the fewest that give a standard error).
        n_exact: The formula's unrounded value.
        delta: The difference to detect (absolute value).
        variance: ``ω² + σ²_A/K_A + σ²_B/K_B``: the variance of one case's difference.
        alpha: Two-sided significance level.
        power: Probability of detecting ``delta`` if it is real.
    """

    n: int
    n_exact: float
    delta: float
    variance: float
    alpha: float
    power: float


@dataclass(frozen=True)
class MinDetectableEffect(_Result):
    """The smallest difference a paired comparison of ``n`` cases detects with the given power.

    Attributes:
        delta: Smallest detectable difference (same units as the scores: 0.09 is 9 points of accuracy).
        n: Cases.
        variance: ``ω² + σ²_A/K_A + σ²_B/K_B``.
        se: Standard error of the mean difference at this size: ``sqrt(variance / n)``.
        alpha: Two-sided significance level.
        power: Probability of detecting ``delta`` if it is real.
    """

    delta: float
    n: int
    variance: float
    se: float
    alpha: float
    power: float


def sample_size_paired(
    delta: float,
    omega2: float,
    sigma2_a: float = 0.0,
    sigma2_b: float = 0.0,
    rounds_a: float = 1,
    rounds_b: float = 1,
    alpha: float = 0.05,
    power: float = 0.8,
) -> SampleSize:
    """Cases needed to detect a paired difference ``delta`` (Miller 2024, §5).

    ``n = (z_{α/2} + z_β)² · (ω² + σ²_A/K_A + σ²_B/K_B) / δ²``. More rounds per case shrink only the
    within-case terms; ω², how much the arms' expected per-case scores differ from case to case, is
    paid for with cases. Estimate the inputs from a pilot with :func:`estimate_power_inputs`.

    Args:
        delta: The difference worth detecting, in score units (e.g. 0.05 for 5 points of accuracy).
        omega2: Variance over cases of the difference between the arms' expected scores.
        sigma2_a: Arm A's mean within-case variance (round-to-round); 0 for deterministic agents.
        sigma2_b: Arm B's mean within-case variance.
        rounds_a: Answers per case in arm A (K_A).
        rounds_b: Answers per case in arm B (K_B).
        alpha: Two-sided significance level.
        power: Desired power.

    Raises:
        UsageError: ``delta`` is 0 or not finite, a variance is negative, rounds < 1, or alpha/power
            outside (0, 1).
    """
    alpha, power = check_probability(alpha, "alpha", "0.05"), check_probability(power, "power", "0.8")
    try:
        d = abs(float(delta))
    except (TypeError, ValueError):
        raise UsageError(
            f"delta must be a non-zero number (the difference to detect); got {delta!r}"
        ) from None
    if d == 0.0 or not math.isfinite(d):
        raise UsageError(f"delta must be a non-zero, finite difference to detect (e.g. 0.05); got {delta!r}")
    variance = _paired_variance(omega2, sigma2_a, sigma2_b, rounds_a, rounds_b)
    n_exact = max(0.0, _z_sum(alpha, power)) ** 2 * variance / (d * d)
    return SampleSize(max(2, math.ceil(n_exact - 1e-9)), n_exact, d, variance, alpha, power)


def _check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise UsageError(f"n must be a whole number of cases ≥ 1; got {n!r}")
    return int(n)


def min_detectable_effect(
    n: int,
    omega2: float,
    sigma2_a: float = 0.0,
    sigma2_b: float = 0.0,
    rounds_a: float = 1,
    rounds_b: float = 1,
    alpha: float = 0.05,
    power: float = 0.8,
) -> MinDetectableEffect:
    """The smallest paired difference ``n`` cases detect: ``(z_{α/2} + z_β) · sqrt(variance / n)``.

    A report should never claim a difference smaller than this: below it, "no significant difference"
    means "this dataset cannot tell", not "the arms are equal".

    Args:
        n: Cases.
        omega2: Variance over cases of the difference between the arms' expected scores.
        sigma2_a: Arm A's mean within-case variance.
        sigma2_b: Arm B's mean within-case variance.
        rounds_a: Answers per case in arm A.
        rounds_b: Answers per case in arm B.
        alpha: Two-sided significance level.
        power: Desired power.

    Raises:
        UsageError: ``n`` < 1, a variance is negative, rounds < 1, or alpha/power outside (0, 1).
    """
    n = _check_n(n)
    alpha, power = check_probability(alpha, "alpha", "0.05"), check_probability(power, "power", "0.8")
    variance = _paired_variance(omega2, sigma2_a, sigma2_b, rounds_a, rounds_b)
    se = math.sqrt(variance / n)
    return MinDetectableEffect(max(0.0, _z_sum(alpha, power)) * se, n, variance, se, alpha, power)


def power_paired(
    n: int,
    delta: float,
    omega2: float,
    sigma2_a: float = 0.0,
    sigma2_b: float = 0.0,
    rounds_a: float = 1,
    rounds_b: float = 1,
    alpha: float = 0.05,
) -> float:
    """The power of a paired comparison of ``n`` cases to detect a difference ``delta``.

    Both tails count: ``Φ(|δ|/se − z_{α/2}) + Φ(−|δ|/se − z_{α/2})`` with ``se = sqrt(variance / n)``.

    Raises:
        UsageError: as for :func:`min_detectable_effect`.
    """
    n = _check_n(n)
    alpha = check_probability(alpha, "alpha", "0.05")
    variance = _paired_variance(omega2, sigma2_a, sigma2_b, rounds_a, rounds_b)
    try:
        d = abs(float(delta))
    except (TypeError, ValueError):
        raise UsageError(f"delta must be a number; got {delta!r}") from None
    crit = float(special.ndtri(1.0 - alpha / 2.0))
    if variance == 0.0:
        return 1.0 if d > 0 else alpha
    shift = d / math.sqrt(variance / n)
    return float(special.ndtr(shift - crit) + special.ndtr(-shift - crit))


@dataclass(frozen=True)
class PowerInputs(_Result):
    """Miller's power-analysis inputs, estimated from a pilot of two arms on the same cases.

    Attributes:
        omega2: Variance over cases of the difference in the arms' expected scores (ω²), after removing
            the part due to round-to-round noise; floored at 0.
        sigma2_a: Arm A's mean within-case variance (σ²_A); 0 when arm A has one round per case.
        sigma2_b: Arm B's mean within-case variance.
        rounds_a: Arm A's effective rounds per case in the pilot (harmonic mean).
        rounds_b: Arm B's effective rounds per case.
        n_cases: Pilot cases.
        difference: The pilot's mean difference b − a.
        within_identified: False when an arm had a single round everywhere: its round-to-round noise
            could not be separated and sits inside ``omega2``, so plans with more rounds are pessimistic.
    """

    omega2: float
    sigma2_a: float
    sigma2_b: float
    rounds_a: float
    rounds_b: float
    n_cases: int
    difference: float
    within_identified: bool

    def sample_size(
        self,
        delta: float,
        alpha: float = 0.05,
        power: float = 0.8,
        rounds_a: float | None = None,
        rounds_b: float | None = None,
    ) -> SampleSize:
        """:func:`sample_size_paired` with these inputs; rounds default to the pilot's."""
        return sample_size_paired(delta, *self._design(rounds_a, rounds_b), alpha, power)

    def min_detectable_effect(
        self,
        n: int | None = None,
        alpha: float = 0.05,
        power: float = 0.8,
        rounds_a: float | None = None,
        rounds_b: float | None = None,
    ) -> MinDetectableEffect:
        """:func:`min_detectable_effect` with these inputs; ``n`` and rounds default to the pilot's."""
        n = self.n_cases if n is None else n
        return min_detectable_effect(n, *self._design(rounds_a, rounds_b), alpha, power)

    def _design(
        self, rounds_a: float | None, rounds_b: float | None
    ) -> tuple[float, float, float, float, float]:
        """``omega2, sigma2_a, sigma2_b, rounds_a, rounds_b`` as the power functions take them, the
        rounds the pilot's unless given."""
        return (
            self.omega2,
            self.sigma2_a,
            self.sigma2_b,
            self.rounds_a if rounds_a is None else rounds_a,
            self.rounds_b if rounds_b is None else rounds_b,
        )


def estimate_power_inputs(a_by_case: Any, b_by_case: Any) -> PowerInputs:
    """Estimate ω², σ²_A, σ²_B and the rounds per case from a pilot of both arms on the same cases.

    σ² is the mean within-case sample variance over cases with at least two rounds. The per-case
    difference of means has variance ``ω² + σ²_A·mean(1/K_A) + σ²_B·mean(1/K_B)``, so ω² is the
    observed variance of the differences minus the round-noise terms (floored at 0).

    Args:
        a_by_case: Arm A: per-case lists of round scores (ragged allowed) or one score per case.
        b_by_case: Arm B: the same cases in the same order.

    Raises:
        UsageError: the arms have different numbers of cases, fewer than 2 cases, or bad scores.
    """
    arm_a, arm_b = paired_cases(
        a_by_case,
        b_by_case,
        ("a_by_case", "b_by_case"),
        "the pilot must score both arms on the same cases, in the same order",
    )
    n = arm_a.means.size
    if n < 2:
        raise UsageError(f"a pilot needs at least 2 cases to estimate variances; got {n}")
    d = arm_b.means - arm_a.means
    total = _std(d) ** 2
    sa, sb = within_variance(arm_a), within_variance(arm_b)
    identified = not (math.isnan(sa) or math.isnan(sb))
    sa, sb = (0.0 if math.isnan(sa) else sa), (0.0 if math.isnan(sb) else sb)
    noise = sa * float(np.mean(1.0 / arm_a.counts)) + sb * float(np.mean(1.0 / arm_b.counts))
    return PowerInputs(
        omega2=max(0.0, total - noise),
        sigma2_a=sa,
        sigma2_b=sb,
        rounds_a=harmonic_rounds(arm_a.counts),
        rounds_b=harmonic_rounds(arm_b.counts),
        n_cases=n,
        difference=float(d.mean()),
        within_identified=identified,
    )


RULE_OF_THUMB = "(z_α/2 + z_β)·√(2p(1−p)/n)"
"""The symmetric normal approximation of the smallest detectable change of a pass rate p with n cases per
arm (as n = (z_α/2 + z_β)²·2p(1−p)/δ² cases per arm): what evaluation-platform guides quote (16σ²/δ² at
80 % power and α = 0.05). Beside the exact figures, which differ from it in one way, said by `WHY_THEY_DIFFER`."""

WHY_THEY_DIFFER = (
    "the rule of thumb gives both arms the baseline's variance p(1−p), while the exact figure gives the changed "
    "arm its own and tests against the pooled variance, so it needs fewer cases for a change towards 0 % or "
    "100 % (less variance there) and more for a change towards 50 %"
)
"""One sentence: why `RULE_OF_THUMB` and the exact two-proportion figures differ."""


def rule_of_thumb_mde(n: int, p: float, alpha: float = 0.05, power: float = 0.8, ratio: float = 1.0) -> float:
    """`RULE_OF_THUMB`: ``(z_α/2 + z_β)·√(p(1−p)(1 + 1/ratio)/n)``, the same change up or down.

    Raises:
        UsageError: ``n`` < 1, or a rate, alpha, power or ratio out of range.
    """
    n, p = _check_n(n), check_probability(p, "p", "0.85")
    alpha, power = check_probability(alpha, "alpha", "0.05"), check_probability(power, "power", "0.8")
    return max(0.0, _z_sum(alpha, power)) * math.sqrt(p * (1.0 - p) * (1.0 + 1.0 / _ratio(ratio)) / n)


def rule_of_thumb_n(
    p: float, delta: float, alpha: float = 0.05, power: float = 0.8, ratio: float = 1.0
) -> float:
    """`RULE_OF_THUMB` solved for the cases of arm A: ``(z_α/2 + z_β)²·p(1−p)(1 + 1/ratio)/δ²`` (unrounded).

    Raises:
        UsageError: a rate, alpha, power or ratio out of range, or a zero change.
    """
    p = check_probability(p, "p", "0.85")
    alpha, power = check_probability(alpha, "alpha", "0.05"), check_probability(power, "power", "0.8")
    if not delta or not math.isfinite(delta):
        raise UsageError(f"delta must be a non-zero change of pass rate (e.g. 0.05); got {delta!r}")
    return max(0.0, _z_sum(alpha, power)) ** 2 * p * (1.0 - p) * (1.0 + 1.0 / _ratio(ratio)) / (delta * delta)


@dataclass(frozen=True)
class TwoProportionSampleSize(_Result):
    """Cases per arm needed to tell two independent pass rates apart.

    Attributes:
        n_a: Cases for arm A, rounded up.
        n_b: Cases for arm B (``ratio × n_a``, rounded up).
        n_exact: Unrounded cases for arm A.
        p_a: Arm A's pass rate.
        p_b: Arm B's pass rate.
        alpha: Two-sided significance level.
        power: Desired power.
        ratio: ``n_b / n_a``.
        n_rule_of_thumb: Cases for arm A by `RULE_OF_THUMB` (symmetric: the same for a rise or a fall),
            rounded up, shown beside the exact figure (see `WHY_THEY_DIFFER`).
    """

    n_a: int
    n_b: int
    n_exact: float
    p_a: float
    p_b: float
    alpha: float
    power: float
    ratio: float
    n_rule_of_thumb: int = 0


def _two_prop_n(p_a: float, p_b: float, alpha: float, power: float, ratio: float) -> float:
    # Normal approximation with the pooled variance under the null and the unpooled one under the
    # alternative; the same formula as R's power.prop.test and statsmodels'
    # samplesize_proportions_2indep_onetail (arm A is statsmodels' sample 1).
    pooled = (p_a + p_b * ratio) / (1.0 + ratio)
    std_null = math.sqrt(pooled * (1 - pooled) * (1.0 + 1.0 / ratio))
    std_alt = math.sqrt(p_a * (1 - p_a) + p_b * (1 - p_b) / ratio)
    crit = float(special.ndtri(1.0 - alpha / 2.0))
    z_power = float(special.ndtri(power))
    return (max(0.0, crit * std_null + z_power * std_alt) / (p_b - p_a)) ** 2


def _ratio(value: Any) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"ratio (n_b / n_a) must be a positive number; got {value!r}") from None
    if not math.isfinite(x) or x <= 0:
        raise UsageError(f"ratio (n_b / n_a) must be a positive number; got {value!r}")
    return x


def sample_size_two_proportions(
    p_a: float, p_b: float, alpha: float = 0.05, power: float = 0.8, ratio: float = 1.0
) -> TwoProportionSampleSize:
    """Cases per arm to detect pass rates ``p_a`` vs ``p_b`` measured on *different* cases.

    For two arms on the same cases use :func:`sample_size_paired`, which needs far fewer.

    Args:
        p_a: Arm A's expected pass rate.
        p_b: Arm B's expected pass rate (must differ from ``p_a``).
        alpha: Two-sided significance level.
        power: Desired power.
        ratio: ``n_b / n_a`` (1 for equal arms).

    Raises:
        UsageError: a rate is outside (0, 1), the rates are equal, or alpha/power/ratio are invalid.
    """
    p_a, p_b = check_probability(p_a, "p_a", "0.70"), check_probability(p_b, "p_b", "0.75")
    alpha, power = check_probability(alpha, "alpha", "0.05"), check_probability(power, "power", "0.8")
    ratio = _ratio(ratio)
    if p_a == p_b:
        raise UsageError(f"p_a and p_b are both {p_a}: give two different pass rates to tell apart")
    n_exact = _two_prop_n(p_a, p_b, alpha, power, ratio)
    n_a = max(1, math.ceil(n_exact - 1e-9))
    thumb = max(1, math.ceil(rule_of_thumb_n(p_a, p_b - p_a, alpha, power, ratio) - 1e-9))
    return TwoProportionSampleSize(
        n_a, max(1, math.ceil(n_exact * ratio - 1e-9)), n_exact, p_a, p_b, alpha, power, ratio, thumb
    )


@dataclass(frozen=True)
class TwoProportionMDE(_Result):
    """The smallest change from pass rate ``p_a`` that two independent arms of given sizes detect.

    Attributes:
        delta: Smallest detectable change (positive); NaN when no change in that direction is detectable.
        p_a: Arm A's pass rate.
        p_b: ``p_a ± delta``.
        n_a: Cases in arm A.
        n_b: Cases in arm B.
        alpha: Two-sided significance level.
        power: Desired power.
        direction: ``"increase"`` or ``"decrease"``.
        rule_of_thumb: `RULE_OF_THUMB` for the same arms (the same up or down), beside the exact `delta`
            (see `WHY_THEY_DIFFER`): 20.0 points for 50 cases at 85 %, where the exact figure is 14.7 up and
            24.7 down.
    """

    delta: float
    p_a: float
    p_b: float
    n_a: int
    n_b: float
    alpha: float
    power: float
    direction: str
    rule_of_thumb: float = math.nan


def min_detectable_effect_two_proportions(
    n: int,
    p_a: float,
    alpha: float = 0.05,
    power: float = 0.8,
    ratio: float = 1.0,
    direction: Literal["increase", "decrease"] = "increase",
) -> TwoProportionMDE:
    """The smallest change of pass rate from ``p_a`` that arms of ``n`` and ``ratio × n`` cases detect.

    Solves :func:`sample_size_two_proportions` for the difference (the variance depends on it, so there
    is no closed form): a rise and a fall of the same size are not equally easy to detect. Beside it,
    ``rule_of_thumb`` is the symmetric approximation `RULE_OF_THUMB`; `WHY_THEY_DIFFER` says why they
    differ.

    Args:
        n: Cases in arm A.
        p_a: Arm A's pass rate.
        alpha: Two-sided significance level.
        power: Desired power.
        ratio: ``n_b / n_a``.
        direction: Detect an ``"increase"`` (p_b > p_a) or a ``"decrease"``.

    Raises:
        UsageError: invalid ``n``, rate, alpha, power, ratio or direction.
    """
    n = _check_n(n)
    p_a = check_probability(p_a, "p_a", "0.70")
    alpha, power = check_probability(alpha, "alpha", "0.05"), check_probability(power, "power", "0.8")
    ratio = _ratio(ratio)
    if direction not in ("increase", "decrease"):
        raise UsageError(f"direction must be 'increase' or 'decrease'; got {direction!r}")
    sign = 1.0 if direction == "increase" else -1.0
    room = (1.0 - p_a) if sign > 0 else p_a
    hi = room * (1.0 - 1e-12)

    def excess(delta: float) -> float:
        return _two_prop_n(p_a, p_a + sign * delta, alpha, power, ratio) - n

    thumb = rule_of_thumb_mde(n, p_a, alpha, power, ratio)
    if excess(hi) > 0:
        return TwoProportionMDE(math.nan, p_a, math.nan, n, n * ratio, alpha, power, direction, thumb)
    delta = float(optimize.brentq(excess, 1e-12, hi, xtol=1e-12))
    return TwoProportionMDE(delta, p_a, p_a + sign * delta, n, n * ratio, alpha, power, direction, thumb)

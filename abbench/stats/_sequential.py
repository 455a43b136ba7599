"""Anytime-valid sequential monitoring: a confidence sequence for the paired difference of bounded outcomes."""

# A fixed-n interval is valid only at the one sample size fixed in advance; looking at it after every batch
# of cases and stopping when it excludes 0 ("peeking") makes false "better" verdicts far more common than
# its level says. A *confidence sequence* (CS) holds at every sample size at once,
# ``P(∀t: Δ ∈ CS_t) ≥ 1 − α``, so it may be looked at after every case and the experiment stopped whenever
# it decides, at any data-dependent time, without spending more than α.
#
# The construction is the predictable plug-in empirical-Bernstein CS (PrPl-EB) of Waudby-Smith & Ramdas,
# "Estimating means of bounded random variables by betting", JRSS-B 86(1), 2024 (arXiv:2010.09686),
# Theorem 2 and eq. (13)-(15), with the truncation λ ≤ 1/2 and the running intersection they recommend;
# it builds on the empirical-Bernstein supermartingale of Howard, Ramdas, McAuliffe & Sekhon,
# "Time-uniform, nonparametric, nonasymptotic confidence sequences", Annals of Statistics 49(2), 2021.
# It is the ``predmix_empbern_twosided_cs`` of the ``confseq`` package (Howard & Waudby-Smith), which the
# tests check it against. For observations ``x_i ∈ [0, 1]`` with conditional mean μ::
#
#     μ̂_t = (1/2 + Σ_{i≤t} x_i) / (t + 1)           σ̂²_t = (1/4 + Σ_{i≤t} (x_i − μ̂_i)²) / (t + 1)
#     λ_t = min(1/2, √(2 log(2/α) / (t log(1 + t) σ̂²_{t−1})))
#     v_t = (x_t − x̄_{t−1})²  (x̄ the plain running mean, x̄_0 = 0)     ψ(λ) = −log(1 − λ) − λ
#     CS_t = Σλ_i x_i / Σλ_i ± (log(2/α) + Σ v_i ψ(λ_i)) / Σλ_i   (the upper side from 1 − x)
#
# A case's paired difference ``d = b − a`` of per-case pass rates (or [0, 1] scores) lies in [−1, 1]; the
# CS is built for ``x = (d + 1) / 2`` and mapped back, ``Δ = 2μ − 1``. The anytime-valid p-value against
# Δ = 0 is ``min(1, 2 / sup_{s≤t} max(M⁺_s, M⁻_s))``, where ``M^±`` are the two one-sided test
# supermartingales behind the CS at μ = 1/2; it is at most α exactly when the running-intersection CS
# excludes 0, and ``P(p_τ ≤ α) ≤ α`` at any stopping time τ (Ville's inequality).
#
# Cases must be fed in an order fixed before their outcomes are seen (`sequential_order`): the runner runs
# them in a seeded random order and feeds the longest finished prefix of it.

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from abbench.errors import UsageError
from abbench.stats._base import Interval, _Result, check_probability

CS_METHOD = (
    "anytime-valid confidence sequence (predictable plug-in empirical Bernstein, Waudby-Smith & Ramdas 2024)"
)
"""How a sequential result names its method in notes and exports."""
TRUNCATION = 0.5
"""The largest bet λ (Waudby-Smith & Ramdas's recommended truncation)."""
DECISIONS = ("better", "worse", "equivalent", "undecided")
"""What the stopping rule can conclude at a look: B better, B worse, within ±margin, or not yet."""


@dataclass(frozen=True)
class ConfidenceSequence(_Result):
    """Where an anytime-valid confidence sequence for the paired difference B − A stands after `n` cases.

    Attributes:
        n: Cases fed so far.
        difference: The plain mean of the per-case differences (the point estimate).
        interval: The confidence sequence at `n` (running intersection): valid at every n at once.
        p_value: The anytime-valid two-sided p-value against no difference.
        alpha: The level the sequence was built for (coverage 1 − alpha).
        method: `CS_METHOD`.
    """

    n: int
    difference: float
    interval: Interval
    p_value: float
    alpha: float
    method: str = CS_METHOD

    def decide(self, margin: float) -> str:
        """``better`` / ``worse`` (the sequence excludes 0), ``equivalent`` (it lies inside ±margin), or
        ``undecided``."""
        iv = self.interval
        if iv.low > 0:
            return "better"
        if iv.high < 0:
            return "worse"
        if -margin < iv.low and iv.high < margin:
            return "equivalent"
        return "undecided"


def _check_alpha(alpha: Any) -> float:
    return check_probability(alpha, "alpha", "0.05")


def _as_unit(values: Any, name: str) -> np.ndarray:
    try:
        x = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be numbers in [0, 1], one per case") from None
    bad = ~np.isfinite(x) | (x < 0) | (x > 1)
    if bad.any():
        i = np.unravel_index(int(np.flatnonzero(bad)[0]), x.shape)
        raise UsageError(
            f"{name}[{', '.join(map(str, i))}] = {float(x[i])!r}: every per-case value must lie in [0, 1]"
        )
    return x


@dataclass
class _State:
    """Running sums of one sequence (or of many, one per row), carried from batch to batch."""

    n: int
    sum_x: Any  # Σ x
    sum_sq: Any  # Σ (x_i − μ̂_i)², μ̂ regularised towards 1/2
    sum_l: Any  # Σ λ
    sum_lx: Any  # Σ λ x
    vpsi_low: Any  # Σ (x_i − x̄_{i−1})² ψ(λ_i), x̄_0 = 0: the lower bound's
    vpsi_high: Any  # the same for 1 − x: the upper bound's (only its first term differs)
    low: Any  # running intersection, in x units
    high: Any
    capital: Any  # sup_s max(log M⁺_s, log M⁻_s) at μ = 1/2

    @classmethod
    def empty(cls, shape: tuple[int, ...] = ()) -> _State:
        zero = np.zeros(shape)
        return cls(
            0, zero, zero, zero, zero, zero, zero, np.full(shape, -np.inf), np.full(shape, np.inf), zero
        )


def _step(x: np.ndarray, s: _State, log: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, _State]:
    """Feed `x` (cases along the last axis) after state `s`: the bounds and log capital after each case.

    As confseq's ``predmix_empbern_twosided_cs`` (``running_intersection=True``): λ from the regularised
    mean and variance (one fake observation at 1/2 and 1/4), the variance increments from the plain
    running mean, each side at α/2 (``log = log(2/α)``), the upper bound as 1 − the lower bound of 1 − x.
    """
    k = x.shape[-1]
    t = s.n + np.arange(1, k + 1, dtype=float)
    sum_x = s.sum_x[..., None] + np.cumsum(x, axis=-1)
    mu = (0.5 + sum_x) / (t + 1)
    sq = s.sum_sq[..., None] + np.cumsum((x - mu) ** 2, axis=-1)
    sigma2 = (0.25 + sq) / (t + 1)
    sigma2_prev = np.concatenate((((0.25 + s.sum_sq) / (s.n + 1))[..., None], sigma2[..., :-1]), axis=-1)
    lam = np.minimum(TRUNCATION, np.sqrt(2 * log / (t * np.log1p(t) * sigma2_prev)))
    psi = -np.log1p(-lam) - lam
    mean_prev = np.concatenate(((s.sum_x / max(s.n, 1))[..., None], (sum_x / t)[..., :-1]), axis=-1)
    v_low = (x - mean_prev) ** 2
    v_high = v_low.copy()
    if s.n == 0:  # x̄_0 = 0 on both sides: the first increment is x₁² below and (1 − x₁)² above
        v_high[..., 0] = (1 - x[..., 0]) ** 2
    sum_l = s.sum_l[..., None] + np.cumsum(lam, axis=-1)
    sum_lx = s.sum_lx[..., None] + np.cumsum(lam * x, axis=-1)
    vpsi_low = s.vpsi_low[..., None] + np.cumsum(v_low * psi, axis=-1)
    vpsi_high = s.vpsi_high[..., None] + np.cumsum(v_high * psi, axis=-1)
    center = sum_lx / sum_l
    low = np.maximum(np.maximum.accumulate(center - (log + vpsi_low) / sum_l, axis=-1), s.low[..., None])
    high = np.minimum(np.minimum.accumulate(center + (log + vpsi_high) / sum_l, axis=-1), s.high[..., None])
    drift = sum_lx - 0.5 * sum_l
    capital = np.maximum(
        np.maximum.accumulate(np.maximum(drift - vpsi_low, -drift - vpsi_high), axis=-1), s.capital[..., None]
    )
    state = _State(
        s.n + k, sum_x[..., -1], sq[..., -1], sum_l[..., -1], sum_lx[..., -1], vpsi_low[..., -1],
        vpsi_high[..., -1], low[..., -1], high[..., -1], capital[..., -1],
    )  # fmt: skip
    return np.maximum(low, 0.0), np.minimum(high, 1.0), capital, state


_SCALAR_MAX = 256
"""Batches up to this size are fed case by case in plain floats: numpy's per-call cost dominates them."""


def _scalar_step(xs: list[float], s: _State, log: float) -> _State:
    """`_step` for one sequence, case by case (the same sums in the same order)."""
    n, sum_x, sum_sq = s.n, float(s.sum_x), float(s.sum_sq)
    sum_l, sum_lx, vpsi_low, vpsi_high = (
        float(s.sum_l),
        float(s.sum_lx),
        float(s.vpsi_low),
        float(s.vpsi_high),
    )
    low, high, capital = float(s.low), float(s.high), float(s.capital)
    sqrt, log1p, two_log = math.sqrt, math.log1p, 2 * log
    for x in xs:
        sigma2_prev = (0.25 + sum_sq) / (n + 1)
        mean_prev = sum_x / n if n else 0.0
        n += 1
        lam = sqrt(two_log / (n * log1p(n) * sigma2_prev))
        if lam > TRUNCATION:
            lam = TRUNCATION
        psi = -log1p(-lam) - lam
        sum_x += x
        d = x - (0.5 + sum_x) / (n + 1)
        sum_sq += d * d
        v = (x - mean_prev) * (x - mean_prev)
        sum_l += lam
        sum_lx += lam * x
        vpsi_low += v * psi
        vpsi_high += ((1 - x) * (1 - x) if n == 1 else v) * psi
        center = sum_lx / sum_l
        bound = center - (log + vpsi_low) / sum_l
        if bound > low:
            low = bound
        bound = center + (log + vpsi_high) / sum_l
        if bound < high:
            high = bound
        drift = sum_lx - 0.5 * sum_l
        if drift - vpsi_low > capital:
            capital = drift - vpsi_low
        if -drift - vpsi_high > capital:
            capital = -drift - vpsi_high
    return _State(n, sum_x, sum_sq, sum_l, sum_lx, vpsi_low, vpsi_high, low, high, capital)


def _fast_unit(values: Any, name: str) -> np.ndarray:
    """`_as_unit` for the runner's small batches: two reductions when every value is in range."""
    x = np.asarray(values, dtype=float).ravel()
    if x.size and not (x.min() >= 0.0 and x.max() <= 1.0):  # NaN fails both comparisons
        return _as_unit(x, name)
    return x


class SequentialTest:
    """A confidence sequence updated batch by batch, keeping only running sums (O(batch) per update).

    Args:
        alpha: 1 − the coverage of the sequence (e.g. 0.05).

    Example::

        test = SequentialTest(alpha=0.05)
        for a_batch, b_batch in batches:          # per-case pass rates, in a pre-registered order
            cs = test.update(a_batch, b_batch)
            if cs.decide(margin=0.02) != "undecided":
                break
    """

    def __init__(self, alpha: float = 0.05) -> None:
        self.alpha = _check_alpha(alpha)
        self._log = math.log(2.0 / self.alpha)
        self._state = _State.empty()

    @property
    def n(self) -> int:
        """Cases fed so far."""
        return self._state.n

    def update(self, a: Any, b: Any) -> ConfidenceSequence:
        """Feed the next cases (A's and B's per-case values in [0, 1], in order) and return the sequence."""
        xa, xb = _fast_unit(a, "a"), _fast_unit(b, "b")
        if xa.size != xb.size:
            raise UsageError(
                f"length mismatch: a has {xa.size} cases and b has {xb.size}; pair them case by case"
            )
        x = (xb - xa + 1.0) / 2.0
        if x.size > _SCALAR_MAX:
            self._state = _step(x, self._state, self._log)[3]
        elif x.size:
            self._state = _scalar_step(x.tolist(), self._state, self._log)
        return self.result()

    def result(self) -> ConfidenceSequence:
        """The sequence now (before any case: the whole range [−1, 1] with p = 1)."""
        s = self._state
        low, high = max(0.0, float(s.low)), min(1.0, float(s.high))
        if low > high:  # the running intersection crossed: report the point where it closed
            low = high = (low + high) / 2
        diff = 2 * float(s.sum_x) / s.n - 1 if s.n else 0.0
        p = min(1.0, 2.0 * math.exp(-float(s.capital)))
        return ConfidenceSequence(
            s.n, diff, Interval(2 * low - 1, 2 * high - 1, 1 - self.alpha), p, self.alpha
        )


def confidence_sequence(a: Any, b: Any, *, alpha: float = 0.05) -> ConfidenceSequence:
    """The anytime-valid confidence sequence for B − A after all the cases given (in their order).

    Args:
        a: Arm A's per-case values in [0, 1] (pass rates over rounds, or bounded scores), in the order
            the cases were run.
        b: Arm B's, case by case.
        alpha: 1 − coverage.

    Raises:
        UsageError: a value outside [0, 1], NaN, or a length mismatch.
    """
    return SequentialTest(alpha).update(a, b)


def confidence_sequence_bounds(
    a: Any, b: Any, *, alpha: float = 0.05
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The sequence's lower and upper bounds for B − A and its anytime p-value after each case.

    `a` and `b` may be 2-D (simulations × cases): each row is its own sequence.

    Raises:
        UsageError: a value outside [0, 1], NaN, or a shape mismatch.
    """
    xa, xb = _as_unit(a, "a"), _as_unit(b, "b")
    if xa.shape != xb.shape:
        raise UsageError(f"shape mismatch: a is {xa.shape} and b is {xb.shape}; pair them case by case")
    alpha = _check_alpha(alpha)
    low, high, capital, _ = _step((xb - xa + 1.0) / 2.0, _State.empty(xa.shape[:-1]), math.log(2.0 / alpha))
    return 2 * low - 1, 2 * high - 1, np.minimum(1.0, 2.0 * np.exp(-capital))


def sequential_order(case_indices: Any, seed: int) -> np.ndarray:
    """The seeded random order sequential monitoring runs and feeds the cases in (a permutation of them).

    The same cases and seed always give the same order, so the runner and every later analysis agree.

    Raises:
        ValueError: a case index that is not a whole number.
    """
    cases = np.unique(np.asarray(case_indices, dtype=np.int64))
    order: np.ndarray = np.random.default_rng([int(seed), 0x5E9]).permutation(cases)
    return order


@dataclass(frozen=True)
class StoppingRule(_Result):
    """When a sequentially monitored experiment stops (``stopping: {rule: decided, ...}``).

    Attributes:
        alpha: 1 − coverage of the confidence sequence.
        margin: Stop as ``equivalent`` when the sequence lies inside ±margin.
        min_cases: Never stop before this many finished cases.
        check_every: Look after every this many finished cases (and at the last case).
    """

    alpha: float = 0.05
    margin: float = 0.02
    min_cases: int = 50
    check_every: int = 20

    def looks(self, n: int, total: int) -> bool:
        """Whether the rule looks after `n` of `total` cases."""
        return n >= total or (n >= self.min_cases and n % self.check_every == 0)

    def decide(self, cs: ConfidenceSequence, total: int) -> str | None:
        """The decision at a look: one of `DECISIONS` (``undecided`` at the last case), or None to go on."""
        if not self.looks(cs.n, total):
            return None
        decision = cs.decide(self.margin)
        if decision == "undecided" and cs.n < total:
            return None
        return decision


@dataclass(frozen=True)
class StoppingSimulation(_Result):
    """Where simulated sequential experiments stopped (`simulate_stopping`).

    Attributes:
        stopped_at: Cases run when each experiment stopped.
        decision: Its decision (one of `DECISIONS`; ``undecided`` at the last case).
    """

    stopped_at: np.ndarray
    decision: np.ndarray

    def rate(self, *decisions: str) -> float:
        """The share of experiments that ended with one of `decisions`."""
        return float(np.isin(self.decision, decisions).mean())


def simulate_stopping(a: Any, b: Any, rule: StoppingRule) -> StoppingSimulation:
    """Apply `rule` to many experiments at once: rows of `a` and `b` are experiments, columns cases in order.

    Vectorised over the rows (1,000 experiments of 2,000 cases take a few seconds), with the same
    bounds as `SequentialTest`.

    Raises:
        UsageError: a value outside [0, 1], NaN, or a shape mismatch.
    """
    xa, xb = _as_unit(np.atleast_2d(a), "a"), _as_unit(np.atleast_2d(b), "b")
    if xa.shape != xb.shape:
        raise UsageError(f"shape mismatch: a is {xa.shape} and b is {xb.shape}; pair them case by case")
    low, high, _ = confidence_sequence_bounds(xa, xb, alpha=rule.alpha)
    total = xa.shape[1]
    looks = np.array([rule.looks(n, total) for n in range(1, total + 1)])
    m = rule.margin
    code = np.where(low > 0, 1, np.where(high < 0, 2, np.where((low > -m) & (high < m), 3, 0)))
    code[:, ~looks] = 0
    decided = code > 0
    first = np.where(decided.any(axis=1), decided.argmax(axis=1), total - 1)
    final = code[np.arange(code.shape[0]), first]
    words = np.asarray(["undecided", "better", "worse", "equivalent"], dtype=object)
    return StoppingSimulation(first + 1, words[final])

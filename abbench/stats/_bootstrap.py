"""The paired bootstrap for continuous metrics (judge score, cost, latency, tokens), vectorised with numpy."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from abbench.errors import UnknownName, UsageError
from abbench.stats._base import Interval, _Result, check_confidence, z_value
from abbench.stats._errors import paired_cases

BOOTSTRAP_STATISTICS = ("mean", "median", "p90", "p95", "p99")
"""Statistics the paired bootstrap resamples; ``pNN`` is the NN-th percentile."""

_CHUNK_ELEMENTS = 1 << 18  # indices drawn per step: small enough to stay in cache, large enough to amortise
_BLOCKS = 16  # fixed streams of iterations, so a seed gives the same answer with any number of threads
_TIES_LIMIT = 1024  # at most this many distinct differences: resample exact multinomial counts instead


@dataclass(frozen=True)
class BootstrapResult(_Result):
    """A paired bootstrap of ``statistic(b) − statistic(a)`` over cases.

    Attributes:
        statistic: What was compared: ``"mean"``, ``"median"`` or ``"pNN"``.
        estimate: ``statistic(b) − statistic(a)`` on the data (positive: arm B is higher).
        value_a: ``statistic(a)``.
        value_b: ``statistic(b)``.
        se: Standard deviation of the bootstrap replicates.
        interval: Percentile interval of the replicates.
        bca_interval: Bias-corrected and accelerated interval (Efron 1987) for the mean; None for
            percentiles, or when every replicate falls on one side of the estimate.
        p_value: Two-sided bootstrap p-value against no difference: twice the smaller share of replicates
            at or beyond 0 on either side (resolution 1/iterations: 0.0 means below that; 1.0 when
            every replicate is 0).
        bias: Mean of the replicates minus the estimate.
        n: Cases.
        iterations: Bootstrap replicates drawn.
        seed: The seed; the same seed and data give the same result.
        replicates: The replicates themselves (for histograms); left out of ``as_dict()``.
    """

    statistic: str
    estimate: float
    value_a: float
    value_b: float
    se: float
    interval: Interval
    bca_interval: Interval | None
    p_value: float
    bias: float
    n: int
    iterations: int
    seed: int
    replicates: np.ndarray = field(repr=False, compare=False, metadata={"export": False})


def _statistic_fn(statistic: str) -> Callable[..., Any]:
    if statistic == "mean":
        return lambda x, axis=None: np.mean(x, axis=axis)
    q = 0.5 if statistic == "median" else None
    match = re.fullmatch(r"p(\d{1,2})", statistic)
    if statistic in BOOTSTRAP_STATISTICS and match:
        q = int(match.group(1)) / 100.0
    if q is None:
        raise UnknownName("statistic", statistic, BOOTSTRAP_STATISTICS)
    return lambda x, axis=None: np.quantile(x, q, axis=axis)


def _uniform_indices(
    bitgen: np.random.BitGenerator, generator: np.random.Generator, n: int, size: int
) -> np.ndarray:
    """``size`` exactly uniform draws from [0, n), from raw 32-bit words.

    Each word w maps to ``w // q`` with ``q = 2³² // n``, so every index has exactly q preimages; the
    few words past ``n·q`` (probability below n / 2³²) are redrawn with ``Generator.integers``. Raw words
    in bulk plus numpy's divide-by-constant are several times faster than ``Generator.integers`` for a
    billion draws, which is what 10,000 iterations over 100,000 cases need.
    """
    if n == 1:
        return np.zeros(size, dtype=np.intp)
    words = bitgen.random_raw((size + 1) // 2).view(np.uint32)[:size]
    indices = words // np.uint32((1 << 32) // n)
    outside = np.flatnonzero(indices >= n)
    if outside.size:
        indices[outside] = generator.integers(0, n, size=outside.size)
    # np.take wants native-width indices; converting here is cheaper than letting it convert.
    return indices.astype(np.intp)


def _block_replicates(
    seed: np.random.SeedSequence, iterations: int, reduce: Callable[[np.ndarray], np.ndarray], n: int
) -> np.ndarray:
    bitgen = np.random.PCG64(seed)
    generator = np.random.Generator(bitgen)
    per_step = max(1, _CHUNK_ELEMENTS // n)
    out = np.empty(iterations)
    for start in range(0, iterations, per_step):
        rows = min(per_step, iterations - start)
        indices = _uniform_indices(bitgen, generator, n, rows * n).reshape(rows, n)
        out[start : start + rows] = reduce(indices)
    return out


def _resample(seed: int, iterations: int, n: int, reduce: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """Replicates ``reduce(indices)`` over resampled case indices, in fixed blocks run on a few threads."""
    blocks = min(_BLOCKS, iterations)
    sizes = [iterations // blocks + (1 if i < iterations % blocks else 0) for i in range(blocks)]
    seeds = np.random.SeedSequence(seed).spawn(blocks)
    workers = max(1, min(2, os.cpu_count() or 1, blocks))
    # numpy releases the GIL while drawing bits and gathering, so threads use a second core.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        parts = list(
            pool.map(
                lambda args: _block_replicates(args[0], args[1], reduce, n), zip(seeds, sizes, strict=True)
            )
        )
    return np.concatenate(parts)


def _mean_from_ties(seed: int, iterations: int, d: np.ndarray) -> np.ndarray | None:
    """Exact resampled means when the differences take few distinct values (pass/fail, few rounds).

    Resampling n cases is the same as drawing multinomial counts over the distinct values, which costs
    O(distinct values) per replicate instead of O(n).
    """
    values, counts = np.unique(d, return_counts=True)
    if values.size > _TIES_LIMIT:
        return None
    generator = np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed).spawn(1)[0]))
    draws = generator.multinomial(d.size, counts / d.size, size=iterations)
    means: np.ndarray = (draws @ values) / d.size
    return means


def _bca(replicates: np.ndarray, estimate: float, d: np.ndarray, confidence: float) -> Interval | None:
    # Jackknife of the mean in closed form: leaving case i out gives (S - d_i) / (n - 1).
    n = d.size
    if n < 3:
        return None
    jack = (d.sum() - d) / (n - 1)
    dev = jack.mean() - jack
    denominator = 6.0 * float(np.sum(dev * dev)) ** 1.5
    acceleration = float(np.sum(dev**3)) / denominator if denominator > 0 else 0.0
    below = (np.count_nonzero(replicates < estimate) + 0.5 * np.count_nonzero(replicates == estimate)) / len(
        replicates
    )
    if below <= 0.0 or below >= 1.0:
        return None
    z0 = float(special.ndtri(below))
    z = z_value(confidence)
    quantiles = []
    for zq in (-z, z):
        shifted = z0 + zq
        quantiles.append(float(special.ndtr(z0 + shifted / (1.0 - acceleration * shifted))))
    low, high = np.quantile(replicates, quantiles)
    return Interval(float(low), float(high), confidence)


def paired_bootstrap(
    a: Any,
    b: Any,
    iterations: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
    statistic: str = "mean",
) -> BootstrapResult:
    """Bootstrap ``statistic(b) − statistic(a)`` by resampling cases, keeping each case's pair together.

    For metrics with no convenient formula or skewed distributions (cost, latency, tokens, judge scores):
    cases are drawn with replacement, both arms' values of a drawn case come along, and the statistic's
    difference is recomputed per replicate. Resampling is vectorised: no Python loop over iterations;
    memory stays bounded by drawing a few hundred thousand indices at a time, so 100,000 cases × 10,000
    iterations fits in a few MB. When ``a``/``b`` hold per-case round lists, per-case means are
    bootstrapped.

    Args:
        a: Arm A's value per case (or per-case lists of round values).
        b: Arm B's value per case, same cases in the same order.
        iterations: Replicates to draw (≥ 100 for an interval worth reading; 10,000 is the default).
        seed: Seed for the random generator; the result is a function of data, seed and iterations.
        confidence: Coverage of the intervals.
        statistic: ``"mean"`` (default), ``"median"``, ``"p90"``, ``"p95"`` or ``"p99"``.

    Raises:
        UsageError: the arms differ in length, input is empty or holds NaN/None/text, an unknown
            statistic, or fewer than 100 iterations.
    """
    confidence = check_confidence(confidence)
    reduce_one = _statistic_fn(statistic)
    if isinstance(iterations, bool) or not isinstance(iterations, int | np.integer) or iterations < 100:
        raise UsageError(f"iterations must be a whole number ≥ 100 (10,000 is usual); got {iterations!r}")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise UsageError(f"seed must be a whole number ≥ 0; got {seed!r}")
    iterations, seed = int(iterations), int(seed)
    arm_a, arm_b = paired_cases(
        a, b, ("a", "b"), "a paired bootstrap needs both arms measured on the same cases, in the same order"
    )
    x, y = arm_a.means, arm_b.means
    n = x.size
    value_a, value_b = float(reduce_one(x)), float(reduce_one(y))
    estimate = value_b - value_a
    if statistic == "mean":
        d = y - x
        replicates = _mean_from_ties(seed, iterations, d)
        if replicates is None:
            replicates = _resample(seed, iterations, n, lambda idx: np.take(d, idx).mean(axis=1))
    else:
        replicates = _resample(
            seed,
            iterations,
            n,
            lambda idx: reduce_one(np.take(y, idx), axis=1) - reduce_one(np.take(x, idx), axis=1),
        )
    alpha = 1.0 - confidence
    low, high = np.quantile(replicates, [alpha / 2.0, 1.0 - alpha / 2.0])
    at_most_zero = np.count_nonzero(replicates <= 0) / iterations
    at_least_zero = np.count_nonzero(replicates >= 0) / iterations
    p_value = min(1.0, 2.0 * min(at_most_zero, at_least_zero))
    return BootstrapResult(
        statistic=statistic,
        estimate=estimate,
        value_a=value_a,
        value_b=value_b,
        se=float(np.std(replicates, ddof=1)),
        interval=Interval(float(low), float(high), confidence),
        bca_interval=_bca(replicates, estimate, y - x, confidence) if statistic == "mean" else None,
        p_value=p_value,
        bias=float(replicates.mean()) - estimate,
        n=n,
        iterations=iterations,
        seed=seed,
        replicates=replicates,
    )

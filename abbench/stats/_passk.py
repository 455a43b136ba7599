"""pass@k and pass^k: the chance that at least one, or all, of k attempts at a case are right."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from abbench.errors import UsageError
from abbench.stats._base import Interval, _Result, check_confidence, critical_value
from abbench.stats._intervals import wilson_interval


def _counts(passed: Any, attempts: Any) -> tuple[np.ndarray, np.ndarray]:
    try:
        c = np.asarray(passed, dtype=float).ravel()
        n = np.asarray(attempts, dtype=float).ravel()
    except (TypeError, ValueError):
        raise UsageError("passed and attempts must be sequences of whole numbers, one per case") from None
    if c.size != n.size:
        raise UsageError(
            f"length mismatch: passed has {c.size} cases and attempts has {n.size}; give one of each per case"
        )
    bad = ~np.isfinite(c) | ~np.isfinite(n) | (c != np.round(c)) | (n != np.round(n)) | (c < 0) | (c > n)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise UsageError(
            f"case {i}: passed={passed[i]!r}, attempts={attempts[i]!r}; "
            "both must be whole numbers with 0 ≤ passed ≤ attempts"
        )
    return c.astype(np.int64), n.astype(np.int64)


def _check_k(k: Any) -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise UsageError(f"k must be a whole number of attempts ≥ 1; got {k!r}")
    return int(k)


def _draws(n: Any, c: Any, k: Any, figure: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Attempts and passes as integer arrays with a trailing axis, and ``j = 0 … k−1`` along it: the
    factors of the products over a k-subset's draws. Refuses a case with fewer than ``k`` attempts
    (`figure`, ``pass@`` or ``pass^``, names the estimate)."""
    n, c, k = np.asarray(n, dtype=np.int64), np.asarray(c, dtype=np.int64), _check_k(k)
    if np.any(n < k):
        raise UsageError(f"{figure}{k} needs at least {k} attempts per case; a case has {int(n.min())}")
    return n[..., None], c[..., None], np.arange(k)


def pass_at_k_case(n: Any, c: Any, k: int) -> np.ndarray:
    """The unbiased pass@k of each case: ``1 − C(n−c, k) / C(n, k)``.

    Chen et al. 2021, "Evaluating Large Language Models Trained on Code" (arXiv:2107.03374), eq. 1: the
    chance that a k-subset of the case's n attempts, drawn without replacement, holds at least one pass.
    Its expectation is exactly ``1 − (1 − p)^k`` for a case passed with probability p, whereas the
    plug-in ``1 − (1 − c/n)^k`` is biased low. Computed as Chen et al.'s stable product,
    ``1 − ∏_{i=n−c+1}^{n} (1 − k/i)``.

    Raises:
        UsageError: a case has fewer than ``k`` attempts, or ``k`` < 1.
    """
    n, c, j = _draws(n, c, k, "pass@")
    # C(n−c, k)/C(n, k) = ∏_{j=0}^{k−1} (n−c−j)/(n−j): zero as soon as n − c < k.
    fail: np.ndarray = np.prod(np.clip(n - c - j, 0, None) / (n - j), axis=-1)
    return 1.0 - fail


def pass_hat_k_case(n: Any, c: Any, k: int) -> np.ndarray:
    """The unbiased pass^k of each case: ``C(c, k) / C(n, k)``.

    Yao et al. 2024, "τ-bench: A Benchmark for Tool-Agent-User Interaction in Real-World Domains"
    (arXiv:2406.12045), §5: the chance that a k-subset of the case's attempts passes every time. Its
    expectation is exactly ``p^k``; the plug-in ``(c/n)^k`` is biased high (Jensen).

    Raises:
        UsageError: a case has fewer than ``k`` attempts, or ``k`` < 1.
    """
    n, c, j = _draws(n, c, k, "pass^")
    all_right: np.ndarray = np.prod(np.clip(c - j, 0, None) / (n - j), axis=-1)
    return all_right


@dataclass(frozen=True)
class PassK(_Result):
    """pass@k and pass^k of one arm at one k, averaged over cases.

    Attributes:
        k: Attempts per case the figures are about.
        pass_at_k: Mean over cases of the unbiased chance that at least one of k attempts passes.
        pass_at_k_interval: Its t-interval over cases, clipped to [0, 1]; Wilson's over the cases when
            they have no spread (one case, or every case the same estimate), never a point.
        pass_hat_k: Mean over cases of the unbiased chance that all k attempts pass.
        pass_hat_k_interval: Its interval, as `pass_at_k_interval`.
        n_cases: Cases with at least k attempts (the ones averaged): on how many cases the figure rests.
        n_short: Cases left out because they have fewer than k attempts (and at least one).
    """

    k: int
    pass_at_k: float
    pass_at_k_interval: Interval
    pass_hat_k: float
    pass_hat_k_interval: Interval
    n_cases: int
    n_short: int


def _mean_interval(values: np.ndarray, confidence: float) -> tuple[float, Interval]:
    """The mean of per-case estimates and its t interval over cases — or, with one case or no spread
    between cases (every case passed every time, say), Wilson's on the cases, each counted once: a t
    interval there is a point, and certainty is what one or a few identical cases do not give."""
    m = values.size
    mean = float(values.mean())
    sd = float(values.std(ddof=1)) if m > 1 else 0.0
    if m < 2 or not sd > 0:
        return mean, wilson_interval(round(mean * m), m, confidence)
    half = critical_value(confidence, "t", m - 1) * sd / math.sqrt(m)
    return mean, Interval(max(0.0, mean - half), min(1.0, mean + half), confidence)


def pass_at_k(passed: Any, attempts: Any, k: int, confidence: float = 0.95) -> PassK:
    """pass@k and pass^k over cases, from each case's passes and attempts.

    Each case uses its own number of attempts ``n``: a case with ``n ≥ k`` gives the unbiased per-case
    estimates (:func:`pass_at_k_case`, :func:`pass_hat_k_case`); a case with ``0 < n < k`` cannot say
    anything about k attempts and is left out, counted in ``n_short``; cases with no attempt are ignored.

    The intervals are Student-t intervals over cases, clipped to [0, 1]: the per-case estimates are
    independent and bounded, and their mean is what is reported (Miller 2024, "Adding Error Bars to
    Evals", §2). A t-interval rather than a bootstrap over cases because it needs no seed, agrees with
    the package's other intervals over cases, and with few cases is wider than the normal one, as it
    should be. With one case, or no spread between the cases' estimates (all 1 or all 0, typically), a
    t-interval is a point: Wilson's interval over the cases (each case counted once) stands in.

    Args:
        passed: Passes per case (c).
        attempts: Attempts per case (n); a run that failed to execute is an attempt that did not pass.
        k: Attempts the figures are about (1 gives the plain pass rate twice).
        confidence: Coverage of the intervals over cases.

    Raises:
        UsageError: mismatched lengths, counts that are not whole numbers with 0 ≤ c ≤ n, k < 1, or no
            case with at least k attempts.

    Example:
        >>> r = pass_at_k([1, 2, 0], [3, 3, 3], k=2)
        >>> round(r.pass_at_k, 4), round(r.pass_hat_k, 4)
        (0.5556, 0.1111)
    """
    confidence = check_confidence(confidence)
    k = _check_k(k)
    c, n = _counts(passed, attempts)
    enough = n >= k
    short = int(((n > 0) & ~enough).sum())
    if not enough.any():
        most = int(n.max()) if n.size else 0
        raise UsageError(
            f"pass@{k}: no case has {k} attempts (the most any case has is {most}); use k ≤ {most}"
        )
    at, hat = (_by_pair(per_case, n[enough], c[enough], k) for per_case in (pass_at_k_case, pass_hat_k_case))
    m_at, i_at = _mean_interval(at, confidence)
    m_hat, i_hat = _mean_interval(hat, confidence)
    return PassK(k, m_at, i_at, m_hat, i_hat, int(enough.sum()), short)


def _by_pair(per_case: Any, n: np.ndarray, c: np.ndarray, k: int) -> np.ndarray:
    """`per_case(n, c, k)`, each distinct (n, c) worked out once: a case's figure depends on its pair
    alone, and a hundred thousand cases of a few rounds share a few pairs (the same numbers, a
    fraction of the time). With many distinct attempt counts, case by case."""
    width = int(n.max()) + 1
    if width * width > n.size:
        result: np.ndarray = per_case(n, c, k)
        return result
    attempts, passes = np.divmod(np.arange(width * width, dtype=np.int64), width)
    valid = (passes <= attempts) & (attempts >= k)
    table = np.zeros(width * width)
    table[valid] = per_case(attempts[valid], passes[valid], k)
    found: np.ndarray = table[n * width + c]
    return found


def pass_at_k_curve(passed: Any, attempts: Any, confidence: float = 0.95) -> tuple[PassK, ...]:
    """:func:`pass_at_k` for k = 1 .. the most attempts any case has (an empty tuple with no attempt).

    Raises:
        UsageError: as for :func:`pass_at_k`.
    """
    _, n = _counts(passed, attempts)
    top = int(n.max()) if n.size else 0
    return tuple(pass_at_k(passed, attempts, k, confidence) for k in range(1, top + 1))

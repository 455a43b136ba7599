"""What every analysis result shares: JSON-ready ``as_dict()``, per-case grouping, estimates with intervals."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from abbench._result import Result
from abbench.errors import UsageError
from abbench.stats import (
    FewClustersWarning,
    Interval,
    clustered_se,
    exact_means,
    repeated_se,
    wilson_interval,
)


def check_level(confidence: Any, name: str = "confidence", example: str = "0.95") -> float:
    """`confidence` as a float strictly between 0 and 1, or a UsageError saying what is wanted."""
    try:
        value = float(confidence)
    except (TypeError, ValueError):
        value = math.nan
    if isinstance(confidence, bool) or not 0.0 < value < 1.0:
        raise UsageError(
            f"{name} must be a number strictly between 0 and 1 (e.g. {example}); got {confidence!r}"
        )
    return value


def finite(value: Any) -> float | None:
    """`value` as a float, or None when it is missing, NaN or infinite."""
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


@dataclass(frozen=True)
class Estimate(Result):
    """A mean over cases (a pass rate or a mean score) with its interval.

    With one value per case and pass/fail outcomes the interval is Wilson's; with several rounds per
    case the per-case means come first and the standard error is taken over cases (Miller 2024, §3);
    with clusters it is the CR1 cluster-robust error.

    Attributes:
        value: The estimate: share of passes (0..1) or the mean score; None when nothing was graded.
        interval: Its confidence interval (clipped to [0, 1] for pass rates); None with `value`.
        se: Standard error (None for the Wilson interval of a single round, which does not use one).
        method: How the interval was made: ``wilson``, ``per-case means``, ``clustered by domain``, ...
        n_cases: Cases that contributed at least one value.
        n_values: Values (graded runs) used.
        rounds: Values per case (harmonic mean; 1.0 with one round).
        reason: Why `value` is None, or a caveat about the interval; None otherwise.
    """

    value: float | None
    interval: Interval | None
    se: float | None
    method: str
    n_cases: int
    n_values: int
    rounds: float | None
    reason: str | None = None

    @property
    def low(self) -> float | None:
        """The interval's lower bound (None without an interval)."""
        return None if self.interval is None else self.interval.low

    @property
    def high(self) -> float | None:
        """The interval's upper bound (None without an interval)."""
        return None if self.interval is None else self.interval.high


@dataclass(frozen=True)
class Rate(Result):
    """A share of runs with a Wilson interval: ``k`` of ``n``.

    Attributes:
        k: Runs with the property.
        n: Runs it was counted over.
        value: ``k / n``; None when ``n`` is 0 or the rate does not apply (see `reason`).
        interval: Wilson interval; None with `value`.
        reason: Why `value` is None.
    """

    k: int
    n: int
    value: float | None
    interval: Interval | None
    reason: str | None = None


def rate(k: int, n: int, confidence: float, reason: str | None = None) -> Rate:
    """``k`` of ``n`` with its Wilson interval (None and `reason` when ``n`` is 0)."""
    k, n = int(k), int(n)
    if n == 0:
        return Rate(k, n, None, None, reason or "no runs to count")
    return Rate(k, n, k / n, wilson_interval(k, n, confidence))


def no_rate(reason: str) -> Rate:
    """A rate that does not apply, with the reason."""
    return Rate(0, 0, None, None, reason)


def round_lists(k: np.ndarray, n: np.ndarray) -> Any:
    """Per-case 0/1 round outcomes with ``k[i]`` passes of ``n[i]`` (a matrix when every n is equal).

    Pass/fail outcomes are exchangeable within a case, so the counts carry everything the per-case
    statistics (mean, within-case variance) need; the order of the rounds does not matter.
    """
    k, n = np.asarray(k, dtype=np.int64), np.asarray(n, dtype=np.int64)
    if n.size and np.all(n == n[0]):
        return (np.arange(int(n[0]))[None, :] < k[:, None]).astype(float)
    return [[1.0] * int(a) + [0.0] * int(b - a) for a, b in zip(k, n, strict=True)]


def value_lists(values: np.ndarray, group: np.ndarray, n_groups: int) -> tuple[Any, np.ndarray]:
    """Values grouped by case: a matrix when every case has the same count, else a list of arrays.

    Args:
        values: One value per run.
        group: The case position (0..n_groups-1) of each value.
        n_groups: Number of cases.

    Returns:
        The grouped values (cases without a value are left out) and the case positions kept.
    """
    order = np.argsort(group, kind="stable")
    counts = np.bincount(group, minlength=n_groups)
    kept = np.flatnonzero(counts > 0)
    sorted_values = values[order]
    present = counts[kept]
    if not present.size:  # (np.split would give one empty group: a case without a value)
        return [], kept
    if np.all(present == present[0]):
        return sorted_values.reshape(kept.size, int(present[0])), kept
    return np.split(sorted_values, np.cumsum(present)[:-1]), kept


def estimate_rate(
    k: np.ndarray,
    n: np.ndarray,
    confidence: float,
    clusters: np.ndarray | None = None,
    cluster_name: str = "domain",
) -> Estimate:
    """The pass rate over cases from per-case passes `k` of `n` graded runs (cases with n = 0 dropped).

    One round per case: Wilson's interval on k / n. Several rounds: the mean of per-case pass rates,
    the standard error over cases (`repeated_se`), the interval clipped to [0, 1] — and Wilson's on
    the cases when every case has the same rate (no spread, so a zero standard error would claim
    certainty). Clusters: the CR1 cluster-robust error over per-case rates, Student t with G − 1 df.
    """
    k, n = np.asarray(k, dtype=np.int64), np.asarray(n, dtype=np.int64)
    keep = n > 0
    k, n = k[keep], n[keep]
    cases, values = int(k.size), int(n.sum())
    if cases == 0:
        return Estimate(None, None, None, "none", 0, 0, None, "no graded run")
    passes = int(k.sum())
    rates = k / n
    rounds = float(cases / np.sum(1.0 / n))
    if clusters is not None:
        labels = np.asarray(clusters, dtype=object)[keep]
        labels = np.where(pd_isna(labels), "(none)", labels)
        if len(set(labels.tolist())) >= 2:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", FewClustersWarning)
                # Student t with G − 1 df, as the clustered comparison (and statsmodels' use_t) does: with
                # few clusters the normal value makes an already optimistic interval narrower still.
                clustered = clustered_se(rates, labels.tolist(), confidence, method="t")
            few = any(issubclass(w.category, FewClustersWarning) for w in caught)
            caveat = (
                f"only {clustered.n_clusters} {cluster_name} clusters: the clustered interval is likely too narrow"
                if few
                else None
            )
            return Estimate(
                clustered.mean,
                _clip(clustered.interval),
                clustered.se,
                f"clustered by {cluster_name} (CR1, {clustered.n_clusters} clusters)",
                cases,
                values,
                rounds,
                caveat,
            )
    if np.all(n == 1):
        interval = wilson_interval(passes, cases, confidence)
        return Estimate(passes / cases, interval, None, "wilson", cases, values, 1.0)
    if np.all(rates == rates[0]) or cases == 1:
        # No spread between cases: Wilson on the cases (each counted once) rather than a zero-width interval.
        interval = wilson_interval(round(float(rates.mean()) * cases), cases, confidence)
        return Estimate(
            float(rates.mean()),
            interval,
            0.0 if cases > 1 else None,
            "wilson over cases",
            cases,
            values,
            rounds,
        )
    result = repeated_se(round_lists(k, n), confidence)
    return Estimate(result.mean, _clip(result.interval), result.se, "per-case means", cases, values, rounds)


def estimate_mean(
    lists: Any,
    confidence: float,
    n_values: int,
    clusters: list[Any] | None = None,
    cluster_name: str = "domain",
) -> Estimate:
    """The mean score over cases from per-case value lists (or a cases × rounds matrix)."""
    n_cases = len(lists)
    if n_cases == 0:
        return Estimate(None, None, None, "none", 0, 0, None, "no scored run")
    if clusters is not None and len(set(clusters)) >= 2:
        means = exact_means(
            np.concatenate([np.asarray(v, dtype=float).ravel() for v in lists]), [np.size(v) for v in lists]
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", FewClustersWarning)
            clustered = clustered_se(means, clusters, confidence, method="t")
        few = any(issubclass(w.category, FewClustersWarning) for w in caught)
        return Estimate(
            clustered.mean,
            clustered.interval,
            clustered.se,
            f"clustered by {cluster_name} (CR1, {clustered.n_clusters} clusters)",
            n_cases,
            n_values,
            None,
            f"only {clustered.n_clusters} clusters: the clustered interval is likely too narrow"
            if few
            else None,
        )
    result = repeated_se(lists, confidence)
    if n_cases == 1:
        return Estimate(
            result.mean, None, None, "per-case means", 1, n_values, result.rounds, "one case: no interval"
        )
    return Estimate(
        result.mean, result.interval, result.se, "per-case means", n_cases, n_values, result.rounds
    )


def _clip(interval: Interval) -> Interval:
    return Interval(max(0.0, interval.low), min(1.0, interval.high), interval.confidence)


def pd_isna(values: np.ndarray) -> np.ndarray:
    """Which entries of an object array are None or NaN (each distinct value looked at once)."""
    import pandas as pd

    codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
    missing = np.fromiter(
        (v is None or (isinstance(v, float) and math.isnan(v)) for v in uniques),
        dtype=bool,
        count=len(uniques),
    )
    return missing[codes] if codes.size else np.zeros(0, dtype=bool)

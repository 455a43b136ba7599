"""Descriptive figures for cost, tokens and latency: percentiles and summaries that tolerate gaps."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from abbench.errors import UsageError
from abbench.stats._base import _Result


def _present(values: Any, name: str) -> tuple[np.ndarray, int]:
    """The finite numbers of ``values`` as a float array, and how many entries were None or NaN."""
    if values is None:
        return np.empty(0), 0
    if isinstance(values, str | bytes) or not hasattr(values, "__len__"):
        raise UsageError(f"{name} must be a sequence of numbers; got {values!r}")
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        array = None
    if array is None:
        # None marks a missing value (a run with no recorded cost); anything else must be a number.
        cleaned = []
        for i, v in enumerate(values):
            if v is None:
                cleaned.append(math.nan)
                continue
            try:
                if isinstance(v, str | bytes):
                    raise ValueError
                cleaned.append(float(v))
            except (TypeError, ValueError):
                raise UsageError(
                    f"{name}[{i}] is {v!r}: values must be numbers (None marks a missing one)"
                ) from None
        array = np.asarray(cleaned, dtype=float)
    if array.ndim != 1:
        raise UsageError(f"{name} must be a flat sequence of numbers; got shape {array.shape}")
    if np.isinf(array).any():
        i = int(np.flatnonzero(np.isinf(array))[0])
        raise UsageError(f"{name}[{i}] is {array[i]}: values must be finite (None marks a missing one)")
    missing = np.isnan(array)
    return array[~missing], int(missing.sum())


def _check_q(q: Any) -> float:
    try:
        x = float(q)
    except (TypeError, ValueError):
        raise UsageError(f"q must be a percentile between 0 and 100 (e.g. 95); got {q!r}") from None
    if not 0.0 <= x <= 100.0:
        raise UsageError(f"q must be a percentile between 0 and 100 (e.g. 95 for p95); got {q!r}")
    return x


def percentile(values: Any, q: float) -> float | None:
    """The ``q``-th percentile of the values present (linear interpolation, as numpy's default).

    Missing values (None or NaN) are skipped, and an empty or all-missing input gives None rather
    than an error, so a metric over zero runs reads as "no data".

    Args:
        values: Numbers; None or NaN entries are skipped.
        q: Percentile between 0 and 100 (50 is the median, 95 is p95).

    Raises:
        UsageError: ``q`` outside [0, 100], or a value that is text or infinite.
    """
    q = _check_q(q)
    present, _ = _present(values, "values")
    return float(np.percentile(present, q)) if present.size else None


@dataclass(frozen=True)
class Summary(_Result):
    """Descriptive figures of a metric such as cost, tokens or latency.

    Attributes:
        n: Values present.
        missing: Entries that were None or NaN (skipped).
        mean: Mean (None when ``n == 0``, as are the other figures).
        std: Sample standard deviation (None when ``n < 2``).
        min: Smallest value.
        p50: Median.
        p95: 95th percentile.
        max: Largest value.
        total: Sum (0 when ``n == 0``).
    """

    n: int
    missing: int
    mean: float | None
    std: float | None
    min: float | None
    p50: float | None
    p95: float | None
    max: float | None
    total: float


def summary(values: Any) -> Summary:
    """Mean, spread and percentiles of the values present, skipping None and NaN.

    Args:
        values: Numbers; None or NaN entries count as missing. An empty input gives ``n == 0`` and None
            figures.

    Raises:
        UsageError: a value that is text or infinite.
    """
    present, missing = _present(values, "values")
    n = int(present.size)
    if n == 0:
        return Summary(0, missing, None, None, None, None, None, None, 0.0)
    p50, p95 = np.percentile(present, [50, 95])
    return Summary(
        n=n,
        missing=missing,
        mean=float(present.mean()),
        std=float(present.std(ddof=1)) if n > 1 else None,
        min=float(present.min()),
        p50=float(p50),
        p95=float(p95),
        max=float(present.max()),
        total=float(present.sum()),
    )

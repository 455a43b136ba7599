"""Agreement between two raters (judge and human, two judges): Cohen's kappa, plain or weighted."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from abbench.errors import UsageError
from abbench.stats._base import (
    Interval,
    _Result,
    check_confidence,
    check_same_length,
    labels_of,
    normal_p_value,
    ratio_statistic,
    z_value,
)


@dataclass(frozen=True)
class Kappa(_Result):
    """Cohen's kappa: agreement between two raters beyond what chance would give.

    Attributes:
        kappa: 1 is perfect agreement, 0 chance level, below 0 worse than chance; NaN when both raters
            gave one and the same label to every case (chance agreement is then 1).
        se: Asymptotic standard error (Fleiss, Cohen & Everitt 1969), as statsmodels computes it.
        interval: ``kappa ± z·se``, clipped to [−1, 1].
        p_value: Two-sided p-value against kappa = 0, from the standard error under that null.
        n: Cases rated by both.
        observed_agreement: Share of cases with the same label (weighted agreement when weighted).
        expected_agreement: Agreement expected by chance from each rater's label frequencies.
        categories: The labels, in the order used for the table (and the weights).
        weights: None, ``"linear"`` or ``"quadratic"``.
        table: The confusion table: rows are rater A's labels, columns rater B's, in ``categories`` order.
    """

    kappa: float
    se: float
    interval: Interval
    p_value: float
    n: int
    observed_agreement: float
    expected_agreement: float
    categories: tuple[Any, ...]
    weights: str | None
    table: tuple[tuple[int, ...], ...]


def _categories(a: list[Any], b: list[Any], order: Any, weighted: bool) -> list[Any]:
    if order is not None:
        categories = labels_of(order, "labels")
        if len(set(categories)) != len(categories):
            raise UsageError("labels lists a category twice: give each category once, in order")
        known = set(categories)
        for name, values in (("labels_a", a), ("labels_b", b)):
            for i, v in enumerate(values):
                if v not in known:
                    raise UsageError(f"{name}[{i}] is {v!r}, which is not in labels {categories!r}")
        return categories
    seen = list(dict.fromkeys([*a, *b]))
    try:
        return sorted(seen)
    except TypeError:
        if weighted:
            raise UsageError(
                "weighted kappa needs ordered categories, and these labels cannot be sorted: "
                "pass labels=[...] in their natural order"
            ) from None
        return seen


def cohen_kappa(
    labels_a: Any,
    labels_b: Any,
    weights: Literal["linear", "quadratic"] | None = None,
    labels: Any = None,
    confidence: float = 0.95,
) -> Kappa:
    """Cohen's kappa between two raters who labelled the same cases.

    Labels may be anything hashable (strings in any script, ints, bools). Weighted kappa credits
    near-misses on an ordinal scale (1–5 scores): ``"linear"`` or ``"quadratic"`` disagreement weights
    by distance in category order. The estimate equals scikit-learn's ``cohen_kappa_score``; the
    standard error is the asymptotic one statsmodels reports.

    Args:
        labels_a: Rater A's label per case (e.g. the judge).
        labels_b: Rater B's label per case (e.g. the human reviewer), same cases in the same order.
        weights: None for plain kappa, or ``"linear"`` / ``"quadratic"``.
        labels: Optional list of every category in order (needed for weights when labels do not sort
            naturally); by default the sorted union of both raters' labels.
        confidence: Coverage of the interval.

    Raises:
        UsageError: lengths differ, no cases, a missing label, an unknown weights name, or a label
            outside ``labels``.
    """
    confidence = check_confidence(confidence)
    if weights not in (None, "linear", "quadratic"):
        raise UsageError(f"weights must be None, 'linear' or 'quadratic'; got {weights!r}")
    a, b = labels_of(labels_a, "labels_a"), labels_of(labels_b, "labels_b")
    n = check_same_length(labels_a=a, labels_b=b)
    if n == 0:
        raise UsageError("labels_a and labels_b are empty: kappa needs at least one case rated by both")
    categories = _categories(a, b, labels, weights is not None)
    index = {c: i for i, c in enumerate(categories)}
    k = len(categories)
    codes = np.fromiter((index[v] * k + index[w] for v, w in zip(a, b, strict=True)), dtype=np.intp, count=n)
    table = np.bincount(codes, minlength=k * k).reshape(k, k).astype(float)
    kappa, se, se0, observed, expected = _kappa(table, weights)
    z = z_value(confidence)
    interval = Interval(max(-1.0, kappa - z * se), min(1.0, kappa + z * se), confidence)
    return Kappa(
        kappa=kappa,
        se=se,
        interval=interval,
        p_value=normal_p_value(ratio_statistic(kappa, se0)) if not math.isnan(kappa) else math.nan,
        n=n,
        observed_agreement=observed,
        expected_agreement=expected,
        categories=tuple(categories),
        weights=weights,
        table=tuple(tuple(int(x) for x in row) for row in table),
    )


def _kappa(table: np.ndarray, weights: str | None) -> tuple[float, float, float, float, float]:
    """Kappa, its standard error, the standard error under kappa = 0, and observed/expected agreement."""
    n = table.sum()
    k = table.shape[0]
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    positions = np.arange(k, dtype=float)
    distance = np.abs(positions[:, None] - positions[None, :])
    if weights is None:
        w = np.eye(k)
    else:
        scale = max(k - 1, 1)
        w = 1.0 - (distance / scale if weights == "linear" else (distance / scale) ** 2)
    expected_p = rows[:, None] * cols[None, :]
    observed = float(np.sum(w * p))
    expected = float(np.sum(w * expected_p))
    if expected >= 1.0 - 1e-15:
        return math.nan, math.nan, math.nan, observed, expected
    kappa = (observed - expected) / (1.0 - expected)
    # Fleiss, Cohen & Everitt (1969) in agreement-weight form; with w = I it reduces to the plain-kappa
    # formula. This is the variance statsmodels' cohens_kappa reports.
    w_row = w @ cols  # mean agreement weight of row category i against rater B's distribution
    w_col = rows @ w  # and of column category j against rater A's
    spread = w_row[:, None] + w_col[None, :]
    var = (np.sum(p * (w - spread * (1.0 - kappa)) ** 2) - (kappa - expected * (1.0 - kappa)) ** 2) / (
        (1.0 - expected) ** 2 * n
    )
    var0 = (np.sum(expected_p * (w - spread) ** 2) - expected**2) / ((1.0 - expected) ** 2 * n)
    return kappa, math.sqrt(max(0.0, float(var))), math.sqrt(max(0.0, float(var0))), observed, expected


def fleiss_kappa(ratings: Any, labels: Any = None) -> float:
    """Fleiss' kappa: agreement among several raters per item beyond chance (Fleiss 1971).

    Args:
        ratings: One row per item, each the labels its raters gave (every item rated by as many raters;
            the raters need not be the same people from item to item).
        labels: Every category (default: the labels found); categories nobody used change nothing.

    Returns:
        Kappa (NaN when every rating is one and the same label: chance agreement is then 1). Equals
        statsmodels' ``fleiss_kappa`` on the items × categories count table.

    Raises:
        UsageError: no items, fewer than two ratings per item, or items rated by different numbers of raters.
    """
    rows = [list(r) for r in ratings]
    if not rows:
        raise UsageError("fleiss_kappa needs at least one rated item")
    m = len(rows[0])
    if m < 2 or any(len(r) != m for r in rows):
        raise UsageError(
            "fleiss_kappa needs every item rated by the same number of raters, at least two; "
            f"got {sorted({len(r) for r in rows})}"
        )
    categories = list(labels) if labels is not None else list(dict.fromkeys(v for r in rows for v in r))
    index = {c: i for i, c in enumerate(categories)}
    counts = np.zeros((len(rows), len(categories)))
    for i, r in enumerate(rows):
        for v in r:
            counts[i, index[v]] += 1
    n = len(rows)
    p_j = counts.sum(axis=0) / (n * m)
    p_i = (np.sum(counts * counts, axis=1) - m) / (m * (m - 1))
    p_bar, p_e = float(p_i.mean()), float(np.sum(p_j * p_j))
    if p_e >= 1.0 - 1e-15:
        return math.nan
    return (p_bar - p_e) / (1.0 - p_e)

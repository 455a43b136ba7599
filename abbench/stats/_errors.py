"""Standard errors of a mean score: plain, clustered by group, and over cases answered in several rounds."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from abbench.errors import UsageError
from abbench.stats._base import (
    FEW_CLUSTERS,
    FewClustersWarning,
    Interval,
    _Result,
    as_scores,
    check_confidence,
    check_method,
    check_same_length,
    estimate_interval,
    is_nested,
    labels_of,
)
from abbench.stats._exact import exact_means


@dataclass(frozen=True)
class MeanSE(_Result):
    """A mean score with its standard error.

    Attributes:
        mean: The mean score.
        se: ``std / sqrt(n)`` with the sample (n − 1) standard deviation; NaN when ``n == 1``.
        interval: ``mean ± critical × se`` (z or t, see ``method``).
        n: Scores.
        std: Sample standard deviation (NaN when ``n == 1``).
        method: ``"z"`` or ``"t"`` (t with n − 1 degrees of freedom).
    """

    mean: float
    se: float
    interval: Interval
    n: int
    std: float
    method: str


def _std(values: np.ndarray) -> float:
    return float(np.std(values, ddof=1)) if values.size > 1 else math.nan


def mean_se(scores: Any, confidence: float = 0.95, method: Literal["z", "t"] = "z") -> MeanSE:
    """The mean of independent scores and its central-limit standard error (Miller 2024, eq. 1).

    Use it when each case was answered once and cases are not grouped; otherwise see
    :func:`repeated_se` and :func:`clustered_se`.

    Args:
        scores: One score per case: bools, 0/1 or floats.
        confidence: Coverage of the interval.
        method: ``"z"`` (normal, as Miller) or ``"t"`` (Student, n − 1 df; wider for small n).

    Raises:
        UsageError: ``scores`` is empty or holds NaN, None or text.
    """
    confidence, method = check_confidence(confidence), check_method(method)
    y = as_scores(scores, "scores")
    n = y.size
    mean, std = float(y.mean()), _std(y)
    se = std / math.sqrt(n)
    return MeanSE(mean, se, estimate_interval(mean, se, confidence, method, n - 1), n, std, method)


@dataclass(frozen=True)
class ClusteredSE(_Result):
    """A mean score with a cluster-robust standard error.

    Attributes:
        mean: The mean score over all cases.
        se: CR1 cluster-robust standard error, equal to statsmodels' intercept-only OLS with
            ``cov_type="cluster"``.
        interval: ``mean ± critical × se`` (z, or t with G − 1 degrees of freedom).
        n: Cases.
        n_clusters: Distinct clusters (G).
        naive_se: The standard error that ignores clustering, for comparison.
        design_effect: ``(se / naive_se)²``: how many times the variance is inflated by clustering.
        few_clusters: True when ``n_clusters`` < 30, where cluster-robust errors run small.
        method: ``"z"`` or ``"t"``.
    """

    mean: float
    se: float
    interval: Interval
    n: int
    n_clusters: int
    naive_se: float
    design_effect: float
    few_clusters: bool
    method: str


def _cluster_codes(clusters: Any, n: int) -> tuple[np.ndarray, int]:
    labels = labels_of(clusters, "clusters")
    check_same_length(scores=range(n), clusters=labels)
    index: dict[Any, int] = {}
    codes = np.fromiter((index.setdefault(v, len(index)) for v in labels), dtype=np.intp, count=n)
    return codes, len(index)


def _cr1_se(y: np.ndarray, codes: np.ndarray, n_clusters: int) -> float:
    # Intercept-only OLS: the residuals are y - mean and X'X = N, so the sandwich reduces to the sum of
    # squared per-cluster residual totals over N². statsmodels' CR1 factor is G/(G-1) * (N-1)/(N-K) with
    # K = 1 regressor, i.e. just G/(G-1).
    n = y.size
    totals = np.bincount(codes, weights=y - y.mean(), minlength=n_clusters)
    variance = n_clusters / (n_clusters - 1) * float(np.sum(totals * totals)) / (n * n)
    return math.sqrt(variance)


def _warn_few(n_clusters: int, stacklevel: int) -> bool:
    if n_clusters >= FEW_CLUSTERS:
        return False
    warnings.warn(
        FewClustersWarning(
            f"only {n_clusters} clusters: cluster-robust standard errors are too small with fewer than "
            f"~{FEW_CLUSTERS}; read the interval as optimistic, or cluster on a finer grouping"
        ),
        stacklevel=stacklevel + 1,
    )
    return True


def clustered_se(
    scores: Any,
    clusters: Any,
    confidence: float = 0.95,
    method: Literal["z", "t"] = "z",
    *,
    _stacklevel: int = 2,
) -> ClusteredSE:
    """The mean score with a standard error that allows for correlated scores within clusters.

    Cases drawn in groups (several questions about one document, one domain's requests) are not
    independent: treating them so understates the error (Miller 2024, §2.2). This is the CR1
    cluster-robust estimator that statsmodels applies to an intercept-only OLS with
    ``cov_type="cluster"``: ``G/(G−1) · Σ_g (Σ_i∈g e_i)² / N²``. It warns with
    :class:`FewClustersWarning` (and sets ``few_clusters``) under 30 clusters.

    Args:
        scores: One score per case.
        clusters: One cluster label per case (any hashable: domain names, document ids).
        confidence: Coverage of the interval.
        method: ``"z"`` (normal) or ``"t"`` (Student with G − 1 df, safer with few clusters).

    Raises:
        UsageError: lengths differ, input is empty or has NaN, a label is missing, or there are fewer
            than 2 clusters (no between-cluster variation to estimate from).
    """
    confidence, method = check_confidence(confidence), check_method(method)
    y = as_scores(scores, "scores")
    codes, g = _cluster_codes(clusters, y.size)
    if g < 2:
        raise UsageError(
            f"clustered_se needs at least 2 clusters; all {y.size} cases are in one cluster "
            f"({labels_of(clusters, 'clusters')[0]!r}). Use mean_se, or cluster on another field"
        )
    few = _warn_few(g, _stacklevel)
    se = _cr1_se(y, codes, g)
    mean = float(y.mean())
    naive = _std(y) / math.sqrt(y.size)
    design = (se / naive) ** 2 if naive > 0 else math.nan
    interval = estimate_interval(mean, se, confidence, method, g - 1)
    return ClusteredSE(mean, se, interval, y.size, g, naive, design, few, method)


@dataclass(frozen=True)
class CaseScores:
    """Scores grouped by case: per-case means, round counts and within-case variances (internal)."""

    means: np.ndarray
    counts: np.ndarray
    within: np.ndarray  # sample variance per case; NaN where the case has a single round


def _balanced(matrix: np.ndarray, name: str) -> CaseScores:
    n_cases, n_rounds = matrix.shape
    if n_cases == 0 or n_rounds == 0:
        raise UsageError(f"{name} is empty: at least one case with one round score is needed")
    matrix = as_scores(matrix.ravel(), name).reshape(matrix.shape)
    counts = np.full(n_cases, n_rounds, dtype=np.intp)
    means = exact_means(matrix, counts)  # not matrix.mean: equal rounds in another order give equal means
    within = matrix.var(axis=1, ddof=1) if n_rounds > 1 else np.full(len(means), math.nan)
    return CaseScores(means, counts, within)


def per_case(values: Any, name: str) -> CaseScores:
    """Group a flat score list (one round per case) or per-case round lists (ragged allowed) by case."""
    if isinstance(values, np.ndarray) and values.ndim == 2 and values.dtype != object:
        return _balanced(values, name)
    if isinstance(values, str | bytes) or not hasattr(values, "__len__"):
        raise UsageError(f"{name} must be a sequence of scores or of per-case round scores; got {values!r}")
    if not is_nested(values):
        y = as_scores(values, name)
        return CaseScores(y, np.ones(y.size, dtype=np.intp), np.full(y.size, math.nan))
    try:
        # Equal-length round lists convert in one C call, many times faster than row by row.
        matrix = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        matrix = None
    if matrix is not None and matrix.ndim == 2 and np.isfinite(matrix).all():
        return _balanced(matrix, name)
    rows = list(values)
    counts = np.fromiter((_row_len(r, name, i) for i, r in enumerate(rows)), dtype=np.intp, count=len(rows))
    empty = np.flatnonzero(counts == 0)
    if empty.size:
        raise UsageError(
            f"{name}[{int(empty[0])}] has no round scores: every case needs at least one (drop the case)"
        )
    try:
        flat = np.concatenate([np.asarray(r, dtype=float).ravel() for r in rows])
    except (TypeError, ValueError):
        flat = None
    if flat is None or flat.size != counts.sum() or not np.isfinite(flat).all():
        for i, r in enumerate(rows):
            as_scores(r, f"{name}[{i}]")
        raise UsageError(f"{name} must hold one flat list of round scores per case")
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    means = exact_means(flat, counts)
    deviations = flat - np.repeat(means, counts)
    squares = np.add.reduceat(deviations * deviations, starts)
    with np.errstate(invalid="ignore", divide="ignore"):
        within = np.where(counts > 1, squares / (counts - 1), math.nan)
    return CaseScores(means, counts, within)


def paired_cases(a: Any, b: Any, names: tuple[str, str], need: str) -> tuple[CaseScores, CaseScores]:
    """Both arms grouped by case (see `per_case`), refused unless they hold as many cases.

    `names` are the arguments' names and `need` ends the refusal: why the arms must pair up.
    """
    arm_a, arm_b = per_case(a, names[0]), per_case(b, names[1])
    if arm_a.means.size != arm_b.means.size:
        raise UsageError(
            f"length mismatch: {names[0]} has {arm_a.means.size} cases and {names[1]} has "
            f"{arm_b.means.size}; {need}"
        )
    return arm_a, arm_b


def _row_len(row: Any, name: str, i: int) -> int:
    if isinstance(row, str | bytes) or not hasattr(row, "__len__"):
        raise UsageError(
            f"{name}[{i}] is {row!r}: give every case a list of round scores, or give one score per case"
        )
    return len(row)


def harmonic_rounds(counts: np.ndarray) -> float:
    """The effective rounds per case for ragged data: the harmonic mean, since Var(mean_i) ∝ 1/K_i."""
    return float(counts.size / np.sum(1.0 / counts))


@dataclass(frozen=True)
class RepeatedSE(_Result):
    """A mean score over cases answered in several rounds, with per-case means taken first.

    Attributes:
        mean: Mean of the per-case means (each case weighs the same, however many rounds it has).
        se: Standard error over cases: sample std of the per-case means / sqrt(n_cases).
        interval: ``mean ± critical × se``.
        n_cases: Cases.
        n_scores: Round scores in all.
        rounds: Effective rounds per case: the harmonic mean of the round counts (the count itself when
            every case has the same number).
        min_rounds: Fewest rounds of any case.
        max_rounds: Most rounds of any case.
        within_variance: Mean within-case sample variance σ² over cases with 2+ rounds (NaN when no case
            has two): how much a case's score varies from round to round.
        between_variance: Sample variance of the per-case means.
        naive_se: The standard error if every round score were an independent case (too small).
        method: ``"z"`` or ``"t"`` (t with n_cases − 1 df).
    """

    mean: float
    se: float
    interval: Interval
    n_cases: int
    n_scores: int
    rounds: float
    min_rounds: int
    max_rounds: int
    within_variance: float
    between_variance: float
    naive_se: float
    method: str


def within_variance(cases: CaseScores) -> float:
    """Mean of the within-case sample variances over cases with at least two rounds (NaN if none)."""
    usable = cases.counts > 1
    return float(cases.within[usable].mean()) if usable.any() else math.nan


def repeated_se(scores_by_case: Any, confidence: float = 0.95, method: Literal["z", "t"] = "z") -> RepeatedSE:
    """The mean score and its standard error when each case was answered in several rounds.

    Rounds of one case are not independent cases: the standard error is taken over per-case means
    (Miller 2024, §3), and the within-case variance is reported so power analysis can weigh more
    rounds against more cases.

    Args:
        scores_by_case: Per-case round scores: a list of lists (ragged allowed) or a cases × rounds array.
            A flat list is read as one round per case.
        confidence: Coverage of the interval.
        method: ``"z"`` or ``"t"``.

    Raises:
        UsageError: no cases, a case with no rounds, or a score that is NaN, None or text.
    """
    confidence, method = check_confidence(confidence), check_method(method)
    cases = per_case(scores_by_case, "scores_by_case")
    n = cases.means.size
    mean = float(cases.means.mean())
    between = _std(cases.means) ** 2
    se = math.sqrt(between / n)
    n_scores = int(cases.counts.sum())
    # The naive error pools every round score as if independent: shown to make the contrast visible.
    naive = _pooled_std(cases) / math.sqrt(n_scores) if n_scores > 1 else math.nan
    return RepeatedSE(
        mean,
        se,
        estimate_interval(mean, se, confidence, method, n - 1),
        n,
        n_scores,
        harmonic_rounds(cases.counts),
        int(cases.counts.min()),
        int(cases.counts.max()),
        within_variance(cases),
        between,
        naive,
        method,
    )


def _pooled_std(cases: CaseScores) -> float:
    # Sample std of every round score pooled, rebuilt from per-case means and within variances
    # (total sum of squares = within + between parts) so the flat scores need not be kept.
    counts = cases.counts
    total = float(np.sum(counts))
    grand = float(np.sum(cases.means * counts) / total)
    within_ss = float(np.sum(np.where(counts > 1, cases.within * (counts - 1), 0.0)))
    between_ss = float(np.sum(counts * (cases.means - grand) ** 2))
    return math.sqrt((within_ss + between_ss) / (total - 1))

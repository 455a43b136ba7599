"""Prediction-powered inference: a judge's mean corrected by a random sample that people labelled."""

# Angelopoulos, Bates, Fannjiang, Jordan & Zrnic, "Prediction-powered inference", Science 382 (2023);
# its power-tuned form PPI++ (Angelopoulos, Duchi & Zrnic 2023, arXiv:2311.01453), which Boyeau, Angelopoulos,
# Yosef, Malik & Jordan apply to model evaluation in "AutoEval done right" (2024, arXiv:2403.07008). With
# ``n`` runs that people reviewed (their labels ``Y``, the judge's ``Ŷ``) drawn at random from the ``N``
# other judged runs (judge only, ``Ŷᵤ``)::
#
#     θ̂ = λ·mean(Ŷᵤ) + mean(Y − λŶ)        se² = λ²·var(Ŷᵤ)/N + var(Y − λŶ)/n        θ̂ ± z·se
#
# λ = 1 is the original PPI (the judge's mean plus the mean of its errors on the reviewed sample); the
# default tunes λ to the variance-minimising ``cov(Y, Ŷ) / ((1 + n/N)·var(Ŷ))`` clipped to [0, 1], as
# ``ppi_py.ppi_mean_ci`` does (λ = 0 is the people's mean alone). The interval is valid only when the
# reviewed runs are a *random* sample of the judged ones: runs chosen because the judge and the gold
# disagree are not, and would bias θ̂.

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from abbench.errors import UsageError
from abbench.stats._base import Interval, _Result, check_confidence, z_value


@dataclass(frozen=True)
class PredictionPowered(_Result):
    """A prediction-powered estimate of a mean, beside the judge's and the people's own.

    Attributes:
        estimate: θ̂, the judge's mean corrected by the reviewed sample.
        interval: Its interval.
        se: Its standard error.
        lam: The λ used (1: plain PPI; tuned otherwise).
        n_labeled: Runs people reviewed (with the judge's verdict beside theirs).
        n_unlabeled: Judged runs nobody reviewed.
        judge_mean: The judge's mean over every judged run (labelled and not): the raw figure.
        human_mean: The people's mean over the reviewed sample (the classical estimate).
        human_interval: Its central-limit interval (what the people's sample says alone).
        rectifier: mean(Y − Ŷ) on the sample: how far the judge is off, on average.
    """

    estimate: float
    interval: Interval
    se: float
    lam: float
    n_labeled: int
    n_unlabeled: int
    judge_mean: float
    human_mean: float
    human_interval: Interval
    rectifier: float


def _vector(values: Any, name: str) -> np.ndarray:
    try:
        x = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be numbers (1 right, 0 wrong, or scores)") from None
    if not np.all(np.isfinite(x)):
        raise UsageError(f"{name}[{int(np.flatnonzero(~np.isfinite(x))[0])}] is not a finite number")
    return x


def ppi_mean(
    labels: Any, judged: Any, unlabeled: Any, *, confidence: float = 0.95, lam: float | None = None
) -> PredictionPowered:
    """The prediction-powered mean and its interval (see the module's formulas).

    Args:
        labels: People's labels on the reviewed runs (1 right, 0 wrong; or scores).
        judged: The judge's verdicts on the same runs, in the same order.
        unlabeled: The judge's verdicts on the judged runs nobody reviewed.
        confidence: Coverage of the intervals.
        lam: λ; None tunes it (PPI++, ppi_py's default), 1 is the original PPI.

    Raises:
        UsageError: fewer than two reviewed or unreviewed runs, a length mismatch, or a λ outside [0, 1].
    """
    y, yhat, yhat_u = _vector(labels, "labels"), _vector(judged, "judged"), _vector(unlabeled, "unlabeled")
    confidence = check_confidence(confidence)
    if y.size != yhat.size:
        raise UsageError(f"labels has {y.size} runs and judged {yhat.size}: give the judge's verdict on each")
    n, big_n = int(y.size), int(yhat_u.size)
    if n < 2 or big_n < 2:
        raise UsageError(
            f"prediction-powered inference needs at least 2 reviewed and 2 unreviewed judged runs; got {n} and {big_n}"
        )
    if lam is None:
        lam = _tuned_lambda(y, yhat, yhat_u)
    elif not 0 <= lam <= 1:
        raise UsageError(f"lam must lie in [0, 1] (1: plain PPI); got {lam!r}")
    estimate = float(lam * yhat_u.mean() + (y - lam * yhat).mean())
    se = math.sqrt(float(np.var(lam * yhat_u)) / big_n + float(np.var(y - lam * yhat)) / n)
    z = z_value(confidence)
    human_se = float(np.std(y)) / math.sqrt(n)
    return PredictionPowered(
        estimate, Interval(estimate - z * se, estimate + z * se, confidence), se, float(lam), n, big_n,
        float(np.concatenate([yhat, yhat_u]).mean()), float(y.mean()),
        Interval(float(y.mean()) - z * human_se, float(y.mean()) + z * human_se, confidence),
        float((y - yhat).mean()),
    )  # fmt: skip


def _tuned_lambda(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray) -> float:
    """PPI++'s λ for a mean: cov(Y, Ŷ) / ((1 + n/N)·var(Ŷ over all judged runs)), clipped to [0, 1]."""
    n, big_n = y.size, yhat_u.size
    cov = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    var = float(np.var(np.concatenate([yhat, yhat_u]), ddof=1))
    if not var > 0:
        return 0.0  # a judge that says the same of every run carries nothing to borrow
    return float(min(1.0, max(0.0, cov / ((1 + n / big_n) * var))))

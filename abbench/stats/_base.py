"""What every statistic shares: input validation, the Interval value, result dictionaries, warnings."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from scipy import special

from abbench._result import Result
from abbench.errors import UsageError

FEW_CLUSTERS = 30
"""Below this many clusters, clustered standard errors are known to be too small (Cameron & Miller 2015)."""


class StatsWarning(UserWarning):
    """Warned when a statistic is computed but deserves less trust than usual; the result carries a flag."""


class FewClustersWarning(StatsWarning):
    """Warned when a clustered standard error rests on fewer than ~30 clusters and is likely too small."""


_Result = Result  # the shared base; the statistics kept their own name for it


@dataclass(frozen=True, slots=True)
class Interval(_Result):
    """A confidence interval.

    Attributes:
        low: Lower bound.
        high: Upper bound.
        confidence: Coverage it was built for, e.g. 0.95.
    """

    low: float
    high: float
    confidence: float

    @property
    def width(self) -> float:
        """``high - low``."""
        return self.high - self.low

    def contains(self, value: float) -> bool:
        """Whether ``value`` lies within the interval, bounds included."""
        return self.low <= value <= self.high

    def excludes_zero(self) -> bool:
        """Whether zero lies outside the interval: the difference is significant at this level."""
        return not self.contains(0.0)

    def __str__(self) -> str:
        return f"[{self.low:.4g}, {self.high:.4g}] ({self.confidence:.0%})"


def check_probability(value: Any, name: str, example: str) -> float:
    """Return ``value`` as a float after checking it lies strictly between 0 and 1."""
    if isinstance(value, bool | np.bool_):
        raise UsageError(f"{name} must be a number strictly between 0 and 1 (e.g. {example}); got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise UsageError(
            f"{name} must be a number strictly between 0 and 1 (e.g. {example}); got {value!r}"
        ) from None
    if not 0.0 < x < 1.0:
        raise UsageError(f"{name} must be strictly between 0 and 1 (e.g. {example}); got {value!r}")
    return x


def check_confidence(confidence: Any) -> float:
    """Return ``confidence`` as a float after checking it lies strictly between 0 and 1."""
    return check_probability(confidence, "confidence", "0.95")


def z_value(confidence: float) -> float:
    """The two-sided standard normal quantile for a confidence level: 1.959964... for 0.95."""
    # ndtri is the normal quantile without scipy.stats' import cost.
    return float(special.ndtri(0.5 + confidence / 2.0))


def normal_p_value(statistic: float) -> float:
    """Two-sided p-value of a standard normal statistic."""
    if math.isnan(statistic):
        return math.nan
    return float(2.0 * special.ndtr(-abs(statistic)))


def check_method(method: str) -> Literal["z", "t"]:
    """Return ``method`` after checking it names a reference distribution: ``"z"`` or ``"t"``."""
    if method == "z":
        return "z"
    if method == "t":
        return "t"
    raise UsageError(f"method must be 'z' (normal, as in Miller 2024) or 't' (Student); got {method!r}")


def critical_value(confidence: float, method: str, df: float) -> float:
    """The two-sided critical value: normal for ``"z"``, Student's t with ``df`` for ``"t"`` (NaN if df < 1)."""
    if method == "z":
        return z_value(confidence)
    if df < 1:
        return math.nan
    return float(special.stdtrit(df, 0.5 + confidence / 2.0))


def two_sided_p(statistic: float, method: str, df: float) -> float:
    """Two-sided p-value of a z or t statistic (NaN when undefined)."""
    if method == "z":
        return normal_p_value(statistic)
    if math.isnan(statistic) or df < 1:
        return math.nan
    return float(2.0 * special.stdtr(df, -abs(statistic)))


def estimate_interval(estimate: float, se: float, confidence: float, method: str, df: float) -> Interval:
    """``estimate ± critical × se`` as an Interval (NaN bounds when the standard error is undefined)."""
    half = critical_value(confidence, method, df) * se
    return Interval(estimate - half, estimate + half, confidence)


def ratio_statistic(estimate: float, se: float) -> float:
    """``estimate / se``; 0 when both are 0 (no difference, no noise), ±inf when only se is 0."""
    if math.isnan(se) or math.isnan(estimate):
        return math.nan
    if se == 0.0:
        return 0.0 if estimate == 0.0 else math.copysign(math.inf, estimate)
    return estimate / se


def _first_bad(values: Any) -> tuple[int, Any]:
    """Position and value of the first element that is not a finite number (slow path, errors only)."""
    for i, v in enumerate(values):
        try:
            x = float(v)
        except (TypeError, ValueError):
            return i, v
        if isinstance(v, str) or not math.isfinite(x):
            return i, v
    return -1, None


def as_scores(values: Any, name: str = "scores", *, allow_empty: bool = False) -> np.ndarray:
    """Validate a flat sequence of numbers (bools, 0/1, floats) and return it as a float array.

    Raises:
        UsageError: the input is not a flat sequence, is empty, or holds a NaN, an infinity, None or text;
            the message names the argument and the first bad position.
    """
    if isinstance(values, str | bytes) or not _is_sequence(values):
        raise UsageError(f"{name} must be a sequence of numbers (list, tuple or numpy array); got {values!r}")
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        i, v = _first_bad(values)
        raise UsageError(f"{name}[{i}] is {v!r}: every score must be a number (bool, 0/1 or float)") from None
    if array.ndim != 1:
        raise UsageError(
            f"{name} must be a flat sequence of numbers; got an array of shape {array.shape} "
            "(pass one score per case, or per-case lists of round scores where the function accepts them)"
        )
    if array.size == 0 and not allow_empty:
        raise UsageError(f"{name} is empty: at least one score is needed")
    if not np.isfinite(array).all():
        i = int(np.flatnonzero(~np.isfinite(array))[0])
        # numpy turns None into NaN: name what the caller actually passed.
        original = array[i] if isinstance(values, np.ndarray) else list(values)[i]
        shown = original if original is None else float(original)
        raise UsageError(
            f"{name}[{i}] is {shown}: scores must be finite numbers; drop or impute missing values first"
        )
    return array


def check_same_length(**arrays: Sequence[Any] | np.ndarray) -> int:
    """Return the common length of the named sequences, or raise a UsageError naming each length."""
    lengths = {name: len(a) for name, a in arrays.items()}
    if len(set(lengths.values())) > 1:
        described = ", ".join(f"{name} has {n}" for name, n in lengths.items())
        raise UsageError(f"length mismatch: {described}; pass one value per case, in the same case order")
    return next(iter(lengths.values()))


def check_count(value: Any, name: str) -> int:
    """Return ``value`` as a non-negative int, refusing fractions, negatives, bools-as-counts and NaN."""
    if isinstance(value, bool | np.bool_):
        raise UsageError(f"{name} must be a whole number of cases; got the boolean {value!r}")
    try:
        as_float = float(value)
    except (TypeError, ValueError):
        raise UsageError(f"{name} must be a whole number of cases; got {value!r}") from None
    if not math.isfinite(as_float) or as_float != int(as_float) or as_float < 0:
        raise UsageError(f"{name} must be a whole number ≥ 0; got {value!r}")
    return int(as_float)


def labels_of(values: Any, name: str) -> list[Any]:
    """Validate a flat sequence of hashable labels (None and NaN refused) and return it as a list."""
    if isinstance(values, str | bytes) or not _is_sequence(values):
        raise UsageError(f"{name} must be a sequence of labels (list, tuple or numpy array); got {values!r}")
    out = list(values.tolist() if isinstance(values, np.ndarray) else values)
    for i, v in enumerate(out):
        if v is None or (isinstance(v, float) and math.isnan(v)):
            raise UsageError(f"{name}[{i}] is missing ({v!r}): drop the case or give it a label first")
        try:
            hash(v)
        except TypeError:
            raise UsageError(
                f"{name}[{i}] is {v!r}, which cannot serve as a label (it is not hashable)"
            ) from None
    return out


def _is_sequence(values: Any) -> bool:
    return isinstance(values, np.ndarray | Sequence) or (
        hasattr(values, "__len__") and hasattr(values, "__getitem__")
    )


def is_nested(values: Any) -> bool:
    """Whether a sequence holds per-case sequences (rounds) rather than one number per case."""
    if isinstance(values, np.ndarray):
        return values.ndim == 2 or (values.dtype == object and values.size > 0 and _is_row(values.flat[0]))
    # Iterate rather than index: a pandas Series' [0] is a label lookup, not the first element.
    return len(values) > 0 and _is_row(next(iter(values)))


def _is_row(value: Any) -> bool:
    return not isinstance(value, str | bytes) and (isinstance(value, np.ndarray | Sequence))

"""What a gate metric is: its definition, and the value-or-reason its reader returns."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from abbench.metrics import Estimate

Value = tuple[Any, str | None]
"""A metric's value and, when it is None, why."""


@dataclass(frozen=True)
class MetricDef:
    """One gate metric.

    Attributes:
        name: Its name (``f1[]`` style names take a parameter).
        scope: ``arm`` (a figure of one arm), ``comparison`` (B against A) or ``decision``.
        kind: ``number``, ``count`` or ``bool``.
        description: What it means, for the documentation and ``abbench gate --list-metrics``.
        get: Reads the value from an arm's metrics, a comparison or a decision (and the parameter).
    """

    name: str
    scope: str
    kind: str
    description: str
    get: Callable[..., Value]


class Unsettled(str):
    """A reason a metric has no value because the evidence does not settle it, not because it is missing.

    A ``block`` rule on such a metric is *inconclusive* (`abbench.gate.RuleStatus.INCONCLUSIVE`), not
    blocking: ``non_inferior`` or ``capability_pass`` with an interval straddling the margin.
    """

    __slots__ = ()


def _none(reason: str) -> Value:
    return None, reason


def _unsettled(reason: str) -> Value:
    """No value, because the evidence does not settle the metric (see `Unsettled`)."""
    return None, Unsettled(reason)


def estimate_part(estimate: Estimate | None, part: str = "value", missing: str = "not measured") -> Value:
    """An estimate's ``value``, or its interval's ``low`` or ``high`` end; when there is none, why
    (the estimate's own reason, else `missing`)."""
    if estimate is None:
        return _none(missing)
    if estimate.value is None:
        return _none(estimate.reason or missing)
    if part == "value":
        return estimate.value, None
    if estimate.interval is None:
        return _none(estimate.reason or "no interval")
    return (estimate.interval.low if part == "low" else estimate.interval.high), None


def format_value(value: Any) -> str:
    """A rule's value in its message: ``true``, ``1,204``, ``0.3382``, ``12,346`` (never ``1.235e+04``)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e3 else f"{value:,.0f}"
    return str(value)

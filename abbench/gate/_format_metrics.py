"""Gate metrics of format adherence: how often a model answered in the format asked for (see
`abbench.metrics.FormatAdherence`), per arm and B − A."""

from __future__ import annotations

from abbench.gate._metric import MetricDef, Value, _none, estimate_part
from abbench.metrics import ArmMetrics

_NOT_READ = "no reply of this arm's model was read (its agent reads none: builtin, python)"


def _adherence(arm: ArmMetrics, part: str) -> Value:
    f = arm.format_adherence
    if f is None:
        return _none(_NOT_READ)
    return estimate_part(f.adherence, part, missing="no read reply")


def _reading(arm: ArmMetrics, reading: str) -> Value:
    f = arm.format_adherence
    share = None if f is None else f.share(reading)
    return (share, None) if share is not None else _none(_NOT_READ)


def _difference(c: object, part: str) -> Value:
    d = getattr(c, "format_adherence", None)
    if d is None or d.difference is None:
        return _none("neither arm's replies were read on a shared case")
    if part == "value":
        return d.difference, None
    if d.interval is None:
        return _none("too few shared cases for an interval")
    return (d.interval[0] if part == "low" else d.interval[1]), None


FORMAT_ARM_METRICS: list[MetricDef] = [
    MetricDef(
        "format_adherence",
        "arm",
        "number",
        "share of read replies that were the JSON answer asked for (strict or structured output)",
        lambda a, m, p: _adherence(a, "value"),
    ),
    MetricDef(
        "format_adherence_ci_low",
        "arm",
        "number",
        "lower bound of the format adherence interval",
        lambda a, m, p: _adherence(a, "low"),
    ),
    MetricDef(
        "fallback_rate",
        "arm",
        "number",
        "share of read replies whose answer only the tolerant reader found (prose, key: value, a label)",
        lambda a, m, p: _reading(a, "fallback"),
    ),
    MetricDef(
        "truncated_rate",
        "arm",
        "number",
        "share of read replies cut at max_tokens before the answer was whole",
        lambda a, m, p: _reading(a, "truncated"),
    ),
    MetricDef(
        "unreadable_rate",
        "arm",
        "number",
        "share of read replies with no answer in them (bad_output)",
        lambda a, m, p: _reading(a, "unreadable"),
    ),
]
"""The arm metrics of format adherence."""

FORMAT_COMPARISON_METRICS: list[MetricDef] = [
    MetricDef(
        "format_adherence_diff",
        "comparison",
        "number",
        "B − A in format adherence, paired over the cases both arms' replies were read on",
        lambda c, p: _difference(c, "value"),
    ),
    MetricDef(
        "format_adherence_diff_ci_low",
        "comparison",
        "number",
        "lower bound of the format adherence difference's interval",
        lambda c, p: _difference(c, "low"),
    ),
]
"""The comparison metrics of format adherence."""

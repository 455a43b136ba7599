"""The gate's metric namespace: every metric by name, how a rule writes one, and its unit.

Names without a prefix are about arm B, the candidate the gate decides on, or about the comparison of B
with A; ``a.NAME`` / ``b.NAME`` / ``<arm>.NAME`` name an arm's figure explicitly; ``NAME[x]`` takes a
parameter (a class label or a domain).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

from abbench.errors import UsageError
from abbench.gate._arm_metrics import ARM_METRICS
from abbench.gate._comparison_metrics import COMPARISON_METRICS, DECISION_METRICS
from abbench.gate._metric import MetricDef

METRICS: dict[str, MetricDef] = {m.name: m for m in (*ARM_METRICS, *COMPARISON_METRICS, *DECISION_METRICS)}
"""Every gate metric by name (parameterised ones end in ``[]``)."""


@dataclass(frozen=True)
class MetricRef:
    """A metric name as a rule writes it, parsed.

    Attributes:
        text: As written.
        definition: The metric.
        arm: ``a``, ``b`` or an arm name for arm metrics (``b`` when no prefix was given).
        param: The ``[...]`` parameter, if any.
    """

    text: str
    definition: MetricDef
    arm: str | None
    param: str | None


_PATTERN = re.compile(r"^(?:(?P<arm>.+?)\.)?(?P<name>[a-z_0-9]+)(?:\[(?P<param>.+)\])?$")


_PARAM_WORD = {
    "domain_accuracy[]": "[DOMAIN]",
    "domain_diff[]": "[DOMAIN]",
    "pass_at_k[]": "[K]",
    "pass_hat_k[]": "[K]",
}


def metric_names() -> list[str]:
    """Every metric name, as the documentation lists them (``f1[LABEL]`` for parameterised ones)."""
    return [m.replace("[]", _PARAM_WORD.get(m, "[LABEL]")) for m in METRICS]


def parse_metric(text: str, arms: tuple[str, ...] | None = None) -> MetricRef:
    """Parse a rule's metric (``p95_latency_ms``, ``a.accuracy``, ``control.flip_rate``, ``f1[fast]``).

    Args:
        text: The metric as written.
        arms: The gated experiment's arm names, to check an arm prefix (None: not checked).

    Raises:
        UsageError: an unknown metric (the message suggests close names and lists every one), a prefix
            on a comparison metric, or an unknown arm.
    """
    text = str(text).strip()
    match = _PATTERN.match(text)
    if not match:
        raise UsageError(f"{text!r} is not a metric name; valid metrics: {', '.join(metric_names())}")
    arm, name, param = match.group("arm"), match.group("name"), match.group("param")
    key = f"{name}[]" if param is not None else name
    definition = METRICS.get(key)
    if definition is None:
        plain = [m.replace("[]", "") for m in METRICS]
        close = difflib.get_close_matches(name, plain, n=3)
        hint = f" (did you mean {', '.join(close)}?)" if close else ""
        if param is None and f"{name}[]" in METRICS:
            hint = f" ({name} takes a parameter: {name}[...])"
        elif param is not None and name in METRICS:
            hint = f" ({name} takes no parameter)"
        raise UsageError(
            f"unknown metric {text!r}{hint}; valid metrics: {', '.join(metric_names())}",
            kind="metric",
            name=text,
            choices=metric_names(),
        )
    if definition.scope != "arm":
        if arm is not None:
            raise UsageError(
                f"{text!r}: {name} is a {definition.scope} metric (B against A); it takes no arm prefix"
            )
        return MetricRef(text, definition, None, param)
    arm = arm or "b"
    if arms is not None and arm not in ("a", "b") and arm not in arms:
        raise UsageError(f"{text!r}: no arm {arm!r}; use a., b., or one of the arms: {', '.join(arms)}")
    return MetricRef(text, definition, arm, param)


UNITS = ("share", "points", "score", "usd", "ms", "relative", "tokens", "p", "count", "bool")
"""What a metric's number is, so views can show it as people read it: a share (``0.904`` → 90.4%),
a difference of shares in percentage points, a judge score, US dollars, milliseconds, a relative
change (``0.35`` → +35%), tokens, a p-value, a count, or yes/no."""

_UNIT_OF: dict[str, str] = {
    **dict.fromkeys(
        [
            "accuracy",
            "accuracy_ci_low",
            "corrected_accuracy",
            "accuracy_ci_high",
            "strict_accuracy",
            "execution_failure_rate",
            "grading_failure_rate",
            "flip_rate",
            "agreement_rate",
            "flaky_rate",
            "no_evidence_rate",
            "low_confidence_rate",
            "skill_read_rate",
            "activation_rate",
            "activation_recall",
            "activation_precision",
            "false_activation_rate",
            "wrong_skill_rate",
            "skill_selection_accuracy",
            "accuracy_when_read",
            "accuracy_when_not_read",
            "macro_f1",
            "micro_f1",
            "weighted_f1",
            "macro_precision",
            "macro_recall",
            "f1[]",
            "precision[]",
            "recall[]",
            "domain_accuracy[]",
            "pass_at_k[]",
            "pass_hat_k[]",
            "coverage",
        ],
        "share",
    ),
    **dict.fromkeys(
        ["format_adherence", "format_adherence_ci_low", "fallback_rate", "truncated_rate", "unreadable_rate"],
        "share",
    ),
    **dict.fromkeys(["format_adherence_diff", "format_adherence_diff_ci_low"], "points"),
    **dict.fromkeys(["skill_following", "skill_following_ci_low"], "share"),
    **dict.fromkeys(["skill_following_diff", "skill_following_diff_ci_low"], "points"),
    **dict.fromkeys(["diff", "diff_ci_low", "diff_ci_high", "mde", "domain_diff[]"], "points"),
    **dict.fromkeys(["score", "score_ci_low", "score_diff"], "score"),
    **dict.fromkeys(
        [
            "avg_cost",
            "p50_cost",
            "p95_cost",
            "total_cost",
            "cost_per_correct",
            "judge_cost",
            "cost_diff",
            "cost_diff_ci_low",
            "cost_diff_ci_high",
        ],
        "usd",
    ),
    **dict.fromkeys(
        [
            "avg_latency_ms",
            "p50_latency_ms",
            "p95_latency_ms",
            "max_latency_ms",
            "latency_diff_ms",
            "latency_diff_ci_high",
        ],
        "ms",
    ),
    **dict.fromkeys(
        ["cost_change", "cost_change_ci_low", "cost_change_ci_high", "latency_change", "tokens_change"],
        "relative",
    ),
    **dict.fromkeys(["avg_tokens", "p50_tokens", "p95_tokens", "tokens_diff"], "tokens"),
    **dict.fromkeys(["p_value", "mcnemar_p"], "p"),
}


def metric_unit(metric: str) -> str:
    """The unit of a metric as a rule writes it (``p95_latency_ms`` → ``ms``, ``a.accuracy`` → ``share``).

    One of `UNITS`; counts and yes/no metrics follow their kind. A name that is not a metric gives
    ``"number"`` (views then show it plainly).
    """
    try:
        definition = parse_metric(metric).definition
    except UsageError:
        return "number"
    if definition.kind in ("count", "bool"):
        return definition.kind
    return _UNIT_OF.get(definition.name, "number")


_LABEL_END = re.compile(r" \(|; |, |: ")


def metric_label(metric: str) -> str:
    """A metric as a sentence names it: its description's first words, with its parameter and a prefix's arm
    (``cost_change_ci_low`` → ``lower bound of the relative cost change``, ``a.accuracy`` → ``A's pass rate
    over graded runs``, ``f1[fast]`` → ``F1 of one class (fast)``). A name that is not a metric is kept."""
    try:
        ref = parse_metric(metric)
    except UsageError:
        return metric
    label = _LABEL_END.split(ref.definition.description, maxsplit=1)[0]
    if ref.param is not None:
        label += f" ({ref.param})"
    prefixed = "." in metric.split("[", 1)[0]
    if ref.arm is not None and prefixed:
        label = f"{ref.arm.upper() if ref.arm in ('a', 'b') else ref.arm}'s {label}"
    return label


def speaks_of_cost(metric: str) -> bool:
    """Whether a rule's metric is about cost (``cost_change``, ``a.avg_cost``, ``cost_pass``, a dollar figure)."""
    name = metric.split(".")[-1].split("[")[0]
    return name.startswith("cost") or name.endswith("_cost") or metric_unit(metric) == "usd"

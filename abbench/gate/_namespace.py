"""The gate's metric namespace: every figure a rule may name, where it comes from, and what it means.

Names without a prefix are about arm B, the candidate the gate decides on, or about the comparison of B
with A; ``a.NAME`` / ``b.NAME`` / ``<arm>.NAME`` name an arm's figure explicitly; ``NAME[x]`` takes a
parameter (a class label or a domain).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from abbench.errors import UsageError

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


def _none(reason: str) -> Value:
    return None, reason


def _est(estimate, part: str = "value") -> Value:
    if estimate is None:
        return _none("not measured")
    if estimate.value is None:
        return _none(estimate.reason or "not measured")
    if part == "value":
        return estimate.value, None
    if estimate.interval is None:
        return _none(estimate.reason or "no interval")
    return (estimate.interval.low if part == "low" else estimate.interval.high), None


def _summary(arm, field: str, stat: str) -> Value:
    s = getattr(arm.usage, field)
    value = getattr(s, stat)
    return (value, None) if value is not None else _none(f"no executed run with a {field}")


def _rate_value(r) -> Value:
    return (r.value, None) if r.value is not None else _none(r.reason or "not measured")


def _stab(arm, field: str) -> Value:
    value = getattr(arm.stability, field)
    if value is None:
        return _none(arm.stability.reason or "not measured")
    return (len(value) if isinstance(value, tuple) else value), None


def _finished(arm) -> int:
    c = arm.counts
    return c.runs - c.cancelled - c.unfinished


def _share(part: int, whole: int, what: str) -> Value:
    return (part / whole, None) if whole else _none(f"no {what}")


def _classes(arm, average: str, field: str) -> Value:
    if arm.classes is None:
        return _none(arm.classes_reason or "no per-class figures")
    return getattr(getattr(arm.classes, average), field), None


def _per_class(arm, field: str, label: str) -> Value:
    if arm.classes is None:
        return _none(arm.classes_reason or "no per-class figures")
    scores = arm.classes.per_class.get(label)
    if scores is None:
        for name, s in arm.classes.per_class.items():
            if name.casefold() == label.casefold():
                scores = s
        if scores is None:
            return _none(f"no class {label!r}; classes: {', '.join(arm.classes.per_class)}")
    return getattr(scores, field), None


def _domain_accuracy(arm, label: str, metrics) -> Value:
    for row in metrics.by_domain:
        if row.arm == arm.arm and str(row.group) == label:
            return _est(row.accuracy)
    return _none(f"no domain {label!r}")


ARM_METRICS: list[MetricDef] = [
    MetricDef(
        "accuracy",
        "arm",
        "number",
        "pass rate over graded runs (failures excluded)",
        lambda a, m, p: _est(a.accuracy),
    ),
    MetricDef(
        "accuracy_ci_low",
        "arm",
        "number",
        "lower bound of the accuracy interval",
        lambda a, m, p: _est(a.accuracy, "low"),
    ),
    MetricDef(
        "accuracy_ci_high",
        "arm",
        "number",
        "upper bound of the accuracy interval",
        lambda a, m, p: _est(a.accuracy, "high"),
    ),
    MetricDef(
        "strict_accuracy",
        "arm",
        "number",
        "pass rate counting execution and grading failures as wrong",
        lambda a, m, p: _est(a.strict_accuracy),
    ),
    MetricDef(
        "score", "arm", "number", "mean graded score over cases (judges)", lambda a, m, p: _est(a.score)
    ),
    MetricDef(
        "score_ci_low",
        "arm",
        "number",
        "lower bound of the mean score's interval",
        lambda a, m, p: _est(a.score, "low"),
    ),
    MetricDef("runs", "arm", "count", "runs of the arm", lambda a, m, p: (a.counts.runs, None)),
    MetricDef(
        "n_cases",
        "arm",
        "count",
        "cases with at least one graded run",
        lambda a, m, p: (
            a.accuracy.n_cases if a.score is None or a.accuracy.value is not None else a.score.n_cases,
            None,
        ),
    ),
    MetricDef("passed", "arm", "count", "runs graded as right", lambda a, m, p: (a.counts.passed, None)),
    MetricDef("failed", "arm", "count", "runs graded as wrong", lambda a, m, p: (a.counts.failed, None)),
    MetricDef(
        "execution_failures",
        "arm",
        "count",
        "runs whose execution failed",
        lambda a, m, p: (a.counts.execution_failed, None),
    ),
    MetricDef(
        "execution_failure_rate",
        "arm",
        "number",
        "execution failures over finished runs",
        lambda a, m, p: _share(a.counts.execution_failed, _finished(a), "finished run"),
    ),
    MetricDef(
        "grading_failures",
        "arm",
        "count",
        "runs no grader reached a verdict on",
        lambda a, m, p: (a.counts.grading_failed, None),
    ),
    MetricDef(
        "grading_failure_rate",
        "arm",
        "number",
        "grading failures over finished runs",
        lambda a, m, p: _share(a.counts.grading_failed, _finished(a), "finished run"),
    ),
    MetricDef("cancelled", "arm", "count", "runs cancelled", lambda a, m, p: (a.counts.cancelled, None)),
    MetricDef(
        "unfinished",
        "arm",
        "count",
        "runs pending, running or waiting for grading",
        lambda a, m, p: (a.counts.unfinished, None),
    ),
    MetricDef(
        "avg_cost",
        "arm",
        "number",
        "mean agent cost per executed run",
        lambda a, m, p: _summary(a, "cost", "mean"),
    ),
    MetricDef(
        "p50_cost", "arm", "number", "median agent cost per run", lambda a, m, p: _summary(a, "cost", "p50")
    ),
    MetricDef(
        "p95_cost",
        "arm",
        "number",
        "95th percentile of agent cost per run",
        lambda a, m, p: _summary(a, "cost", "p95"),
    ),
    MetricDef(
        "total_cost",
        "arm",
        "number",
        "agent cost of every executed run",
        lambda a, m, p: (a.usage.total_cost, None),
    ),
    MetricDef(
        "cost_per_correct",
        "arm",
        "number",
        "total agent cost divided by the runs graded right",
        lambda a, m, p: (a.usage.cost_per_correct, a.usage.reason),
    ),
    MetricDef(
        "judge_cost",
        "arm",
        "number",
        "what grading the arm's runs cost",
        lambda a, m, p: (a.usage.judge_cost, None),
    ),
    MetricDef(
        "avg_latency_ms",
        "arm",
        "number",
        "mean latency per executed run (ms)",
        lambda a, m, p: _summary(a, "latency_ms", "mean"),
    ),
    MetricDef(
        "p50_latency_ms",
        "arm",
        "number",
        "median latency (ms)",
        lambda a, m, p: _summary(a, "latency_ms", "p50"),
    ),
    MetricDef(
        "p95_latency_ms",
        "arm",
        "number",
        "95th percentile latency (ms)",
        lambda a, m, p: _summary(a, "latency_ms", "p95"),
    ),
    MetricDef(
        "max_latency_ms",
        "arm",
        "number",
        "slowest run (ms)",
        lambda a, m, p: _summary(a, "latency_ms", "max"),
    ),
    MetricDef(
        "avg_tokens",
        "arm",
        "number",
        "mean input + output tokens per run",
        lambda a, m, p: _summary(a, "tokens", "mean"),
    ),
    MetricDef(
        "p50_tokens", "arm", "number", "median tokens per run", lambda a, m, p: _summary(a, "tokens", "p50")
    ),
    MetricDef(
        "p95_tokens",
        "arm",
        "number",
        "95th percentile tokens per run",
        lambda a, m, p: _summary(a, "tokens", "p95"),
    ),
    MetricDef(
        "flip_rate",
        "arm",
        "number",
        "share of cases answered differently across rounds",
        lambda a, m, p: _stab(a, "flip_rate"),
    ),
    MetricDef(
        "agreement_rate",
        "arm",
        "number",
        "mean share of rounds giving a case's most common answer",
        lambda a, m, p: _stab(a, "agreement"),
    ),
    MetricDef(
        "flaky_cases",
        "arm",
        "count",
        "cases passing in some rounds and failing in others",
        lambda a, m, p: _stab(a, "flaky"),
    ),
    MetricDef(
        "flaky_rate",
        "arm",
        "number",
        "flaky cases over cases graded in two or more rounds",
        lambda a, m, p: _stab(a, "flaky_rate"),
    ),
    MetricDef(
        "no_evidence_rate",
        "arm",
        "number",
        "share of answers citing no skill reference",
        lambda a, m, p: _rate_value(a.grounding.no_evidence),
    ),
    MetricDef(
        "low_confidence_rate",
        "arm",
        "number",
        "share of answers below the confidence threshold",
        lambda a, m, p: _rate_value(a.grounding.low_confidence),
    ),
    MetricDef(
        "skill_read_rate",
        "arm",
        "number",
        "share of runs that opened a skill file or section",
        lambda a, m, p: _rate_value(a.grounding.skill_read),
    ),
    MetricDef(
        "accuracy_when_read",
        "arm",
        "number",
        "pass rate of runs that read the skill",
        lambda a, m, p: _est(a.grounding.accuracy_when_read),
    ),
    MetricDef(
        "accuracy_when_not_read",
        "arm",
        "number",
        "pass rate of runs that did not read it",
        lambda a, m, p: _est(a.grounding.accuracy_when_not_read),
    ),
    MetricDef(
        "macro_f1",
        "arm",
        "number",
        "unweighted mean F1 over classes",
        lambda a, m, p: _classes(a, "macro", "f1"),
    ),
    MetricDef("micro_f1", "arm", "number", "F1 pooled over runs", lambda a, m, p: _classes(a, "micro", "f1")),
    MetricDef(
        "weighted_f1",
        "arm",
        "number",
        "F1 averaged with class support as weights",
        lambda a, m, p: _classes(a, "weighted", "f1"),
    ),
    MetricDef(
        "macro_precision",
        "arm",
        "number",
        "unweighted mean precision over classes",
        lambda a, m, p: _classes(a, "macro", "precision"),
    ),
    MetricDef(
        "macro_recall",
        "arm",
        "number",
        "unweighted mean recall over classes",
        lambda a, m, p: _classes(a, "macro", "recall"),
    ),
    MetricDef("f1[]", "arm", "number", "F1 of one class: f1[fast]", lambda a, m, p: _per_class(a, "f1", p)),
    MetricDef(
        "precision[]",
        "arm",
        "number",
        "precision of one class: precision[fast]",
        lambda a, m, p: _per_class(a, "precision", p),
    ),
    MetricDef(
        "recall[]",
        "arm",
        "number",
        "recall of one class: recall[slow]",
        lambda a, m, p: _per_class(a, "recall", p),
    ),
    MetricDef(
        "domain_accuracy[]",
        "arm",
        "number",
        "accuracy within one domain: domain_accuracy[导航]",
        lambda a, m, p: _domain_accuracy(a, p, m),
    ),
]


def _cmp_main(c, part: str) -> Value:
    main = c.main
    if main is None:
        return _none("no paired case")
    if part == "diff":
        return main.difference, None
    if c.interval is None:
        reason = "one paired case" if c.n_cases < 2 else "no spread between the paired cases"
        return _none(f"no interval ({reason})")
    return (c.interval.low if part == "low" else c.interval.high), None


def _usage(c, metric: str, part: str) -> Value:
    u = c.usage_metric(metric)
    if u is None or u.difference is None:
        return _none(u.reason if u is not None and u.reason else f"no {metric} measured in both arms")
    if part == "diff":
        return u.difference, None
    if part == "relative":
        return (u.relative, None) if u.relative is not None else _none(f"A's {metric} is 0")
    if u.interval is None:
        return _none(u.reason or "no interval")
    return (u.interval.low if part == "low" else u.interval.high), None


def _domain_diff(c, label: str) -> Value:
    for d in c.by_domain:
        if d.domain == label:
            return d.difference, None
    return _none(f"no paired case in domain {label!r}")


def _text(c, part: str) -> Value:
    if c.text is None:
        return _none("reasons and evidence were not compared (details off)")
    if part == "reason":
        return len(c.text.reason_changed), None
    if part == "appeared":
        return len(c.text.evidence_appeared), None
    return len(c.text.evidence_disappeared), None


COMPARISON_METRICS: list[MetricDef] = [
    MetricDef(
        "diff",
        "comparison",
        "number",
        "B − A in accuracy (or mean score), per-case means",
        lambda c, p: _cmp_main(c, "diff"),
    ),
    MetricDef(
        "diff_ci_low",
        "comparison",
        "number",
        "lower bound of the difference's interval",
        lambda c, p: _cmp_main(c, "low"),
    ),
    MetricDef(
        "diff_ci_high",
        "comparison",
        "number",
        "upper bound of the difference's interval",
        lambda c, p: _cmp_main(c, "high"),
    ),
    MetricDef(
        "p_value",
        "comparison",
        "number",
        "p-value of the main test",
        lambda c, p: (c.verdict.p_value, None if c.verdict.p_value is not None else "no test"),
    ),
    MetricDef(
        "significant_improvement",
        "comparison",
        "bool",
        "the main test finds B better",
        lambda c, p: (c.verdict.code == "b_better", None),
    ),
    MetricDef(
        "significant_regression",
        "comparison",
        "bool",
        "the main test finds B worse",
        lambda c, p: (c.verdict.code == "b_worse", None),
    ),
    MetricDef(
        "mcnemar_p",
        "comparison",
        "number",
        "exact McNemar p-value on per-case outcomes",
        lambda c, p: (c.mcnemar.p_value, None) if c.mcnemar else _none("scores: McNemar does not apply"),
    ),
    MetricDef(
        "fixed",
        "comparison",
        "count",
        "cases wrong in A and right in B",
        lambda c, p: (c.count("fixed"), None),
    ),
    MetricDef(
        "regressed",
        "comparison",
        "count",
        "cases right in A and wrong in B",
        lambda c, p: (c.count("regressed"), None),
    ),
    MetricDef(
        "net_fixed",
        "comparison",
        "count",
        "fixed minus regressed",
        lambda c, p: (c.count("fixed") - c.count("regressed"), None),
    ),
    MetricDef(
        "unchanged_right",
        "comparison",
        "count",
        "cases right in both",
        lambda c, p: (c.count("unchanged_right"), None),
    ),
    MetricDef(
        "unchanged_wrong",
        "comparison",
        "count",
        "cases wrong in both",
        lambda c, p: (c.count("unchanged_wrong"), None),
    ),
    MetricDef("n_paired", "comparison", "count", "cases graded in both arms", lambda c, p: (c.n_cases, None)),
    MetricDef(
        "excluded_cases",
        "comparison",
        "count",
        "cases left out of the pairing",
        lambda c, p: (sum(len(v) for v in c.excluded.values()), None),
    ),
    MetricDef(
        "mde",
        "comparison",
        "number",
        "smallest difference this many cases detect",
        lambda c, p: (
            (c.mde.delta, None)
            if c.mde
            else _none("fewer than 2 paired cases" if c.n_cases < 2 else "no spread between the paired cases")
        ),
    ),
    MetricDef(
        "cost_diff",
        "comparison",
        "number",
        "B − A in mean cost per case",
        lambda c, p: _usage(c, "cost", "diff"),
    ),
    MetricDef(
        "cost_diff_ci_low",
        "comparison",
        "number",
        "lower bound of the cost difference",
        lambda c, p: _usage(c, "cost", "low"),
    ),
    MetricDef(
        "cost_diff_ci_high",
        "comparison",
        "number",
        "upper bound of the cost difference",
        lambda c, p: _usage(c, "cost", "high"),
    ),
    MetricDef(
        "cost_change",
        "comparison",
        "number",
        "relative cost change (B − A) / A",
        lambda c, p: _usage(c, "cost", "relative"),
    ),
    MetricDef(
        "latency_diff_ms",
        "comparison",
        "number",
        "B − A in mean latency per case (ms)",
        lambda c, p: _usage(c, "latency_ms", "diff"),
    ),
    MetricDef(
        "latency_diff_ci_high",
        "comparison",
        "number",
        "upper bound of the latency difference (ms)",
        lambda c, p: _usage(c, "latency_ms", "high"),
    ),
    MetricDef(
        "latency_change",
        "comparison",
        "number",
        "relative latency change",
        lambda c, p: _usage(c, "latency_ms", "relative"),
    ),
    MetricDef(
        "tokens_diff",
        "comparison",
        "number",
        "B − A in mean tokens per case",
        lambda c, p: _usage(c, "tokens", "diff"),
    ),
    MetricDef(
        "tokens_change",
        "comparison",
        "number",
        "relative token change",
        lambda c, p: _usage(c, "tokens", "relative"),
    ),
    MetricDef(
        "score_diff",
        "comparison",
        "number",
        "B − A in mean judge score (score outcomes)",
        lambda c, p: _usage(c, "score", "diff"),
    ),
    MetricDef(
        "no_domain_significant_regression",
        "comparison",
        "bool",
        "no domain is significantly worse in B (Holm-adjusted)",
        lambda c, p: (not c.significant_domain_regressions(), None),
    ),
    MetricDef(
        "domains_significant_regression",
        "comparison",
        "count",
        "domains significantly worse in B (Holm-adjusted)",
        lambda c, p: (len(c.significant_domain_regressions()), None),
    ),
    MetricDef(
        "reason_changed",
        "comparison",
        "count",
        "cases with the same answer and a new reason",
        lambda c, p: _text(c, "reason"),
    ),
    MetricDef(
        "evidence_appeared",
        "comparison",
        "count",
        "cases citing a reference A never cited",
        lambda c, p: _text(c, "appeared"),
    ),
    MetricDef(
        "evidence_disappeared",
        "comparison",
        "count",
        "cases no longer citing a reference A cited",
        lambda c, p: _text(c, "disappeared"),
    ),
    MetricDef(
        "domain_diff[]",
        "comparison",
        "number",
        "B − A within one domain: domain_diff[导航]",
        lambda c, p: _domain_diff(c, p),
    ),
]

DECISION_METRICS: list[MetricDef] = [
    MetricDef(
        "capability_pass",
        "decision",
        "bool",
        "the capability dimension passes",
        lambda d, p: (d.capability.conclusion == "pass", None),
    ),
    MetricDef(
        "cost_pass",
        "decision",
        "bool",
        "the cost dimension passes",
        lambda d, p: (d.cost.conclusion == "pass", None),
    ),
    MetricDef(
        "stability_pass",
        "decision",
        "bool",
        "the stability dimension passes",
        lambda d, p: (d.stability.conclusion == "pass", None),
    ),
    MetricDef(
        "decision_pass",
        "decision",
        "bool",
        "all three dimensions pass",
        lambda d, p: (d.conclusion == "pass", None),
    ),
]

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


def metric_names() -> list[str]:
    """Every metric name, as the documentation lists them (``f1[LABEL]`` for parameterised ones)."""
    return [m.replace("[]", "[DOMAIN]" if m.startswith("domain_") else "[LABEL]") for m in METRICS]


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
        raise UsageError(f"unknown metric {text!r}{hint}; valid metrics: {', '.join(metric_names())}")
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
        ],
        "share",
    ),
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
    **dict.fromkeys(["cost_change", "latency_change", "tokens_change"], "relative"),
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

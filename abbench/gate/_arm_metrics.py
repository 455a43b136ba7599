"""Gate metrics about one arm (accuracy, counts, cost, latency, tokens, stability, grounding, classes)."""

from __future__ import annotations

from abbench.gate._following_metrics import FOLLOWING_ARM_METRICS
from abbench.gate._format_metrics import FORMAT_ARM_METRICS
from abbench.gate._metric import MetricDef, Value, _none, estimate_part
from abbench.metrics import ArmMetrics, ExperimentMetrics, Rate


def _summary(arm: ArmMetrics, field: str, stat: str) -> Value:
    s = getattr(arm.usage, field)
    value = getattr(s, stat)
    return (value, None) if value is not None else _none(f"no executed run with a {field}")


def _usage_metric(name: str, meaning: str, field: str, stat: str) -> MetricDef:
    """An arm metric read from one statistic (``mean``, ``p50``…) of the arm's cost, latency or tokens."""
    return MetricDef(name, "arm", "number", meaning, lambda a, m, p: _summary(a, field, stat))


def _rate_value(r: Rate) -> Value:
    return (r.value, None) if r.value is not None else _none(r.reason or "not measured")


def _stab(arm: ArmMetrics, field: str) -> Value:
    value = getattr(arm.stability, field)
    if value is None:
        return _none(arm.stability.reason or "not measured")
    return (len(value) if isinstance(value, tuple) else value), None


def _stability_metric(name: str, kind: str, meaning: str, field: str) -> MetricDef:
    """An arm metric read from one figure of the arm's stability across rounds (a tuple counts its items)."""
    return MetricDef(name, "arm", kind, meaning, lambda a, m, p: _stab(a, field))


def _finished(arm: ArmMetrics) -> int:
    c = arm.counts
    return int(c.runs - c.cancelled - c.unfinished)


def _share(part: int, whole: int, what: str) -> Value:
    return (part / whole, None) if whole else _none(f"no {what}")


def _classes(arm: ArmMetrics, average: str, field: str) -> Value:
    if arm.classes is None:
        return _none(arm.classes_reason or "no per-class figures")
    return getattr(getattr(arm.classes, average), field), None


def _per_class(arm: ArmMetrics, field: str, label: str) -> Value:
    if arm.classes is None:
        return _none(arm.classes_reason or "no per-class figures")
    scores = arm.classes.per_class.get(label)
    if scores is None:
        for name, s in arm.classes.per_class.items():
            if name.casefold() == label.casefold():
                scores = s
        if scores is None:
            if any(name.casefold() == label.casefold() for name in arm.classes.absent_labels):
                return _none(
                    f"class {label!r} is neither gold nor predicted in these runs: it has no figures"
                )
            return _none(f"no class {label!r}; classes: {', '.join(arm.classes.per_class)}")
    return getattr(scores, field), None


def _pass_k(arm: ArmMetrics, k: str, field: str) -> Value:
    """pass@k or pass^k of the arm (the rule's ``k:``; k > rounds is refused when the gate is read)."""
    found = arm.stability.pass_at(int(k)) if str(k).isdigit() else None
    if found is None:
        return _none(arm.stability.reason or f"no pass/fail verdicts over {k} rounds")
    return getattr(found, field), None


def _domain_accuracy(arm: ArmMetrics, label: str, metrics: ExperimentMetrics) -> Value:
    for row in metrics.by_domain:
        if row.arm == arm.arm and str(row.group) == label:
            return estimate_part(row.accuracy)
    return _none(f"no domain {label!r}")


def _corrected(arm: ArmMetrics, metrics: ExperimentMetrics) -> Value:
    """The arm's judge-scored accuracy corrected by a random review sample (no value without one)."""
    found = (metrics.corrected or {}).get(arm.arm)
    if found is None:
        return _none("no judge-scored accuracy corrected by people for this arm")
    return found


def _activation(arm: ArmMetrics, metrics: ExperimentMetrics, field: str) -> Value:
    """An activation figure of the arm: no value (never a pass) when the arm offers no skills or no
    case says which skill should trigger."""
    report = metrics.activation
    found = report.arm(arm.arm) if report is not None else None
    if found is None:
        return _none(f"arm {arm.arm!r} does not offer skills (skill_mode: offered): activation not assessed")
    return estimate_part(getattr(found, field))


ARM_METRICS: list[MetricDef] = [
    MetricDef(
        "accuracy",
        "arm",
        "number",
        "pass rate over graded runs (failures excluded)",
        lambda a, m, p: estimate_part(a.accuracy),
    ),
    MetricDef(
        "accuracy_ci_low",
        "arm",
        "number",
        "lower bound of the accuracy interval",
        lambda a, m, p: estimate_part(a.accuracy, "low"),
    ),
    MetricDef(
        "accuracy_ci_high",
        "arm",
        "number",
        "upper bound of the accuracy interval",
        lambda a, m, p: estimate_part(a.accuracy, "high"),
    ),
    MetricDef(
        "strict_accuracy",
        "arm",
        "number",
        "pass rate counting execution and grading failures as wrong",
        lambda a, m, p: estimate_part(a.strict_accuracy),
    ),
    MetricDef(
        "score",
        "arm",
        "number",
        "mean graded score over cases (judges)",
        lambda a, m, p: estimate_part(a.score),
    ),
    MetricDef(
        "score_ci_low",
        "arm",
        "number",
        "lower bound of the mean score's interval",
        lambda a, m, p: estimate_part(a.score, "low"),
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
    _usage_metric("avg_cost", "mean agent cost per executed run", "cost", "mean"),
    _usage_metric("p50_cost", "median agent cost per run", "cost", "p50"),
    _usage_metric("p95_cost", "95th percentile of agent cost per run", "cost", "p95"),
    MetricDef(
        "total_cost",
        "arm",
        "number",
        "agent cost of every executed run",
        lambda a, m, p: (a.usage.total_cost, a.usage.reason if a.usage.total_cost is None else None),
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
        lambda a, m, p: (
            a.usage.judge_cost,
            None if a.usage.judge_cost is not None else "a judge call had no price: its cost is unknown",
        ),
    ),
    _usage_metric("avg_latency_ms", "mean latency per executed run (ms)", "latency_ms", "mean"),
    _usage_metric("p50_latency_ms", "median latency (ms)", "latency_ms", "p50"),
    _usage_metric("p95_latency_ms", "95th percentile latency (ms)", "latency_ms", "p95"),
    _usage_metric("max_latency_ms", "slowest run (ms)", "latency_ms", "max"),
    _usage_metric("avg_tokens", "mean input + output tokens per run", "tokens", "mean"),
    _usage_metric("p50_tokens", "median tokens per run", "tokens", "p50"),
    _usage_metric("p95_tokens", "95th percentile tokens per run", "tokens", "p95"),
    _stability_metric(
        "flip_rate", "number", "share of cases answered differently across rounds", "flip_rate"
    ),
    _stability_metric(
        "agreement_rate", "number", "mean share of rounds giving a case's most common answer", "agreement"
    ),
    _stability_metric("flaky_cases", "count", "cases passing in some rounds and failing in others", "flaky"),
    _stability_metric(
        "flaky_rate", "number", "flaky cases over cases graded in two or more rounds", "flaky_rate"
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
        lambda a, m, p: estimate_part(a.grounding.accuracy_when_read),
    ),
    MetricDef(
        "accuracy_when_not_read",
        "arm",
        "number",
        "pass rate of runs that did not read it",
        lambda a, m, p: estimate_part(a.grounding.accuracy_when_not_read),
    ),
    MetricDef(
        "corrected_accuracy",
        "arm",
        "number",
        "judge-scored accuracy corrected by people's reviews of a random sample (prediction-powered "
        "inference); no value until a random sample of judged runs is drawn for review (draw_review_sample)",
        lambda a, m, p: _corrected(a, m),
    ),
    MetricDef(
        "activation_rate",
        "arm",
        "number",
        "share of executed runs of an offered arm that loaded a skill",
        lambda a, m, p: _activation(a, m, "activation"),
    ),
    MetricDef(
        "activation_recall",
        "arm",
        "number",
        "share of should-trigger runs that loaded the expected skill (cases' expected_skill)",
        lambda a, m, p: _activation(a, m, "recall"),
    ),
    MetricDef(
        "activation_precision",
        "arm",
        "number",
        "share of runs that loaded a skill that loaded the expected one",
        lambda a, m, p: _activation(a, m, "precision"),
    ),
    MetricDef(
        "false_activation_rate",
        "arm",
        "number",
        "share of must-not-trigger runs (expected_skill: none) that loaded a skill",
        lambda a, m, p: _activation(a, m, "false_activation"),
    ),
    MetricDef(
        "wrong_skill_rate",
        "arm",
        "number",
        "share of should-trigger runs offered several skills whose first load was another skill",
        lambda a, m, p: _activation(a, m, "wrong_skill"),
    ),
    MetricDef(
        "skill_selection_accuracy",
        "arm",
        "number",
        "share of should-trigger runs offered several skills that loaded one whose first load was the expected skill",
        lambda a, m, p: _activation(a, m, "selection"),
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
        "pass_at_k[]",
        "arm",
        "number",
        "chance at least one of k attempts passes (unbiased, Chen et al. 2021): pass_at_k with k: 3",
        lambda a, m, p: _pass_k(a, p, "pass_at_k"),
    ),
    MetricDef(
        "pass_hat_k[]",
        "arm",
        "number",
        "chance all k attempts pass (pass^k, τ-bench): pass_hat_k with k: 3",
        lambda a, m, p: _pass_k(a, p, "pass_hat_k"),
    ),
    MetricDef(
        "domain_accuracy[]",
        "arm",
        "number",
        "accuracy within one domain: domain_accuracy[导航]",
        lambda a, m, p: _domain_accuracy(a, p, m),
    ),
]

ARM_METRICS.extend(FORMAT_ARM_METRICS)
ARM_METRICS.extend(FOLLOWING_ARM_METRICS)

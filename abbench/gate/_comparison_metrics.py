"""Gate metrics about B against A: the paired comparison's figures and the decision's dimensions."""

from __future__ import annotations

from typing import TYPE_CHECKING

from abbench.compare import DEFAULT_MARGIN, Outcome, VerdictCode
from abbench.gate._following_metrics import FOLLOWING_COMPARISON_METRICS
from abbench.gate._format_metrics import FORMAT_COMPARISON_METRICS
from abbench.gate._metric import MetricDef, Value, _none, _unsettled
from abbench.gate._words import Conclusion

if TYPE_CHECKING:
    from abbench.compare import Comparison
    from abbench.gate._decision import Decision


def _cmp_main(c: Comparison, part: str) -> Value:
    main = c.main
    if main is None:
        return _none("no paired case")
    if part == "diff":
        return main.difference, None
    if c.interval is None:
        reason = "one paired case" if c.n_cases < 2 else "no spread between the paired cases"
        return _none(f"no interval ({reason})")
    return (c.interval.low if part == "low" else c.interval.high), None


def _non_inferior(c: Comparison, margin: float | None) -> Value:
    """True when better or not worse, False when worse, no value when inconclusive (the gate says so)."""
    settled = c.settle(DEFAULT_MARGIN if margin is None else float(margin))
    if settled.outcome == Outcome.INCONCLUSIVE:
        return _unsettled(settled.text)
    return settled.outcome != Outcome.WORSE, None


def _usage(c: Comparison, metric: str, part: str) -> Value:
    u = c.usage_metric(metric)
    if u is None or u.difference is None:
        return _none(u.reason if u is not None and u.reason else f"no {metric} measured in both arms")
    if part == "diff":
        return u.difference, None
    if part == "relative":
        return (u.relative, None) if u.relative is not None else _none(f"A's {metric} is 0")
    if part in ("relative_low", "relative_high"):
        iv = u.relative_interval
        if iv is None:
            return _none(f"no interval of B's {metric} over A's (too few cases, or A's is not clear of 0)")
        return (iv.low if part == "relative_low" else iv.high), None
    if u.interval is None:
        return _none(u.reason or "no interval")
    return (u.interval.low if part == "low" else u.interval.high), None


def _domain_diff(c: Comparison, label: str) -> Value:
    for d in c.by_domain:
        if d.domain == label:
            return d.difference, None
    return _none(f"no paired case in domain {label!r}")


def _text(c: Comparison, part: str) -> Value:
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
        "non_inferior",
        "comparison",
        "bool",
        "B is better or not worse within the rule's margin (lower bound > −margin; default 0.02); "
        "inconclusive when the interval straddles it",
        lambda c, p: _non_inferior(c, p),
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
        lambda c, p: (c.verdict.code == VerdictCode.B_BETTER, None),
    ),
    MetricDef(
        "significant_regression",
        "comparison",
        "bool",
        "the main test finds B worse",
        lambda c, p: (c.verdict.code == VerdictCode.B_WORSE, None),
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
        "cost_change_ci_low",
        "comparison",
        "number",
        "lower bound of the relative cost change (Fieller's interval of B's mean cost over A's, minus 1)",
        lambda c, p: _usage(c, "cost", "relative_low"),
    ),
    MetricDef(
        "cost_change_ci_high",
        "comparison",
        "number",
        "upper bound of the relative cost change",
        lambda c, p: _usage(c, "cost", "relative_high"),
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


def _dimension(d: Decision, name: str) -> Value:
    dim = getattr(d, name)
    if dim.conclusion == Conclusion.INCONCLUSIVE:
        return _unsettled(dim.summary)
    if not dim.assessed:
        return _none(dim.summary)
    return dim.conclusion in (Conclusion.PASS, Conclusion.WARN), None  # a warning never blocks


def _overall(d: Decision) -> Value:
    if d.conclusion == Conclusion.INCONCLUSIVE:
        unsettled = [
            f"{x.name}: {x.summary}" for x in d.dimensions if x.conclusion == Conclusion.INCONCLUSIVE
        ]
        return _unsettled("; ".join(unsettled)) if unsettled else _none("no dimension could be assessed")
    return d.conclusion == Conclusion.PASS, None


def _coverage(d: Decision) -> Value:
    if d.coverage is None:
        return _none("coverage not measured")
    return d.coverage.share, None


COMPARISON_METRICS.extend(FORMAT_COMPARISON_METRICS)
COMPARISON_METRICS.extend(FOLLOWING_COMPARISON_METRICS)

DECISION_METRICS: list[MetricDef] = [
    MetricDef(
        "capability_pass",
        "decision",
        "bool",
        "the capability dimension passes: B better or not worse within the comparison's margin and no "
        "domain significantly worse (inconclusive when the interval straddles the margin; no value when it "
        "could not be assessed)",
        lambda d, p: _dimension(d, "capability"),
    ),
    MetricDef(
        "cost_pass",
        "decision",
        "bool",
        "the cost dimension passes (no value when no cost is recorded)",
        lambda d, p: _dimension(d, "cost"),
    ),
    MetricDef(
        "stability_pass",
        "decision",
        "bool",
        "the stability dimension passes (no value with one round)",
        lambda d, p: _dimension(d, "stability"),
    ),
    MetricDef(
        "decision_pass",
        "decision",
        "bool",
        "no dimension blocks, none is inconclusive and at least one was assessed",
        lambda d, p: _overall(d),
    ),
    MetricDef(
        "coverage",
        "decision",
        "number",
        "share of the pair's planned runs graded (the lower of the two arms)",
        lambda d, p: _coverage(d),
    ),
]

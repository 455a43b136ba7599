"""The decision and the gate: capability, cost and stability, and rules over a documented metric namespace.

A gate file is JSON or YAML: a list of rules, or ``{rules: [...], baseline: A, candidate: B,
min_coverage: 0.95}``. Each rule is ``{metric, op, value, severity}`` (``severity`` is ``block`` by
default; ``warn`` never blocks), or the shorthand ``"p95_latency_ms <= 8000 (warn)"``. Metric names are
listed by `metric_names()` and ``abbench gate --list-metrics``; unprefixed arm metrics are about the
candidate arm B. ``{metric: non_inferior, margin: 0.02}`` asks that B be better or not more than the
margin worse (the interval's lower bound above −margin); it fails when B is worse and is *inconclusive*
when the interval straddles the margin — as the default rules' ``capability_pass`` is, which follows the
comparison's outcome (`abbench.compare.Verdict.outcome`). A gate is *pass*, *pass with warnings*,
*block*, *incomplete* or *inconclusive* (see `OUTCOMES`); ``abbench gate`` exits 0 for the first two, 1
otherwise (an inconclusive gate exits 0 with ``--allow-inconclusive``), 2 on a usage error. An experiment whose ``decision:`` says
``policy: votes`` has its capability decided by per-case votes (see `abbench.compare.vote_decision`).
"""

from __future__ import annotations

from abbench import _lazy
from abbench.gate._api import (
    OUTCOMES,
    STATUSES,
    GateResult,
    Measured,
    RuleOutcome,
    decision_pair as decision_pair,
    evaluate_gate,
)
from abbench.gate._arm_metrics import ARM_METRICS
from abbench.gate._comparison_metrics import COMPARISON_METRICS, DECISION_METRICS
from abbench.gate._coverage import ArmCoverage, Coverage, coverage
from abbench.gate._decision import NOT_ASSESSED, Decision, DecisionPolicy, Dimension, decide
from abbench.gate._metric import MetricDef
from abbench.gate._namespace import (
    METRICS,
    UNITS,
    MetricRef as MetricRef,
    metric_label as metric_label,
    metric_names,
    metric_unit as metric_unit,
    parse_metric as parse_metric,
    speaks_of_cost as speaks_of_cost,
)
from abbench.gate._rules import (
    COST_WARN_SHARE,
    DEFAULT_RULES,
    GATE_KEYS as GATE_KEYS,
    OPS as OPS,
    SEVERITIES,
    GateRule,
    GateSpec,
    load_gate,
    load_rules,
    parse_rules,
    read_gate_file as read_gate_file,
)
from abbench.gate._words import Conclusion, GateOutcome, RuleStatus, Severity

__all__ = [
    "ARM_METRICS",
    "COMPARISON_METRICS",
    "COST_WARN_SHARE",
    "DECISION_METRICS",
    "DEFAULT_RULES",
    "METRICS",
    "NOT_ASSESSED",
    "OUTCOMES",
    "SEVERITIES",
    "STATUSES",
    "UNITS",
    "ArmCoverage",
    "Conclusion",
    "Coverage",
    "Decision",
    "DecisionPolicy",
    "Dimension",
    "GateOutcome",
    "GateResult",
    "GateRule",
    "GateSpec",
    "Measured",
    "MetricDef",
    "RuleOutcome",
    "RuleStatus",
    "Severity",
    "coverage",
    "decide",
    "evaluate_gate",
    "load_gate",
    "load_rules",
    "metric_names",
    "parse_rules",
]

__dir__ = _lazy.listing(__all__)

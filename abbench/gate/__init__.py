"""The decision and the gate: capability, cost and stability, and rules over a documented metric namespace.

A gate file is JSON or YAML: a list of rules, or ``{rules: [...]}``. Each rule is
``{metric, op, value, severity}`` (``severity`` is ``block`` by default; ``warn`` never blocks), or the
shorthand ``"p95_latency_ms <= 8000 (warn)"``. Metric names are listed by `metric_names()` and
``abbench gate --list-metrics``; unprefixed arm metrics are about the candidate arm B.
"""

from __future__ import annotations

from abbench.gate._api import STATUSES, GateResult, RuleOutcome, evaluate_gate
from abbench.gate._arm_metrics import ARM_METRICS
from abbench.gate._comparison_metrics import COMPARISON_METRICS, DECISION_METRICS
from abbench.gate._decision import Decision, DecisionPolicy, Dimension, decide
from abbench.gate._metric import MetricDef
from abbench.gate._namespace import METRICS, UNITS, MetricRef, metric_names, metric_unit, parse_metric
from abbench.gate._rules import (
    DEFAULT_RULES,
    OPS,
    SEVERITIES,
    GateRule,
    load_rules,
    parse_rules,
    read_gate_file,
)

__all__ = [
    "ARM_METRICS",
    "COMPARISON_METRICS",
    "DECISION_METRICS",
    "DEFAULT_RULES",
    "METRICS",
    "OPS",
    "SEVERITIES",
    "STATUSES",
    "UNITS",
    "Decision",
    "DecisionPolicy",
    "Dimension",
    "GateResult",
    "GateRule",
    "MetricDef",
    "MetricRef",
    "RuleOutcome",
    "decide",
    "evaluate_gate",
    "load_rules",
    "metric_names",
    "metric_unit",
    "parse_metric",
    "parse_rules",
    "read_gate_file",
]

"""Metrics of an experiment: accuracy with intervals, failures, classes, stability, cost and grounding."""

from __future__ import annotations

from abbench._result import Result, plain
from abbench.metrics._api import (
    DEFINITIONS,
    NO_DOMAIN,
    OUTCOME_KINDS,
    ArmMetrics,
    ExperimentMetrics,
    GroupAccuracy,
    RunCounts,
    dataset_labels,
    experiment_metrics,
    grader_kinds,
    resolve_outcome,
)
from abbench.metrics._base import (
    Estimate,
    Rate,
    check_level,
    estimate_mean,
    estimate_rate,
    rate,
    round_lists,
)
from abbench.metrics._classes import (
    NO_PREDICTION,
    OTHER_LABEL,
    ClassReport,
    ClassScores,
    Confusion,
    ConfusionMatrix,
    class_report,
    label_space,
)
from abbench.metrics._judges import OVERALL, JudgeScore, judge_scores
from abbench.metrics._judging import JudgeCost, JudgeReport, judge_costs, judge_report, position_bias
from abbench.metrics._stability import Stability, stability
from abbench.metrics._usage import LOW_CONFIDENCE, GroundingMetrics, UsageMetrics

__all__ = [
    "DEFINITIONS",
    "LOW_CONFIDENCE",
    "NO_DOMAIN",
    "NO_PREDICTION",
    "OTHER_LABEL",
    "OUTCOME_KINDS",
    "OVERALL",
    "ArmMetrics",
    "ClassReport",
    "ClassScores",
    "Confusion",
    "ConfusionMatrix",
    "Estimate",
    "ExperimentMetrics",
    "GroundingMetrics",
    "GroupAccuracy",
    "JudgeCost",
    "JudgeReport",
    "JudgeScore",
    "Rate",
    "Result",
    "RunCounts",
    "Stability",
    "UsageMetrics",
    "check_level",
    "class_report",
    "dataset_labels",
    "estimate_mean",
    "estimate_rate",
    "experiment_metrics",
    "grader_kinds",
    "judge_costs",
    "judge_report",
    "judge_scores",
    "label_space",
    "plain",
    "position_bias",
    "rate",
    "resolve_outcome",
    "round_lists",
    "stability",
]

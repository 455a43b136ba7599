"""Metrics of an experiment: accuracy with intervals, failures, classes, stability, cost and grounding."""

from __future__ import annotations

from abbench import _lazy
from abbench._result import Result as Result, plain
from abbench.metrics._activation import (
    ACTIVATION_DEFINITIONS,
    ACTIVATION_FIGURES as ACTIVATION_FIGURES,
    COMPARED as COMPARED,
    ActivationComparison,
    ActivationRun,
    ArmActivation,
    ExperimentActivation,
    activation_by_arm,
    activation_report,
    activation_runs as activation_runs,
    arm_activation,
    arm_offers as arm_offers,
    compare_activation,
    experiment_activation,
)
from abbench.metrics._api import (
    DEFINITIONS,
    NO_DOMAIN as NO_DOMAIN,
    OUTCOME_KINDS,
    ArmMetrics,
    ExperimentMetrics,
    GroupAccuracy,
    RunCounts,
    dataset_labels as dataset_labels,
    experiment_metrics,
    grader_kinds as grader_kinds,
    resolve_outcome as resolve_outcome,
)
from abbench.metrics._base import (
    Estimate,
    Rate,
    check_level as check_level,
    estimate_mean as estimate_mean,
    estimate_rate as estimate_rate,
    rate,
    round_lists as round_lists,
)
from abbench.metrics._classes import (
    NO_PREDICTION as NO_PREDICTION,
    OTHER_LABEL as OTHER_LABEL,
    ClassReport,
    ClassScores,
    Confusion,
    ConfusionMatrix,
    class_report,
    label_space as label_space,
)
from abbench.metrics._following import (
    MOST_SKIPPED as MOST_SKIPPED,
    FollowingDifference,
    SectionTally,
    SkillFollowing,
    following_difference,
    following_estimate as following_estimate,
    following_grader as following_grader,
    skill_following,
)
from abbench.metrics._format import (
    ADHERENT as ADHERENT,
    READINGS as READINGS,
    FormatAdherence,
    FormatDifference,
    format_adherence,
    format_difference,
)
from abbench.metrics._grader import (
    MAX_GRADER_NAME as MAX_GRADER_NAME,
    check_grader as check_grader,
    experiment_graders,
)
from abbench.metrics._judges import OVERALL as OVERALL, JudgeScore, judge_scores
from abbench.metrics._judging import (
    JudgeCost,
    JudgeReport,
    judge_costs,
    judge_report,
    position_bias,
    verbosity_bias,
)
from abbench.metrics._stability import Stability, stability
from abbench.metrics._usage import (
    LOW_CONFIDENCE as LOW_CONFIDENCE,
    NO_RUN_EXECUTED as NO_RUN_EXECUTED,
    GroundingMetrics,
    UsageMetrics,
)
from abbench.types import NO_SKILL as NO_SKILL

__all__ = [
    "ACTIVATION_DEFINITIONS",
    "DEFINITIONS",
    "OUTCOME_KINDS",
    "ActivationComparison",
    "ActivationRun",
    "ArmActivation",
    "ArmMetrics",
    "ClassReport",
    "ClassScores",
    "Confusion",
    "ConfusionMatrix",
    "Estimate",
    "ExperimentActivation",
    "ExperimentMetrics",
    "FollowingDifference",
    "FormatAdherence",
    "FormatDifference",
    "GroundingMetrics",
    "GroupAccuracy",
    "JudgeCost",
    "JudgeReport",
    "JudgeScore",
    "Rate",
    "RunCounts",
    "SectionTally",
    "SkillFollowing",
    "Stability",
    "UsageMetrics",
    "activation_by_arm",
    "activation_report",
    "arm_activation",
    "class_report",
    "compare_activation",
    "experiment_activation",
    "experiment_graders",
    "experiment_metrics",
    "following_difference",
    "format_adherence",
    "format_difference",
    "judge_costs",
    "judge_report",
    "judge_scores",
    "plain",
    "position_bias",
    "rate",
    "skill_following",
    "stability",
    "verbosity_bias",
]

__dir__ = _lazy.listing(__all__)

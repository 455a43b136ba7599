"""Paired comparisons: two arms, two experiments on the same dataset, or every arm at once."""

from __future__ import annotations

from abbench import _lazy
from abbench.compare._activation import FORMULA, MIRROR_FORMULA, ArmTriggerHelp, TriggerHelp, trigger_help
from abbench.compare._all import ArmPair, MultiComparison, compare_all
from abbench.compare._api import DETAILS_MAX_CASES, MIN_CASES, compare_arms, compare_experiments
from abbench.compare._corroborate import judges_of as judges_of
from abbench.compare._corroboration import NOT_CORROBORATED, Corroboration, apply_rule
from abbench.compare._figures import BOOTSTRAP_MAX_CASES, USAGE_METRICS
from abbench.compare._model import (
    CATEGORIES,
    CaseChange,
    CaseTable as CaseTable,
    Comparison,
    DomainComparison,
    MetricDifference,
    PairwiseSummary,
    Side,
)
from abbench.compare._options import CLUSTERS, CompareOptions
from abbench.compare._pair import (
    ARMS_GIVEN as ARMS_GIVEN,
    WAYS_TO_NAME as WAYS_TO_NAME,
    Pair,
    check_arm as check_arm,
    experiment_arm as experiment_arm,
    experiment_pair as experiment_pair,
    resolve_pair as resolve_pair,
    vote_policy as vote_policy,
)
from abbench.compare._plan import plan_from_experiment
from abbench.compare._text import EvidenceChange, ReasonChange, TextChanges, text_changes
from abbench.compare._verdict import (
    DEFAULT_MARGIN,
    OUTCOMES,
    VERDICTS,
    Outcome,
    Settled,
    Verdict,
    VerdictCode,
    cases_to_settle,
    magnitude as magnitude,
    points,
    settle,
    verdict,
)
from abbench.compare._votes import VOTE_MARGIN, VOTE_MIN_CASES, Votes, vote_decision

__all__ = [
    "BOOTSTRAP_MAX_CASES",
    "CATEGORIES",
    "CLUSTERS",
    "DEFAULT_MARGIN",
    "DETAILS_MAX_CASES",
    "FORMULA",
    "MIN_CASES",
    "MIRROR_FORMULA",
    "NOT_CORROBORATED",
    "OUTCOMES",
    "USAGE_METRICS",
    "VERDICTS",
    "VOTE_MARGIN",
    "VOTE_MIN_CASES",
    "ArmPair",
    "ArmTriggerHelp",
    "CaseChange",
    "CompareOptions",
    "Comparison",
    "Corroboration",
    "DomainComparison",
    "EvidenceChange",
    "MetricDifference",
    "MultiComparison",
    "Outcome",
    "Pair",
    "PairwiseSummary",
    "ReasonChange",
    "Settled",
    "Side",
    "TextChanges",
    "TriggerHelp",
    "Verdict",
    "VerdictCode",
    "Votes",
    "apply_rule",
    "cases_to_settle",
    "compare_all",
    "compare_arms",
    "compare_experiments",
    "plan_from_experiment",
    "points",
    "settle",
    "text_changes",
    "trigger_help",
    "verdict",
    "vote_decision",
]

__dir__ = _lazy.listing(__all__)

"""The report's sections: each turns the library's results into HTML and figures.

Every section reads the library's typed results, by attribute: `ExperimentMetrics` (arms, domains,
stability, usage, judges, confusion), `Comparison` and its `CaseChange`s and `PairwiseSummary`s,
`GateResult`, `MultiComparison`, `PositionBias`, `CaseDetail`, `Disagreement`, `Review`,
`JudgeAgreement`, `SnapshotDiff`, `ExperimentActivation`, `TriggerHelp`, `RunOverview` and `Provenance` — never their ``.as_dict()`` views
(only a gate dimension's `evidence`, a free-form record of figures in the library too, is read by key).

A section returns a list of parts — HTML text or plotly figures — that `show_parts` displays in order.
Sections never compute statistics; they choose what to show and say so in a sentence when there is
nothing to show. The report notebook reads them from `abbench.report`; each concept has its module:
per-arm figures (`_arms`), skill activation (`_activation`), confusion matrices (`_confusion`), the decision (`_decision`), arms compared (`_comparison`), single cases and
their review (`_cases`), runs and provenance (`_runs`), and what they share (`_parts`).
"""

from __future__ import annotations

from abbench.report._sections._activation import activation_section, trigger_help_parts
from abbench.report._sections._arms import (
    arms_section,
    domain_section,
    judges_section,
    stability_section,
    usage_section,
)
from abbench.report._sections._cases import (
    agrees_text,
    cases_section,
    disagreements_section,
    no_regression_text,
    reviews_section,
)
from abbench.report._sections._comparison import comparison_section, multi_section, pairwise_section
from abbench.report._sections._confusion import confusion_section
from abbench.report._sections._decision import HOW_TO_READ, decision_section
from abbench.report._sections._parts import Part, estimate_text, show_parts
from abbench.report._sections._runs import provenance_section, runs_section
from abbench.report._sections._skill import skill_section

__all__ = [
    "HOW_TO_READ",
    "Part",
    "activation_section",
    "agrees_text",
    "arms_section",
    "cases_section",
    "comparison_section",
    "confusion_section",
    "decision_section",
    "disagreements_section",
    "domain_section",
    "estimate_text",
    "judges_section",
    "multi_section",
    "no_regression_text",
    "pairwise_section",
    "provenance_section",
    "reviews_section",
    "runs_section",
    "show_parts",
    "skill_section",
    "stability_section",
    "trigger_help_parts",
    "usage_section",
]

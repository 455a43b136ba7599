"""The report's sections: each turns the library's results into HTML and figures.

The comparison, decision, multi-arm, position-bias, run and provenance sections read the typed results
(`Comparison`, `GateResult`, `MultiComparison`, `PositionBias`, `RunOverview`, `Provenance`); the
others still read ``.as_dict()`` of theirs.

A section returns a list of parts — HTML text or plotly figures — that `show_parts` displays in order.
Sections never compute statistics; they choose what to show and say so in a sentence when there is
nothing to show. The report notebook reads them from `abbench.report`; each concept has its module:
per-arm figures (`_arms`), confusion matrices (`_confusion`), the decision (`_decision`), arms compared (`_comparison`), single cases and
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

"""Reports: papermill report notebooks rendered to self-contained, offline HTML pages.

The report notebook (``templates/experiment.ipynb``) builds its page from the names here: the sections
(``*_section``, each a list of parts that `show_parts` displays) and the page's own pieces (`setup_kernel`,
`show_html`, `show_note`, `title_html`, `note_html`, `escape`, `leave_summary`); numbers go through
`abbench.formatting`.
"""

from __future__ import annotations

from abbench.report._display import esc as escape
from abbench.report._display import note as show_note
from abbench.report._display import note_html, title_html
from abbench.report._display import setup as setup_kernel
from abbench.report._display import show as show_html
from abbench.report._display import summary as leave_summary
from abbench.report._html import TEMPLATES, notebook_to_html
from abbench.report._plotly import FIGURE_CONFIG, RENDERER, figure_html, plotly_js_path, use_report_renderer
from abbench.report._provenance import (
    ArmProvenance,
    Provenance,
    RunOverview,
    experiment_provenance,
    run_overview,
)
from abbench.report._render import (
    EXPERIMENT_TEMPLATE,
    KERNEL_NAME,
    ReportBatch,
    ReportFailure,
    ReportResult,
    render_report,
    render_reports,
)
from abbench.report._secrets import SECRET_NAME, find_secrets, secret_values
from abbench.report._sections import (
    Part,
    activation_section,
    agrees_text,
    arms_section,
    cases_section,
    comparison_section,
    confusion_section,
    decision_section,
    disagreements_section,
    domain_section,
    judges_section,
    multi_section,
    no_regression_text,
    pairwise_section,
    provenance_section,
    reviews_section,
    runs_section,
    show_parts,
    skill_section,
    stability_section,
    usage_section,
)

__all__ = [
    "EXPERIMENT_TEMPLATE",
    "FIGURE_CONFIG",
    "KERNEL_NAME",
    "RENDERER",
    "SECRET_NAME",
    "TEMPLATES",
    "ArmProvenance",
    "Part",
    "Provenance",
    "ReportBatch",
    "ReportFailure",
    "ReportResult",
    "RunOverview",
    "activation_section",
    "agrees_text",
    "arms_section",
    "cases_section",
    "comparison_section",
    "confusion_section",
    "decision_section",
    "disagreements_section",
    "domain_section",
    "escape",
    "experiment_provenance",
    "figure_html",
    "find_secrets",
    "judges_section",
    "leave_summary",
    "multi_section",
    "no_regression_text",
    "note_html",
    "notebook_to_html",
    "pairwise_section",
    "plotly_js_path",
    "provenance_section",
    "render_report",
    "render_reports",
    "reviews_section",
    "run_overview",
    "runs_section",
    "secret_values",
    "setup_kernel",
    "show_html",
    "show_note",
    "show_parts",
    "skill_section",
    "stability_section",
    "title_html",
    "usage_section",
    "use_report_renderer",
]

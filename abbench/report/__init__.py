"""Reports: papermill report notebooks rendered to self-contained, offline HTML pages."""

from __future__ import annotations

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

__all__ = [
    "EXPERIMENT_TEMPLATE",
    "FIGURE_CONFIG",
    "KERNEL_NAME",
    "RENDERER",
    "SECRET_NAME",
    "TEMPLATES",
    "ArmProvenance",
    "Provenance",
    "ReportBatch",
    "ReportFailure",
    "ReportResult",
    "RunOverview",
    "experiment_provenance",
    "figure_html",
    "find_secrets",
    "notebook_to_html",
    "plotly_js_path",
    "render_report",
    "render_reports",
    "run_overview",
    "secret_values",
    "use_report_renderer",
]

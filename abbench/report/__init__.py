"""Reports: papermill report notebooks rendered to self-contained, offline HTML pages.

The report notebook (``templates/experiment.ipynb``) builds its page from the names here: the sections
(``*_section``, each a list of parts that `show_parts` displays) and the page's own pieces (`setup_kernel`,
`show_html`, `show_note`, `title_html`, `note_html`, `escape`, `leave_summary`); numbers go through
`abbench.formatting`.

The names load lazily (`abbench._lazy`): the process that renders a page imports `render_report` and
none of the sections, metrics or statistics, which only the report's kernel needs.
"""

from __future__ import annotations

import typing

from abbench import _lazy

if typing.TYPE_CHECKING:
    from abbench.report._display import (
        escape,
        leave_summary,
        note_html,
        setup_kernel,
        show_html,
        show_note,
        title_html,
    )
    from abbench.report._export import NotebookExporter
    from abbench.report._html import (
        TEMPLATES,
        notebook_to_html as notebook_to_html,
    )
    from abbench.report._plotly import (
        FIGURE_CONFIG as FIGURE_CONFIG,
        RENDERER as RENDERER,
        figure_html as figure_html,
        plotly_js_path as plotly_js_path,
        use_report_renderer as use_report_renderer,
    )
    from abbench.report._provenance import (
        ArmProvenance,
        Provenance,
        RunOverview,
        experiment_provenance,
        run_overview,
    )
    from abbench.report._render import (
        EXPERIMENT_TEMPLATE,
        KERNEL_NAME as KERNEL_NAME,
        ReportBatch,
        ReportFailure,
        ReportResult,
        render_report,
        render_reports,
    )
    from abbench.report._sample import (
        disagreement_sample,
    )
    from abbench.report._secrets import (
        SECRET_NAME as SECRET_NAME,
        find_secrets as find_secrets,
        secret_values as secret_values,
    )
    from abbench.report._sections._activation import activation_section
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
    from abbench.report._sections._decision import decision_section
    from abbench.report._sections._following import following_section
    from abbench.report._sections._parts import Part, show_parts
    from abbench.report._sections._runs import provenance_section, runs_section
    from abbench.report._sections._skill import skill_section

__all__ = [
    "EXPERIMENT_TEMPLATE",
    "TEMPLATES",
    "ArmProvenance",
    "NotebookExporter",
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
    "disagreement_sample",
    "disagreements_section",
    "domain_section",
    "escape",
    "experiment_provenance",
    "following_section",
    "judges_section",
    "leave_summary",
    "multi_section",
    "no_regression_text",
    "note_html",
    "pairwise_section",
    "provenance_section",
    "render_report",
    "render_reports",
    "reviews_section",
    "run_overview",
    "runs_section",
    "setup_kernel",
    "show_html",
    "show_note",
    "show_parts",
    "skill_section",
    "stability_section",
    "title_html",
    "usage_section",
]

__getattr__, __dir__ = _lazy.exports(
    __name__,
    {
        "abbench.report._display": (
            "escape",
            "leave_summary",
            "note_html",
            "setup_kernel",
            "show_html",
            "show_note",
            "title_html",
        ),
        "abbench.report._export": ("NotebookExporter",),
        "abbench.report._html": (
            "TEMPLATES",
            "notebook_to_html",
        ),
        "abbench.report._plotly": (
            "FIGURE_CONFIG",
            "RENDERER",
            "figure_html",
            "plotly_js_path",
            "use_report_renderer",
        ),
        "abbench.report._provenance": (
            "ArmProvenance",
            "Provenance",
            "RunOverview",
            "experiment_provenance",
            "run_overview",
        ),
        "abbench.report._render": (
            "EXPERIMENT_TEMPLATE",
            "KERNEL_NAME",
            "ReportBatch",
            "ReportFailure",
            "ReportResult",
            "render_report",
            "render_reports",
        ),
        "abbench.report._sample": ("disagreement_sample",),
        "abbench.report._secrets": (
            "SECRET_NAME",
            "find_secrets",
            "secret_values",
        ),
        "abbench.report._sections._activation": ("activation_section",),
        "abbench.report._sections._following": ("following_section",),
        "abbench.report._sections._arms": (
            "arms_section",
            "domain_section",
            "judges_section",
            "stability_section",
            "usage_section",
        ),
        "abbench.report._sections._cases": (
            "agrees_text",
            "cases_section",
            "disagreements_section",
            "no_regression_text",
            "reviews_section",
        ),
        "abbench.report._sections._comparison": ("comparison_section", "multi_section", "pairwise_section"),
        "abbench.report._sections._confusion": ("confusion_section",),
        "abbench.report._sections._decision": ("decision_section",),
        "abbench.report._sections._parts": ("Part", "show_parts"),
        "abbench.report._sections._runs": ("provenance_section", "runs_section"),
        "abbench.report._sections._skill": ("skill_section",),
    },
    public=__all__,
)

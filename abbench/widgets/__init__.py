"""Jupyter widgets over the public API: mapping, run control, results, disagreement review, all cases and version diff.

The only package that imports ipywidgets (``pip install abbench[notebook]``). Each widget is a thin
view: it reads what it shows from the store and calls the library for every action.
"""

from __future__ import annotations

from abbench import _lazy

try:
    import ipywidgets as _ipywidgets  # noqa: F401 - checked here to say how to get it
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError(
        "abbench.widgets needs ipywidgets and the Jupyter stack: pip install 'abbench[notebook]'"
    ) from exc

from abbench.widgets._arm_form import parse_graders as parse_graders, parse_params as parse_params
from abbench.widgets._base import (
    Choice as Choice,
    ErrorArea as ErrorArea,
    View as View,
    escape,
    html_table as html_table,
    notebook_store,
)
from abbench.widgets._case import CaseDetailView, transcript_html as transcript_html
from abbench.widgets._cases import CasesWidget
from abbench.widgets._diff import DiffWidget
from abbench.widgets._mapping import MappingWidget
from abbench.widgets._mapping_parts import report_html as report_html
from abbench.widgets._results import ResultsWidget
from abbench.widgets._review import ReviewWidget
from abbench.widgets._run import RunControlWidget
from abbench.widgets._share import ReportButton

__all__ = [
    "CaseDetailView",
    "CasesWidget",
    "DiffWidget",
    "MappingWidget",
    "ReportButton",
    "ResultsWidget",
    "ReviewWidget",
    "RunControlWidget",
    "escape",
    "notebook_store",
]

__dir__ = _lazy.listing(__all__)

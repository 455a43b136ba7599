"""``jupyter nbconvert --to abbench_html``: a notebook as one page that loads nothing from the network.

nbconvert's own ``html`` (``lab``) template adds require.js, MathJax and, for widgets, the widget manager,
each a ``<script src>`` on a CDN: a plain ``jupyter nbconvert --to html`` page makes three outside
requests as it opens. This exporter keeps JupyterLab's look (the ``lab`` stylesheets are inlined) and
drops those scripts and the widget state; each abbench widget shows as its static copy, whose figures
are drawn by the plotly.js it inlines. Registered under the ``nbconvert.exporters`` entry point
``abbench_html``, it is also offered by JupyterLab's *File → Save and Export Notebook As*.
"""

from __future__ import annotations

import copy
import os
from typing import Any

from nbconvert.exporters import HTMLExporter
from traitlets import default

from abbench import __version__
from abbench.report._html import TEMPLATES

NOTEBOOK_TEMPLATE = "abbench_notebook"
"""The nbconvert template this exporter uses (``abbench/report/templates/abbench_notebook``)."""

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class NotebookExporter(HTMLExporter):  # type: ignore[misc, unused-ignore]  # nbconvert is untyped
    """A notebook to one HTML page with code and outputs, that fetches nothing when opened."""

    export_from_notebook = "HTML, offline (abbench)"

    @default("template_name")
    def _template_name_default(self) -> str:
        return NOTEBOOK_TEMPLATE

    @default("extra_template_basedirs")
    def _extra_template_basedirs_default(self) -> list[str]:
        return [os.getcwd(), str(TEMPLATES)]

    def from_notebook_node(self, nb: Any, resources: Any = None, **kw: Any) -> tuple[Any, dict[str, Any]]:
        """The page for `nb`, without its widget state and views (no widget manager draws them)."""
        nb = copy.deepcopy(nb)
        nb.metadata.pop("widgets", None)
        for cell in nb.cells:
            if cell.get("cell_type") == "code":
                cell.outputs = [o for o in cell.get("outputs", []) if not _widget_view_only(o)]
        resources = dict(resources or {})
        resources.setdefault("abbench_version", __version__)
        body, out = super().from_notebook_node(nb, resources=resources, **kw)
        return str(body), dict(out)


def _widget_view_only(output: Any) -> bool:
    """Whether `output` is only a widget's live view (its static copy is the next output)."""
    data = output.get("data", {})
    return WIDGET_VIEW in data and set(data) <= {WIDGET_VIEW, "text/plain"}

"""The plotly renderer for reports: a figure becomes a ``<div>`` and a ``Plotly.newPlot`` call, nothing more.

Inside a kernel plotly picks the ``plotly_mimetype`` renderer, whose output nbconvert drops: the exported
HTML would silently have no charts. The ``notebook`` renderer embeds plotly.js in every figure and adds a
MathJax CDN script. This renderer emits only the figure; the report template inlines plotly.js once.
It is registered next to ``plotly_mimetype`` so JupyterLab still shows interactive figures.
"""

from __future__ import annotations

from typing import Any

from abbench._plotly import FIGURE_CONFIG, figure_html, plotly_js_path

__all__ = ["FIGURE_CONFIG", "RENDERER", "figure_html", "plotly_js_path", "use_report_renderer"]

RENDERER = "abbench_report"
"""The name the renderer is registered under in ``plotly.io.renderers``."""


def _renderer_class() -> type[Any]:
    from plotly.io._base_renderers import MimetypeRenderer

    class ReportRenderer(MimetypeRenderer):
        """Renders a figure as ``text/html`` holding only its div and ``Plotly.newPlot`` call."""

        def to_mimebundle(self, fig_dict: dict[str, Any]) -> dict[str, str]:
            import plotly.graph_objects as go

            return {"text/html": figure_html(go.Figure(fig_dict))}

    return ReportRenderer


def use_report_renderer() -> str:
    """Register the report renderer and make ``plotly_mimetype+abbench_report`` the default.

    Returns the default renderer string now in effect. Safe to call more than once.
    """
    import plotly.io as pio

    if RENDERER not in pio.renderers:
        pio.renderers[RENDERER] = _renderer_class()()
    pio.renderers.default = f"plotly_mimetype+{RENDERER}"
    return str(pio.renderers.default)

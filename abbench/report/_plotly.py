"""The plotly renderer for reports: a figure becomes a ``<div>`` and a ``Plotly.newPlot`` call, nothing more.

Inside a kernel plotly picks the ``plotly_mimetype`` renderer, whose output nbconvert drops: the exported
HTML would silently have no charts. The ``notebook`` renderer embeds plotly.js in every figure and adds a
MathJax CDN script. This renderer emits only the figure; the report template inlines plotly.js once.
It is registered next to ``plotly_mimetype`` so JupyterLab still shows interactive figures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

RENDERER = "abbench_report"
"""The name the renderer is registered under in ``plotly.io.renderers``."""

FIGURE_CONFIG: dict[str, Any] = {
    "responsive": True,
    "displaylogo": False,  # the logo links to plotly.com: the one external URL a figure would carry
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}


def plotly_js_path() -> Path:
    """Where the installed plotly package keeps its own ``plotly.min.js`` (the one the report inlines)."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():  # pragma: no cover - a broken plotly install
        from abbench.errors import ReportError

        raise ReportError(
            f"plotly.js is missing from the plotly package ({path}); reinstall plotly (pip install -U plotly)"
        )
    return path


def figure_html(fig: Any, *, height: int | None = None) -> str:
    """The ``<div>`` + ``Plotly.newPlot`` script for one figure (no plotly.js, no MathJax, no CDN).

    Plotly writes the figure's JSON with ``<``, ``>`` and ``/`` escaped, so text in the data cannot
    close the script element.
    """
    import plotly.io as pio

    return pio.to_html(
        fig,
        include_plotlyjs=False,
        include_mathjax=False,
        full_html=False,
        config=FIGURE_CONFIG,
        default_width="100%",
        default_height=height or fig.layout.height or 380,
        validate=False,
    )


def _renderer_class():
    from plotly.io._base_renderers import MimetypeRenderer

    class ReportRenderer(MimetypeRenderer):
        """Renders a figure as ``text/html`` holding only its div and ``Plotly.newPlot`` call."""

        def to_mimebundle(self, fig_dict):
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
    return pio.renderers.default

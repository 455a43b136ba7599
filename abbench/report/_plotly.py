"""The plotly renderer for reports: a figure becomes a ``<div>`` and a ``Plotly.newPlot`` call, nothing more.

Inside a kernel plotly picks the ``plotly_mimetype`` renderer, whose output nbconvert drops: the exported
HTML would silently have no charts. The ``notebook`` renderer embeds plotly.js in every figure and adds a
MathJax CDN script. This renderer emits only the figure; the report template inlines plotly.js once.
It is registered next to ``plotly_mimetype`` so JupyterLab still shows interactive figures.

A report kernel does not go through ``plotly.io.renderers`` at all (`show_report_figures`): it displays
the same two outputs itself, `figure_bundle`, without the import cost of plotly's renderer machinery.
"""

from __future__ import annotations

from typing import Any

from abbench._plotly import FIGURE_CONFIG, figure_html, figure_json, plotly_js_path

__all__ = [
    "FIGURE_CONFIG",
    "PLOTLY_MIMETYPE",
    "RENDERER",
    "figure_bundle",
    "figure_html",
    "plotly_js_path",
    "show_report_figures",
    "use_report_renderer",
]

PLOTLY_MIMETYPE = "application/vnd.plotly.v1+json"
"""The mimetype JupyterLab draws an interactive figure from (nbconvert drops it from the page)."""

RENDERER = "abbench_report"
"""The name the renderer is registered under in ``plotly.io.renderers``."""


def _renderer_class() -> type[Any]:
    from plotly.io._base_renderers import MimetypeRenderer

    class ReportRenderer(MimetypeRenderer):  # type: ignore[misc, unused-ignore]  # plotly is untyped
        """Renders a figure as ``text/html`` holding only its div and ``Plotly.newPlot`` call."""

        def to_mimebundle(self, fig_dict: dict[str, Any]) -> dict[str, str]:
            import plotly.graph_objects as go

            return {"text/html": figure_html(go.Figure(fig_dict))}

    return ReportRenderer


def use_report_renderer() -> str:
    """Register the report renderer and make ``plotly_mimetype+abbench_report`` the default.

    Returns the default renderer string now in effect. Safe to call more than once. The
    ``plotly_mimetype`` half gets `FIGURE_CONFIG` too, so JupyterLab's live figure has no *Share chart…*.
    """
    import plotly.io as pio

    pio.renderers["plotly_mimetype"].config = dict(FIGURE_CONFIG)
    if RENDERER not in pio.renderers:
        pio.renderers[RENDERER] = _renderer_class()()
    pio.renderers.default = f"plotly_mimetype+{RENDERER}"
    return str(pio.renderers.default)


def figure_bundle(fig: Any) -> dict[str, Any]:
    """What `use_report_renderer`'s ``plotly_mimetype+abbench_report`` displays for `fig`, built directly.

    The plotly mimetype's JSON (JupyterLab draws it) and `figure_html` (the page shows it). Going
    through ``plotly.io.renderers`` instead would import ``plotly.io._renderers``, which imports
    nbformat, whose jsonschema builds some forty lark grammars at import: seconds of every report.
    """
    return {PLOTLY_MIMETYPE: figure_json(fig), "text/html": figure_html(fig)}


def show_report_figures() -> None:
    """Make this kernel display every plotly `Figure` as `figure_bundle` (a report kernel's setup).

    The display hook is registered by the class's name, so neither plotly nor its renderers are
    imported until a figure is shown. Outside IPython this does nothing.
    """
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return
    shell.display_formatter.ipython_display_formatter.for_type_by_name(
        "plotly.graph_objs._figure", "Figure", _display_figure
    )


def _display_figure(fig: Any) -> None:
    from IPython.display import display

    display(figure_bundle(fig), raw=True)

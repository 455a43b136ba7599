"""Plotly figures as offline HTML, shared by every view: a ``<div>`` + ``Plotly.newPlot``, and plotly.js inlined.

Inside a kernel plotly picks the ``plotly_mimetype`` renderer, whose output nbconvert drops: an exported
page would silently have no charts. The ``notebook`` renderer embeds plotly.js in every figure and adds a
MathJax CDN script. Here a figure is only its div and script; the page (the report template, or a
widget's static copy) inlines plotly.js once. plotly is imported lazily: this module is loaded by views only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from abbench.errors import ReportError

FIGURE_CONFIG: dict[str, Any] = {
    "responsive": True,
    "displaylogo": False,  # the logo links to plotly.com: the one external URL a figure would carry
    "modeBarButtonsToRemove": ["lasso2d", "select2d"],
}
"""The plotly config of every figure abbench draws."""


def plotly_js_path() -> Path:
    """Where the installed plotly package keeps its own ``plotly.min.js`` (the one pages inline)."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():  # pragma: no cover - a broken plotly install
        raise ReportError(
            f"plotly.js is missing from the plotly package ({path}); reinstall plotly (pip install -U plotly)"
        )
    return path


def plotly_js_script() -> str:
    """plotly.js as one inline ``<script>`` that sets ``window.Plotly`` (unless a page already has it).

    plotly.min.js is a UMD bundle: on a page with require.js (nbconvert's ``lab`` template loads it
    when it can) it would register an anonymous AMD module instead and ``Plotly.newPlot`` would fail;
    ``define``, ``module`` and ``exports`` are hidden from it so it always becomes ``window.Plotly``.
    """
    source = plotly_js_path().read_text(encoding="utf-8").replace("</script", "<\\/script")
    return (
        '<script type="text/javascript">if (!window.Plotly) { (function (define, module, exports) {\n'
        f"{source}\n}}).call(window); }}</script>"
    )


def figure_html(fig: Any, *, height: int | None = None) -> str:
    """The ``<div>`` + ``Plotly.newPlot`` script for one figure (no plotly.js, no MathJax, no CDN).

    Plotly writes the figure's JSON with ``<``, ``>`` and ``/`` escaped, so text in the data cannot
    close the script element.
    """
    import plotly.io as pio

    html: str = pio.to_html(
        fig,
        include_plotlyjs=False,
        include_mathjax=False,
        full_html=False,
        config=FIGURE_CONFIG,
        default_width="100%",
        default_height=height or fig.layout.height or 380,
        validate=False,
    )
    return html

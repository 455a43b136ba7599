"""Plotly figures as offline, accessible HTML, shared by every view: one config, one way to draw a figure.

Inside a kernel plotly picks the ``plotly_mimetype`` renderer, whose output nbconvert drops: an exported
page would silently have no charts. The ``notebook`` renderer embeds plotly.js in every figure and adds a
MathJax CDN script. Here a figure is only its div and script; the page (the report template, or a
widget's static copy) inlines plotly.js once. plotly is imported lazily: this module is loaded by views only.

Every figure abbench draws goes through here, in a page (`figure_html`) or live in JupyterLab
(`figure_json`), so every one gets `FIGURE_CONFIG`: no *Share chart…* button (plotly.js 3+ shows it by
default and it uploads the figure's data to plotly's cloud), no logo link, no cloud address to send to.
"""

from __future__ import annotations

import functools
import json
import re
from html import escape, unescape
from pathlib import Path
from typing import Any

from abbench.errors import ReportError

FIGURE_CONFIG: dict[str, Any] = {
    "responsive": True,
    "displaylogo": False,  # the logo links to plotly.com
    # plotly.js shows "Share chart…" (sendChartToCloud; sendDataToCloud before 3.0) unless told not to:
    # it would upload the figure's data. With no server URL either, no button could reach one.
    "showSendToCloud": False,
    "plotlyServerURL": "",
    "modeBarButtonsToRemove": ["lasso2d", "select2d", "sendDataToCloud", "sendChartToCloud"],
}
"""The plotly config of every figure abbench draws."""

CLOUD_DEFAULT = re.compile(r'(plotlyServerURL:\{valType:"string",dflt:)"https?://[^"]*"')
"""Where plotly.min.js keeps the cloud address *Share chart…* uploads to, when a figure names none."""

SR_ONLY = (
    "position:absolute;width:1px;height:1px;padding:0;margin:-1px;overflow:hidden;"
    "clip:rect(0,0,0,0);white-space:nowrap;border:0"
)
"""Visually hidden, read by screen readers (inline: a widget's static copy has no stylesheet of ours)."""

_UNTAB = (
    "<script>(function (id) {{ var g = document.getElementById(id); if (!g) return;"
    " function untab() {{ g.querySelectorAll('.modebar a, .modebar button').forEach("
    "function (b) {{ b.setAttribute('tabindex', '-1'); }}); }}"
    " untab(); new MutationObserver(untab).observe(g, {{childList: true, subtree: true}});"
    " }})({id});</script>"
)
"""Takes a figure's toolbar out of the tab order, now and whenever plotly redraws it."""

POINTS = 12
"""How many points of a trace the text alternative reads out before it says how many more."""


def plotly_js_path() -> Path:
    """Where the installed plotly package keeps its own ``plotly.min.js``."""
    import plotly

    path = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    if not path.is_file():  # pragma: no cover - a broken plotly install
        raise ReportError(
            f"plotly.js is missing from the plotly package ({path}); reinstall plotly (pip install -U plotly)"
        )
    return path


@functools.cache
def plotly_js_source() -> str:
    """plotly.min.js as pages inline it: its default cloud address emptied, ``</script`` escaped.

    `FIGURE_CONFIG` already names no server; emptying the default too means no figure on the page,
    ours or one pasted in, can upload anywhere (plotly.js refuses an empty destination). A plotly.js
    that keeps the default elsewhere is inlined as it is; the offline test names the address.
    """
    source = plotly_js_path().read_text(encoding="utf-8")
    return CLOUD_DEFAULT.sub(r'\1""', source, count=1).replace("</script", "<\\/script")


def plotly_js_script() -> str:
    """plotly.js as one inline ``<script>`` that sets ``window.Plotly`` (unless a page already has it).

    plotly.min.js is a UMD bundle: on a page with require.js (nbconvert's ``lab`` template loads it
    when it can) it would register an anonymous AMD module instead and ``Plotly.newPlot`` would fail;
    ``define``, ``module`` and ``exports`` are hidden from it so it always becomes ``window.Plotly``.
    """
    return (
        '<script type="text/javascript">if (!window.Plotly) { (function (define, module, exports) {\n'
        f"{plotly_js_source()}\n}}).call(window); }}</script>"
    )


def figure_json(fig: Any) -> dict[str, Any]:
    """The plotly mimetype's JSON for `fig` (what JupyterLab draws live), with `FIGURE_CONFIG`."""
    from plotly.io._json import to_json

    data: dict[str, Any] = json.loads(to_json(fig.to_dict(), validate=False, remove_uids=False))
    data["config"] = dict(FIGURE_CONFIG)
    return data


NAME_KEY = "abbench_name"
"""Where a figure keeps its name for screen readers (``layout.meta``): set it when the figure is built."""


def figure_title(fig: Any) -> str:
    """A figure's name for screen readers: ``layout.meta[NAME_KEY]``, its title, or what its axes measure."""
    layout = fig.layout
    meta = layout.meta if isinstance(layout.meta, dict) else {}
    title = _text(meta.get(NAME_KEY)) or _text(layout.title.text)
    if title:
        return title
    x, y = _text(layout.xaxis.title.text), _text(layout.yaxis.title.text)
    named = f"{y} by {x}" if x and y else x or y
    return f"Chart: {named}" if named else "Chart"


def figure_summary(fig: Any) -> str:
    """A text alternative for `fig`: each trace's kind, name and (the first `POINTS`) values."""
    parts = []
    for trace in fig.data:
        kind = trace.type or "scatter"
        name = _text(getattr(trace, "name", None))
        head = f"{kind} {name}".strip() if name else kind
        parts.append(f"{head}: {_points(trace)}")
    traces = "; ".join(parts) if parts else "no data"
    return f"{figure_title(fig)}. {traces}."


def _text(value: Any) -> str:
    """Plotly text without its tags (``<b>``, ``<br>``) or surrounding space."""
    if not value:
        return ""
    return re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]*>", " ", str(value)))).strip()


def _values(value: Any) -> list[Any]:
    if value is None:
        return []
    if isinstance(value, dict) and "bdata" in value:  # plotly's base64 arrays: decoded by to_dict
        return []
    return list(value) if not isinstance(value, str) else [value]


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and value != value):
        return "no value"  # a gap in the chart (nothing graded there), never the word None or nan
    if isinstance(value, float):
        return f"{value:.4g}"
    return _text(value) if isinstance(value, str) else str(value)


def _points(trace: Any) -> str:
    if getattr(trace, "z", None) is not None:
        rows = _values(trace.z)
        columns = len(_values(rows[0])) if rows else 0
        return f"a grid of {len(rows)} rows × {columns} columns" + _labels(trace)
    xs, ys = _values(getattr(trace, "x", None)), _values(getattr(trace, "y", None))
    if not xs and not ys:
        values = _values(getattr(trace, "values", None))
        labels = _values(getattr(trace, "labels", None))
        xs, ys = labels, values
    n = max(len(xs), len(ys))
    if not n:
        return "no points"
    if getattr(trace, "orientation", None) == "h" or (_categories(ys) and not _categories(xs)):
        xs, ys = ys, xs  # read "category: value"
    pairs = [
        f"{_fmt(xs[i]) if i < len(xs) else i + 1}: {_fmt(ys[i]) if i < len(ys) else '—'}"
        for i in range(min(n, POINTS))
    ]
    more = f", and {n - POINTS:,} more" if n > POINTS else ""
    return ", ".join(pairs) + more


def _categories(values: list[Any]) -> bool:
    return bool(values) and all(isinstance(v, str) for v in values)


def _labels(trace: Any) -> str:
    ys, xs = _values(getattr(trace, "y", None)), _values(getattr(trace, "x", None))
    named = [
        f"{axis} {', '.join(_fmt(v) for v in vs[:POINTS])}"
        for axis, vs in (("rows", ys), ("columns", xs))
        if vs
    ]
    return f" ({'; '.join(named)})" if named else ""


def figure_html(fig: Any, *, height: int | None = None, title: str | None = None) -> str:
    """One figure as HTML: a named, described chart (``role="img"``, ``aria-label``, a text alternative
    for screen readers), its ``Plotly.newPlot`` script and a toolbar kept out of the tab order.

    No plotly.js, no MathJax, no CDN. Plotly writes the figure's JSON with ``<``, ``>`` and ``/``
    escaped, so text in the data cannot close the script element.
    """
    import uuid

    import plotly.io as pio

    div_id = str(uuid.uuid4())
    plot: str = pio.to_html(
        fig,
        include_plotlyjs=False,
        include_mathjax=False,
        full_html=False,
        config=dict(FIGURE_CONFIG),  # plotly.io.to_html pops keys from the dict it is given
        default_width="100%",
        default_height=height or fig.layout.height or 380,
        validate=False,
        div_id=div_id,
    )
    name = title or figure_title(fig)
    return (
        f'<div class="abb-chart" role="img" aria-label="{escape(name)}" aria-describedby="{div_id}-alt">'
        f'{plot}</div><p class="abb-alt" id="{div_id}-alt" style="{SR_ONLY}">{escape(figure_summary(fig))}</p>'
        + _UNTAB.format(id=json.dumps(div_id))
    )

"""A widget's static copy: its tables, messages and figures as plain HTML, for pages with no widget manager.

``jupyter nbconvert --to html`` keeps a widget only as a reference to its state, drawn by a widget
manager loaded from a CDN: offline, or in a mail, the page shows nothing where the widget was. Each
abbench widget is therefore displayed twice (see `View._ipython_display_`): the live widget, and this
copy of what it showed. The copy carries the class ``abbench-static``; the live widget's own CSS hides
every such copy, so wherever the widget draws (JupyterLab, an online export) the copy is not seen.
Figures are drawn by the same offline renderer as the report (`abbench._plotly`), with plotly.js
inlined once in the copy.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from abbench._plotly import figure_html, plotly_js_script
from abbench.widgets._base import CSS, STYLE, ErrorArea, escape

PLOTLY_MIMETYPE = "application/vnd.plotly.v1+json"
LISTED = 20
"""Options of a list shown in the copy at most (the rest are counted)."""


class _Copy:
    def __init__(self) -> None:
        self.figures = 0

    def html(self, widget: Any) -> str:
        draw = getattr(widget, "draw_charts", None)
        if callable(draw):
            draw()  # charts a view draws only when their tab is shown (`ResultsWidget`) are copied too
        layout = getattr(widget, "layout", None)
        if layout is not None and getattr(layout, "display", None) == "none":
            return ""
        if isinstance(widget, w.Button):
            return ""  # an action, not something shown
        if isinstance(widget, ErrorArea):
            return str(widget.value)
        if isinstance(widget, (w.HTML, w.HTMLMath)):
            # The live widget's CSS hides static copies: it must not come along into this one.
            return str(widget.value).replace(STYLE, "").replace(CSS, "")
        if isinstance(widget, w.Label):
            return f"<div>{escape(widget.value)}</div>" if widget.value else ""
        if isinstance(widget, w.Output):
            return "".join(self.output(o) for o in widget.outputs)
        if isinstance(widget, (w.Tab, w.Accordion)):
            return self.titled(widget)
        if isinstance(widget, (w.Select, w.SelectMultiple)):
            return self.listed(widget)
        if isinstance(widget, w.widgets.widget_selection._Selection):
            return self.field(widget.description, widget.label)
        if isinstance(widget, (w.IntProgress, w.FloatProgress)):
            return (
                f'<div>{escape(widget.description)} <progress value="{widget.value}" max="{widget.max}">'
                f"</progress></div>"
            )
        if isinstance(widget, w.Checkbox):
            return self.field(widget.description, "yes" if widget.value else "no")
        if isinstance(widget, (w.Text, w.Textarea, w.IntText, w.BoundedIntText, w.FloatText)):
            return self.field(widget.description or widget.placeholder, widget.value)
        if isinstance(widget, w.Box):
            inner = "".join(self.html(c) for c in widget.children)
            if not inner:
                return ""
            if isinstance(widget, w.HBox):
                return f'<div style="display:flex;flex-wrap:wrap;gap:4px 16px">{inner}</div>'
            scroll = _scroll_style(layout)
            return f'<div style="{scroll}">{inner}</div>' if scroll else f"<div>{inner}</div>"
        return ""

    @staticmethod
    def field(label: Any, value: Any) -> str:
        if value in (None, ""):
            return ""
        label = f"<b>{escape(label)}</b> " if label else ""
        return f"<div>{label}{escape(value)}</div>"

    def titled(self, widget: Any) -> str:
        titles = list(widget.titles)
        parts = []
        for i, child in enumerate(widget.children):
            inner = self.html(child)
            if inner:
                title = titles[i] if i < len(titles) and titles[i] else ""
                parts.append((f"<h4>{escape(title)}</h4>" if title else "") + inner)
        return "".join(parts)

    def listed(self, widget: Any) -> str:
        labels = [str(o[0] if isinstance(o, tuple) else o) for o in widget.options]
        if not labels:
            return ""
        items = "".join(f"<li>{escape(label)}</li>" for label in labels[:LISTED])
        more = f"<li>… and {len(labels) - LISTED:,} more</li>" if len(labels) > LISTED else ""
        head = f"<b>{escape(widget.description)}</b>" if widget.description else ""
        return f"{head}<ul>{items}{more}</ul>"

    def output(self, output: dict[str, Any]) -> str:
        data = output.get("data", {})
        if PLOTLY_MIMETYPE in data:
            import plotly.graph_objects as go

            self.figures += 1
            return figure_html(go.Figure(data[PLOTLY_MIMETYPE]))
        if "text/html" in data:
            return str(data["text/html"])
        if output.get("output_type") == "stream":
            return f"<pre>{escape(output.get('text', ''))}</pre>"
        if "text/plain" in data:
            return f"<pre>{escape(data['text/plain'])}</pre>"
        return ""


def _scroll_style(layout: Any) -> str:
    """The CSS of a box that scrolls (a large confusion matrix's): its overflow, size limits and border."""
    if layout is None or getattr(layout, "overflow", None) not in ("auto", "scroll"):
        return ""
    rules = {"overflow": layout.overflow}
    for name in ("max_height", "max_width", "border"):
        value = getattr(layout, name, None)
        if value:
            rules[name.replace("_", "-")] = value
    return "; ".join(f"{k}:{escape(v)}" for k, v in rules.items())


def static_html(widget: Any) -> str:
    """What `widget` shows now, as HTML that needs no widget manager and no network.

    Messages and tables are copied, figures drawn by plotly.js (inlined once when there is a figure),
    lists shown with their first `LISTED` options, choices with what is chosen; buttons are left out.
    The whole is one ``<div class="abbench-static">``, which a live abbench widget's CSS hides; empty
    when the widget shows nothing but buttons.
    """
    copy = _Copy()
    body = copy.html(widget)
    if not body:
        return ""  # nothing shown but buttons: no copy
    script = plotly_js_script() if copy.figures else ""
    return (
        f'<div class="abbench-static">{CSS}'
        '<div class="abbench-note">A copy of the widget as it was when the cell ran '
        "(the live widget draws in JupyterLab).</div>"
        f"{script}{body}</div>"
    )

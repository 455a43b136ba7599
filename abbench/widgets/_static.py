"""A widget's static copy: its tables, messages and figures as plain HTML, for pages with no widget manager.

``jupyter nbconvert --to html`` keeps a widget only as a reference to its state, drawn by a widget
manager loaded from a CDN: offline, or in a mail, the page shows nothing where the widget was. Each
abbench widget is therefore displayed twice (see `View._ipython_display_`): the live widget, and this
copy of what it showed. The copy carries the class ``abbench-static``; the live widget's own CSS hides
every such copy, so wherever the widget draws (JupyterLab, an online export) the copy is not seen.
Figures are drawn by the same offline renderer as the report (`abbench._plotly`), with plotly.js
inlined once in the copy.

The copy follows the widget (`Follower`): it is displayed with a display id, and every change of the
widget (a choice, a new table, a drawn chart, from a click or a worker thread) rewrites it
(``update_display_data``) a moment later. A notebook saved from JupyterLab therefore holds what the
analyst last saw, and so does its export (``nbconvert --to html``, JupyterLab's *Export as HTML*).
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

import ipywidgets as w

from abbench._plotly import figure_html, plotly_js_script
from abbench.widgets._base import CSS, STYLE, ErrorArea, escape, log

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
        '<div class="abbench-note">A copy of the widget as it last showed '
        "(the live widget draws in JupyterLab).</div>"
        f"{script}{body}</div>"
    )


REFRESH_SECONDS = 0.3
"""How long after a change the copy is rewritten: a burst of changes (one click redraws many parts)
gives one rewrite, of the state it ends in."""


class Follower:
    """Keeps the static copy of a displayed view in step with the view.

    Every widget in the view's tree is observed (children added later too); a change schedules one
    rewrite of the copy `REFRESH_SECONDS` later, in a timer thread that holds the view's lock (so it
    never reads a half-done callback's state). The rewrite goes to every display of the copy, and only
    when the copy changed. Changes the copy's own drawing makes (charts drawn for it) are not changes.

    Attributes:
        view: The view followed.
        copy: The copy shown now (HTML).
        rewrites: How many times the copy was rewritten (for tests and logs).
    """

    def __init__(self, view: Any, copy: str):
        self.view = view
        self.copy = copy
        self.rewrites = 0
        self._handles: list[Any] = []
        self._watched: weakref.WeakSet[w.Widget] = weakref.WeakSet()
        self._lock = threading.Lock()
        self._timer: threading.Timer | None = None
        self._drawing: int | None = None  # the thread drawing the copy: its changes are not the view's
        self._watch(view)

    def add(self, handle: Any) -> None:
        """Rewrite this display (an IPython ``DisplayHandle``) too."""
        self._handles.append(handle)

    def _watch(self, widget: Any) -> None:
        if not isinstance(widget, w.Widget) or widget in self._watched:
            return
        self._watched.add(widget)
        widget.observe(self._changed)
        for child in getattr(widget, "children", ()):
            self._watch(child)
        self._watch(getattr(widget, "layout", None))  # a part hidden or shown (``display: none``)

    def _changed(self, change: dict[str, Any]) -> None:
        if change.get("name") == "children":
            for child in change.get("new") or ():
                self._watch(child)
        if self._drawing == threading.get_ident():
            return
        with self._lock:
            if self._timer is None:  # a pending rewrite reads the state this change leads to
                self._timer = threading.Timer(REFRESH_SECONDS, self.refresh)
                self._timer.daemon = True
                self._timer.start()

    def refresh(self) -> bool:
        """Rewrite the copy now if the view shows something else than it; whether it did."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()  # when called directly: the pending rewrite is this one
            self._timer = None
        try:
            with self.view._busy:
                self._drawing = threading.get_ident()
                try:
                    copy = static_html(self.view)
                finally:
                    self._drawing = None
            if copy == self.copy:
                return False
            self.copy = copy
            for handle in self._handles:
                handle.update({"text/html": copy, "text/plain": ""}, raw=True)
        except Exception as exc:  # a timer thread's error is otherwise lost; the copy stays as it was
            log.warning(
                "updating the static copy of %s failed: %s", type(self.view).__name__, exc, exc_info=True
            )
            return False
        self.rewrites += 1
        return True

    @property
    def pending(self) -> bool:
        """Whether a rewrite is scheduled and not done yet."""
        return self._timer is not None

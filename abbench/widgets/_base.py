"""What every widget shares: the error area, guarded callbacks, kept selections, escaped HTML, the store."""

from __future__ import annotations

import functools
import html
import logging
import os
import threading
import traceback
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ipywidgets as w

from abbench.errors import AbbenchError, StoreError
from abbench.store import STORE_ENV, Store, open_store

log = logging.getLogger("abbench.widgets")
# Every message logged here is shown in the widget too. Without a handler, Python's last-resort handler
# copies warnings to stderr, which a notebook keeps under the cell: an old error would stay on screen
# after the widget has cleared it. An application that configures logging still gets them.
log.addHandler(logging.NullHandler())

StoreLike = str | os.PathLike[str] | Store | None

NONE = "—"
"""What a table cell shows for a missing value."""

MAX_LISTED = 2000
"""Cases a list widget holds at most (a browser slows down past a few thousand options); search or
filter to reach the others."""


def escape(value: Any) -> str:
    """`value` as text safe inside HTML (every string from data or a model goes through this)."""
    if value is None:
        return NONE
    return html.escape(str(value), quote=True)


def html_table(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    raw: Sequence[int] = (),
    wide: Sequence[int] = (),
    numeric: Sequence[int] = (),
    nowrap: Sequence[int] = (),
    css: str = "abbench-table",
) -> str:
    """An HTML table; every cell is escaped except the columns whose index is in `raw` (already HTML).

    Columns in `wide` hold long text (a reason, an input) and keep a readable width however many
    columns there are; columns in `numeric` are right-aligned and never wrap, nor do those in `nowrap`
    (a row's location, an id). A table wider than the
    notebook scrolls sideways in its own box instead of being cut off.
    """

    def cls(i: int) -> str:
        names = (
            "abbench-wide" if i in wide else "",
            "abbench-n" if i in numeric else "",
            "abbench-nowrap" if i in nowrap else "",
        )
        joined = " ".join(n for n in names if n)
        return f' class="{joined}"' if joined else ""

    head = "".join(f"<th{cls(i)}>{escape(c)}</th>" for i, c in enumerate(columns))
    body = []
    for row in rows:
        cells = "".join(
            f"<td{cls(i)}>{cell if i in raw else escape(cell)}</td>" for i, cell in enumerate(row)
        )
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<div class="abbench-scroll"><table class="{css}" style="border-collapse:collapse">'
        f"<thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table></div>"
    )


CSS = """<style>
.abbench-scroll {overflow-x:auto; max-width:100%}
.widget-html-content:has(.abbench-scroll) {min-width:0}
.abbench-table {line-height:1.45; margin:2px 0 6px}
.abbench-table td, .abbench-table th {border:1px solid #ddd; padding:3px 6px; text-align:left;
  vertical-align:top; font-size:12px; overflow-wrap:break-word}
.abbench-table th {background:#f4f4f4; white-space:nowrap}
.abbench-table .abbench-wide {min-width:16em}
.abbench-table .abbench-n {text-align:right; white-space:nowrap; font-variant-numeric:tabular-nums}
.abbench-table .abbench-nowrap {white-space:nowrap}
.abbench-table .abbench-muted, .abbench-muted {color:#666}
.abbench-error {color:#a40000; background:#fff0f0; border:1px solid #e0b4b4; padding:4px 8px;
  white-space:pre-wrap; font-family:monospace; font-size:12px; line-height:1.45}
.abbench-note {color:#555; font-size:12px}
.abbench-note, .abbench-ok, .abbench-warn {line-height:1.45; margin:2px 0}
.abbench-ok {color:#1a6b1a}
.abbench-warn {color:#8a5a00}
.abbench-view, .abbench-view .jupyter-widgets {max-width:100%; min-width:0; box-sizing:border-box}
.abbench-view .abbench-matrix .jupyter-widgets {max-width:none; min-width:auto; flex-shrink:0}
.abbench-view .widget-inline-hbox, .abbench-view .widget-inline-vbox, .abbench-view .widget-button {
  max-width:calc(100% - 2 * var(--jp-widgets-margin, 2px))}
.abbench-view .widget-hbox {flex-wrap:wrap}
.abbench-view .widget-inline-hbox > select, .abbench-view .widget-inline-hbox > input,
.abbench-view .widget-inline-hbox > textarea {min-width:0}
.abbench-view .lm-TabBar-content, .abbench-view .p-TabBar-content {flex-wrap:wrap}
.abbench-view .lm-TabBar-tab, .abbench-view .p-TabBar-tab {flex:0 0 auto !important; min-width:max-content !important}
</style>"""
"""CSS for the tables and messages (in every widget, and in its static copy). In a narrow pane or on a phone
nothing is wider than the notebook: a control's fixed width (or ``width:100%`` beside its margins) gives
way (``max-width``, ``min-width:0`` on the inputs a label sits beside), a row of controls wraps, a wide
table scrolls in its own box, and so does a large confusion matrix (kept at its cell size, uncapped). A box
is capped at 100% (it has no margin, and a cap below that would narrow every box nested in it)."""

STYLE = CSS + "<style>.abbench-static {display:none}</style>"
"""What every widget includes once: `CSS`, and a rule hiding the widget's static copy (see
`View._ipython_display_`) wherever the widget itself draws."""


def note(text: str, kind: str = "note") -> str:
    """A short escaped message in the widgets' style (``note``, ``ok``, ``warn`` or ``error``)."""
    return f'<div class="abbench-{kind}">{escape(text)}</div>'


class ErrorArea(w.HTML):  # type: ignore[misc, unused-ignore]  # ipywidgets is untyped
    """Where a widget shows what went wrong in a callback, so nothing is lost in the kernel log.

    Attributes:
        messages: Every message shown since the widget was built, oldest first (for tests and logs).
    """

    def __init__(self, **kwargs: Any):
        super().__init__(value="", **kwargs)
        self.messages: list[str] = []

    @property
    def message(self) -> str | None:
        """The message shown now, or None when the area is empty."""
        return self.messages[-1] if self.value and self.messages else None

    def show(self, exc: BaseException, action: str | None = None) -> None:
        """Show an exception: abbench's own errors by their message; others with the traceback folded."""
        what = f"{action} failed: " if action else ""
        if isinstance(exc, AbbenchError):
            text = f"{what}{exc}"
            detail = ""
        else:
            text = f"{what}{type(exc).__name__}: {exc}"
            trace = "".join(traceback.format_exception(exc))
            detail = f"<details><summary>traceback</summary><pre>{escape(trace)}</pre></details>"
        self.messages.append(text)
        self.value = f'<div class="abbench-error">{escape(text)}{detail}</div>'

    def clear(self) -> None:
        """Empty the area (the messages stay in `messages`)."""
        self.value = ""


class View(w.VBox):  # type: ignore[misc, unused-ignore]  # ipywidgets is untyped
    """Base of every abbench widget: a box with an error area and guarded callbacks.

    Attributes:
        store: The store the widget reads and writes.
        errors: The error area (`ErrorArea`); ``errors.message`` is what it shows now.
        static_copy: What keeps the displayed static copy in step (`abbench.widgets._static.Follower`);
            None until the view is displayed with one.
    """

    def __init__(self, store: StoreLike = None, **kwargs: Any):
        super().__init__(**kwargs)
        self.add_class("abbench-view")  # tab titles wrap to a second row instead of being cut (see `CSS`)
        self.store = store if isinstance(store, Store) else notebook_store(store)
        self.errors = ErrorArea()
        self._busy = threading.RLock()
        self.static_copy: Any = None  # the `Follower` of the copy, once the view is displayed

    def _ipython_display_(self) -> None:
        """Display the live widget, then its static copy (`static_html`), as two outputs.

        An exported page (``jupyter nbconvert --to html``) keeps a widget only as a reference drawn
        by a widget manager from a CDN, so offline it shows nothing; the copy, hidden wherever the
        widget draws, is what such a page shows. It cannot share one output with the widget:
        nbconvert shows a single format per output and prefers the widget's. The copy follows the
        widget (`abbench.widgets._static.Follower`): each change rewrites it, so a saved notebook and
        its export show the widget as the analyst left it, not as it first drew.
        """
        from IPython.display import display

        from abbench.widgets._static import Follower, static_html  # _static imports this module

        show: Callable[..., Any] = display  # IPython's display is untyped
        show(self._repr_mimebundle_(), raw=True)
        copy = static_html(self)
        if copy:
            handle = show({"text/html": copy, "text/plain": ""}, raw=True, display_id=True)
            if self.static_copy is None:
                self.static_copy = Follower(self, copy)
            self.static_copy.add(handle)

    def guard(self, action: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` wrapped for use as a callback: exceptions are shown in the error area and logged.

        The error area is cleared when the action starts, so it always tells about the last action.
        """

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.errors.clear()
            try:
                with self._busy:
                    return fn(*args, **kwargs)
            except Exception as exc:
                log.warning("%s failed: %s", action, exc, exc_info=not isinstance(exc, AbbenchError))
                self.errors.show(exc, action)
                return None

        return wrapper

    def button(self, description: str, action: Callable[[], Any], **kwargs: Any) -> w.Button:
        """A button whose click runs `action` guarded (errors shown in the widget)."""
        button = w.Button(description=description, **kwargs)
        guarded = self.guard(description, action)
        button.on_click(lambda _b: guarded())
        return button

    def on_change(self, widget: w.Widget, action: Callable[[Any], Any], name: str = "value") -> None:
        """Run `action(new value)` guarded whenever `widget`'s trait `name` changes."""
        guarded = self.guard(f"changing {getattr(widget, 'description', '') or name}", action)
        widget.observe(lambda change: guarded(change["new"]), names=name)


class Choice:
    """A dropdown (or list) that keeps the selection a person made across reloads of its options.

    ipywidgets resets a selection to the first option whenever the options change, even when the
    selected value is still among them; a view built on that "reads once and forgets". A `Choice`
    remembers the `intended` value (what the person, or the code on their behalf, chose last) and
    re-applies it after every reload while it is still offered. When it is not offered, nothing is
    selected and `missing` says so — it never falls back silently to another item — and the
    selection comes back by itself when a later reload offers it again.

    Attributes:
        widget: The ipywidgets selection widget (``Dropdown`` by default, or ``Select``).
        intended: The value meant to be selected.
        missing: The intended value when the current options lack it, else None.
    """

    def __init__(
        self,
        description: str = "",
        *,
        on_select: Callable[[Any], Any] | None = None,
        kind: type[w.widgets.widget_selection._Selection] = w.Dropdown,
        **kwargs: Any,
    ):
        self.widget = kind(options=[], value=None, description=description, **kwargs)
        self.intended: Any = None
        self.missing: Any = None
        self._on_select = on_select
        self._quiet = False
        self.widget.observe(self._changed, names="value")

    @property
    def value(self) -> Any:
        """The value selected now (None when nothing is)."""
        return self.widget.value

    @property
    def values(self) -> list[Any]:
        """The values offered now, in order."""
        return [o[1] if isinstance(o, tuple) else o for o in self.widget.options]

    @property
    def labels(self) -> list[str]:
        """The labels offered now, in order."""
        return [str(o[0] if isinstance(o, tuple) else o) for o in self.widget.options]

    @contextmanager
    def _silent(self) -> Iterator[None]:
        before, self._quiet = self._quiet, True
        try:
            yield
        finally:
            self._quiet = before

    def _changed(self, change: dict[str, Any]) -> None:
        if self._quiet:
            return
        self.intended = change["new"]
        self.missing = None
        if self._on_select is not None:
            self._on_select(change["new"])

    def select(self, value: Any, *, notify: bool = True) -> None:
        """Choose `value` as a person would (it becomes the intended selection)."""
        if value is not None and value not in self.values:
            self.intended, self.missing = value, value
            with self._silent():
                self.widget.value = None
            return
        if self.widget.value == value:
            self.intended, self.missing = value, None
            if notify and self._on_select is not None:
                self._on_select(value)
            return
        if notify:
            self.widget.value = value  # `_changed` records it and tells the owner
        else:
            with self._silent():
                self.widget.value = value
            self.intended, self.missing = value, None

    def select_listed(self, value: Any, relist: Callable[[], Any]) -> None:
        """`select` `value`, calling `relist` first when the options do not hold it yet (made since)."""
        if value not in self.values:
            relist()
        self.select(value)

    def show(self, value: Any) -> None:
        """Display `value` (a default the code found, such as the detected sheet) without making it the
        intended choice: the next reload shows what is found then, unless the person chose meanwhile."""
        if value in self.values and self.intended is None:
            with self._silent():
                self.widget.value = value

    def set_options(self, options: Sequence[tuple[str, Any]]) -> bool:
        """Replace the options and re-apply the intended selection; True when the selection changed."""
        before = self.widget.value
        with self._silent():
            self.widget.options = list(options)
            if self.intended is not None and self.intended in self.values:
                self.widget.value = self.intended
                self.missing = None
            else:
                self.widget.value = None
                self.missing = self.intended
        return bool(self.widget.value != before)


def experiment_options(store: Store, *, status: bool = False) -> list[tuple[str, int]]:
    """The store's experiments as chooser options: ``#3 demo · demo@ab12cd · 2 arms`` → id (the status
    after the name when asked)."""
    return [
        (
            f"#{e.id} {e.name} · "
            + (f"{e.status} · " if status else "")
            + f"{e.dataset} · {len(e.arms)} arms",
            e.id,
        )
        for e in store.experiments.all()
    ]


def notebook_store(path: StoreLike = None, *, create: bool = False) -> Store:
    """The store a notebook works on: `path`, else $ABBENCH_STORE, else the nearest ``.abbench/`` above.

    A notebook runs with its own folder as the working directory (``notebooks/``), while ``make demo``
    writes the demo store at the top of the checkout; looking upwards finds it from either place.

    Args:
        path: A store folder (or an open `Store`); empty or None to look for one.
        create: Create a store at ``./.abbench`` when none is found (else refuse, saying what to do).

    Raises:
        StoreError: no store was found and `create` is False.
    """
    if isinstance(path, Store):
        return path
    if path not in (None, ""):
        return open_store(path)
    if os.environ.get(STORE_ENV):
        return open_store(os.environ[STORE_ENV])
    here = Path.cwd().resolve()
    for folder in (here, *here.parents):
        if (folder / ".abbench" / "abbench.db").is_file():
            return open_store(folder / ".abbench")
    if create:
        return open_store(here / ".abbench")
    raise StoreError(
        f"no abbench store found in {here} or the folders above it: run `make demo` at "
        f"the top of the checkout for the demo store, set store_path at the top of the notebook, or set "
        f"${STORE_ENV}"
    )

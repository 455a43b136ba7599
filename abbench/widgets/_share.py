"""`ReportButton`: render the report of what a notebook shows, off the kernel's thread, and link the page."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ipywidgets as w

from abbench.widgets._base import STYLE, StoreLike, View, escape, log, note


class ReportButton(View):
    """A button that writes a self-contained report page and shows a link to it.

    What to render is injected: `render` is a callable returning something with ``html_path`` (a
    `abbench.report.ReportResult`), typically ``lambda: render_report(**diff.report_options())``
    (widgets never import the report package: views do not import one another). Rendering runs a
    kernel of its own for several seconds, so it goes to a worker thread: the notebook stays usable,
    the button is disabled meanwhile, and the outcome (a link, or the error) is shown here.

    Args:
        render: Called with no argument on each click; returns the rendered result.
        store: The store (for the error area's context; any `StoreLike`).
        description: The button's text.

    Attributes:
        result: The last result (None before the first, or after a failure).
        status_html: The status line and link (``status_html.value``).
    """

    def __init__(
        self,
        render: Callable[[], Any],
        store: StoreLike = None,
        *,
        description: str = "Render report",
        **kwargs: Any,
    ):
        super().__init__(store, **kwargs)
        self._render = render
        self.result: Any = None
        self._thread: threading.Thread | None = None
        self.render_button = self.button(
            description, self.render, icon="file", tooltip="write a self-contained HTML page to share"
        )
        self.status_html = w.HTML()
        self.children = [w.HTML(STYLE), w.HBox([self.render_button, self.status_html]), self.errors]

    def render(self) -> None:
        """Start rendering in a worker thread (what a click does); `wait` blocks until it is done."""
        if self._thread is not None and self._thread.is_alive():
            return
        self.render_button.disabled = True
        self.result = None
        self.status_html.value = note("rendering the report (a kernel of its own runs the report notebook) …")
        started = time.monotonic()

        def work() -> None:
            try:
                self.result = self._render()
                self.status_html.value = self._link(self.result, time.monotonic() - started)
            except Exception as exc:  # shown in the widget: a worker thread's error is otherwise lost
                log.info("rendering the report failed: %s", exc)
                self.status_html.value = ""
                self.errors.show(exc, "rendering the report")
            finally:
                self.render_button.disabled = False

        self._thread = threading.Thread(target=work, name="abbench-widget-report", daemon=True)
        self._thread.start()

    @staticmethod
    def _link(result: Any, seconds: float) -> str:
        path = Path(result.html_path)
        try:
            shown = os.path.relpath(path)
        except ValueError:  # another drive (Windows)
            shown = str(path)
        size = f"{path.stat().st_size / 1e6:.1f} MB" if path.is_file() else ""
        return f'<a href="{escape(shown)}" target="_blank" download><b>{escape(path.name)}</b></a> ' + note(
            f"written in {seconds:.0f} s · {size} · {path.resolve()} · opens offline, send it as it is", "ok"
        )

    def wait(self, timeout: float | None = None) -> Any:
        """Block until the rendering started last is done; its result (None after a failure)."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.result

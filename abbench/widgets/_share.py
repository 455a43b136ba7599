"""`ReportButton`: render the report of what a notebook shows, off the kernel's thread, and link the page.

The link is an ``<a href download>`` relative to the notebook's folder (the kernel's working folder), put
in an ``Output`` widget: JupyterLab (and Notebook 7) draw an output's HTML through their renderer, which
rewrites a relative link into the server's own ``files/`` URL of that file, under the server's base URL
(``/files/reports/x.html``, ``/jh/user/files/...``). An ``HTML`` widget's link is not rewritten: the
browser resolved it against ``/lab/tree/...`` and downloaded JupyterLab's page instead of the report.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

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
        status_html: The status line: what was written, where, its size (``status_html.value``).
        link: The ``Output`` widget holding the link to the page (one ``text/html`` output).
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
        self.render_button.layout.flex = "0 0 auto"  # the button keeps its words; the status line wraps
        self.link = w.Output(layout=w.Layout(flex="0 0 auto", margin="0 12px"))
        self.children = [
            w.HTML(STYLE),
            w.HBox([self.render_button, self.link, self.status_html], layout=w.Layout(align_items="center")),
            self.errors,
        ]

    def render(self) -> None:
        """Start rendering in a worker thread (what a click does); `wait` blocks until it is done."""
        if self._thread is not None and self._thread.is_alive():
            return
        self.render_button.disabled = True
        self.result = None
        self.link.outputs = ()
        self.status_html.value = note("rendering the report (a kernel of its own runs the report notebook) …")
        started = time.monotonic()

        def work() -> None:
            try:
                self.result = self._render()
                path = Path(self.result.html_path)
                self.status_html.value = _status(path, time.monotonic() - started)
                self.link.outputs = (
                    {"output_type": "display_data", "data": link_bundle(path), "metadata": {}},
                )
            except Exception as exc:  # shown in the widget: a worker thread's error is otherwise lost
                log.info("rendering the report failed: %s", exc)
                self.status_html.value = ""
                self.errors.show(exc, "rendering the report")
            finally:
                self.render_button.disabled = False

        self._thread = threading.Thread(target=work, name="abbench-widget-report", daemon=True)
        self._thread.start()

    def wait(self, timeout: float | None = None) -> Any:
        """Block until the rendering started last is done; its result (None after a failure)."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.result


def link_bundle(path: Path) -> dict[str, str]:
    """The link to the page at `path`, as an output's mime bundle (see the module's docstring).

    The ``href`` is relative to the kernel's working folder, which JupyterLab makes the notebook's: its
    renderer resolves it from the notebook's folder into the server's ``files/`` URL, and a plain page
    (an export saved next to the notebook) resolves it the same way. ``download`` keeps JupyterLab from
    opening the page in its own editor, where the charts would not draw.
    """
    try:
        href = Path(os.path.relpath(path)).as_posix()
    except ValueError:  # another drive (Windows): no relative link exists
        href = path.resolve().as_uri()
    anchor = f'<a href="{escape(quote(href))}" download="{escape(path.name)}" target="_blank">'
    return {"text/html": f"{anchor}<b>{escape(path.name)}</b></a>", "text/plain": str(path)}


def _status(path: Path, seconds: float) -> str:
    size = f"{path.stat().st_size / 1e6:.1f} MB" if path.is_file() else ""
    status = note(
        f"written in {seconds:.0f} s · {size} · {path.resolve()} · opens offline, send it as it is", "ok"
    )
    root = _served_root()
    if root is not None and not path.resolve().is_relative_to(root):
        status += note(
            f"the page is outside the folder JupyterLab serves ({root}), so the link cannot reach it: open "
            f"{path.resolve()} from your file manager, or write reports under {root}",
            "warn",
        )
    return status


def _served_root() -> Path | None:
    """The folder the Jupyter server that started this kernel serves; None when that is not known."""
    try:
        from jupyter_server.serverapp import list_running_servers
    except ImportError:
        return None
    try:
        for info in list_running_servers():
            if info.get("pid") == os.getppid() and info.get("root_dir"):
                return Path(info["root_dir"]).expanduser().resolve()
    except OSError as exc:
        log.info("could not read the Jupyter server's info: %s", exc)
    return None

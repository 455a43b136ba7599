"""bench_widget_clicks.py's ``--browser`` half: the slow clicks of issue 40 item 15 timed in a real page.

One JupyterLab per tree on 127.0.0.1 (its kernels import that tree's abbench, on its own copy of the
store), one headless Chromium. A notebook opening is *Run all* on a fresh copy of the notebook (so no
output of an earlier run is on the page) in a new kernel; it is drawn when every code cell has run,
the kernel is idle and the widget's words are in the page. *Draw random sample* is the button of the
04 just opened; it is drawn when the new sample's line is. Kernels are shut down after each opening.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.browser import CHROMIUM, chromium, offline_page  # noqa: E402
from tests.widgets.lab import jupyterlab, parameterized  # noqa: E402

TARGET_S = 2.0
NOTEBOOKS = {
    "open 03": ("03_results", {"experiment": "paging"}, "main figure:", "ResultsWidget"),
    "open 04": ("04_review", {"experiment": "paging", "kind": "gold"}, "cases listed", "ReviewWidget"),
    "open 05": ("05_compare", {"experiment_a": "paging"}, "paired cases of", "DiffWidget"),
}
"""Click -> (notebook, its parameters, words the widget draws once it has its figures, the widget)."""
DRAW = "04: draw random sample"

_Times = dict[str, dict[str, list[float]]]

_RAN = (
    "(name) => { const w = window.jupyterapp.shell.currentWidget;"
    " if (!w || !w.context || w.context.path !== name) return false;"
    " const cells = w.content.widgets.filter(c => c.model.type === 'code');"
    " return cells.every(c => c.model.executionCount !== null)"
    " && w.sessionContext.session.kernel.status === 'idle'; }"
)
_CELL_SECONDS = (
    "(words) => { const w = window.jupyterapp.shell.currentWidget;"
    " const c = w.content.widgets.find(c => c.model.type === 'code' && c.model.sharedModel.getSource().includes(words));"
    " if (!c) return null;"
    " const e = c.model.getMetadata ? c.model.getMetadata('execution') : c.model.metadata.execution;"
    " return e ? [e['shell.execute_reply.started'], e['shell.execute_reply']] : null; }"
)


def _kernel_seconds(page: Any, widget: str) -> float | None:
    """The time in the kernel of the cell that makes the `widget` (JupyterLab's recorded timing)."""
    stamps = page.evaluate(_CELL_SECONDS, f"{widget}(")
    if not stamps or None in stamps:
        return None
    started, done = (datetime.fromisoformat(s.replace("Z", "+00:00")) for s in stamps)
    return (done - started).total_seconds()


def _open(page: Any, url: str, lab: Path, name: str, run: int) -> tuple[float, float | None]:
    """Open a fresh copy of notebook `name` and *Run all*: (seconds to drawn, the widget cell's kernel seconds)."""
    notebook, _params, words, widget = NOTEBOOKS[name]
    copy = f"{notebook}_{run}.ipynb"
    shutil.copy(lab / f"{notebook}.ipynb", lab / copy)
    page.goto(f"{url}/lab/tree/{copy}", wait_until="domcontentloaded")
    page.wait_for_function(
        "(name) => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
        " const k = w && w.context && w.context.path === name && w.sessionContext.session"
        " && w.sessionContext.session.kernel; return !!k && k.status === 'idle'; }",
        arg=copy,
    )
    started = time.perf_counter()
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(_RAN, arg=copy)
    page.wait_for_function("(words) => document.body.innerText.includes(words)", arg=words)
    return time.perf_counter() - started, _kernel_seconds(page, widget)


def _draw(page: Any, store_dir: Path) -> float:
    """Click *Draw random sample* in the 04 shown: seconds until the new sample's line is drawn."""
    with contextlib.closing(sqlite3.connect(f"file:{store_dir / 'abbench.db'}?mode=ro", uri=True)) as db:
        (latest,) = db.execute("SELECT IFNULL(max(id), 0) FROM review_samples").fetchone()
    words = f"random review sample #{latest + 1} "
    started = time.perf_counter()
    page.get_by_role("button", name="Draw random sample").click()
    page.wait_for_function("(words) => document.body.innerText.includes(words)", arg=words)
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel.status === 'idle'"
    )
    return time.perf_counter() - started


def _shut_kernels(url: str) -> None:
    """End every kernel of this JupyterLab (an opened 04 at 100,000 cases holds hundreds of MB)."""
    for session in httpx.get(f"{url}/api/sessions", timeout=30).json():
        httpx.delete(f"{url}/api/sessions/{session['id']}", timeout=60)


@contextlib.contextmanager
def _labs(trees: dict[str, Path], store_dir: Path, tmp: Path) -> Iterator[dict[str, tuple[str, Path, Path]]]:
    """One JupyterLab per tree, on its own copy of the store: label -> (url, lab folder, store copy)."""
    with contextlib.ExitStack() as stack:
        out = {}
        for i, (label, tree) in enumerate(trees.items()):
            lab, store = tmp / f"lab{i}", tmp / f"store{i}"
            shutil.copytree(store_dir, store)
            lab.mkdir()
            timing = lab / ".lab-settings" / "user-settings" / "@jupyterlab" / "notebook-extension"
            timing.mkdir(parents=True)
            (timing / "tracker.jupyterlab-settings").write_text(json.dumps({"recordTiming": True}))
            for notebook, params, _, _ in NOTEBOOKS.values():
                source = tree / "notebooks" / f"{notebook}.ipynb"
                parameterized(source, lab / f"{notebook}.ipynb", store_path=str(store), **params)
            url = stack.enter_context(jupyterlab(lab, env={"PYTHONPATH": str(tree)}, timeout=300))
            out[label] = (url, lab, store)
        yield out


def _time_clicks(page: Any, labs: dict[str, tuple[str, Path, Path]], repeat: int) -> tuple[_Times, _Times]:
    """Each click `repeat` times per tree, in turns (both meet the same load): seconds to drawn, and the
    widget cell's seconds in the kernel, by click and tree."""
    times: _Times = {}
    kernel: _Times = {}
    for run in range(repeat):
        for name in NOTEBOOKS:
            for label, (url, lab, store) in labs.items():
                took, in_kernel = _open(page, url, lab, name, run)
                times.setdefault(name, {}).setdefault(label, []).append(took)
                inside = "" if in_kernel is None else f" (widget cell {in_kernel:.2f} s)"
                print(f"    {label}, {name}: {took:.2f} s{inside}", flush=True)
                if in_kernel is not None:
                    kernel.setdefault(name, {}).setdefault(label, []).append(in_kernel)
                if name == "open 04":
                    times.setdefault(DRAW, {}).setdefault(label, []).append(drawn := _draw(page, store))
                    print(f"    {label}, {DRAW}: {drawn:.2f} s", flush=True)
                _shut_kernels(url)
        print(f"  round {run + 1} of {repeat} done", flush=True)
    return times, kernel


def browser_main(trees: dict[str, Path], store_dir: Path, repeat: int, cases: int) -> None:
    """Time each click `repeat` times per tree, in turns, and print the medians and their ratio."""
    if not CHROMIUM.exists():
        sys.exit(f"no Chromium at {CHROMIUM}: `make browser` (apt-get install chromium) first")
    with (
        tempfile.TemporaryDirectory(prefix="bench-clicks-browser-") as tmp,
        _labs(trees, store_dir, Path(tmp)) as labs,
        chromium() as browser,
    ):
        hosts = tuple(url.removeprefix("http://") for url, _, _ in labs.values())
        viewport = {"width": 1400, "height": 1000}
        with offline_page(browser, allow_hosts=hosts, viewport=viewport) as (page, _network, _errors):
            times, kernel = _time_clicks(page, labs, repeat)
    print(f"{cases:,} cases, in JupyterLab in Chromium; median of {repeat}; target < {TARGET_S:g} s a click")
    for name, by_tree in times.items():
        cells = []
        for label, runs in by_tree.items():
            wall = statistics.median(runs)
            inner = kernel.get(name, {}).get(label)
            cell = f" (widget cell {statistics.median(inner):5.2f} s)" if inner else ""
            cells.append(f"{label}: {wall:6.2f} s{cell} {'ok' if wall < TARGET_S else 'SLOW'}")
        ratio = ""
        if len(by_tree) == 2:
            now, before = (statistics.median(r) for r in by_tree.values())
            ratio = f"   before/now {before / now:4.2f}×"
        print(f"  {name:<26} " + "   ".join(cells) + ratio, flush=True)

"""A review by keyboard in a real JupyterLab page: shared by the browser test and bench/bench_review.py."""

from __future__ import annotations

import time

SHOWN = (
    "() => { const el = document.querySelector('.abbench-case-summary .widget-html-content');"
    " const t = el ? el.innerText : ''; return t.startsWith('Case ') ? t.split(/\\s/)[1] : null; }"
)
"""The id of the case the review widget's summary shows now, or null (read in the page)."""

KEYS_ON = (
    "() => { const a = document.activeElement; const root = a && a.closest('.abbench-keys-root');"
    " return !!root && !['INPUT', 'TEXTAREA'].includes(a.tagName); }"
)
"""Whether the keys reach the review widget now (the focus is in it and not in a text field)."""

CELL_TYPES = "() => window.jupyterapp.shell.currentWidget.content.widgets.map(c => c.model.type)"


def shown(page) -> str | None:
    """The case the summary shows now."""
    return page.evaluate(SHOWN)


def press(page, key: str, *, timeout: float = 60.0) -> tuple[str, float]:
    """Press `key` and wait until the summary shows another case: (that case, seconds it took)."""
    before = shown(page)
    started = time.perf_counter()
    page.keyboard.press(key)
    page.wait_for_function(
        f"(before) => {{ const now = ({SHOWN})(); return now !== null && now !== before; }}",
        arg=before,
        timeout=timeout * 1000,
    )
    return shown(page), time.perf_counter() - started

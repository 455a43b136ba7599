"""A notebook shared the plain way — ``jupyter nbconvert --execute --to html`` — shows its tables and figures offline.

The export runs in a child process against a demo store, exactly as a person would type it; the page is
then opened in Debian's headless Chromium with every non-file URL aborted (require.js, MathJax and the
widget manager that nbconvert's ``lab`` template loads from CDNs never arrive). What must still show is
each widget's static copy: its tables, and its plotly figures drawn (``.main-svg``) by the inlined plotly.js.
Screenshots land in ``reports/nbconvert-NAME.png``.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.browser import HANG_MS, chromium, offline_page, require_chromium
from tests.conftest import REPO, subprocess_env

NOTEBOOKS = REPO / "notebooks"
REPORTS = REPO / "reports"

pytestmark = [pytest.mark.browser, pytest.mark.slow]

# notebook → (a table heading the page must show, whether it draws figures)
EXPECTED = {
    "03_results": ("right / wrong", True),
    "05_compare": ("B − A", False),
}


def nbconvert(name: str, store, out_dir):
    """``jupyter nbconvert --execute --to html notebooks/NAME.ipynb`` in a child process; the page's path."""
    command = ["jupyter", "nbconvert", "--execute", "--to", "html", "--output-dir", str(out_dir)]
    done = subprocess.run(
        [sys.executable, "-m", *command, str(NOTEBOOKS / f"{name}.ipynb")],
        env=subprocess_env(ABBENCH_STORE=store, TQDM_DISABLE=1),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out_dir / f"{name}.html"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_plain_nbconvert_export_shows_its_tables_and_figures_offline(name, shared_demo_store, tmp_path):
    require_chromium()
    heading, figures = EXPECTED[name]
    page_path = nbconvert(name, shared_demo_store, tmp_path)
    html = page_path.read_text(encoding="utf-8")
    assert html.count("plotly.js v") == (1 if figures else 0), (
        "plotly.js is inlined once where there are figures"
    )

    with (
        chromium() as browser,
        offline_page(browser, viewport={"width": 1280, "height": 900}) as (page, net, errors),
    ):
        page.goto(page_path.as_uri())
        copy = page.locator(".abbench-static")
        assert copy.count() == 1 and copy.is_visible(), "the widget's static copy is not shown"
        assert net.blocked, (
            "the plain export loads nothing from a CDN any more: this test no longer tests offline"
        )
        assert page.locator(f".abbench-static th:text-is('{heading}')").count() >= 1
        assert page.locator(".abbench-static table tbody tr").count() >= 2
        if figures:
            graphs = page.locator(".abbench-static .plotly-graph-div")
            assert graphs.count() >= 2
            page.wait_for_function(
                "() => [...document.querySelectorAll('.abbench-static .plotly-graph-div')]"
                ".every(d => d.querySelector('.main-svg'))",
                timeout=HANG_MS,
            )
        # Only the CDN scripts fail; nothing on the page itself throws.
        assert all("ERR_INTERNET_DISCONNECTED" in e for e in errors), errors
        REPORTS.mkdir(exist_ok=True)
        page.screenshot(path=str(REPORTS / f"nbconvert-{name}.png"), full_page=True)

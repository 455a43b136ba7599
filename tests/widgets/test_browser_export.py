"""What leaves the notebook, in a real browser: the *Render report* link and the saved, exported notebook.

JupyterLab on 127.0.0.1 in Debian's headless Chromium (Playwright), the notebooks in a ``notebooks/``
folder writing reports to ``../reports`` as in the checkout. The analyst changes the pair in 03_results
(or 05_compare), saves, and exports: ``jupyter nbconvert --to html`` of the saved file and JupyterLab's
own *Export as HTML* (the server's ``nbconvert/html`` handler) must show the pair chosen, not the first
one. Then *Render report* and a click on its link: the browser must get the report's bytes, under the
server's base URL (``/`` and JupyterHub's ``/jh/user/``). Screenshots go to /tmp/abbench-export-*.png.
"""

from __future__ import annotations

import html
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from abbench.store import open_store
from abbench.widgets import DiffWidget, ResultsWidget
from tests.browser import HANG_MS, chromium, offline_page, require_chromium
from tests.conftest import REPO, subprocess_env
from tests.widgets.demo import build_priced_demo
from tests.widgets.lab import VIEWPORT, Lab, jupyterlab, lab_page, parameterized
from tests.widgets.test_browser import _button, _wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = Path("/tmp")
EXPERIMENT = "demo-routing"


def words(markup: str) -> str:
    """What a person reads in `markup`: tags dropped, entities and no-break spaces as plain spaces."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).replace("\xa0", " ").split())


@pytest.fixture(scope="module")
def priced_store(tmp_path_factory) -> Path:
    """The priced demo experiment on 60 cases; shared by this module's tests, which only read it."""
    return build_priced_demo(tmp_path_factory.mktemp("priced") / "store", cases=60)


def _notebook(lab: Lab, store_dir: Path, name: str, **parameters) -> str:
    """notebooks/NAME.ipynb in `lab`, on the store at `store_dir`, writing reports to ../reports as in the
    checkout; that path."""
    (lab.root / "notebooks").mkdir()
    parameterized(
        REPO / "notebooks" / f"{name}.ipynb",
        lab.root / "notebooks" / f"{name}.ipynb",
        store_path=str(store_dir),
        reports_dir="../reports",
        **parameters,
    )
    return f"notebooks/{name}.ipynb"


def _static_text(page, selector: str) -> list[str]:
    """The text of `selector` inside the (hidden) static copies, whitespace folded."""
    return page.evaluate(
        "(sel) => [...document.querySelectorAll('.abbench-static ' + sel)]"
        ".map(e => e.textContent.replace(/\\s+/g, ' ').trim())",
        selector,
    )


def _save(page, path: str) -> None:
    """Save the notebook as File ▸ Save does, and wait until JupyterLab says it is saved."""
    page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    page.wait_for_function(
        "(path) => { const w = window.jupyterapp.shell.currentWidget;"
        " return w.context.path === path && !w.context.model.dirty; }",
        arg=path,
        timeout=HANG_MS,
    )


def _exports(lab: Lab, path: str, tmp_path: Path) -> dict[str, str]:
    """The saved notebook exported both ways: ``jupyter nbconvert --to html`` and JupyterLab's
    *Export as HTML* (its server's ``nbconvert/html`` handler)."""
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "jupyter",
            "nbconvert",
            "--to",
            "html",
            "--output-dir",
            str(tmp_path / "export"),
            str(lab.root / path),
        ],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    served = httpx.get(
        f"{lab.url}/nbconvert/html/{lab.path(path)}", params={"download": "false"}, timeout=600
    )
    assert served.status_code == 200, served.text[:500]
    exported = (tmp_path / "export" / Path(path).with_suffix(".html").name).read_text(encoding="utf-8")
    return {"nbconvert": exported, "Export as HTML": served.text}


def _copies(page_html: str) -> list[str]:
    """The static copies an exported page holds, as text."""
    return [
        words(c)
        for c in re.findall(
            r'<div class="abbench-static">.*?(?=<div class="jp-Cell |</main>)', page_html, re.S
        )
    ]


def _download_report(page, tmp_path: Path, reports: Path, base: str) -> tuple[str, Path]:
    """Render the report, click its link; (the link's URL, the report), after checking the browser got
    the report's bytes."""
    _button(page, "Render report").click()
    link = page.locator(".jp-OutputArea-output a[download]").filter(has_text=re.compile(r"\.html$"))
    # JupyterLab's renderer rewrites the relative link into the server's files/ URL (as an absolute URL).
    path = "new URL(a.href).pathname"
    _wait(lambda: link.count() == 1, 300, "the report's link")
    # The renderer rewrites it just after drawing it; a link it never rewrites stays under /lab/tree/.
    _wait(
        lambda: link.evaluate(f"a => {path}").startswith(base),
        30,
        f"a link under {base}: {link.evaluate(f'a => {path}')}",
    )
    failed = [t for t in page.locator(".abbench-error").all_inner_texts() if "rendering the report" in t]
    assert not failed, failed
    href = link.evaluate(f"a => {path}")
    page.locator(".jp-OutputArea-output:has(a[download])").last.screenshot(
        path=str(SHOTS / f"abbench-export-link{base.replace('/', '-')}.png")
    )
    with page.expect_download(timeout=HANG_MS) as info:
        link.click()
    got = tmp_path / "downloaded.html"
    info.value.save_as(got)
    (report,) = reports.glob("*.html")
    assert got.read_bytes() == report.read_bytes(), (got.stat().st_size, report.stat().st_size, href)
    return href, report


def test_03_saved_and_exported_shows_the_chosen_pair_and_its_report_link_downloads_it(
    lab, priced_store, tmp_path
):
    path = _notebook(lab, priced_store, "03_results", experiment=EXPERIMENT)
    with open_store(priced_store) as store:
        first = ResultsWidget(store, experiment=EXPERIMENT)
        chosen = ResultsWidget(store, experiment=EXPERIMENT, baseline="v2", candidate="v1")
        before = words(re.search(r"abbench-headline[^>]*>(.*?)</div>", first.headline_html.value).group(1))
        after = words(re.search(r"abbench-headline[^>]*>(.*?)</div>", chosen.headline_html.value).group(1))
    assert before.startswith("v2 vs v1") and after.startswith("v1 vs v2"), (before, after)
    failure = SHOTS / "abbench-export-03-failure.png"
    with chromium() as browser:
        with lab_page(browser, lab, failure, accept_downloads=True) as page:
            lab.open(page, path)
            assert _static_text(page, ".abbench-headline") == [before]
            page.locator(".widget-tab .lm-TabBar-tab").filter(has_text="Decision").click()
            page.locator(".widget-dropdown").filter(has_text="Baseline (A)").locator("select").select_option(
                "v2"
            )
            page.locator(".widget-dropdown").filter(has_text="Candidate (B)").locator("select").select_option(
                "v1"
            )
            headline = page.locator(".abbench-results .abbench-headline").first
            _wait(lambda: " ".join(headline.inner_text().split()) == after, 60, "the chosen pair's headline")
            # The hidden copy follows: a moment later it shows the same (never the first pair's).
            _wait(lambda: _static_text(page, ".abbench-headline") == [after], 60, "the static copy to follow")
            page.locator(".abbench-results").first.screenshot(path=str(SHOTS / "abbench-export-03-live.png"))
            _save(page, lab.path(path))
            href, _ = _download_report(page, tmp_path, lab.root / "reports", "/files/")
        assert href == f"/files/{lab.path('reports')}/{EXPERIMENT}.html", href
        exports = _exports(lab, path, tmp_path)
        for how, page_html in exports.items():
            (results_copy,) = [c for c in _copies(page_html) if "gate" in c]
            assert after in results_copy and before not in results_copy, (how, results_copy[:400])
        _look_offline(browser, tmp_path, exports["nbconvert"], "03", after)


def test_05_under_a_hub_base_url_exports_the_chosen_arms_and_links_the_report(priced_store, tmp_path):
    require_chromium()
    with open_store(priced_store) as store:
        before = DiffWidget(store, a=EXPERIMENT, arm_a="v1", arm_b="v2").comparison.verdict.text
        after = DiffWidget(store, a=EXPERIMENT, arm_a="v2", arm_b="v1").comparison.verdict.text
    assert before != after, before
    root = tmp_path / "lab"
    root.mkdir()
    failure = SHOTS / "abbench-export-05-failure.png"
    # A server of its own: served under a hub's base URL, as JupyterHub serves a user's JupyterLab.
    with jupyterlab(root, base_url="/jh/user/") as url, chromium() as browser:
        hub = Lab(url, root)
        path = _notebook(hub, priced_store, "05_compare", experiment_a=EXPERIMENT, arm_a="v1", arm_b="v2")
        with lab_page(browser, hub, failure, accept_downloads=True) as page:
            hub.open(page, path)
            assert before in _static_text(page, "b")
            arms = page.locator(".widget-dropdown:has(label:text-is('arm')) select")
            arms.nth(0).select_option("v2")
            arms.nth(1).select_option("v1")
            _wait(lambda: after in _static_text(page, "b"), 60, "the static copy to follow")
            assert before not in _static_text(page, "b")
            _save(page, hub.path(path))
            href, report = _download_report(page, tmp_path, root / "reports", "/jh/user/files/")
            page.screenshot(path=str(SHOTS / "abbench-export-05-live.png"))
        assert href == f"/jh/user/files/reports/{report.name}", href
        exports = _exports(hub, path, tmp_path)
        for how, page_html in exports.items():
            (copy,) = _copies(page_html)
            assert after in copy and before not in copy, (how, copy[:400])
        _look_offline(browser, tmp_path, exports["nbconvert"], "05", after)


def _look_offline(browser, tmp_path: Path, page_html: str, name: str, expected: str) -> None:
    """Open the exported page offline (no widget manager arrives) and screenshot what it shows."""
    exported = tmp_path / f"export-{name}.html"
    exported.write_text(page_html, encoding="utf-8")
    with offline_page(browser, viewport=VIEWPORT) as (page, _network, _errors):
        page.goto(exported.as_uri())
        copy = page.locator(".abbench-static").first
        assert copy.is_visible() and expected in " ".join(copy.inner_text().split())
        copy.screenshot(path=str(SHOTS / f"abbench-export-{name}-exported.png"))

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
from urllib.parse import urlsplit

import httpx
import pytest

from abbench.store import open_store
from abbench.widgets import DiffWidget, ResultsWidget
from tests.browser import HANG_MS, chromium, offline_page, require_chromium
from tests.conftest import REPO, subprocess_env
from tests.widgets.demo import build_priced_demo
from tests.widgets.lab import jupyterlab, parameterized
from tests.widgets.test_browser import VIEWPORT, _button, _open, _wait

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SHOTS = Path("/tmp")
EXPERIMENT = "demo-routing"


def words(markup: str) -> str:
    """What a person reads in `markup`: tags dropped, entities and no-break spaces as plain spaces."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).replace("\xa0", " ").split())


def _lab(tmp_path: Path, name: str, **parameters) -> tuple[Path, Path]:
    """A JupyterLab root with notebooks/NAME.ipynb on the priced demo store; (root, store folder)."""
    store_dir = build_priced_demo(tmp_path / "store", cases=60)
    root = tmp_path / "lab"
    (root / "notebooks").mkdir(parents=True)
    parameterized(
        REPO / "notebooks" / f"{name}.ipynb",
        root / "notebooks" / f"{name}.ipynb",
        store_path=str(store_dir),
        reports_dir="../reports",
        **parameters,
    )
    return root, store_dir


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


def _exports(url: str, root: Path, path: str, tmp_path: Path) -> dict[str, str]:
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
            str(root / path),
        ],
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lab = httpx.get(f"{url}/nbconvert/html/{path}", params={"download": "false"}, timeout=600)
    assert lab.status_code == 200, lab.text[:500]
    exported = (tmp_path / "export" / Path(path).with_suffix(".html").name).read_text(encoding="utf-8")
    return {"nbconvert": exported, "Export as HTML": lab.text}


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


def test_03_saved_and_exported_shows_the_chosen_pair_and_its_report_link_downloads_it(tmp_path):
    require_chromium()
    root, store_dir = _lab(tmp_path, "03_results", experiment=EXPERIMENT)
    with open_store(store_dir) as store:
        first = ResultsWidget(store, experiment=EXPERIMENT)
        chosen = ResultsWidget(store, experiment=EXPERIMENT, baseline="v2", candidate="v1")
        before = words(re.search(r"abbench-headline[^>]*>(.*?)</div>", first.headline_html.value).group(1))
        after = words(re.search(r"abbench-headline[^>]*>(.*?)</div>", chosen.headline_html.value).group(1))
    assert before.startswith("v2 vs v1") and after.startswith("v1 vs v2"), (before, after)
    path = "notebooks/03_results.ipynb"
    with (
        jupyterlab(root) as url,
        chromium() as browser,
        offline_page(
            browser, allow_hosts=(urlsplit(url).netloc,), viewport=VIEWPORT, accept_downloads=True
        ) as (page, network, errors),
    ):
        page.set_default_timeout(60_000)
        try:
            _open(page, url, path)
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
            _save(page, path)
            href, _ = _download_report(page, tmp_path, root / "reports", "/files/")
        except BaseException:
            page.screenshot(path=str(SHOTS / "abbench-export-03-failure.png"), full_page=True)
            print("widget errors:", page.locator(".abbench-error").all_inner_texts())
            print("page errors:", *errors[-20:], sep="\n  ")
            raise
        assert href == f"/files/reports/{EXPERIMENT}.html", href
        assert network.blocked == [], network.blocked[:5]
        exports = _exports(url, root, path, tmp_path)
    for how, page_html in exports.items():
        (results_copy,) = [c for c in _copies(page_html) if "gate" in c]
        assert after in results_copy and before not in results_copy, (how, results_copy[:400])
    _look_offline(tmp_path, exports["nbconvert"], "03", after)


def test_05_under_a_hub_base_url_exports_the_chosen_arms_and_links_the_report(tmp_path):
    require_chromium()
    root, store_dir = _lab(tmp_path, "05_compare", experiment_a=EXPERIMENT, arm_a="v1", arm_b="v2")
    with open_store(store_dir) as store:
        before = DiffWidget(store, a=EXPERIMENT, arm_a="v1", arm_b="v2").comparison.verdict.text
        after = DiffWidget(store, a=EXPERIMENT, arm_a="v2", arm_b="v1").comparison.verdict.text
    assert before != after, before
    path = "notebooks/05_compare.ipynb"
    with (
        jupyterlab(root, base_url="/jh/user/") as url,
        chromium() as browser,
        offline_page(
            browser, allow_hosts=(urlsplit(url).netloc,), viewport=VIEWPORT, accept_downloads=True
        ) as (page, network, errors),
    ):
        page.set_default_timeout(60_000)
        try:
            _open(page, url, path)
            assert before in _static_text(page, "b")
            arms = page.locator(".widget-dropdown:has(label:text-is('arm')) select")
            arms.nth(0).select_option("v2")
            arms.nth(1).select_option("v1")
            _wait(lambda: after in _static_text(page, "b"), 60, "the static copy to follow")
            assert before not in _static_text(page, "b")
            _save(page, path)
            href, report = _download_report(page, tmp_path, root / "reports", "/jh/user/files/")
            page.screenshot(path=str(SHOTS / "abbench-export-05-live.png"))
        except BaseException:
            page.screenshot(path=str(SHOTS / "abbench-export-05-failure.png"), full_page=True)
            print("widget errors:", page.locator(".abbench-error").all_inner_texts())
            print("page errors:", *errors[-20:], sep="\n  ")
            raise
        assert href == f"/jh/user/files/reports/{report.name}", href
        assert network.blocked == [], network.blocked[:5]
        exports = _exports(url, root, path, tmp_path)
    for how, page_html in exports.items():
        (copy,) = _copies(page_html)
        assert after in copy and before not in copy, (how, copy[:400])
    _look_offline(tmp_path, exports["nbconvert"], "05", after)


def _look_offline(tmp_path: Path, page_html: str, name: str, expected: str) -> None:
    """Open the exported page offline (no widget manager arrives) and screenshot what it shows."""
    exported = tmp_path / f"export-{name}.html"
    exported.write_text(page_html, encoding="utf-8")
    with chromium() as browser, offline_page(browser, viewport=VIEWPORT) as (page, _network, _errors):
        page.goto(exported.as_uri())
        copy = page.locator(".abbench-static").first
        assert copy.is_visible() and expected in " ".join(copy.inner_text().split())
        copy.screenshot(path=str(SHOTS / f"abbench-export-{name}-exported.png"))

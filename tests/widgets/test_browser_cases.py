"""The All-cases view in a real browser: 04_review on banking77 in JupyterLab, Debian's headless Chromium.

Below the review, the All-cases widget must list all 300 cases a page at a time; filtering by an arm's
wrong answers, turning a page, opening a case in the drawer and *Export this view* must give what the
library gives for the same filters (`abbench.review.case_page`), with no request leaving the machine.
Screenshots land in /tmp/abbench-cases-*.png.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

from abbench.review import case_page
from abbench.store import open_store
from tests.banking import NAME
from tests.browser import chromium
from tests.conftest import REPO
from tests.widgets.lab import lab_page, parameterized

SHOTS = Path("/tmp")
ROOT = ".abbench-cases"
pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _pager(page, text: str) -> None:
    """Wait until the All-cases pager says `text`."""
    page.locator(f"{ROOT} .abbench-note").filter(has_text=text).first.wait_for()


def _button(page, name: str):
    return page.locator(f"{ROOT} button.widget-button").filter(
        has_text=re.compile(rf"^\s*{re.escape(name)}\s*$")
    )


def _dropdown(page, label: str):
    named = page.locator("label", has_text=re.compile(rf"^{re.escape(label)}$"))
    return page.locator(f"{ROOT} .widget-dropdown").filter(has=named).locator("select").first


def test_filter_page_open_and_export_every_case_in_jupyterlab(lab, tmp_path, banking_store):
    with open_store(banking_store) as store:
        exp = store.experiments.get(NAME)
        wrong = case_page(exp.id, store=store, outcome="fail", arm="noisy", limit=1000)
    wanted = [r.case_id for r in wrong.rows]
    assert 50 < wrong.total < 300
    notebooks = lab.folder("notebooks")  # as in the checkout: the notebook exports to ../exports
    parameterized(
        REPO / "notebooks" / "04_review.ipynb",
        notebooks.root / "04_review.ipynb",
        store_path=str(banking_store),
        experiment=NAME,
        kind="all",
    )
    with chromium() as browser, lab_page(browser, lab, SHOTS / "abbench-cases-failure.png") as page:
        notebooks.open(page, "04_review.ipynb")
        root = page.locator(ROOT)
        root.scroll_into_view_if_needed()
        _pager(page, "page 1 of 6 · cases 1–50 of 300")
        page.screenshot(path=str(SHOTS / "abbench-cases-all.png"))

        _dropdown(page, "Arm").select_option(label="noisy")
        _dropdown(page, "Outcome").select_option(label="wrong")
        pages = -(-wrong.total // 50)
        _pager(page, f"page 1 of {pages} · cases 1–50 of {wrong.total} (of 300 in the experiment)")
        _button(page, "Next page").click()
        _pager(page, f"page 2 of {pages} · cases 51–")
        options = root.locator(".widget-select select option")
        options.first.filter(has_text=wanted[50]).wait_for()  # the list may follow the pager's message
        listed = [re.split(r"\s", t, maxsplit=1)[0] for t in options.all_inner_texts()]
        assert listed == wanted[50:100]

        root.locator(".widget-select select").select_option(index=3)
        drawer = root.locator(".lm-AccordionPanel-title, .p-Accordion-title, .jupyter-widget-Collapse-header")
        drawer.filter(has_text=f"Case {wanted[53]}").first.wait_for()
        root.locator(".abbench-case-summary").first.wait_for(state="visible")
        page.screenshot(path=str(SHOTS / "abbench-cases-open.png"))

        _button(page, "Export this view").click()
        done = root.locator(".abbench-ok").filter(has_text=f"wrote {wrong.total} cases")
        done.first.wait_for()
        page.screenshot(path=str(SHOTS / "abbench-cases-export.png"))
    out = lab.root / "exports" / f"{NAME}-cases.csv"
    with out.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["case_id"] for r in rows] == wanted
    assert {r["noisy round 1"] for r in rows} == {"wrong"}

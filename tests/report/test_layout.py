"""A report with a fourteen-fold cost increase, in a real Chromium at 1440, 1024 and 390 px.

Headline cards keep their content, the page never scrolls sideways on a phone, no chart toolbar covers a
legend, the keyboard never stops inside a chart, and every chart has a name and a text alternative and no
*Share chart…* button. Screenshots go to the test's temporary folder.
"""

from __future__ import annotations

import re

import pytest

from abbench.runner import create_experiment, run_experiment
from tests.browser import HANG_MS, chromium, offline_page
from tests.experiments import routing_cases, save_cases

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("reports")]

WIDTHS = ((1440, 900), (1024, 768), (390, 844))

CHARTS = """() => [...document.querySelectorAll('.plotly-graph-div')].map(d => {
  const box = d.closest('[role="img"]');
  const alt = box && document.getElementById(box.getAttribute('aria-describedby') || '');
  return {label: box ? box.getAttribute('aria-label') : null, alt: alt ? alt.textContent : null,
          buttons: [...d.querySelectorAll('.modebar-btn')].map(b => b.getAttribute('data-title'))};
})"""

OVERFLOW = """() => [...document.querySelectorAll('.abb-card, .abb-card > *')]
  .filter(e => e.scrollWidth > e.clientWidth)
  .map(e => `${e.className}: ${e.scrollWidth} > ${e.clientWidth} (${e.textContent.slice(0, 40)})`)"""

OVERLAPS = """() => {
  const hit = (a, b) => a.width > 0 && b.width > 0 && a.left < b.right && b.left < a.right
    && a.top < b.bottom && b.top < a.bottom;
  return [...document.querySelectorAll('.plotly-graph-div')].flatMap((d, i) => {
    const bar = d.querySelector('.modebar');
    if (!bar) return [];
    const r = bar.getBoundingClientRect();
    return [...d.querySelectorAll('.legend .traces, .legend .bg')]
      .filter(l => hit(r, l.getBoundingClientRect())).map(() => `chart ${i}`);
  });
}"""

FOCUS = """() => { const e = document.activeElement;
  return e && e !== document.body ? {inChart: !!e.closest('.plotly-graph-div'), tag: e.tagName} : null; }"""


@pytest.fixture(scope="module")
def costly(report_store):
    """A report where the candidate costs fifteen times the baseline (+1400%)."""
    from abbench.report import render_report

    store, _, folder = report_store
    skill = folder / "costly" / "skill"
    skill.mkdir(parents=True, exist_ok=True)
    dataset = save_cases(store, "costly", routing_cases(30), folder / "costly")
    (skill / "SKILL.md").write_text(
        "---\nname: routing\ndescription: t\n---\n# Rules\n- more\n", encoding="utf-8"
    )
    exp = create_experiment(
        {
            "name": "costly",
            "rounds": 2,
            "graders": ["label_match"],
            "concurrency": 4,
            "retries": 0,
            "dataset": dataset.fingerprint,
            "arms": {
                "control": {"agent": "fixture", "wrong": ["c001", "c002", "c004"]},
                "treatment": {"agent": "fixture", "skill": str(skill), "wrong": ["c001"], "cost": 0.015},
            },
        },
        store=store,
    )
    run_experiment(exp, store=store)
    return render_report(exp.id, store=store, out=folder / "reports" / "costly.html")


def _tab_stops(page) -> tuple[int, int]:
    """Tab through the page once: (stops inside a chart, stops in all); ends when focus comes round."""
    page.locator("body").click(position={"x": 1, "y": 1})
    seen, in_charts, stops = [], 0, 0
    for _ in range(2000):
        page.keyboard.press("Tab")
        focus = page.evaluate(FOCUS)
        key = page.evaluate("() => document.activeElement && document.activeElement.outerHTML.slice(0, 200)")
        if focus is None or key in seen:
            break
        seen.append(key)
        stops += 1
        in_charts += focus["inChart"]
    return in_charts, stops


@pytest.mark.parametrize(("width", "height"), WIDTHS)
def test_report_layout_and_charts_at(costly, width, height, tmp_path):
    with (
        chromium() as browser,
        offline_page(browser, viewport={"width": width, "height": height}, has_touch=width < 600) as (
            page,
            network,
            errors,
        ),
    ):
        page.goto(costly.html_path.as_uri(), wait_until="load")
        page.wait_for_function(
            "() => [...document.querySelectorAll('.plotly-graph-div')].every(d => d.querySelector('.modebar'))",
            timeout=HANG_MS,
        )
        assert re.search(r"\+1,?400% mean", page.locator(".abb-card.bad .abb-big").inner_text())
        assert page.evaluate(OVERFLOW) == []
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width

        charts = page.evaluate(CHARTS)
        assert len(charts) == costly.figures >= 5
        for chart in charts:
            assert chart["label"] and chart["label"] != "Chart", chart
            assert chart["alt"] and chart["alt"].startswith(chart["label"]), chart
            assert "Share chart..." not in chart["buttons"] and chart["buttons"], chart
        for i in range(len(charts)):  # a toolbar shows on hover (or a tap): over no legend
            graph = page.locator(".plotly-graph-div").nth(i)
            graph.scroll_into_view_if_needed()
            graph.tap(position={"x": 20, "y": 20}) if width < 600 else graph.hover()
            assert page.evaluate(OVERLAPS) == []
        if width < 600:
            assert page.evaluate(
                "() => [...document.querySelectorAll('.modebar')].every(m => !m.getBoundingClientRect().width)"
            ), "a phone shows no chart toolbar"

        in_charts, stops = _tab_stops(page)
        assert in_charts == 0, f"{in_charts} of {stops} tab stops are inside charts"
        assert network.blocked == [] and errors == []
        page.screenshot(path=str(tmp_path / f"report-{width}.png"), full_page=True)

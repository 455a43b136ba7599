"""A real browser opens the report with the network off and finds every figure drawn."""

from __future__ import annotations

import pytest

from tests.browser import HANG_MS, chromium, offline_page
from tests.conftest import REPO

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("reports")]

SHOTS = REPO / "reports"


@pytest.mark.parametrize("shape", ["two-arm", "judges"])
def test_figures_draw_offline(rendered, shape):
    result, _ = rendered(shape)
    url = result.html_path.as_uri()
    with chromium() as browser, offline_page(browser) as (page, network, errors):
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(url, wait_until="load")
        n_divs = page.locator(".plotly-graph-div").count()
        assert n_divs == result.figures and n_divs >= 1
        # every figure has plotly's drawn SVG inside it
        page.wait_for_function(
            "() => [...document.querySelectorAll('.plotly-graph-div')]"
            ".every(d => d.querySelector('svg.main-svg'))",
            timeout=HANG_MS,
        )
        drawn = page.evaluate(
            "() => [...document.querySelectorAll('.plotly-graph-div')]"
            ".map(d => d.querySelectorAll('svg.main-svg').length)"
        )
        assert all(n >= 1 for n in drawn), drawn
        assert network.blocked == [], f"the page tried to reach the network: {network.blocked}"
        assert all(u.startswith("file:") for u in network.requested), network.requested
        assert errors == [], errors
        # hover every figure: plotly's hover labels carry data text too
        for i in range(n_divs):
            page.locator(".plotly-graph-div").nth(i).hover()
        assert dialogs == [], f"a hostile string ran as script: {dialogs}"
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / f"report-{shape}.png"), full_page=True)


def test_readable_on_a_phone(rendered):
    result, _ = rendered("two-arm")
    with (
        chromium() as browser,
        offline_page(
            browser, viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True
        ) as (
            page,
            network,
            errors,
        ),
    ):
        page.goto(result.html_path.as_uri(), wait_until="load")
        page.wait_for_function(
            "() => document.querySelector('.plotly-graph-div svg.main-svg')", timeout=HANG_MS
        )
        # the page itself never scrolls sideways: wide tables scroll inside their own box
        widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
        assert widths[0] <= widths[1], widths
        font = page.evaluate("() => parseFloat(getComputedStyle(document.body).fontSize)")
        assert font >= 14
        assert network.blocked == [] and errors == []
        SHOTS.mkdir(exist_ok=True)
        page.screenshot(path=str(SHOTS / "report-two-arm-phone.png"), full_page=True)

"""The 77-label confusion view in a real browser: 03_results on banking77 in JupyterLab, Debian's Chromium.

The Confusion tab must show the top confusions and each arm's full matrix in a box that scrolls, at a
fixed cell size, with no two axis labels drawn over each other. A screenshot lands in
reports/widgets-confusion-77.png.
"""

from __future__ import annotations

import pytest

from tests.banking import NAME
from tests.browser import chromium
from tests.conftest import REPO
from tests.widgets.lab import lab_page, parameterized

REPORTS = REPO / "reports"
pytestmark = [pytest.mark.browser, pytest.mark.slow]

# Per matrix box: its size and scroll extent, the plot's cells, and whether any two tick labels overlap.
MEASURE = """() => [...document.querySelectorAll('.abbench-matrix')].map(box => {
  const plot = box.querySelector('.js-plotly-plot');
  const overlaps = (sel, axis) => {
    const r = [...plot.querySelectorAll(sel)].map(t => t.getBoundingClientRect())
      .sort((a, b) => a[axis] - b[axis]);
    let n = 0;
    for (let i = 1; i < r.length; i++) {
      const [a, b] = [r[i - 1], r[i]];
      if (axis === 'top' ? b.top < a.bottom - 0.5 : b.left < a.right - 0.5) n++;
    }
    return [r.length, n];
  };
  return {
    client: [box.clientWidth, box.clientHeight], scroll: [box.scrollWidth, box.scrollHeight],
    y: overlaps('.ytick text', 'top'), x: overlaps('.xtick text', 'left'),
    cells: plot.querySelectorAll('.hm image, .heatmaplayer image').length,
  };
})"""


def test_77_labels_give_a_readable_scrolling_confusion_view(lab, banking_store):
    parameterized(
        REPO / "notebooks" / "03_results.ipynb",
        lab.root / "03_results.ipynb",
        store_path=str(banking_store),
        experiment=NAME,
    )
    REPORTS.mkdir(exist_ok=True)
    with chromium() as browser, lab_page(browser, lab, REPORTS / "widgets-confusion-77-failure.png") as page:
        lab.open(page, "03_results.ipynb")
        page.locator(".lm-TabBar-tab, .p-TabBar-tab").filter(has_text="Confusion").first.click()
        page.wait_for_function(
            "() => document.querySelectorAll('.abbench-matrix .js-plotly-plot .ytick text').length >= 2 * 60"
        )
        tables = page.locator(".widget-html-content").filter(has_text="top confusions")
        assert tables.count() == 2 and tables.first.is_visible()
        first = page.locator(".abbench-matrix").first
        first.scroll_into_view_if_needed()
        page.screenshot(path=str(REPORTS / "widgets-confusion-77.png"))
        boxes = page.evaluate(MEASURE)
    assert len(boxes) == 2, boxes
    for box in boxes:
        (rows, y_overlaps), (cols, x_overlaps) = box["y"], box["x"]
        assert rows >= 60 and cols >= rows and y_overlaps == 0 and x_overlaps == 0, box
        # the matrix keeps its cell size: it is larger than its box, which scrolls both ways
        assert box["scroll"][0] > box["client"][0] and box["scroll"][1] > box["client"][1], box
    print(f"confusion boxes: {boxes}")

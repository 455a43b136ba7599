"""The notebooks on a phone or in a narrow JupyterLab pane: nothing scrolls sideways at 390 px.

Each notebook is opened in JupyterLab (Debian's headless Chromium) on the demo store, at a 390 px wide
screen with JupyterLab's side bars folded, and every widget output is measured: no element may reach past
its output's right edge unless a box of its own scrolls it (a wide table in `.abbench-scroll`, a diff's
lines, a list's options), and no output may scroll sideways. Controls wrap or shrink instead. At 1440 px
the same holds, and the widget's first row of controls (the experiment chooser and its neighbours) stays
one row as before. Screenshots of each widget land in /tmp/abbench-narrow-*.png.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.browser import HANG_MS, chromium
from tests.conftest import DEMO, REPO
from tests.widgets.lab import lab_page, parameterized

SHOTS = Path("/tmp")
pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOKS = {
    "01_import_and_map": {
        "data_file": str(DEMO / "cases.csv"),
        "mapping_file": str(DEMO / "mapping-csv.yaml"),
    },
    "02_run": {"definition": str(DEMO / "experiment.yaml")},
    "03_results": {"experiment": "demo"},
    "04_review": {"experiment": "demo"},
    "05_compare": {},
}

OVERFLOW = """() => {
  // what scrolls in a box of its own on purpose: a wide table, a diff's lines, a list's options (not a
  // widget box that would scroll: the controls in it must wrap or shrink)
  const contained = (e, out) => {
    for (let a = e.parentElement; a && a !== out; a = a.parentElement) {
      if (a.matches('.abbench-scroll, select')) return true;
      const x = getComputedStyle(a).overflowX;
      if ((x === 'auto' || x === 'scroll') && a.closest('.widget-html-content')) return true;
    }
    return false;
  };
  const found = [];
  const doc = document.documentElement;
  if (doc.scrollWidth > doc.clientWidth) found.push(`the page scrolls: ${doc.scrollWidth} > ${doc.clientWidth}`);
  // the widgets' outputs (a DataFrame a cell prints is JupyterLab's own: it scrolls in its output)
  for (const out of [...document.querySelectorAll('.jp-OutputArea-output')].filter(o => o.querySelector('.jupyter-widgets'))) {
    const edge = out.getBoundingClientRect().right + 1;
    if (out.scrollWidth > out.clientWidth + 1) found.push(`output scrolls: ${out.scrollWidth} > ${out.clientWidth}`);
    for (const e of out.querySelectorAll('*')) {
      const box = e.getBoundingClientRect();
      if (box.width > 0 && box.right > edge && !contained(e, out)) {
        const what = (e.innerText || e.textContent || '').trim().slice(0, 40).replace(/\\s+/g, ' ');
        found.push(`${e.tagName}.${String(e.className).split(' ').slice(-1)} ${Math.round(box.right)} > ${Math.round(edge)}: ${what}`);
      }
    }
  }
  return found;
}"""

FIRST_ROW = """() => {  // the tops of the first row of controls' children: one value when it is one row
  const row = document.querySelector('.abbench-view .widget-hbox');
  return [...new Set([...row.children].filter(c => c.offsetParent).map(c => Math.round(c.getBoundingClientRect().top)))];
}"""

FOLD_SIDES = """() => { window.jupyterapp.shell.collapseLeft(); window.jupyterapp.shell.collapseRight(); }"""
NOTEBOOK_WIDTH = "() => document.querySelector('.jp-NotebookPanel').getBoundingClientRect().width"


def _measure(page, name: str, width: int) -> list[str]:
    """Set the page to `width` px, fold the side bars, wait for the widget, and return what overflows (at
    1440 px, also a first row of controls that wrapped)."""
    page.set_viewport_size({"width": width, "height": 900})
    page.evaluate(FOLD_SIDES)
    # the side bars folded: the notebook takes the width but the two narrow tab bars
    page.wait_for_function(f"() => Math.abs(({NOTEBOOK_WIDTH})() - {width}) < 90", timeout=HANG_MS)
    view = page.locator(".abbench-view").first
    view.wait_for(state="visible")
    view.evaluate("e => e.scrollIntoView()")
    view.wait_for(state="visible")  # drawn again where the notebook scrolled to (its cells are windowed)
    page.screenshot(path=str(SHOTS / f"abbench-narrow-{name}-{width}.png"))
    found = page.evaluate(OVERFLOW)
    tops = page.evaluate(FIRST_ROW)
    if width >= 1440 and len(tops) != 1:
        found.append(f"the first row of controls wrapped: tops {tops}")
    return found


@pytest.mark.parametrize("name", list(NOTEBOOKS))
def test_no_notebook_scrolls_sideways_at_390_px(lab, shared_demo_store, name):
    parameterized(
        REPO / "notebooks" / f"{name}.ipynb",
        lab.root / f"{name}.ipynb",
        store_path=str(shared_demo_store) if name != "01_import_and_map" else str(lab.root / "store"),
        **NOTEBOOKS[name],
    )
    # one page, one run of the notebook: the window is widened once 390 px is measured (the layout is CSS's)
    shot = SHOTS / f"abbench-narrow-{name}-failure.png"
    with chromium() as browser, lab_page(browser, lab, shot, viewport={"width": 390, "height": 900}) as page:
        lab.open(page, f"{name}.ipynb")
        narrow = _measure(page, name, 390)
        wide = _measure(page, name, 1440) if name in ("02_run", "05_compare") else []
    assert narrow == [], f"{name} at 390 px: {narrow[:12]}"
    assert wide == [], f"{name} at 1440 px: {wide[:12]}"

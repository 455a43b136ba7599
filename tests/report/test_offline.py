"""Nothing a page carries can upload or fetch: no *Share chart…*, no outside address, in reports and exports.

`tests.offline_urls.outside_urls` is the strict static check (what it allows and why is in its
docstring); the browser tests check the same pages with the network blocked.
"""

from __future__ import annotations

import re

import nbformat
import pytest

from tests.offline_urls import outside_urls

pytestmark = pytest.mark.xdist_group("reports")


def _figure():
    import plotly.graph_objects as go

    return go.Figure(go.Bar(x=["a", "b"], y=[1, 2], name="arm"))


def test_every_figure_is_drawn_without_a_share_button():
    from abbench._plotly import FIGURE_CONFIG, figure_html, figure_json, plotly_js_source

    assert FIGURE_CONFIG["showSendToCloud"] is False and FIGURE_CONFIG["plotlyServerURL"] == ""
    assert {"sendDataToCloud", "sendChartToCloud"} <= set(FIGURE_CONFIG["modeBarButtonsToRemove"])
    assert '"showSendToCloud": false' in figure_html(_figure())
    assert figure_html(_figure()) and FIGURE_CONFIG["plotlyServerURL"] == ""  # to_html popped it once
    assert figure_json(_figure())["config"]["showSendToCloud"] is False
    # the inlined plotly.js has no cloud address to fall back on
    assert 'plotlyServerURL:{valType:"string",dflt:""}' in plotly_js_source()
    assert "cloud.plotly.com" not in plotly_js_source()


def test_a_widgets_live_figure_has_no_share_button():
    import ipywidgets as w

    from abbench.widgets._figures import show_figure

    out = w.Output()
    show_figure(out, _figure())
    config = out.outputs[0]["data"]["application/vnd.plotly.v1+json"]["config"]
    assert config["showSendToCloud"] is False and config["displaylogo"] is False


def test_the_report_kernels_renderer_has_no_share_button():
    import plotly.io as pio

    from abbench.report import use_report_renderer

    before = pio.renderers.default
    try:
        use_report_renderer()
        bundle = pio.renderers._build_mime_bundle(_figure().to_dict(), pio.renderers.default)
    finally:
        pio.renderers.default = before
    assert bundle["application/vnd.plotly.v1+json"]["config"]["showSendToCloud"] is False


# -- the checker: catches what leaves, not what only looks like an address ------------------------------

LEAVING = {
    '<script src="https://cdn.example/x.js"></script>': "https://cdn.example/x.js",
    '<link rel="stylesheet" href="//fonts.example/a.css">': "//fonts.example/a.css",
    '<img srcset="a.png 1x, https://img.example/b.png 2x">': "https://img.example/b.png",
    '<a href="http://example.org/page">more</a>': "http://example.org/page",
    '<style>@import "https://css.example/i.css"; b { background: url(https://i.example/p.png) }</style>': (
        "https://css.example/i.css"
    ),
    "<div style=\"background-image: url('http://i.example/q.png')\"></div>": "http://i.example/q.png",
    "<script>fetch('https://chart-studio.plotly.com/upload', {method: 'POST'})</script>": (
        "https://chart-studio.plotly.com/upload"
    ),
    '<script>var x = new XMLHttpRequest(); x.open("POST", "//plot.ly/clientresp")</script>': "//plot.ly/clientresp",
    '<svg xmlns="http://evil.example/ns"></svg>': "http://evil.example/ns",
    '<meta http-equiv="refresh" content="0; url=https://away.example/">': "https://away.example/",
    '<form action="https://collect.example/"></form>': "https://collect.example/",
    '<script>Plotly.newPlot("d", [{"type": "scattermap", "lat": [1], "lon": [2]}], {})</script>': "scattermap",
}

STAYING = [
    '<svg xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"><use xlink:href="#a"/></svg>',
    '<script>document.createElementNS("http://www.w3.org/2000/svg", "g")</script>',
    '<a href="#decision">up</a><img src="data:image/png;base64,iVBO"><iframe src="about:blank"></iframe>',
    '<a href="other.html">relative</a><style>b { background: url(data:image/svg+xml;utf8,x) }</style>',
    "<p>The case says https://example.com/ in its text: data, not a request.</p>",
    # a template's per-type defaults are not traces
    '<script>Plotly.newPlot("d", [{"type": "bar"}], {"template": {"data": {"choropleth": [{"type": "choropleth"}]}}})'
    "</script>",
]


@pytest.mark.parametrize("html", sorted(LEAVING))
def test_the_checker_finds_each_way_out(html):
    found = outside_urls(html, bundle="")
    assert any(LEAVING[html] in f for f in found), found


@pytest.mark.parametrize("html", STAYING)
def test_the_checker_raises_no_false_alarm(html):
    assert outside_urls(html, bundle="") == []


def test_the_checker_names_an_outside_address_inside_the_inlined_plotly_js():
    from abbench._plotly import plotly_js_source

    bundle = plotly_js_source()
    page = f"<script>{bundle}</script>"
    assert outside_urls(page) == []
    tampered = bundle.replace('dflt:""', 'dflt:"https://cloud.plotly.com/newchart"', 1)
    assert outside_urls(f"<script>{tampered}</script>", bundle=tampered) == [
        "plotly.js: https://cloud.plotly.com/newchart"
    ]


def test_the_report_page_has_no_outside_address(rendered):
    result, page = rendered("two-arm")
    assert outside_urls(page.html, page_url=result.html_path.as_uri()) == []


# -- item 4: the documented notebook export -------------------------------------------------------------


def _widget_notebook():
    """A notebook as JupyterLab saves one with a widget: its view, its static copy, the widget state."""
    nb = nbformat.v4.new_notebook()
    view = {"model_id": "m1", "version_major": 2, "version_minor": 0}
    nb.cells = [
        nbformat.v4.new_markdown_cell("# Results\n\n$p < 0.05$"),
        nbformat.v4.new_code_cell(
            "widget",
            outputs=[
                nbformat.v4.new_output("display_data", {"application/vnd.jupyter.widget-view+json": view}),
                nbformat.v4.new_output(
                    "display_data", {"text/html": "<table><tr><td>copy</td></tr></table>"}
                ),
            ],
        ),
    ]
    nb.metadata["widgets"] = {
        "application/vnd.jupyter.widget-state+json": {"state": {}, "version_major": 2, "version_minor": 0}
    }
    return nb


def test_nbconverts_own_html_reaches_cdns_and_the_abbench_export_does_not():
    from nbconvert import HTMLExporter

    from abbench.report import NotebookExporter

    with pytest.warns(UserWarning, match="widget-view"):  # nbconvert cannot show the live widget
        plain, _ = HTMLExporter().from_notebook_node(_widget_notebook())
    cdns = " ".join(outside_urls(plain))
    for script in ("require.min.js", "mathjax", "html-manager"):  # the three requests of a plain export
        assert script in cdns, cdns

    page, _ = NotebookExporter().from_notebook_node(_widget_notebook())
    assert outside_urls(page) == []
    assert "<td>copy</td>" in page and "widget-state" not in page
    assert re.search(r'<meta content="abbench [^"]+" name="generator"/>', page)


def test_the_export_command_is_registered_and_documented():
    from importlib.metadata import entry_points

    from nbconvert.exporters import get_exporter

    from abbench.report import NotebookExporter
    from tests.conftest import REPO

    assert [e.value for e in entry_points(group="nbconvert.exporters", name="abbench_html")] == [
        "abbench.report:NotebookExporter"
    ], "the nbconvert.exporters entry point is missing: reinstall abbench (make, or pip install -e .)"
    assert get_exporter("abbench_html") is NotebookExporter
    docs = (REPO / "docs" / "workbench.md").read_text(encoding="utf-8")
    assert "jupyter nbconvert --execute --to abbench_html" in docs


@pytest.mark.slow
@pytest.mark.browser
def test_the_documented_export_of_a_notebook_opens_with_no_outside_request(shared_demo_store, tmp_path):
    """``jupyter nbconvert --execute --to abbench_html notebooks/03_results.ipynb``, as docs/workbench.md
    says, in a child process on a demo store; then opened in Chromium with the network blocked."""
    import subprocess
    import sys

    from tests.browser import HANG_MS, chromium, offline_page
    from tests.conftest import REPO, subprocess_env

    command = ["jupyter", "nbconvert", "--execute", "--to", "abbench_html", "--output-dir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, "-m", *command, str(REPO / "notebooks" / "03_results.ipynb")],
        env=subprocess_env(ABBENCH_STORE=shared_demo_store, TQDM_DISABLE=1),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    page_path = tmp_path / "03_results.html"
    assert outside_urls(page_path.read_text(encoding="utf-8"), page_url=page_path.as_uri()) == []
    with chromium() as browser, offline_page(browser) as (page, network, errors):
        page.goto(page_path.as_uri(), wait_until="load")
        page.wait_for_function(
            "() => { const g = [...document.querySelectorAll('.abbench-static .plotly-graph-div')];"
            " return g.length >= 2 && g.every(d => d.querySelector('.main-svg')); }",
            timeout=HANG_MS,
        )
        titles = page.evaluate(
            "() => [...document.querySelectorAll('.modebar-btn')].map(b => b.dataset.title)"
        )
        assert titles and "Share chart..." not in titles
        assert network.blocked == [] and {u.split(":")[0] for u in network.requested} <= {"file", "data"}
        assert errors == []
        page.screenshot(path=str(tmp_path / "03_results.png"), full_page=True)

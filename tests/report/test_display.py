"""The report's display helpers: escaping, tables and figures, without a kernel (numbers: test_formatting)."""

from __future__ import annotations

import pytest

from abbench.report import _display as show
from abbench.report._plotly import figure_html
from tests.conftest import REPO
from tests.experiments import HOSTILE_IMG, HOSTILE_SCRIPT


def test_tables_escape_every_cell():
    rows = [{"case": HOSTILE_SCRIPT, "n": 3, "x": None, "ok": True, "why": HOSTILE_IMG}]
    text = show.table_html(
        rows, [("case", "case"), ("n", "<n>"), ("x", "x"), ("ok", "ok"), ("why", "why", "text")]
    )
    assert "<script>" not in text and "<img" not in text
    assert "&lt;script&gt;alert(&quot;pwned&quot;)&lt;/script&gt;" in text
    assert "&lt;n&gt;" in text and ">—<" in text and ">yes<" in text
    assert (
        show.table_html([], [("a", "a")], empty="No regressed case.")
        == '<p class="abb-note">No regressed case.</p>'
    )


def test_kv_and_safe():
    text = show.kv_html(
        [("input", HOSTILE_SCRIPT), ("skill", show.Safe("x " + show.tag_html("draft", "draft")))]
    )
    assert "&lt;script&gt;" in text and '<span class="abb-tag draft">draft</span>' in text


@pytest.mark.parametrize(
    "builder", [show.note_html, lambda t: show.title_html(t, t), lambda t: show.card_html(t, t, t)]
)
def test_other_builders_escape(builder):
    assert "<script>" not in builder(HOSTILE_SCRIPT)


def test_plotly_labels_are_entity_escaped_and_cannot_close_the_script():
    assert show.label(HOSTILE_IMG) == "&lt;img src=x onerror=alert(1)&gt;"
    assert show.label("x" * 100, limit=10) == "x" * 9 + "…"
    fig = show.states_figure({HOSTILE_SCRIPT: {"pass": 3, "fail": 1}, "b": {"pass": 2}})
    page = figure_html(fig)
    # two scripts, the figure's and the one that keeps its toolbar out of the tab order, each closed once
    scripts = page.split("<script")[1:]
    assert len(scripts) == 2 and all(s.count("</script>") == 1 for s in scripts), scripts
    assert "Plotly.newPlot" in scripts[0] and "plotly-graph-div" in page
    assert HOSTILE_SCRIPT not in page  # the text alternative escapes it too
    assert "cdn" not in page.lower() and "mathjax" not in page.lower()
    assert len(page) < 3000  # no 8 KB default template per figure


def test_renderer_is_registered_next_to_the_mimetype():
    import plotly.io as pio

    from abbench.report import RENDERER, use_report_renderer

    before = pio.renderers.default
    try:
        assert use_report_renderer() == f"plotly_mimetype+{RENDERER}"
        bundle = pio.renderers[RENDERER].to_mimebundle(show.states_figure({"a": {"pass": 1}}).to_dict())
        assert set(bundle) == {"text/html"} and "Plotly.newPlot" in bundle["text/html"]
    finally:
        pio.renderers.default = before


def test_the_outcome_bar_has_its_legend_above_in_bar_order():
    from abbench.stats import PairedOutcomes

    fig = show.outcome_figure(
        PairedOutcomes(n=400, both_pass=259, fixed=97, regressed=12, both_fail=32), "a", "b"
    )
    legend = fig.layout.legend
    assert legend.y >= 1 and legend.yanchor == "bottom"  # clear of the x axis title below the bar
    assert legend.traceorder == "normal"
    assert [t.name for t in fig.data] == ["fixed", "regressed", "right in both", "wrong in both"]


DOMAINS = ["充电", "地图导航", "天气", "媒体", "日程", "电话", "车控", "车辆信息", "闲聊"]


def _estimate(value):
    from abbench.metrics import Estimate
    from abbench.stats import Interval

    return Estimate(value, Interval(value - 0.1, value + 0.05, 0.95), 0.05, "wilson", 9, 9, 1.0)


@pytest.mark.parametrize(
    "fig",
    [
        show.states_figure({"no-skill": {"pass": 3, "fail": 1}, "v1": {"pass": 2}}),
        show.grouped_figure(DOMAINS, {"v1": [_estimate(0.7)] * 9, "v2": [_estimate(0.9)] * 9}),
        show.bars_figure(["v1", "v2"], {"p50": [1, 2], "p95": [3, 4]}),
    ],
    ids=["runs", "domains", "latency"],
)
def test_legends_sit_above_the_plot_clear_of_axis_titles_and_tick_labels(fig):
    # Below the plot a legend wrapped onto two lines on a phone ran into "runs" and the domain labels.
    legend = fig.layout.legend
    assert legend.y >= 1 and legend.yanchor == "bottom" and legend.x == 0 and legend.orientation == "h"


def test_domains_are_rows_so_their_names_never_collide_while_rounds_run_left_to_right():
    series = {"v1": [_estimate(0.7)] * 9, "v2": [_estimate(0.9)] * 9}
    fig = show.grouped_figure(DOMAINS, series, title="accuracy")
    assert [list(t.y) for t in fig.data] == [DOMAINS, DOMAINS] and all(t.orientation == "h" for t in fig.data)
    assert fig.layout.yaxis.autorange == "reversed" and fig.layout.xaxis.ticksuffix == "%"
    assert fig.layout.height >= 9 * 30  # each domain a row of its own, however many
    assert all(t.error_x.array is not None and t.error_y.array is None for t in fig.data)
    rounds = show.grouped_figure(["round 1", "round 2"], {"v1": [_estimate(0.7)] * 2}, lines=True)
    assert list(rounds.data[0].x) == ["round 1", "round 2"] and rounds.data[0].error_y.array is not None


def test_case_id_lists_get_a_wide_column_so_rows_stay_short():
    html = show.table_html(
        [{"arm": "v1", "flaky": "c001, c002, c003"}], [("arm", "arm"), ("flaky", "flaky", "ids")]
    )
    assert '<td class="ids">c001, c002, c003</td>' in html
    css = (REPO / "abbench" / "report" / "templates" / "abbench_html" / "report.css").read_text(
        encoding="utf-8"
    )
    assert "td.ids { min-width: 22em" in css

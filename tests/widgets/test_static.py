"""A widget's static copy: what it shows, as HTML with no widget manager (tables, messages, figures drawn by plotly.js)."""

from __future__ import annotations

from abbench.widgets import DiffWidget, ResultsWidget
from abbench.widgets._base import CSS, STYLE
from abbench.widgets._static import static_html


def test_the_copy_holds_the_widgets_tables_and_figures_with_plotly_js_once(store, ab):
    widget = ResultsWidget(store, experiment="ab")
    copy = static_html(widget)
    assert copy.startswith('<div class="abbench-static">')
    assert widget.arms_html.value in copy  # the arms table, as the widget shows it
    drawn = [name for name, fig in widget.figures.items() if fig is not None]
    assert drawn and copy.count('class="plotly-graph-div"') == len(drawn)
    assert copy.count("plotly.js v") == 1 and copy.index("plotly.js v") < copy.index("Plotly.newPlot")
    # the rule hiding copies where the live widget draws must not hide this one
    assert STYLE.replace(CSS, "") not in copy


def test_lists_and_choices_are_copied_without_buttons(store, ab):
    widget = DiffWidget(store, a="ab")
    copy = static_html(widget)
    assert "plotly.js v" not in copy  # no figure, no plotly.js
    assert widget.metrics_html.value in copy and "c01 · " in copy  # the fixed list's entry
    assert "Reload" not in copy
    widget.errors.show(ValueError("boom"), "testing")
    assert "testing failed: ValueError: boom" in static_html(widget)

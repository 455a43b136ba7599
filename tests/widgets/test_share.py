"""ReportButton: a report rendered from the notebook (a real papermill kernel), linked, telling the widget's truth."""

from __future__ import annotations

import html

import pytest

from abbench.report import render_report
from abbench.runner import create_experiment, run_experiment
from abbench.widgets import DiffWidget, ReportButton
from tests.widgets.conftest import python_arm

pytestmark = pytest.mark.slow


def test_the_report_of_the_pair_shown_says_what_the_widget_says(store, ab, tmp_path, monkeypatch):
    monkeypatch.delenv("ABBENCH_STORE", raising=False)
    other = create_experiment(
        {"name": "later", "dataset": ab.dataset, "arms": {"b": python_arm(wrong=["c05"])}}, store=store
    )
    run_experiment(other.id, store=store)
    diff = DiffWidget(store, a="ab", b="later", arm_a="a", arm_b="b")
    assert diff.comparison is not None
    out = tmp_path / "reports" / "pair.html"
    button = ReportButton(lambda: render_report(**diff.report_options(), out=out, store=store), store)
    button.render_button.click()
    result = button.wait(600)
    assert button.errors.message is None, button.errors.message
    assert result.html_path == out and out.is_file()
    assert result.headline == diff.comparison.verdict.text  # the page and the widget tell the same truth
    link = html.unescape(button.status_html.value)
    assert "pair.html" in link and str(out.resolve()) in link and not button.render_button.disabled


def test_a_failed_rendering_is_shown_in_the_widget(store, ab):
    button = ReportButton(lambda: render_report("no-such-experiment", store=store), store)
    button.render_button.click()
    assert button.wait(120) is None
    assert "no-such-experiment" in button.errors.message and button.status_html.value == ""

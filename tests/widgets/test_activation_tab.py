"""The results widget's Activation tab: a sentence when no arm offers skills, the figures when one does."""

from __future__ import annotations

import html
from dataclasses import replace

from abbench.metrics import NO_SKILL, ActivationRun, activation_report
from abbench.widgets import ResultsWidget
from abbench.widgets._activation import ActivationView


def test_injected_arms_say_activation_is_not_measured(store, ab):
    w = ResultsWidget(store, experiment="ab")
    assert w.errors.message is None
    assert "Activation" in w.tabs.titles
    assert "activation is not measured" in w.activation.table_html.value
    assert w.activation.figure is None and w.activation.trigger_help is None


def test_offered_arm_figures_and_chart(store, ab):
    w = ResultsWidget(store, experiment="ab")
    runs = [
        ActivationRun("b", i, f"c{i}", 0, "pass", "pdf" if i < 6 else NO_SKILL, ("pdf", "docx"),
                      ("pdf",) if i < 4 else (("docx",) if i == 6 else ()))
        for i in range(8)
    ] + [ActivationRun("b", 9, "c9", 0, "execution_failed", "pdf", ("pdf", "docx"), None)]  # fmt: skip
    m = replace(w.metrics, activation=activation_report(runs, ["a", "b"]))
    view = ActivationView()
    view.show(m)
    text = html.unescape(view.table_html.value)
    assert "pdf, docx" in text and "1 execution failed" in text
    assert "66.7%" in text  # recall 4 of 6
    assert "the arm offers no skill" in text or "the arm has no run" in text
    bars = view.figure.data
    assert [b.name for b in bars] == ["b"] and bars[0].y[1] == 4 / 6 * 100

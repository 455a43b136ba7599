"""The report's activation section, from typed records: the figures, the chart, and the trigger-vs-help split."""

from __future__ import annotations

import pytest

from abbench.compare import trigger_help
from abbench.metrics import NO_SKILL, ActivationRun, activation_report
from abbench.report import activation_section


def run(arm, case, loaded, expected, offered=("pdf", "docx"), passed=True):
    return ActivationRun(
        arm, case, f"c{case}", 0, "pass" if passed else "fail", expected, offered,
        None if offered is None else tuple(loaded), passed=passed, has_skill=offered is not None,
    )  # fmt: skip


def test_offered_arms_get_a_table_a_chart_and_the_split():
    base = [run("base", i, [], "pdf", offered=None, passed=i < 3) for i in range(8)]
    plugin = [
        run("plugin", i, ["pdf"] if i < 5 else [], "pdf" if i < 6 else NO_SKILL, passed=i < 5)
        for i in range(8)
    ]
    report = activation_report(base + plugin, ["base", "plugin"])
    parts = activation_section(report, trigger_help(base, plugin, range(8)))
    html = "".join(p for p in parts if isinstance(p, str))
    figures = [p for p in parts if not isinstance(p, str)]
    assert "pdf, docx" in html and "83.3%" in html  # recall 5 of 6
    assert "Not offered — base: the arm offers no skill" in html
    assert "Trigger vs help" in html and "loaded more often" in html
    assert [f.data[0].type for f in figures] == ["scatter", "waterfall"]
    # h_B = 1, m_A = 3/8, p_B = 5/8, m_B = 0: the parts in points, and the effect
    expected = [100 * x for x in (5 / 8 * (1 - 3 / 8), 0.0, 3 / 8 * (0 - 3 / 8), 5 / 8 - 3 / 8)]
    assert list(figures[1].data[0].y) == pytest.approx(expected)


def test_no_offered_arm_says_so_in_a_sentence():
    parts = activation_section(None)
    assert len(parts) == 1 and "not measured" in parts[0]

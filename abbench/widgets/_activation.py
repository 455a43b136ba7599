"""`ActivationView`: the results widget's Activation tab — offered arms' activation figures, and the
trigger-vs-help split of the decision pair's effect."""

from __future__ import annotations

from functools import partial
from typing import Any

import ipywidgets as w
import plotly.graph_objects as go

from abbench import formatting as fm
from abbench.compare import ArmTriggerHelp, Comparison, TriggerHelp
from abbench.metrics import ACTIVATION_FIGURES, Estimate, ExperimentActivation, ExperimentMetrics
from abbench.widgets._base import NONE, html_table, note
from abbench.widgets._figures import show_figure

NOT_OFFERED = (
    "every arm injects its skill (or has none): activation is not measured (skill_mode: offered measures it)"
)


def _est(e: Estimate) -> str:
    if e.value is None:
        return f"{NONE} ({e.reason})" if e.reason else NONE
    spread = "" if e.interval is None else f" [{fm.pct(e.interval.low)}–{fm.pct(e.interval.high)}]"
    return f"{fm.pct(e.value)}{spread} · {e.n_cases} cases"


_points = partial(fm.difference, word="points", missing=NONE, zero_sign=False)


def activation_figure(report: ExperimentActivation) -> go.Figure | None:
    """Per offered arm, each activation figure as a bar with its interval."""
    offered = [a for a in report.arms if a.offered]
    if not offered:
        return None
    fig = go.Figure()
    for a in offered:
        values = [getattr(a, f) for f, _ in ACTIVATION_FIGURES]
        fig.add_bar(
            name=a.arm,
            x=[word for _, word in ACTIVATION_FIGURES],
            y=[None if e.value is None else e.value * 100 for e in values],
            error_y={
                "type": "data",
                "symmetric": False,
                "array": [
                    None if e.high is None or e.value is None else (e.high - e.value) * 100 for e in values
                ],
                "arrayminus": [
                    None if e.low is None or e.value is None else (e.value - e.low) * 100 for e in values
                ],
            },
        )
    fig.update_layout(
        title="skill activation (share of runs)", barmode="group", yaxis={"range": [0, 105], "ticksuffix": "%"},
        template="none", height=340,
    )  # fmt: skip
    return fig


class ActivationView(w.VBox):  # type: ignore[misc, unused-ignore]  # ipywidgets is untyped
    """The Activation tab: a table of each offered arm's figures, a chart, and the trigger-vs-help split.

    Attributes:
        table_html: The figures per arm (or why there are none).
        split_html: The trigger-vs-help split of the decision pair (empty when neither arm offers).
        chart: The chart's output; `figure` the plotly figure shown (None without an offered arm).
        trigger_help: The split shown, or None.
    """

    def __init__(self, **kwargs: Any) -> None:
        self.table_html = w.HTML()
        self.split_html = w.HTML()
        self.chart = w.Output()
        self.chart.add_class("abbench-chart")
        self.figure: go.Figure | None = None
        self.trigger_help: TriggerHelp | None = None
        super().__init__([self.table_html, self.chart, self.split_html], **kwargs)

    def show(self, m: ExperimentMetrics) -> None:
        """Show the experiment's activation figures (read with its metrics)."""
        report = m.activation
        self.split_html.value = ""
        if report is None or not report.offered:
            self.table_html.value = note(NOT_OFFERED)
            self.figure = None
            show_figure(self.chart, None)
            return
        rows = []
        for a in report.arms:
            if not a.offered:
                rows.append((a.arm, a.reason or NONE, *([NONE] * len(ACTIVATION_FIGURES)), NONE))
                continue
            left = f"{a.execution_failed} execution failed" + (
                f", {a.not_executed} not run" if a.not_executed else ""
            )
            rows.append(
                (
                    a.arm,
                    ", ".join(a.skills_offered),
                    *(_est(getattr(a, f)) for f, _ in ACTIVATION_FIGURES),
                    left,
                )
            )
        self.table_html.value = note(
            "over executed runs: an execution failure is left out, never a correct non-trigger"
        ) + html_table(["arm", "skills offered", *(word for _, word in ACTIVATION_FIGURES), "left out"], rows)
        self.figure = activation_figure(report)
        show_figure(self.chart, self.figure)

    def show_pair(self, comparison: Comparison | None) -> None:
        """The trigger-vs-help split of the compared pair (the decision's: the gate's comparison), when
        either arm offers its skills (else nothing)."""
        t = comparison.trigger_help if comparison is not None else None
        self.trigger_help = t
        self.split_html.value = ""
        if comparison is None or t is None:
            return
        a, b = comparison.a.arm_name, comparison.b.arm_name
        rows = [
            (s.arm, s.mode, NONE if s.activation is None else fm.pct(s.activation), _est(s.intention_to_treat),
             _est(s.per_protocol), _est(s.not_loaded), _sibling(s))
            for s in (t.a, t.b)
        ]  # fmt: skip
        self.split_html.value = (
            f"<b>trigger vs help: {b} vs {a}</b>"
            + note(
                f"effect {_points(t.total)} = loaded more often {_points(t.loaded_more_often)} "
                f"({_points(t.activation_difference)} activation × {_points(t.help_when_loaded)} help when "
                f"loaded) + helped more when loaded {_points(t.helped_more_when_loaded)} + when not loaded "
                f"{_points(t.when_not_loaded)}" + (f" — {t.reason}" if t.reason else "")
            )
            + html_table(
                [
                    "arm",
                    "skill",
                    "runs with the skill",
                    "accuracy, every case",
                    "when loaded",
                    "when not loaded",
                    "loaded the wrong sibling",
                ],
                rows,
            )
        )


def _sibling(s: ArmTriggerHelp) -> str:
    """The share of graded runs that loaded a sibling instead of the skill under test, and their accuracy."""
    if s.wrong_sibling is None:
        return NONE
    if not s.sibling_runs:
        return fm.pct(s.wrong_sibling)
    return f"{fm.pct(s.wrong_sibling)} ({s.sibling_runs} runs; accuracy {_est(s.when_sibling) if s.when_sibling else NONE})"

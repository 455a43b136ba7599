"""Plotly figures of an experiment's metrics, and showing a figure in an ``Output`` widget."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import ipywidgets as w
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from abbench._plotly import figure_json
from abbench.metrics import ArmMetrics, ExperimentMetrics, GroupAccuracy

_LAYOUT = {"template": "plotly_white", "margin": {"l": 60, "r": 20, "t": 50, "b": 50}, "font": {"size": 12}}


def show_figure(out: w.Output, figure: go.Figure | None) -> None:
    """Put `figure` in an ``Output`` widget as plotly's own JSON (JupyterLab draws it interactively).

    The bundle is built here rather than by ``display()``: outside a kernel ``display()`` prints, and
    plotly's default renderers may add several megabytes of script per figure.
    """
    if figure is None:
        out.outputs = ()
        return
    bundle: dict[str, Any] = {"application/vnd.plotly.v1+json": figure_json(figure)}
    bundle["text/plain"] = f"<plotly figure: {figure.layout.title.text or 'chart'}>"
    out.outputs = ({"output_type": "display_data", "data": bundle, "metadata": {}},)


def confusion_figure(arms: Sequence[ArmMetrics]) -> go.Figure | None:
    """Each arm's confusion matrix side by side: counts on top, row-normalised (recall) below."""
    with_classes = [(a, a.classes) for a in arms if a.classes is not None]
    if not with_classes:
        return None
    n = len(with_classes)
    titles = [f"{a.arm}: counts" for a, _ in with_classes] + [
        f"{a.arm}: share of each gold row" for a, _ in with_classes
    ]
    fig = make_subplots(rows=2, cols=n, subplot_titles=titles, horizontal_spacing=0.08, vertical_spacing=0.16)
    for col, (_arm, classes) in enumerate(with_classes, start=1):
        cm = classes.confusion
        x, y = list(cm.columns), list(cm.labels)
        counts = [list(row) for row in cm.counts]
        shares = [list(row) for row in cm.normalised()]
        fig.add_trace(
            go.Heatmap(
                z=counts, x=x, y=y, colorscale="Blues", showscale=False, texttemplate="%{z}",
                hovertemplate="gold %{y} → predicted %{x}: %{z}<extra></extra>",
            ),
            row=1, col=col,
        )  # fmt: skip
        fig.add_trace(
            go.Heatmap(
                z=shares, x=x, y=y, zmin=0, zmax=1, colorscale="Blues", showscale=False,
                texttemplate="%{z:.0%}", hovertemplate="gold %{y} → predicted %{x}: %{z:.1%}<extra></extra>",
            ),
            row=2, col=col,
        )  # fmt: skip
        for row in (1, 2):
            fig.update_xaxes(title_text="predicted", row=row, col=col, type="category")
            fig.update_yaxes(
                title_text="gold" if col == 1 else None,
                row=row,
                col=col,
                autorange="reversed",
                type="category",
            )
    # As wide as the notebook (plotly sizes it to its box); past three arms each matrix keeps a readable
    # width and the chart box scrolls sideways instead of cutting the last arms off.
    width = 300 * n + 80 if n > 3 else None
    fig.update_layout(title="Confusion matrices", height=620, width=width, autosize=width is None, **_LAYOUT)
    return fig


def _interval_bars(
    groups: Sequence[GroupAccuracy], arm: str
) -> tuple[list[Any], list[float | None], dict[str, Any]]:
    x: list[Any] = []
    y: list[float | None] = []
    up: list[float] = []
    down: list[float] = []
    for g in groups:
        value, low, high = g.accuracy.value, g.accuracy.low, g.accuracy.high
        if g.arm != arm or value is None:
            continue
        x.append(g.group)  # a domain, or a round already counted from 1
        y.append(value)
        up.append(high - value if high is not None else 0)
        down.append(value - low if low is not None else 0)
    return x, y, {"type": "data", "symmetric": False, "array": up, "arrayminus": down}


def domain_figure(metrics: ExperimentMetrics) -> go.Figure | None:
    """Accuracy per domain and arm, with each estimate's interval; None without two domains (one bar of
    "(none)" would only repeat the Arms tab)."""
    if not metrics.has_domain_breakdown:
        return None
    fig = go.Figure()
    for arm in metrics.arms:
        x, y, error = _interval_bars(metrics.by_domain, arm.arm)
        fig.add_trace(go.Bar(name=arm.arm, x=x, y=y, error_y=error))
    fig.update_layout(
        title=f"Accuracy per domain ({metrics.confidence:.0%} intervals)",
        barmode="group",
        yaxis={"range": [0, 1.05], "title": "accuracy"},
        height=420,
        **_LAYOUT,
    )
    return fig


def rounds_figure(metrics: ExperimentMetrics) -> go.Figure | None:
    """Accuracy per round and arm: a stable arm draws a flat line."""
    if metrics.rounds < 2 or not metrics.by_round:
        return None
    fig = go.Figure()
    for arm in metrics.arms:
        x, y, error = _interval_bars(metrics.by_round, arm.arm)
        fig.add_trace(go.Scatter(name=arm.arm, x=x, y=y, error_y=error, mode="lines+markers"))
    fig.update_layout(
        title="Accuracy per round",
        xaxis={"title": "round", "dtick": 1},
        yaxis={"range": [0, 1.05], "title": "accuracy"},
        height=360,
        **_LAYOUT,
    )
    return fig


def latency_figure(arms: Sequence[ArmMetrics]) -> go.Figure | None:
    """Median and 95th-percentile latency per arm."""
    shown = [a for a in arms if a.usage.latency_ms.n]
    if not shown:
        return None
    names = [a.arm for a in shown]
    fig = go.Figure(
        [
            go.Bar(name="median", x=names, y=[a.usage.latency_ms.p50 for a in shown]),
            go.Bar(name="95th percentile", x=names, y=[a.usage.latency_ms.p95 for a in shown]),
        ]
    )
    fig.update_layout(title="Latency per run (ms)", barmode="group", height=340, **_LAYOUT)
    return fig


def label_distribution_figure(arms: Sequence[ArmMetrics]) -> go.Figure | None:
    """How often each label is the gold and how often each arm predicts it, one panel per arm.

    The counts are graded runs, read off each arm's confusion matrix: a label's gold count is its row's
    sum, its predicted count its column's (answers outside the labels pooled as ``(other)``). An arm
    that over-predicts a label shows a predicted bar above the gold one. None without classes.
    """
    with_classes = [(a.arm, a.classes.confusion) for a in arms if a.classes is not None]
    if not with_classes:
        return None
    n = len(with_classes)
    fig = make_subplots(
        rows=1, cols=n, shared_yaxes=True, subplot_titles=[arm for arm, _ in with_classes], horizontal_spacing=0.04
    )  # fmt: skip
    for col, (arm, cm) in enumerate(with_classes, start=1):
        gold = [sum(row) for row in cm.counts]
        predicted = [sum(column) for column in zip(*cm.counts, strict=True)] if cm.counts else []
        for name, x, y, colour in (
            ("gold", list(cm.labels), gold, "#9e9e9e"),
            ("predicted", list(cm.columns), predicted, "#1f77b4"),
        ):
            fig.add_trace(
                go.Bar(
                    name=name, x=x, y=y, marker_color=colour, legendgroup=name, showlegend=col == 1,
                    hovertemplate=f"{arm}: %{{x}} {name} in %{{y:,}} runs<extra></extra>",
                ),
                row=1, col=col,
            )  # fmt: skip
        fig.update_xaxes(type="category", row=1, col=col)
    fig.update_yaxes(title_text="graded runs", row=1, col=1)
    width = 320 * n + 80 if n > 3 else None
    fig.update_layout(
        title="Labels: gold vs predicted", barmode="group", height=380, width=width,
        autosize=width is None, **_LAYOUT,
    )  # fmt: skip
    return fig

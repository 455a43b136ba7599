"""`ConfusionView`: the results widget's Confusion tab, readable with 3 labels and with 77.

A few labels: every arm's matrix side by side (counts and shares of each gold row), then the per-class
table. Many labels (more than `abbench._matrix.LARGE`): per arm, the top confusions as a sorted table
(gold → predicted, runs, share of the gold label's runs), then the full matrix as a heatmap at a fixed
cell size, most frequent gold labels first, in a box that scrolls both ways; the per-class tables
follow, most frequent labels first, in a box of their own.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as w

from abbench import formatting as fm
from abbench._matrix import LARGE, TOP_CONFUSIONS, large_matrix_figure
from abbench.metrics import ArmMetrics, ExperimentMetrics
from abbench.widgets._base import escape, html_table, note
from abbench.widgets._figures import confusion_figure, show_figure

MATRIX_HEIGHT = "720px"
"""How tall the box of a large matrix grows before it scrolls."""
TABLE_HEIGHT = "420px"
"""How tall the per-class table of many labels grows before it scrolls."""


def top_confusions_html(arm: ArmMetrics, limit: int = TOP_CONFUSIONS) -> str:
    """An arm's most frequent confusions as a table: gold → predicted, runs, share of the gold's runs."""
    classes = arm.classes
    if classes is None:
        return note(f"{arm.arm}: no per-class figures ({arm.classes_reason})")
    cm = classes.confusion
    every = cm.top_confusions(None)
    if not every:
        return note(f"{arm.arm}: no confusion: every graded run was predicted as its gold label")
    rows = [
        (c.gold, "→", c.predicted, f"{c.count:,}", f"{fm.pct(c.share)} of {c.support:,}")
        for c in every[:limit]
    ]
    wrong = sum(c.count for c in every)
    shown = f"the {len(rows)} most frequent" if len(every) > len(rows) else "all"
    return (
        f"<b>{escape(arm.arm)}: top confusions</b>"
        + note(
            f"{wrong:,} of {classes.n:,} graded runs went to another label, in {len(every):,} "
            f"(gold, predicted) pairs; {shown}, most runs first"
        )
        + html_table(
            ["gold", "", "predicted", "runs", "share of the gold label's runs"],
            rows,
            numeric=(3, 4),
        )
    )


def classes_html(arm: ArmMetrics, *, by_support: bool = False) -> str:
    """An arm's per-class precision, recall, F1 and support, then the macro average and the notes."""
    if arm.classes is None:
        return note(f"{arm.arm}: no per-class figures ({arm.classes_reason})")
    items = list(arm.classes.per_class.items())
    if by_support:
        items.sort(key=lambda kv: (-kv[1].support, kv[0]))
    rows = [(label, fm.pct(s.precision), fm.pct(s.recall), fm.pct(s.f1), s.support) for label, s in items]
    macro = arm.classes.macro
    rows.append(
        ("macro average", fm.pct(macro.precision), fm.pct(macro.recall), fm.pct(macro.f1), arm.classes.n)
    )
    table = html_table(["label", "precision", "recall", "F1", "support"], rows, numeric=(1, 2, 3, 4))
    if by_support:
        table = f'<div style="max-height:{TABLE_HEIGHT}; overflow:auto">{table}</div>'
    parts = [f"<b>{escape(arm.arm)}</b>" + (" (most frequent labels first)" if by_support else ""), table]
    unknown = arm.classes.confusion.unknown_predictions
    if unknown:
        parts.append(
            note(
                "predictions that are the gold of no run counted (each a class with F1 0 in the macro average): "
                + ", ".join(f"{k} ×{v}" for k, v in unknown.items()),
                "warn",
            )
        )
    if arm.classes.absent_note:
        parts.append(note(arm.classes.absent_note))
    if arm.classes_note:
        parts.append(note(arm.classes_note))
    return "".join(parts)


class ConfusionView(w.VBox):  # type: ignore[misc, unused-ignore]  # ipywidgets is untyped
    """The Confusion tab of `ResultsWidget`: confusion matrices and per-class figures of every arm.

    Attributes:
        figures: ``confusion`` → the side-by-side figure of a few labels (None with many), and
            ``confusion:<arm>`` → each arm's full matrix when there are many labels.
        classes_html: The per-class tables and notes of every arm.
        large: Whether the many-labels view is shown.
    """

    def __init__(self, **kwargs: Any):
        super().__init__(**kwargs)
        self.figures: dict[str, Any] = {}
        self.classes_html = w.HTML()
        self.large = False
        self._metrics: ExperimentMetrics | None = None

    def show(self, metrics: ExperimentMetrics, *, draw: bool = True) -> dict[str, Any]:
        """Show the experiment's per-class tables, and its matrices (``draw=False`` leaves the matrices
        for `draw`: building plotly figures is what costs); returns `figures` (empty until drawn)."""
        self._metrics = metrics
        self.large = any(len(a.classes.labels) > LARGE for a in metrics.arms if a.classes is not None)
        self.classes_html.value = "".join(classes_html(a, by_support=self.large) for a in metrics.arms)
        self.figures = {}
        self.children = [self.classes_html]
        return self.draw() if draw else self.figures

    def draw(self) -> dict[str, Any]:
        """Draw the matrices of the experiment last shown (once); returns `figures`."""
        metrics, self._metrics = self._metrics, None
        if metrics is None:
            return self.figures
        if not self.large:
            figure = confusion_figure(metrics.arms)
            out = w.Output()
            show_figure(out, figure)
            self.figures = {"confusion": figure}
            self.children = [out, self.classes_html]
            return self.figures
        self.figures = {"confusion": None}
        children: list[w.Widget] = []
        for arm in metrics.arms:
            if arm.classes is None:
                continue
            cm = arm.classes.confusion
            figure = large_matrix_figure(
                cm, title=f"{arm.arm}: {len(cm.labels)} labels × {arm.classes.n:,} graded runs"
            )
            self.figures[f"confusion:{arm.arm}"] = figure
            out = w.Output()
            show_figure(out, figure)
            box = w.Box(
                [out],
                layout=w.Layout(
                    overflow="auto", max_height=MATRIX_HEIGHT, width="100%", border="1px solid #e5e5e5"
                ),
            )
            box.add_class("abbench-matrix")
            children += [
                w.HTML(top_confusions_html(arm)),
                w.HTML(
                    note(
                        f"{arm.arm}: the full matrix, most frequent gold labels first; colour is the share "
                        "of the gold label's runs, the number the runs (scroll the box; hover a cell)"
                    )
                ),
                box,
            ]
        self.children = [*children, self.classes_html]
        return self.figures

"""The report's confusion section: readable with 3 labels and with 77, as the results widget's Confusion tab.

A few labels: one matrix per arm that fits the page, then the per-class table. Many labels (more than
`abbench._matrix.LARGE`): per arm, the top confusions as a sorted table (gold → predicted, runs, share
of the gold label's runs), then the full matrix at a fixed cell size, most frequent gold labels first,
in a box that scrolls both ways, and the per-class table (most frequent labels first) in a box of its
own. The matrix is drawn by the same offline renderer as every report figure (`abbench._plotly`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from abbench import formatting as fm
from abbench._matrix import LARGE, SCROLL_STYLE, TOP_CONFUSIONS, large_matrix_figure
from abbench._plotly import figure_html
from abbench.report import _display as d
from abbench.report._sections._parts import Part

if TYPE_CHECKING:
    from abbench.metrics import ClassReport, ExperimentMetrics

TABLE_STYLE = "overflow:auto; max-height:480px"
"""The CSS of the box the per-class table of many labels scrolls in."""


def confusion_section(metrics: ExperimentMetrics) -> list[Part]:
    """One confusion matrix per arm (rows gold, columns predicted), with per-class precision and recall.

    With more than `LARGE` labels, each arm gets its top confusions and the full matrix in a scrolling box.
    """
    parts: list[Part] = []
    reasons = set()
    arms = metrics.arms
    large = any(len(a.classes.labels if a.classes else ()) > LARGE for a in arms)
    kind = metrics.expected_kind
    for a in arms:
        classes = a.classes
        if not classes:
            if a.classes_reason:
                reasons.add(a.classes_reason)
            continue
        conf = classes.confusion
        if large:
            parts += _large(a.arm, classes)
        else:
            parts.append(d.confusion_figure(conf, title=f"{a.arm} ({classes.n:,} graded runs)"))
        parts.append(_classes_table(a.arm, classes, by_support=large))
        unknown = conf.unknown_predictions
        if unknown:
            listed = ", ".join(f"{k} ×{v}" for k, v in list(unknown.items())[:8])
            parts.append(
                d.note_html(
                    f"{a.arm}: predictions that are the gold of no run counted (column (other); each a class "
                    f"with F1 0 in the macro average): {listed}."
                )
            )
        if classes.absent:
            parts.append(d.note_html(f"{a.arm}: {_absent_line(classes)}."))
        if a.classes_note:
            parts.append(d.note_html(f"{a.arm}: {a.classes_note}."))
    if not parts:
        return [
            d.note_html(
                "No confusion matrix: "
                + ("; ".join(sorted(reasons)) or "no graded run with a gold label")
                + "."
            )
        ]
    if kind and kind.kind == "label" and not kind.declared:  # say why, and how to say otherwise
        parts.insert(
            0,
            d.note_html(
                f"The gold values read as labels: {kind.reason} (a mapping's `expected_kind: answer` "
                "would say otherwise)."
            ),
        )
    return parts


def _large(arm: str, classes: ClassReport) -> list[Part]:
    """Top confusions, then the full matrix in a scrolling box (HTML: the figure's div and script)."""
    cm = classes.confusion
    every = cm.top_confusions(None)
    parts: list[Part] = []
    if every:
        wrong = sum(c.count for c in every)
        shown = every[:TOP_CONFUSIONS]
        parts.append(
            d.table_html(
                [
                    {
                        "gold": c.gold,
                        "arrow": "→",
                        "predicted": c.predicted,
                        "count": c.count,
                        "share": f"{fm.pct(c.share)} of {c.support:,}",
                    }
                    for c in shown
                ],
                [
                    ("gold", "gold"),
                    ("arrow", ""),
                    ("predicted", "predicted"),
                    ("count", "runs"),
                    ("share", "share of the gold label's runs"),
                ],
                caption=(
                    f"{arm}: top confusions — {wrong:,} of {classes.n:,} graded runs went to another "
                    f"label, in {len(every):,} (gold, predicted) pairs; "
                    + (f"the {len(shown)} most frequent" if len(every) > len(shown) else "all")
                ),
            )
        )
    else:
        parts.append(d.note_html(f"{arm}: no confusion: every graded run was predicted as its gold label."))
    fig = large_matrix_figure(cm, title=f"{arm}: {len(cm.labels)} labels × {classes.n:,} graded runs")
    parts.append(
        d.note_html(
            f"{arm}: the full matrix, most frequent gold labels first; colour is the share of the gold "
            "label's runs, the number the runs (the box scrolls; hover a cell)."
        )
        + f'<div class="abb-matrix" style="{SCROLL_STYLE}">{figure_html(fig)}</div>'
    )
    return parts


def _classes_table(arm: str, classes: ClassReport, *, by_support: bool) -> str:
    items = list(classes.per_class.items())
    if by_support:
        items.sort(key=lambda kv: (-kv[1].support, str(kv[0]).casefold()))
    table = d.table_html(
        [
            {"class": name, "precision": s.precision, "recall": s.recall, "f1": s.f1, "support": s.support}
            for name, s in items
        ],
        [
            ("class", "class"),
            ("precision", "precision", fm.pct),
            ("recall", "recall", fm.pct),
            ("f1", "F1", fm.pct),
            ("support", "gold runs"),
        ],
        caption=f"{arm}: per class (macro F1 {fm.pct(classes.macro.f1)})"
        + ("; most frequent labels first" if by_support else ""),
    )
    return f'<div style="{TABLE_STYLE}">{table}</div>' if by_support else table


def _absent_line(classes: ClassReport) -> str:
    absent = int(classes.absent)
    total = absent + len(classes.labels)
    return (
        f"{absent:,} of the {total:,} labels are neither gold nor predicted in these runs: "
        "left out of the table and the averages"
    )

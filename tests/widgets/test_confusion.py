"""The Confusion tab with banking77's 77 intents, checked against scikit-learn; small label sets keep their view.

The experiment is the one the issue met: a mapping with no label set, two builtin arms given the 77
labels, a seeded sample of 300 real cases. Before, 77 distinct gold values (more than a fixed 50) were
taken as free text: no matrix, no per-class F1.
"""

from __future__ import annotations

import html
import re

import numpy as np
import pytest
from sklearn.metrics import classification_report, confusion_matrix

from abbench._matrix import CELL, LARGE
from abbench.graders import normalise_label
from abbench.metrics import NO_PREDICTION, OTHER_LABEL, experiment_metrics
from abbench.store import open_store
from abbench.store._run_columns import FAILED, PASSED
from abbench.widgets import ResultsWidget
from abbench.widgets._confusion import top_confusions_html
from tests.banking import NAME

pytestmark = pytest.mark.slow


@pytest.fixture
def banking(banking_store):
    store = open_store(banking_store)
    yield store
    store.close()


def _graded(store, exp_id, arm):
    t = store.runs.table(exp_id, arms=[arm])
    graded = (t.outcome == PASSED) | (t.outcome == FAILED)
    gold = [normalise_label(g) for g in t.expected[graded]]
    pred = [NO_PREDICTION if p is None else normalise_label(p) for p in t.prediction[graded]]
    return gold, pred


def test_77_intents_from_the_values_get_per_class_f1_equal_to_scikit_learn(banking):
    m = experiment_metrics(NAME, store=banking)
    assert m.expected_kind.kind == "label" and not m.expected_kind.declared
    assert "77 distinct short values over 3,080 cases" in m.expected_kind.reason
    for arm in ("plain", "noisy"):
        report = m.arm(arm).classes
        assert report is not None, m.arm(arm).classes_reason
        gold, pred = _graded(banking, m.experiment_id, arm)
        assert report.n == len(gold) == 300 and len(set(gold)) > LARGE
        ref = classification_report(gold, pred, output_dict=True, zero_division=0)
        for label, scores in report.per_class.items():
            mine = (scores.precision, scores.recall, scores.f1, scores.support)
            theirs = ref[normalise_label(label)]  # shown as the file spells it (Refund_not_showing_up)
            assert mine == pytest.approx(
                (theirs["precision"], theirs["recall"], theirs["f1-score"], theirs["support"])
            ), label
        assert report.macro.f1 == pytest.approx(ref["macro avg"]["f1-score"])
        assert report.weighted.f1 == pytest.approx(ref["weighted avg"]["f1-score"])
        assert report.micro.f1 == pytest.approx(ref["accuracy"])


def test_the_large_view_shows_scikit_learns_counts_most_frequent_labels_first(banking):
    widget = ResultsWidget(banking, experiment=NAME)
    assert widget.errors.message is None
    view = widget.confusion
    assert view.large and widget.figures["confusion"] is None
    for arm in ("plain", "noisy"):
        a = widget.arm(arm)
        gold, pred = _graded(banking, widget.experiment.id, arm)
        fig = widget.figures[f"confusion:{arm}"]
        (heatmap,) = fig.data
        rows = [normalise_label(x) for x in heatmap.y]
        cols = [x if x == OTHER_LABEL else normalise_label(x) for x in heatmap.x]
        # rows: the labels by how many runs have them as gold, most first (ties by name)
        support = {label: gold.count(label) for label in rows}
        assert rows == sorted(rows, key=lambda x: (-support[x], x))
        outside = sorted({p for p in pred if p not in set(rows)})
        assert cols == rows + ([OTHER_LABEL] if outside else [])
        ref = confusion_matrix(gold, pred, labels=rows + outside)
        shown = [[int(t) if t else 0 for t in row] for row in heatmap.text]
        pooled = np.hstack(
            [ref[: len(rows), : len(rows)], ref[: len(rows), len(rows) :].sum(axis=1, keepdims=True)]
        )
        assert shown == (pooled if outside else ref[: len(rows), : len(rows)]).tolist()
        # the cell size is fixed: the figure grows with the labels instead of squeezing them
        margin = fig.layout.margin
        assert fig.layout.width == margin.l + CELL * len(cols) + 30
        assert fig.layout.height - margin.t - 40 == CELL * len(rows)
        # every label written (long ones shortened on the axis only)
        assert list(fig.layout.xaxis.tickvals) == list(heatmap.x) and len(fig.layout.yaxis.ticktext) == len(
            rows
        )
        assert max(map(len, fig.layout.yaxis.ticktext)) <= 40 < max(map(len, heatmap.y))
        # top confusions: scikit-learn's off-diagonal cells, most runs first
        order = rows + outside
        cells = sorted(
            (
                (-int(ref[i, j]), gold_label, order[j] if j < len(rows) else OTHER_LABEL)
                for i, gold_label in enumerate(rows)
                for j in range(len(order))
                if i != j and ref[i, j]
            ),
        )
        top = a.classes.confusion.top_confusions(None)
        assert sum(c.count for c in top) == sum(g != p for g, p in zip(gold, pred, strict=True))
        mine = [(-c.count, normalise_label(c.gold), normalise_label(c.predicted)) for c in top]
        assert sorted(x for x in mine if x[2] != normalise_label(OTHER_LABEL)) == [
            c for c in cells if c[2] != OTHER_LABEL
        ]
        first = top[0]
        assert first.share == pytest.approx(-cells[0][0] / support[normalise_label(first.gold)])
        text = html.unescape(re.sub(r"<[^>]+>", " ", top_confusions_html(a)))
        assert re.search(rf"{first.gold}\s+→\s+{first.predicted}\s+{first.count}\s", text), text[:400]
    # the per-class tables list every label, most frequent first
    assert widget.classes_html.value.count("<tr>") >= 2 * (len(rows) + 2)
    assert "most frequent labels first" in widget.classes_html.value


def test_the_static_copy_keeps_the_matrix_in_its_scrolling_box(banking):
    # what a notebook exported the plain way shows: the same boxes, drawn by the offline renderer
    from abbench.widgets._static import static_html

    page = static_html(ResultsWidget(banking, experiment=NAME))
    assert page.count('<div style="overflow:auto; max-height:720px; border:1px solid #e5e5e5">') == 2
    assert page.count("Plotly.newPlot") >= 2 and "top confusions" in page


def test_a_few_labels_keep_the_side_by_side_view(store, ab):
    widget = ResultsWidget(store, experiment="ab")
    assert not widget.confusion.large
    assert widget.figures["confusion"] is not None and not any(
        k.startswith("confusion:") for k in widget.figures
    )

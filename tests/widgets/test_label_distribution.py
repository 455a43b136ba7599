"""03's label distribution: gold vs predicted labels per arm, counted as scikit-learn counts them."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.metrics import confusion_matrix

from abbench.types import Case
from abbench.widgets import ResultsWidget
from abbench.widgets._figures import label_distribution_figure
from tests.results import make_experiment


def _banking(store, realdata):
    """300 real banking77 queries (the first 8 intents of the file), two arms by two rounds: each answer right, another
    intent, or a word outside the labels, drawn with a seed (the candidate over-predicts one intent)."""
    rows = pd.read_csv(realdata / "banking77" / "test.csv")
    rows = rows[rows.category.isin(rows.category.unique()[:12])].head(300).reset_index(drop=True)
    labels = sorted(rows.category.unique())
    cases = [Case(f"b{i:03d}", r.text, r.category) for i, r in rows.iterrows()]
    rng = np.random.default_rng(3)
    arms: dict[str, list[list[dict]]] = {}
    written = []
    for arm, favourite in (("baseline", None), ("candidate", labels[0])):
        arms[arm] = []
        for case in cases:
            per_round = []
            for _ in range(2):
                draw = rng.random()
                if draw < 0.7:
                    answer = case.expected
                elif draw < 0.9:
                    answer = favourite or labels[int(rng.integers(len(labels)))]
                else:
                    answer = "no idea"
                per_round.append({"passed": answer == case.expected, "prediction": answer})
                written.append({"arm": arm, "gold": case.expected, "predicted": answer})
            arms[arm].append(per_round)
    make_experiment(store, "banking", cases, arms, label_set=labels)
    return labels, pd.DataFrame(written)


def test_gold_and_predicted_counts_per_arm_match_scikit_learn(store, realdata):
    labels, runs = _banking(store, realdata)
    widget = ResultsWidget(store, experiment="banking")
    fig = widget.figures["labels"]
    assert fig.layout.title.text == "Labels: gold vs predicted"  # each panel names its arm
    traces = {(t.xaxis, t.name): dict(zip(t.x, t.y, strict=True)) for t in fig.data}
    for axis, arm in (("x", "baseline"), ("x2", "candidate")):
        mine = runs[runs.arm == arm]
        predicted = mine.predicted.where(mine.predicted.isin(labels), "(other)")
        cm = confusion_matrix(mine.gold, predicted, labels=[*labels, "(other)"])
        gold_counts = dict(zip(labels, cm.sum(axis=1)[:-1].tolist(), strict=True))
        predicted_counts = {
            k: v for k, v in zip([*labels, "(other)"], cm.sum(axis=0).tolist(), strict=True) if v
        }
        assert traces[(axis, "gold")] == gold_counts == mine.gold.value_counts().to_dict()
        assert {k: v for k, v in traces[(axis, "predicted")].items() if v} == predicted_counts
    # The candidate's favourite intent is over-predicted, and the chart shows it.
    assert traces[("x2", "predicted")][labels[0]] > traces[("x2", "gold")][labels[0]] * 1.5
    assert widget.charts["labels"].outputs  # drawn in the Arms tab, the one shown first
    assert not widget.errors.value


def test_no_classes_no_chart():
    assert label_distribution_figure([]) is None

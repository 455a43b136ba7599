"""Per-class precision, recall and F1, and the confusion matrix, over labels normalised like the graders do."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from abbench.graders import normalise_label
from abbench.metrics._base import Result

OTHER_LABEL = "(other)"
"""The confusion matrix's column for predictions outside the label set (and for no prediction)."""
NO_PREDICTION = "(none)"
"""How a missing prediction is listed among the unknown predictions."""
MAX_CLASSES = 50
"""Above this many distinct gold values (and no declared label set) the gold is taken as free-form text."""


@dataclass(frozen=True)
class ClassScores(Result):
    """Precision, recall and F1 of one class, or an average over classes.

    Attributes:
        precision: Of the runs predicted as the class, the share that had it as gold.
        recall: Of the runs with the class as gold, the share predicted as it.
        f1: Harmonic mean of precision and recall.
        support: Runs with the class as gold (for averages: every run counted).
    """

    precision: float
    recall: float
    f1: float
    support: int


@dataclass(frozen=True)
class ConfusionMatrix(Result):
    """Counts of (gold, predicted) labels over graded runs.

    Attributes:
        labels: The classes, in order: the rows (gold) and the first columns (predicted).
        columns: `labels`, plus `OTHER_LABEL` when some prediction fell outside them.
        counts: ``counts[i][j]``: runs with gold ``labels[i]`` predicted as ``columns[j]``.
        unknown_predictions: The raw predictions counted under `OTHER_LABEL`, with how often each came.
        gold_outside: Graded runs whose gold is not one of `labels` (left out of the matrix).
    """

    labels: tuple[str, ...]
    columns: tuple[str, ...]
    counts: tuple[tuple[int, ...], ...]
    unknown_predictions: dict[str, int]
    gold_outside: int

    def normalised(self) -> tuple[tuple[float, ...], ...]:
        """Each row divided by its total (0.0 for an empty row): the shares a heatmap shows."""
        out = []
        for row in self.counts:
            total = sum(row)
            out.append(tuple((c / total) if total else 0.0 for c in row))
        return tuple(out)


@dataclass(frozen=True)
class ClassReport(Result):
    """Per-class figures of one arm (rounds pooled: every graded run counts once).

    Attributes:
        labels: The classes.
        per_class: Class -> its precision, recall, F1 and support.
        macro: Unweighted mean over classes.
        micro: Pooled over runs (equals accuracy when every prediction is a class).
        weighted: Mean over classes weighted by support.
        confusion: The confusion matrix.
        n: Graded runs counted.
        zero_division: What a 0/0 precision or recall is taken as (0.0, as scikit-learn's
            ``zero_division=0``).
    """

    labels: tuple[str, ...]
    per_class: dict[str, ClassScores]
    macro: ClassScores
    micro: ClassScores
    weighted: ClassScores
    confusion: ConfusionMatrix
    n: int
    zero_division: float = 0.0


def label_space(
    expected: np.ndarray, label_set: Any, label_map: dict[str, str] | None, max_classes: int = MAX_CLASSES
) -> tuple[dict[str, str] | None, str | None]:
    """The classes as ``{normalised: display}``, or None and why per-class figures do not apply."""
    display: dict[str, str] = {}
    if label_set:
        for label in label_set:
            key = normalise_label(label, label_map)
            if key is not None:
                display.setdefault(key, str(label))
        if display:
            return display, None
    golds = [g for g in expected if g is not None and str(g).strip() != ""]
    if not golds:
        return None, "no gold labels: per-class figures need `expected`"
    for g in golds:
        key = normalise_label(g, label_map)
        display.setdefault(key, str(label_map.get(str(g), g)) if label_map else str(g))
    if len(display) > max_classes:
        return None, (
            f"the gold answers look free-form ({len(display)} distinct values, more than {max_classes}); "
            "per-class figures need labels (declare the dataset's label set to force them)"
        )
    return dict(sorted(display.items(), key=lambda kv: kv[1])), None


def class_report(
    expected: np.ndarray, prediction: np.ndarray, classes: dict[str, str], label_map: dict[str, str] | None
) -> ClassReport:
    """Per-class precision/recall/F1 and the confusion matrix of graded runs.

    Gold and predictions are normalised as `label_match` does (trimmed, case-folded, mapped through the
    dataset's label map). A prediction outside the classes counts in the `OTHER_LABEL` column: a false
    negative for its gold class and a false positive for no class, as scikit-learn counts with
    ``labels=classes``. Runs whose gold is outside the classes are left out and counted.
    """
    import pandas as pd

    keys = list(classes)
    index = {k: i for i, k in enumerate(keys)}
    n_labels = len(keys)
    # Normalise each distinct value once, then work on integer codes: a million runs have few labels.
    gold_codes_raw, gold_values = pd.factorize(np.asarray(expected, dtype=object), use_na_sentinel=True)
    pred_codes_raw, pred_values = pd.factorize(np.asarray(prediction, dtype=object), use_na_sentinel=True)
    gold_class = np.array(
        [index.get(normalise_label(v, label_map), -1) for v in gold_values] + [-1], dtype=np.int64
    )
    pred_class = np.array(
        [index.get(normalise_label(v, label_map), n_labels) for v in pred_values] + [n_labels], dtype=np.int64
    )
    g_all = gold_class[gold_codes_raw]  # code -1 (missing) picks the appended -1
    p_all = pred_class[pred_codes_raw]
    inside = g_all >= 0
    outside = int(np.count_nonzero(~inside))
    unknown: Counter = Counter()
    other = inside & (p_all == n_labels)
    if other.any():
        raw = pred_codes_raw[other]
        for code, count in zip(*np.unique(raw, return_counts=True), strict=True):
            unknown[NO_PREDICTION if code < 0 else str(pred_values[code])] += int(count)
    gold_codes, pred_codes = g_all[inside], p_all[inside]
    width = n_labels + (1 if unknown else 0)
    matrix = np.zeros((n_labels, width), dtype=np.int64)
    if gold_codes.size:
        np.add.at(matrix, (gold_codes, pred_codes), 1)
    true_pos = np.diag(matrix[:, :n_labels]).astype(float)
    predicted = matrix[:, :n_labels].sum(axis=0).astype(float)
    support = matrix.sum(axis=1).astype(float)
    precision = _divide(true_pos, predicted)
    recall = _divide(true_pos, support)
    f1 = _divide(2 * precision * recall, precision + recall)
    per_class = {
        classes[k]: ClassScores(float(precision[i]), float(recall[i]), float(f1[i]), int(support[i]))
        for i, k in enumerate(keys)
    }
    total = int(support.sum())
    micro_p = _ratio(true_pos.sum(), predicted.sum())
    micro_r = _ratio(true_pos.sum(), support.sum())
    micro_f = _ratio(2 * micro_p * micro_r, micro_p + micro_r)
    weights = support / support.sum() if support.sum() else np.zeros(n_labels)
    columns = tuple(classes[k] for k in keys) + ((OTHER_LABEL,) if unknown else ())
    return ClassReport(
        labels=tuple(classes[k] for k in keys),
        per_class=per_class,
        macro=ClassScores(
            float(precision.mean()) if n_labels else 0.0,
            float(recall.mean()) if n_labels else 0.0,
            float(f1.mean()) if n_labels else 0.0,
            total,
        ),
        micro=ClassScores(micro_p, micro_r, micro_f, total),
        weighted=ClassScores(
            float(np.sum(precision * weights)),
            float(np.sum(recall * weights)),
            float(np.sum(f1 * weights)),
            total,
        ),
        confusion=ConfusionMatrix(
            labels=tuple(classes[k] for k in keys),
            columns=columns,
            counts=tuple(tuple(int(c) for c in row) for row in matrix),
            unknown_predictions=dict(unknown.most_common()),
            gold_outside=outside,
        ),
        n=total,
    )


def _ratio(numerator: float, denominator: float) -> float:
    return float(numerator / denominator) if denominator else 0.0


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Element-wise division with 0/0 (and x/0) taken as 0.0: scikit-learn's ``zero_division=0``."""
    out = np.zeros_like(numerator, dtype=float)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out

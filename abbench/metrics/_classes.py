"""Per-class precision, recall and F1, and the confusion matrix, over labels normalised like the graders do."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from abbench._result import Result
from abbench.dataset import ExpectedKind, gold_kind
from abbench.graders import normalise_label

OTHER_LABEL = "(other)"
"""The confusion matrix's column for predictions outside the label set (and for no prediction)."""
NO_PREDICTION = "(none)"
"""How a missing prediction is listed among the unknown predictions."""


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

    def top_confusions(self, limit: int | None = 20) -> tuple[Confusion, ...]:
        """The off-diagonal cells that hold runs, most runs first (ties: the larger share of the gold row,
        then gold and predicted label), at most `limit` (None: all).

        A prediction outside the labels is one cell per gold label, predicted `OTHER_LABEL`.
        """
        cells = []
        for i, (gold, row) in enumerate(zip(self.labels, self.counts, strict=True)):
            total = sum(row)
            for j, count in enumerate(row):
                if count and j != i:
                    cells.append(Confusion(gold, self.columns[j], int(count), count / total, int(total)))
        cells.sort(key=lambda c: (-c.count, -c.share, c.gold, c.predicted))
        return tuple(cells if limit is None else cells[:limit])

    def by_frequency(self) -> ConfusionMatrix:
        """The same matrix with the most frequent gold labels first (ties by name); `OTHER_LABEL` stays last.

        A label predicted but never gold (support 0) comes after every gold label.
        """
        totals = [sum(row) for row in self.counts]
        order = sorted(range(len(self.labels)), key=lambda i: (-totals[i], self.labels[i].casefold()))
        cols = order + list(range(len(self.labels), len(self.columns)))
        return ConfusionMatrix(
            labels=tuple(self.labels[i] for i in order),
            columns=tuple(self.columns[j] for j in cols),
            counts=tuple(tuple(self.counts[i][j] for j in cols) for i in order),
            unknown_predictions=dict(self.unknown_predictions),
            gold_outside=self.gold_outside,
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ConfusionMatrix:
        """The inverse of ``as_dict()`` (what a report reads back)."""
        return cls(
            labels=tuple(data.get("labels") or ()),
            columns=tuple(data.get("columns") or ()),
            counts=tuple(tuple(int(c) for c in row) for row in data.get("counts") or ()),
            unknown_predictions=dict(data.get("unknown_predictions") or {}),
            gold_outside=int(data.get("gold_outside") or 0),
        )


@dataclass(frozen=True)
class Confusion(Result):
    """One off-diagonal cell of a confusion matrix: runs with gold `gold` predicted as `predicted`.

    Attributes:
        gold: The gold label.
        predicted: What was predicted instead (`OTHER_LABEL` for predictions outside the labels).
        count: Runs.
        share: `count` over the runs with gold `gold` (what share of that label's runs went here).
        support: The runs with gold `gold`.
    """

    gold: str
    predicted: str
    count: int
    share: float
    support: int


@dataclass(frozen=True)
class ClassReport(Result):
    """Per-class figures of one arm (rounds pooled: every graded run counts once).

    The classes are the labels present in the gold or the predictions of the runs counted, as
    scikit-learn's ``labels=None``: a label of the set that no counted run has as gold or prediction is
    left out (counted in `absent`), and a prediction outside the set is a label of its own, with F1 0,
    in the averages (listed in `outside`).

    Attributes:
        labels: The classes of the set present in these runs, in the set's order.
        per_class: Class -> its precision, recall, F1 and support (the classes of `labels`).
        macro: Unweighted mean over `labels` and `outside`.
        micro: Pooled over runs (the share of runs with the gold label: every prediction counts; accuracy
            differs when other graders must pass too, see `ArmMetrics.classes_note`).
        weighted: Mean over classes weighted by support.
        confusion: The confusion matrix over `labels`, predictions outside them pooled in one column.
        n: Graded runs counted.
        absent: Labels of the set that are neither gold nor predicted in these runs (left out).
        absent_labels: Those labels, in the set's order.
        outside: Predictions outside the set (`NO_PREDICTION` for none), each a class with precision,
            recall and F1 0 in `macro` (scikit-learn's ``labels=None`` counts them so).
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
    absent: int = 0
    outside: tuple[str, ...] = ()
    absent_labels: tuple[str, ...] = ()
    zero_division: float = 0.0

    @property
    def absent_note(self) -> str | None:
        """One line saying how many labels of the set these runs never had, or None when none was absent."""
        if not self.absent:
            return None
        total = self.absent + len(self.labels)
        return (
            f"{self.absent:,} of the {total:,} labels are neither gold nor predicted in these runs: "
            "left out of the table and the averages"
        )


def label_space(
    expected: Sequence[Any],
    label_set: Any,
    label_map: dict[str, str] | None,
    kind: ExpectedKind | None = None,
) -> tuple[dict[str, str] | None, str | None]:
    """The classes as ``{normalised: display}``, or None and why per-class figures do not apply.

    Args:
        expected: The gold values of the runs measured (repeats allowed).
        label_set: The dataset's declared labels (they are the classes when given).
        label_map: The dataset's value map (source value -> label).
        kind: The dataset's `ExpectedKind` (``DatasetInfo.expected_kind``): answers get no classes.
            None decides from `expected` as given (`abbench.dataset.gold_kind`).
    """
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
    if kind is None or kind.kind is None:
        kind = gold_kind(Counter(map(str, golds)))
    if not kind.is_label:
        return None, (
            f"the gold values are answers, not labels: {kind.reason}. Per-class figures need labels: "
            "declare `expected_kind: label` or `label_set:` in the mapping profile to force them"
        )
    for g in golds:
        key = normalise_label(g, label_map)
        if key is not None:  # never: a non-blank gold normalises to a label
            display.setdefault(key, str(label_map.get(str(g), g)) if label_map else str(g))
    return dict(sorted(display.items(), key=lambda kv: kv[1])), None


def class_report(
    expected: np.ndarray, prediction: np.ndarray, classes: dict[str, str], label_map: dict[str, str] | None
) -> ClassReport:
    """Per-class precision/recall/F1 and the confusion matrix of graded runs.

    Gold and predictions are normalised as `label_match` does (trimmed, case-folded, mapped through the
    dataset's label map). The figures are scikit-learn's with ``labels=None`` over the normalised values
    (a missing prediction read as `NO_PREDICTION`): only the classes present in the gold or the
    predictions of these runs are scored, and each distinct prediction outside the classes is a class of
    its own (F1 0, as it is nobody's gold). The confusion matrix pools those predictions in its
    `OTHER_LABEL` column. Runs whose gold is outside the classes are left out and counted.
    """
    keys = list(classes)
    n_keys = len(keys)
    codes = _Codes.of(expected, prediction, keys, label_map)
    inside = codes.gold >= 0
    gold_codes, pred_codes = codes.gold[inside], codes.pred[inside]
    # The classes present: gold or predicted by a counted run (scikit-learn's labels=None).
    present = np.zeros(n_keys, dtype=bool)
    present[gold_codes] = True
    present[pred_codes[pred_codes < n_keys]] = True
    kept = np.flatnonzero(present)
    # return_index takes numpy's sorting path (the plain call hashes, slowly on many runs)
    outside_used = np.unique(pred_codes[pred_codes >= n_keys], return_index=True)[0]
    size = n_keys + len(codes.outside_display)
    # One count per (gold, prediction) cell, as np.add.at would add them, in a single bincount.
    full = (
        np.bincount(gold_codes * size + pred_codes, minlength=size * size)
        .astype(np.int64)
        .reshape(size, size)
    )
    scored = np.concatenate([kept, outside_used])
    square = full[np.ix_(scored, scored)]
    true_pos = np.diag(square).astype(float)
    predicted = square.sum(axis=0).astype(float)
    support = square.sum(axis=1).astype(float)
    precision = _divide(true_pos, predicted)
    recall = _divide(true_pos, support)
    f1 = _divide(2 * precision * recall, precision + recall)
    labels = tuple(classes[keys[i]] for i in kept)
    total = int(support.sum())
    macro, micro, weighted = _averages(precision, recall, f1, true_pos, predicted, support)
    matrix = full[np.ix_(kept, kept)]
    if outside_used.size:
        matrix = np.hstack([matrix, full[np.ix_(kept, outside_used)].sum(axis=1, keepdims=True)])
    return ClassReport(
        labels=labels,
        per_class={
            label: ClassScores(float(precision[i]), float(recall[i]), float(f1[i]), int(support[i]))
            for i, label in enumerate(labels)
        },
        macro=macro,
        micro=micro,
        weighted=weighted,
        confusion=ConfusionMatrix(
            labels=labels,
            columns=labels + ((OTHER_LABEL,) if outside_used.size else ()),
            counts=tuple(tuple(int(c) for c in row) for row in matrix),
            unknown_predictions=codes.unknown_predictions(inside, n_keys) if outside_used.size else {},
            gold_outside=int(np.count_nonzero(~inside)),
        ),
        n=total,
        absent=n_keys - kept.size,
        absent_labels=tuple(classes[k] for i, k in enumerate(keys) if not present[i]),
        outside=tuple(codes.outside_display[c - n_keys] for c in outside_used),
    )


@dataclass(frozen=True)
class _Codes:
    """Each run's gold and prediction as integer class codes: a class's position among the classes, -1 for
    a gold outside them, and a code past them for each distinct prediction outside them (missing too)."""

    gold: np.ndarray
    pred: np.ndarray
    pred_raw: np.ndarray
    pred_values: Any
    outside_display: list[str]

    @classmethod
    def of(
        cls, expected: np.ndarray, prediction: np.ndarray, keys: list[str], label_map: dict[str, str] | None
    ) -> _Codes:
        import pandas as pd

        index = {k: i for i, k in enumerate(keys)}
        # Normalise each distinct value once, then work on integer codes: a million runs have few labels.
        gold_raw, gold_values = pd.factorize(np.asarray(expected, dtype=object), use_na_sentinel=True)
        pred_raw, pred_values = pd.factorize(np.asarray(prediction, dtype=object), use_na_sentinel=True)
        gold_keys = [normalise_label(v, label_map) for v in gold_values]
        gold_class = np.array(
            [-1 if k is None else index.get(k, -1) for k in gold_keys] + [-1], dtype=np.int64
        )
        outside_keys: dict[str, int] = {}
        outside_display: list[str] = []
        pred_class_list = []
        for v in [*pred_values, None]:
            key = normalise_label(v, label_map) if v is not None else None
            if key is not None and key in index:
                pred_class_list.append(index[key])
                continue
            token = "\x00none" if key is None else key  # a key no normalised label can be
            if token not in outside_keys:
                outside_keys[token] = len(keys) + len(outside_keys)
                outside_display.append(NO_PREDICTION if key is None else str(v).strip())
            pred_class_list.append(outside_keys[token])
        pred_class = np.array(pred_class_list, dtype=np.int64)
        # code -1 (missing) picks the appended entry
        return cls(gold_class[gold_raw], pred_class[pred_raw], pred_raw, pred_values, outside_display)

    def unknown_predictions(self, inside: np.ndarray, n_keys: int) -> dict[str, int]:
        """Predictions outside the classes (as written) of runs whose gold is a class, most frequent first."""
        unknown: Counter[str] = Counter()
        other = inside & (self.pred >= n_keys)
        for code, count in zip(*np.unique(self.pred_raw[other], return_counts=True), strict=True):
            unknown[NO_PREDICTION if code < 0 else str(self.pred_values[code])] += int(count)
        return dict(unknown.most_common())


def _averages(
    precision: np.ndarray,
    recall: np.ndarray,
    f1: np.ndarray,
    true_pos: np.ndarray,
    predicted: np.ndarray,
    support: np.ndarray,
) -> tuple[ClassScores, ClassScores, ClassScores]:
    """Macro, micro and support-weighted averages of the per-class scores."""
    total = int(support.sum())
    size = support.size
    micro_p = _ratio(true_pos.sum(), predicted.sum())
    micro_r = _ratio(true_pos.sum(), support.sum())
    micro_f = _ratio(2 * micro_p * micro_r, micro_p + micro_r)
    weights = support / support.sum() if support.sum() else np.zeros(size)
    macro = ClassScores(
        float(precision.mean()) if size else 0.0,
        float(recall.mean()) if size else 0.0,
        float(f1.mean()) if size else 0.0,
        total,
    )
    weighted = ClassScores(
        float(np.sum(precision * weights)),
        float(np.sum(recall * weights)),
        float(np.sum(f1 * weights)),
        total,
    )
    return macro, ClassScores(micro_p, micro_r, micro_f, total), weighted


def _ratio(numerator: float, denominator: float) -> float:
    return float(numerator / denominator) if denominator else 0.0


def _divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """Element-wise division with 0/0 (and x/0) taken as 0.0: scikit-learn's ``zero_division=0``."""
    out = np.zeros_like(numerator, dtype=float)
    np.divide(numerator, denominator, out=out, where=denominator != 0)
    return out

"""The low-confidence threshold: below which an answer's confidence is worth a person's look.

A fixed 0.5 says nothing on a two-label task: the top label's confidence is never below 1/2 there,
so nothing is ever low. The default is halfway between a guess and certainty for the task's labels,
``(1 + 1/k) / 2`` for ``k`` labels: 0.75 for two labels, 0.67 for three, 0.625 for four, tending
to the old 0.5 as labels grow. An answer below it is nearer a coin toss among the labels than sure.
Without labels (free answers) the default stays `abbench.metrics.LOW_CONFIDENCE`.
"""

from __future__ import annotations

from dataclasses import dataclass

from abbench._memo import Memo
from abbench.dataset import gold_kind
from abbench.errors import UsageError
from abbench.metrics import LOW_CONFIDENCE, Result, dataset_labels, label_space
from abbench.store import Experiment, Store, StoreLike, open_store


def default_threshold(labels: int | None) -> float:
    """The default low-confidence threshold for `labels` labels: halfway between chance and certainty.

    Args:
        labels: How many labels the task has (None or fewer than 2: no labels to speak of).

    Returns:
        ``(1 + 1/labels) / 2``, or `abbench.metrics.LOW_CONFIDENCE` (0.5) without labels.
    """
    if labels is None or labels < 2:
        return LOW_CONFIDENCE
    return (1.0 + 1.0 / labels) / 2.0


@dataclass(frozen=True)
class LowConfidence(Result):
    """The low-confidence threshold of an experiment and where it comes from.

    Attributes:
        threshold: Confidence below which an answer is low-confidence.
        labels: The task's label count (None: the gold values are not labels).
        chosen: True when the threshold was given, False when it is the default for `labels`.
    """

    threshold: float
    labels: int | None
    chosen: bool = False

    @property
    def text(self) -> str:
        """The threshold and why, in one line ("below 0.75: halfway between chance (1/2) and certainty")."""
        head = f"below {self.threshold:.3g}"
        if self.chosen:
            return f"{head} (chosen)"
        if self.labels is None:
            return f"{head} (the default: the gold values are not labels)"
        return f"{head}: halfway between chance (1/{self.labels}) and certainty for {self.labels} labels"


_LABELS: Memo[int | None] = Memo(8)
"""The label count per experiment, kept with its dataset's fingerprint."""


def _label_count(store: Store, exp: Experiment) -> int | None:
    def read() -> int | None:
        label_set, label_map = dataset_labels(store, exp.dataset_id)
        if label_set:
            classes = label_space([], label_set, label_map)[0]
        else:  # the gold values counted in SQLite: labels or answers, decided as the metrics decide it
            counts = store.datasets.value_counts(exp.dataset_id)
            kind = store.datasets.get(exp.dataset_id).expected_kind
            if kind is None or kind.kind is None:
                kind = gold_kind(counts)
            classes = label_space(list(counts), None, label_map, kind)[0]
        return len(classes) if classes else None

    # An experiment's cases and its dataset never change (a dataset is named by its content), so the
    # count is read once per experiment, by one GROUP BY of the gold in SQLite.
    return _LABELS.get((str(store.db_path), exp.id), exp.dataset, read)


def low_confidence_threshold(
    experiment: int | str | Experiment, threshold: float | None = None, *, store: StoreLike = None
) -> LowConfidence:
    """The low-confidence threshold for an experiment: `threshold` when given, else `default_threshold`
    of its label count (its dataset's declared labels, or else its distinct gold labels).

    Raises:
        UsageError: a threshold outside 0–1.
        NotFoundError: no such experiment.
    """
    store = open_store(store)
    exp = experiment if isinstance(experiment, Experiment) else store.experiments.get(experiment)
    labels = _label_count(store, exp)
    if threshold is None:
        return LowConfidence(default_threshold(labels), labels)
    if not 0.0 <= float(threshold) <= 1.0:
        raise UsageError(f"the low-confidence threshold is a confidence between 0 and 1; got {threshold!r}")
    return LowConfidence(float(threshold), labels, chosen=True)

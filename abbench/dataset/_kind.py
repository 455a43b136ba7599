"""Whether a dataset's gold values are labels (classes) or answers (free text): one rule, used everywhere.

Labels get a value map editor at import, per-class precision, recall and F1, and a confusion matrix;
answers are compared (exact, contains, a judge) and get none of those. The mapping may say which it is
(``expected_kind: label | answer``, or ``label_set:``, which implies labels); otherwise the values
decide, never a fixed number of classes: labels are short, and shared by several cases, so that there
are few distinct values relative to the cases (77 intents over 3,080 cases are labels; 60 different
sentences over 60 cases are answers). Long values are labels too when many cases share each one: a
FAQ dataset whose gold values are its 222 canonical questions, each the gold of ~14 cases, is a set
of classes, however long each reads; free-text reference answers are not repeated like that.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from abbench._result import Result
from abbench.dataset._text import label_key

EXPECTED_KINDS = ("label", "answer")
"""What ``expected_kind:`` takes: ``label`` (a class among a set) or ``answer`` (free text)."""
LABEL_CHARS = 40
"""Labels average at most this many characters; longer gold values read as answers."""
CASES_PER_LABEL = 2.0
"""Labels are shared: the cases are at least this many times the distinct values (beyond two values)."""
LONG_LABEL_CASES = 5.0
"""Long values are labels when the cases are at least this many times the distinct values ..."""
LONG_LABELS_MIN = 5
"""... and there are at least this many of them (two long sentences five times each stay answers)."""
INFERRED_LABELS_MAX = 200
"""An import given no mapping declares the labels it finds as the label set up to this many of them;
past it (a free-text column of short answers repeated often) it says how to declare them rather than
guess. 200 holds the intent sets analysts import: SNIPS 7, banking77 77, CLINC150 151."""


@dataclass(frozen=True)
class ExpectedKind(Result):
    """What a dataset's gold values are, and why.

    Attributes:
        kind: ``label``, ``answer``, or None when no case has a gold value.
        reason: Why, in words a person can check (``77 distinct short values over 3,080 cases ...``).
        declared: True when the mapping said so (``expected_kind:`` or ``label_set:``).
        distinct: Distinct gold values.
        cases: Cases with a gold value.
    """

    kind: str | None
    reason: str
    declared: bool = False
    distinct: int = 0
    cases: int = 0

    @property
    def is_label(self) -> bool:
        """Whether the gold values are labels."""
        return self.kind == "label"

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ExpectedKind | None:
        """The inverse of `as_dict` (None for None)."""
        if not data:
            return None
        return cls(
            kind=data.get("kind"),
            reason=str(data.get("reason") or ""),
            declared=bool(data.get("declared")),
            distinct=int(data.get("distinct") or 0),
            cases=int(data.get("cases") or 0),
        )

    def to_json(self) -> str:
        """`as_dict` as compact JSON (what the store keeps beside the dataset)."""
        return json.dumps(self.as_dict(), ensure_ascii=False, separators=(",", ":"))


def gold_kind(
    counts: Mapping[Any, int],
    *,
    declared: str | None = None,
    label_set: Sequence[str] | None = None,
) -> ExpectedKind:
    """Whether gold values are labels or answers: as the mapping declares, else from the values.

    From the values: labels average at most `LABEL_CHARS` characters, and there are at most half as
    many distinct values as cases (`CASES_PER_LABEL`; two values are labels however few the cases).
    Longer values are labels when at least `LONG_LABELS_MIN` of them are each shared by
    `LONG_LABEL_CASES` cases on average (canonical FAQ questions as classes).

    Args:
        counts: How many cases hold each gold value (``store.datasets.value_counts``, ``Table.value_counts``);
            None and blank values are ignored.
        declared: The mapping's ``expected_kind`` (``label`` or ``answer``), if any.
        label_set: The mapping's ``label_set``, if any: declared labels.

    Raises:
        ValueError: `declared` is neither ``label`` nor ``answer``.
    """
    values = {v: n for v, n in counts.items() if v is not None and str(v).strip() != ""}
    distinct, cases = len(values), int(sum(values.values()))
    if declared is not None:
        if declared not in EXPECTED_KINDS:
            raise ValueError(f"expected_kind is label or answer; got {declared!r}")
        what = "labels" if declared == "label" else "answers"
        reason = f"the mapping says the gold values are {what} (expected_kind: {declared})"
        return ExpectedKind(declared, reason, True, distinct, cases)
    if label_set:
        return ExpectedKind(
            "label", f"the mapping declares a label set of {len(label_set):,}", True, distinct, cases
        )
    if not values:
        return ExpectedKind(None, "no case has a gold value")
    mean = sum(len(str(v)) for v in values) / distinct
    shared = distinct >= LONG_LABELS_MIN and cases >= LONG_LABEL_CASES * distinct
    if mean > LABEL_CHARS and shared:
        return ExpectedKind(
            "label",
            f"{distinct:,} distinct values over {cases:,} cases ({cases / distinct:,.1f} each on average): "
            f"labels — long ones (averaging {mean:.0f} characters), but each shared by many cases",
            False,
            distinct,
            cases,
        )
    if mean > LABEL_CHARS:
        return ExpectedKind(
            "answer",
            f"{distinct:,} distinct values averaging {mean:.0f} characters, {cases / distinct:,.1f} cases "
            f"each: reference answers rather than labels, which average at most {LABEL_CHARS} "
            f"characters or are each shared by {LONG_LABEL_CASES:.0f}+ cases",
            False,
            distinct,
            cases,
        )
    if distinct > max(2, cases / CASES_PER_LABEL):
        each = ", each different" if distinct == cases else ""
        return ExpectedKind(
            "answer",
            f"{distinct:,} distinct values over {cases:,} cases{each}: most cases have a value of their "
            "own, which reads as reference answers rather than labels",
            False,
            distinct,
            cases,
        )
    return ExpectedKind(
        "label",
        f"{distinct:,} distinct short values over {cases:,} cases ({cases / distinct:,.1f} each on "
        "average): labels",
        False,
        distinct,
        cases,
    )


@dataclass(frozen=True)
class InferredLabels(Result):
    """The label set an import declares for gold values that read as labels, or why it declares none.

    Attributes:
        labels: The labels to declare (in text order, so that the same labels make the same profile), or None.
        reason: Why, or why not, in words a person can check (empty for answers: nothing to declare).
        kind: What the values are (`gold_kind`).
    """

    labels: tuple[str, ...] | None
    reason: str
    kind: ExpectedKind


def infer_label_set(counts: Mapping[Any, int]) -> InferredLabels:
    """The label set gold values that read as labels make: a small, closed set, every case holding one.

    Declared only when nothing about it is a guess: the values read as labels (`gold_kind`), there are
    at most `INFERRED_LABELS_MAX` of them, every case has one (a label set makes a gold value required),
    no two are one label spelled twice (``True``/``true``: which is right is the analyst's call), and
    they are not a handful of numbers beyond two (``0``/``1`` are labels; 3, 7, 12 … read as answers).

    Args:
        counts: How many cases hold each gold value (None or blank: cases without one).
    """
    kind = gold_kind(counts)
    if not kind.is_label:
        return InferredLabels(None, "", kind)
    values = {str(v): n for v, n in counts.items() if v is not None and str(v).strip() != ""}
    order = sorted(values, key=lambda v: (-values[v], v))
    shown = ", ".join(order[:8]) + (f", … {len(order) - 8} more" if len(order) > 8 else "")
    blank = sum(n for v, n in counts.items() if v is None or str(v).strip() == "")
    twins = _twins(order)
    if blank:
        why = f"{blank:,} of {blank + kind.cases:,} cases have no gold value, and a label set makes one required"
    elif len(values) > INFERRED_LABELS_MAX:
        why = f"{len(values):,} labels are more than the {INFERRED_LABELS_MAX} an import declares by itself"
    elif twins is not None:
        why = f"{twins} read as one label spelled twice"
    elif len(values) > 2 and all(_is_number(v) for v in values):
        why = "the values are numbers, which read as answers as often as labels"
    else:
        return InferredLabels(tuple(sorted(order)), f"{shown} ({kind.reason})", kind)
    return InferredLabels(None, f"the gold values read as labels ({shown}) but {why}", kind)


def _twins(values: Sequence[str]) -> str | None:
    """Two values that are one label to the mapping (`label_key`), said as ``'True' and 'true'``."""
    seen: dict[str, str] = {}
    for value in values:
        first = seen.setdefault(label_key(value), value)
        if first != value:
            return f"{first!r} and {value!r}"
    return None


def _is_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def looks_like_labels(counts: Mapping[Any, int]) -> bool:
    """Whether gold values read as labels rather than free-text answers (`gold_kind` from the values).

    Args:
        counts: How many cases hold each gold value (``store.datasets.value_counts``); None and "" are ignored.
    """
    return gold_kind(counts).is_label

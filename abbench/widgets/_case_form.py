"""The case selection in the define form: only some domains or gold labels, at most N cases, or a sample.

It writes the experiment file's ``cases:`` (`abbench.runner.CaseSelection`) and says how many cases
that selects, counted by the runner's own `select_cases`, so what the form promises is what runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import ipywidgets as w

from abbench.errors import AbbenchError
from abbench.runner import CaseSelection, select_cases
from abbench.widgets._base import escape, note

MAX_LABELS = 500
"""Distinct gold values offered as labels at most; more read as free-text answers."""
COUNTED_UP_TO = 200_000
"""Cases a dataset may have for the form to count its selection as it changes."""


def as_selection(cases: CaseSelection | Mapping[str, Any] | None) -> CaseSelection | None:
    """`cases` as the runner's `CaseSelection` (a definition's ``cases:`` mapping is read as one)."""
    if cases is None or isinstance(cases, CaseSelection):
        return cases
    return CaseSelection.model_validate(dict(cases)) if cases else None


def selection_text(cases: CaseSelection | Mapping[str, Any] | None) -> str:
    """A ``cases:`` selection in words: ``domains 导航, 车控 · labels fast · a sample of 5 (seed 0)``."""
    selection = as_selection(cases)
    if selection is None:
        return "every case"
    parts = []
    for chosen, word in (
        (selection.ids, "ids"),
        (selection.domains, "domains"),
        (selection.labels, "labels"),
    ):
        if chosen:
            values = [str(v) for v in chosen]
            shown = ", ".join(values[:8]) + (f" and {len(values) - 8} more" if len(values) > 8 else "")
            parts.append(f"{word} {shown}")
    if selection.tag:
        parts.append(f"tag {selection.tag}")
    if selection.sample:
        parts.append(f"a sample of {selection.sample:,} (seed {selection.seed})")
    if selection.limit:
        parts.append(f"the first {selection.limit:,}")
    return " · ".join(parts) or "every case"


class CaseForm:
    """The define form's case selection.

    Attributes:
        domains: Multi-select of the dataset's domains (with their case counts).
        labels: Multi-select of its gold labels (hidden for free-text answers).
        count: How many cases (0: all of those selected).
        sample: Take `count` as a seeded random sample instead of the first ones.
        summary: What the selection selects, in words (``12 of 24 cases``).
        box: The widget holding them.
    """

    def __init__(self, *, count: int = 0, sample: bool = False):
        self.domains = w.SelectMultiple(
            description="Domains", rows=4, layout={"width": "330px"}, style={"description_width": "initial"}
        )
        self.labels = w.SelectMultiple(
            description="Gold labels",
            rows=4,
            layout={"width": "330px"},
            style={"description_width": "initial"},
        )
        self.count = w.BoundedIntText(
            value=count, min=0, max=10_000_000, description="Cases", tooltip="0: all"
        )
        self.sample = w.Checkbox(value=sample, description="random sample (seeded)", indent=False)
        self.summary = w.HTML()
        self.labels_note = w.HTML()
        self._cases: list[Any] | None = None
        self._n = 0
        hint = w.HTML(note("none chosen: all; Ctrl/⌘-click to choose several"))
        self.box = w.VBox(
            [
                w.HBox([self.domains, self.labels, self.labels_note], layout={"flex_flow": "row wrap"}),
                w.HBox([self.count, self.sample, hint]),
                self.summary,
            ]
        )
        for widget in (self.domains, self.labels, self.count, self.sample):
            widget.observe(lambda _c: self.count_selected(), names="value")

    def set_dataset(self, store: Any, ref: str | None) -> None:
        """Offer `ref`'s domains and gold labels, keeping the chosen ones it still has."""
        if not ref:
            self.domains.options, self.labels.options, self._cases = [], [], None
            self.count_selected()
            return
        info = store.datasets.get(ref)
        domains = {
            k: n for k, n in store.datasets.value_counts(info, "domain").items() if k not in (None, "")
        }
        gold = {k: n for k, n in store.datasets.value_counts(info, "expected").items() if k not in (None, "")}
        free_text = not info.label_set and (len(gold) > MAX_LABELS or len(gold) > max(info.n_cases, 1) / 2)
        keep_domains, keep_labels = set(self.domains.value), set(self.labels.value)
        self.domains.options = [(f"{d} ({n:,})", d) for d, n in domains.items()]
        self.domains.value = tuple(d for d in domains if d in keep_domains)
        self.domains.layout.display = "" if domains else "none"
        labels = {} if free_text else gold
        self.labels.options = [(f"{g} ({n:,})", g) for g, n in labels.items()]
        self.labels.value = tuple(g for g in labels if g in keep_labels)
        self.labels.layout.display = "" if labels else "none"
        self.labels_note.value = (
            note(f"{len(gold):,} distinct gold answers (free text): choose by domain or a sample")
            if free_text and gold
            else ""
        )
        self._n = info.n_cases
        self._cases = (
            store.datasets.load_cases(info, source_rows=False) if info.n_cases <= COUNTED_UP_TO else None
        )
        self.count_selected()

    def selection(self) -> dict[str, Any] | None:
        """The ``cases:`` of the experiment file (None: every case)."""
        out: dict[str, Any] = {}
        if self.domains.value:
            out["domains"] = list(self.domains.value)
        if self.labels.value:
            out["labels"] = list(self.labels.value)
        if self.count.value:
            out["sample" if self.sample.value else "limit"] = int(self.count.value)
        return out or None

    def fill(self, cases: CaseSelection | Mapping[str, Any] | None) -> None:
        """Choose what an experiment's ``cases:`` chose (for a clone)."""
        selection = as_selection(cases) or CaseSelection.model_validate({})
        self.domains.value = tuple(d for d in selection.domains or () if d in _values(self.domains))
        self.labels.value = tuple(g for g in selection.labels or () if g in _values(self.labels))
        self.sample.value = bool(selection.sample)
        self.count.value = int(selection.sample or selection.limit or 0)

    def count_selected(self) -> None:
        """Say how many cases the selection selects (as the runner will select them)."""
        chosen = self.selection()
        if self._cases is None:
            self.summary.value = note(f"cases: {selection_text(chosen)}") if self._n else ""
            return
        try:
            n = len(select_cases(self._cases, CaseSelection(**chosen) if chosen else None))
        except AbbenchError as exc:
            self.summary.value = f'<div class="abbench-warn">{escape(exc)}</div>'
            return
        self.summary.value = note(f"cases: {selection_text(chosen)} — {n:,} of {self._n:,} cases")


def _values(select: w.SelectMultiple) -> list[Any]:
    return [o[1] if isinstance(o, tuple) else o for o in select.options]

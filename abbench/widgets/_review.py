"""`ReviewWidget`: the cases worth a person's look, filtered and searched, with a detail view and review buttons."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from typing import Any

import ipywidgets as w

from abbench._text import clip
from abbench.errors import UsageError
from abbench.metrics import LOW_CONFIDENCE
from abbench.review import Disagreement, Review, add_review, disagreements, reviews, undo_review
from abbench.store import Experiment
from abbench.types import REVIEW_VERDICTS, RunState
from abbench.widgets._base import MAX_LISTED, STYLE, Choice, StoreLike, View, escape, experiment_options, note
from abbench.widgets._case import CaseDetailView
from abbench.widgets._keys import ROOT_CLASS, KeyCatcher

KIND_LABELS = {
    "gold": "gold ≠ answer",
    "low_confidence": "low confidence",
    "no_evidence": "no evidence",
    "flaky": "flaky rounds",
    "arms": "arms disagree",
    "all": "all",
}
SORTS = {
    "dataset order": "order",
    "unreviewed first": "unreviewed",
    "most wrong runs first": "wrong",
    "lowest confidence first": "confidence",
    "by domain": "domain",
}
VERDICT_LABELS = {
    "gold_correct": "gold is right",
    "model_correct": "model is right",
    "ambiguous_standard": "ambiguous standard",
    "missing_capability_info": "missing capability info",
    "unsure": "unsure",
}
WHOLE_CASE = ""
VERDICT_KEYS = {str(i): verdict for i, verdict in enumerate(REVIEW_VERDICTS, 1)}
"""Keys 1–5 give the five verdicts, in the order of `REVIEW_VERDICTS` (and of the buttons)."""
NOTE_KEY, UNDO_KEY, NEXT_KEY, PREVIOUS_KEY = "n", "u", "j", "k"
KEYS_HELP = (
    "keys: 1–5 give the verdict on the buttons · n writes a note (Esc leaves it) · u undoes your last "
    "verdict · j / k next / previous case"
)


def _wrong(d: Disagreement) -> int:
    return sum(r.outcome == RunState.FAIL for r in d.runs)


def _lowest_confidence(d: Disagreement) -> float:
    values = [r.confidence for r in d.runs if r.confidence is not None]
    return min(values) if values else 1.0


def _answers(d: Disagreement) -> str:
    by_arm: dict[str, Counter[str]] = {}
    for r in d.runs:
        if r.prediction is not None:
            by_arm.setdefault(r.arm, Counter())[r.prediction] += 1
    return " ".join(f"{arm}:{c.most_common(1)[0][0]}" for arm, c in by_arm.items())


class ReviewWidget(View):
    """Review disagreements: pick a kind, filter, sort and search, read a case, record a verdict.

    The list comes from `abbench.review.disagreements` (gold vs prediction, low confidence, no
    evidence cited, flaky across rounds, arms disagreeing); the detail from `case_detail`: a compact
    summary (input, gold, each arm's answer per round with the wrong ones marked) above the review
    buttons, the long evidence, runs and transcripts folded below them (what was opened stays open).

    It works like a labelling tool: keys 1–5 give the five verdicts, ``n`` goes to the note, ``u``
    undoes the last verdict given here (`abbench.review.undo_review`), ``j``/``k`` walk the list; a
    verdict saves a review at once (`add_review`) with the note and the arm chosen, reads the case's
    reviews again from the store (so what is shown is what was saved) and opens the next case not
    reviewed yet; "23 of 232 reviewed" counts the cases of the kind, arm and search chosen. The
    chosen experiment, case, kind and filters survive every reload: a case hidden by a filter is not
    replaced by another one, and comes back when the filter lets it through again.

    Args:
        store: The store (an open `Store`, a folder, or None to find the notebook's store).
        experiment: The experiment to review (id, ``#id`` or name; default: none chosen).
        kind: The kind listed first: one of `abbench.review.DISAGREEMENT_KINDS` or ``"all"``.
        case: A case to open at once.
        threshold: Confidence below which an answer counts as low-confidence.

    Attributes:
        experiment: The experiment shown.
        items: Every case listed for review (all kinds), as `Disagreement` values.
        shown: The cases the list shows now (after kind, arm, review state and search).
        detail: The `CaseDetailView` of the chosen case.
        shortcuts: The `KeyCatcher` (``shortcuts.press("1")`` does what the key does in the browser).
        saved: The reviews saved from this widget and not undone, oldest first.
    """

    def __init__(
        self,
        store: StoreLike = None,
        *,
        experiment: int | str | None = None,
        kind: str = "gold",
        case: str | None = None,
        threshold: float = LOW_CONFIDENCE,
        **kwargs: Any,
    ):
        super().__init__(store, **kwargs)
        if kind not in KIND_LABELS:
            raise UsageError(f"unknown kind {kind!r}; choose one of {', '.join(KIND_LABELS)}")
        self.experiment: Experiment | None = None
        self.items: list[Disagreement] = []
        self.shown: list[Disagreement] = []
        self.saved: list[Review] = []
        self.threshold = threshold

        self.chooser = Choice("Experiment", on_select=self.guard("choosing an experiment", self._chosen))
        self.chooser.widget.layout.width = "560px"
        self.reload_button = self.button("Reload", self.reload, tooltip="read the cases and reviews again")
        self._list_controls(kind, threshold)
        self.detail = CaseDetailView(self.store, with_summary=False)
        review_box = self._review_panel()
        self.add_class(ROOT_CLASS)
        self.children = [
            w.HTML(STYLE),
            w.HBox([self.chooser.widget, self.reload_button]),
            self.kind,
            w.HBox([self.arm.widget, self.state, self.sort]),
            self.search,
            self.count_html,
            self.cases.widget,
            review_box,
            self.errors,
            self.detail,
        ]
        self.guard("listing experiments", self._list_experiments)()
        if experiment is not None:
            self.guard("choosing an experiment", self.select_experiment)(experiment)
        if case is not None:
            self.guard("opening a case", self.select_case)(case)
        self._show_review_panel()

    def _list_controls(self, kind: str, threshold: float) -> None:
        """The kind, arm, review state, search and sort that choose the cases listed, and the list."""
        self.kind = w.ToggleButtons(options=[(label, k) for k, label in KIND_LABELS.items()], value=kind)
        self.kind.style.button_width = "170px"
        self.kind.tooltips = [
            "the answer was graded wrong (disagrees with the gold)",
            f"the answer's confidence is below {threshold}",
            "an arm with a skill cited none of it",
            "an arm was right in some rounds and wrong in others",
            "the arms answer differently, or one is right where another is wrong",
            "every case listed for any reason",
        ]
        self.arm = Choice("Arm", on_select=lambda _v: self.guard("filtering", self.refilter)())
        self.state = w.Dropdown(
            options=[("any", "any"), ("not reviewed", "open"), ("reviewed", "done")],
            value="any",
            description="Reviewed",
        )
        self.search = w.Text(description="Search", placeholder="case id, words of the input, a prediction")
        self.sort = w.Dropdown(options=list(SORTS.items()), value="order", description="Sort")
        self._relabelling = False
        for widget in (self.kind, self.state, self.search, self.sort):
            self.on_change(widget, lambda _v: None if self._relabelling else self.refilter())
        self.count_html = w.HTML()
        self.cases = Choice(kind=w.Select, on_select=self.guard("opening a case", self._case_chosen), rows=8)
        self.cases.widget.layout.width = "100%"

    def _review_panel(self) -> Any:
        """The chosen case's summary with the verdict buttons, the note, undo and the keys."""
        self.progress_html = w.HTML()
        self.review_arm = w.Dropdown(description="About", layout={"width": "320px"})
        self.note = w.Textarea(
            placeholder="note: what you saw, what should change (key n; Esc leaves the box)",
            layout={"width": "640px", "height": "52px"},
        )
        self.note.add_class("abbench-review-note")
        self.verdict_buttons = {
            verdict: self.button(
                f"{key} · {VERDICT_LABELS[verdict]}",
                partial(self.save, verdict),
                tooltip=f"{verdict} (key {key})",
                layout={"width": "auto"},
            )
            for key, verdict in VERDICT_KEYS.items()
        }
        self.advance = w.Checkbox(
            value=True, description="then open the next case not reviewed", indent=False
        )
        self.undo_button = self.button(
            "Undo", self.undo, icon="undo", tooltip="take back your last verdict (key u)"
        )
        self.previous_button = self.button("Previous", self.previous_case, icon="arrow-up", tooltip="key k")
        self.next_button = self.button("Next case", self.next_case, icon="arrow-down", tooltip="key j")
        self.saved_html = w.HTML()
        self.shortcuts = KeyCatcher(fields={NOTE_KEY: ".abbench-review-note textarea"})
        self.shortcuts.on_field(NOTE_KEY, partial(setattr, self.note, "value"))
        for key, verdict in VERDICT_KEYS.items():
            self.shortcuts.on_key(key, self.guard(f"saving {verdict}", partial(self.save, verdict)))
        self.shortcuts.on_key(UNDO_KEY, self.guard("undoing", self.undo))
        self.shortcuts.on_key(NEXT_KEY, self.guard("next case", self.next_case))
        self.shortcuts.on_key(PREVIOUS_KEY, self.guard("previous case", self.previous_case))
        return w.VBox(
            [
                w.HBox(
                    [w.HTML("<b>Your review</b>&nbsp;"), self.progress_html, self.shortcuts],
                    layout={"align_items": "center", "grid_gap": "8px"},
                ),
                self.detail.summary_html,
                w.HBox([self.review_arm, self.advance]),
                self.note,
                w.HBox(list(self.verdict_buttons.values())),
                w.HBox([self.undo_button, self.previous_button, self.next_button]),
                self.saved_html,
                w.HTML(note(KEYS_HELP)),
            ]
        )

    # -- lists -----------------------------------------------------------------------------------------

    def _list_experiments(self) -> None:
        self.chooser.set_options(experiment_options(self.store))

    def select_experiment(self, ref: int | str | Experiment) -> None:
        """Review an experiment, as choosing it in the list does."""
        self.chooser.select_listed(self.store.get_experiment(ref).id, self._list_experiments)

    def select_case(self, case_id: str) -> None:
        """Open a case, as clicking it in the list does (it waits for a filter that hides it)."""
        self.cases.select(case_id)
        if self.cases.missing is not None:
            self._case_chosen(None)

    def _chosen(self, value: Any) -> None:
        self.experiment = self.store.get_experiment(value) if value else None
        self.reload()

    def reload(self) -> None:
        """Read the experiments, the cases to review and their reviews again, keeping every choice made."""
        self._list_experiments()
        if self.chooser.missing is not None:
            self.experiment = None
        if self.experiment is None:
            self.items = []
        else:
            self.experiment = self.store.get_experiment(self.experiment.id)
            self.items = disagreements(self.experiment.id, "all", store=self.store, threshold=self.threshold)
            self.arm.set_options([("any arm", ""), *((a.name, a.name) for a in self.experiment.arms)])
            if self.arm.intended is None:
                self.arm.select("", notify=False)
        counts = Counter(k for d in self.items for k in d.kinds)
        with self._quiet_kind():
            self.kind.options = [
                (f"{label} ({len(self.items) if k == 'all' else counts.get(k, 0)})", k)
                for k, label in KIND_LABELS.items()
            ]
        self.refilter(reopen=True)

    @contextmanager
    def _quiet_kind(self) -> Iterator[None]:
        # Relabelling the toggle must keep its value (ipywidgets resets it to the first option) and must
        # not refilter half way.
        value = self.kind.value
        self._relabelling = True
        try:
            yield
        finally:
            self.kind.value = value
            self._relabelling = False

    def refilter(self, *, reopen: bool = False) -> None:
        """Apply the kind, arm, review state, search and sort to the cases, keeping the chosen case.

        Args:
            reopen: Read the chosen case's detail again even when the choice did not change (after a reload).
        """
        kind, arm, state = self.kind.value, self.arm.value, self.state.value
        words = self.search.value.strip().casefold()
        shown = []
        for d in self.items:
            if kind != "all" and kind not in d.kinds:
                continue
            if arm and arm not in d.arms:
                continue
            if state != "any" and bool(d.reviews) != (state == "done"):
                continue
            if words and not self._matches(d, words):
                continue
            shown.append(d)
        order = self.sort.value
        if order == "unreviewed":
            shown.sort(key=lambda d: bool(d.reviews))
        elif order == "wrong":
            shown.sort(key=lambda d: -_wrong(d))
        elif order == "confidence":
            shown.sort(key=_lowest_confidence)
        elif order == "domain":
            shown.sort(key=lambda d: d.case.domain or "")
        self.shown = shown
        pool = [d for d in self.items if (kind == "all" or kind in d.kinds) and (not arm or arm in d.arms)]
        if words:
            pool = [d for d in pool if self._matches(d, words)]
        done = sum(bool(d.reviews) for d in pool)
        self.progress_html.value = (
            f"<b>{done:,} of {len(pool):,} reviewed</b>"
            + (" · all done" if pool and done == len(pool) else "")
            + f" <span class='abbench-muted'>({escape(KIND_LABELS[kind])})</span>"
        )
        before = self.cases.value
        self.cases.set_options([(self._label(d), d.case_id) for d in shown[:MAX_LISTED]])
        kinds_note = "" if kind == "all" else f" ({KIND_LABELS[kind]})"
        self.count_html.value = note(f"{len(shown):,} of {len(self.items):,} cases listed{kinds_note}")
        if len(shown) > MAX_LISTED:
            self.count_html.value += note(
                f"the list holds the first {MAX_LISTED:,}: search or filter to reach the others"
            )
        if self.cases.missing is not None:
            self.count_html.value += note(
                f"{self.cases.missing} (your choice) is not in this list; change the filters to see it again",
                "warn",
            )
        if reopen or self.cases.value != before or self.detail.case_id != self.cases.value:
            self._case_chosen(self.cases.value)

    @staticmethod
    def _matches(d: Disagreement, words: str) -> bool:
        return any(
            words in str(text).casefold()
            for text in (
                d.case_id,
                d.case.input,
                d.case.expected,
                d.case.domain,
                *(r.prediction for r in d.runs),
            )
        )

    def _label(self, d: Disagreement) -> str:
        reviewed = ", ".join(f"{r.arm or 'case'}={r.verdict}" for r in d.reviews)
        text = clip(d.case.input, 40)
        return f"{d.case_id} · {d.case.domain or '—'} · gold {d.case.expected} · {_answers(d)} · {text}" + (
            f" · reviewed {reviewed}" if reviewed else ""
        )

    # -- the case --------------------------------------------------------------------------------------

    @property
    def case(self) -> Disagreement | None:
        """The chosen case, as listed."""
        for d in self.shown:
            if d.case_id == self.cases.value:
                return d
        return None

    def _case_chosen(self, case_id: Any) -> None:
        if not case_id or self.experiment is None:
            self.detail.clear("choose a case in the list" if self.items else "no case to review")
        else:
            self.detail.show([(self.experiment, None)], case_id)
        self._show_review_panel()

    def _show_review_panel(self) -> None:
        d = self.case
        arms = list(d.arms) if d is not None else []
        options = [("the case as a whole", WHOLE_CASE), *((f"arm {a}", a) for a in arms)]
        current = self.review_arm.value
        self.review_arm.options = options
        # The arm the person chose stays chosen from case to case while the case has it.
        self.review_arm.value = current if current in [v for _, v in options] else WHOLE_CASE
        for button in self.verdict_buttons.values():
            button.disabled = d is None
        self.undo_button.disabled = not self.saved
        if d is not None and d.reviews:
            self.saved_html.value = "".join(
                note(f"saved: {r.arm or 'case'} → {r.verdict}" + (f" — {r.note}" if r.note else ""), "ok")
                for r in d.reviews
            )
        else:
            self.saved_html.value = ""

    def next_case(self) -> None:
        """Open the case after the chosen one in the list."""
        self._step(1)

    def previous_case(self) -> None:
        """Open the case before the chosen one in the list."""
        self._step(-1)

    def _step(self, by: int) -> None:
        ids = self.cases.values
        if not ids:
            raise UsageError("the list is empty")
        at = ids.index(self.cases.value) + by if self.cases.value in ids else (0 if by > 0 else len(ids) - 1)
        self.cases.select(ids[max(0, min(at, len(ids) - 1))])

    def _next_unreviewed(self, case_id: str) -> str | None:
        """The first case after `case_id` in the list (going round) that has no review yet."""
        listed = self.shown[:MAX_LISTED]
        ids = [d.case_id for d in listed]
        start = ids.index(case_id) + 1 if case_id in ids else 0
        for d in listed[start:] + listed[:start]:
            if d.case_id != case_id and not d.reviews:
                return d.case_id
        return None

    def _reread(self, case_id: str) -> None:
        """Read one case's reviews again from the store (the rest of the list is unchanged by a review)."""
        assert self.experiment is not None
        latest = tuple(reviews(self.experiment.id, store=self.store, case_id=case_id))
        self.items = [replace(d, reviews=latest) if d.case_id == case_id else d for d in self.items]

    def save(self, verdict: str) -> Review:
        """Save a review of the chosen case (arm and note from the form), show it again from the store,
        and open the next case not reviewed yet (unless that is switched off)."""
        d = self.case
        if d is None or self.experiment is None:
            raise UsageError("choose a case in the list first")
        arm = self.review_arm.value or None
        review = add_review(
            self.experiment.id,
            d.case_id,
            verdict,
            note=self.note.value.strip() or None,
            arm=arm,
            store=self.store,
        )
        self.saved.append(review)
        self.note.value = ""
        target = self._next_unreviewed(d.case_id) if self.advance.value else d.case_id
        self._reread(d.case_id)
        self.refilter()
        self.cases.select(target or d.case_id)
        if self.advance.value:
            what = f"saved {d.case_id}: {review.arm or 'case'} → {verdict}"
            self.saved_html.value += note(
                what + (f"; now {target}" if target else "; every listed case is reviewed"), "ok"
            )
        self.shortcuts.refocus()
        return review

    def undo(self) -> Review | None:
        """Take back the last verdict given in this widget (`undo_review`) and go back to its case.

        Returns:
            The review of that case and arm now in force, if any.

        Raises:
            UsageError: nothing to undo, or the case was reviewed again since (by anyone).
        """
        if not self.saved or self.experiment is None:
            raise UsageError("nothing to undo: no verdict was given in this widget yet")
        review = self.saved[-1]
        before = undo_review(review, store=self.store)
        self.saved.pop()
        self._reread(review.case_id)
        self.refilter()
        self.cases.select(review.case_id)
        arms = [v for _, v in self.review_arm.options]
        self.review_arm.value = review.arm if review.arm in arms else WHOLE_CASE
        self.note.value = review.note or ""
        self.saved_html.value += note(
            f"undone: {review.case_id} {review.arm or 'case'} → {review.verdict}"
            + (f" (in force again: {before.verdict})" if before else ""),
            "warn",
        )
        self.undo_button.disabled = not self.saved
        self.shortcuts.refocus()
        return before

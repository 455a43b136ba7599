"""`ReviewWidget`: the cases worth a person's look, filtered and searched, with a detail view and review buttons."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import ipywidgets as w

from abbench._text import clip
from abbench.errors import UsageError
from abbench.formatting import plural
from abbench.review import (
    Disagreement,
    DisagreementPage,
    Review,
    ReviewAssignment,
    add_review,
    assign_review,
    corrected_accuracy,
    disagreement_page,
    draw_review_sample,
    low_confidence_threshold,
    review_assignments,
    undo_review,
    visible_reviews,
)
from abbench.store import Experiment, current_user
from abbench.types import REVIEW_VERDICTS
from abbench.widgets._base import STYLE, Choice, StoreLike, View, escape, experiment_options, note
from abbench.widgets._case import CaseDetailView
from abbench.widgets._keys import ROOT_CLASS, KeyCatcher

KIND_LABELS = {
    "gold": "gold ≠ answer",
    "low_confidence": "low confidence",
    "no_evidence": "no evidence",
    "flaky": "flaky rounds",
    "arms": "arms disagree",
    "sample": "random sample",
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
PAGE_SIZE = 100
"""Cases the list shows at a time; the pager turns to the others."""
KEYS_HELP = (
    "keys: 1–5 give the verdict on the buttons · n writes a note (Esc leaves it) · u undoes your last "
    "verdict · j / k next / previous case"
)


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
        threshold: Confidence below which an answer counts as low-confidence (default: halfway
            between chance and certainty for the experiment's labels, 0.75 for two; the *Low conf. <*
            box changes it, and the count says which threshold it used).
        reviewer: Who reviews (default: $ABBENCH_USER, else the OS user). A case assigned to them for a
            blind second review shows them no other reviewer's verdict; *Assign* gives the chosen case
            to another reviewer for one.

    The list is read a page at a time (`abbench.review.disagreement_page`, `PAGE_SIZE` cases): kind,
    arm, review state, search and sort are applied by the store, the pager turns the pages ("page 3
    of 120"), and walking past a page's end (``j``, "next case", the advance after a verdict) turns
    to the next one, so a 100,000-case experiment opens as fast as a small one.

    Attributes:
        experiment: The experiment shown.
        page: The `DisagreementPage` shown: its cases, the total, every listed case id, the counts.
        shown: The cases of the page shown (after kind, arm, review state, search and sort).
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
        threshold: float | None = None,
        reviewer: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(store, **kwargs)
        self.reviewer = reviewer or current_user()
        """Who reviews here: their verdicts are recorded under this name, and a case assigned to them for
        a second review (`abbench.review.assign_review`) shows no other reviewer's verdict."""
        if kind not in KIND_LABELS:
            raise UsageError(f"unknown kind {kind!r}; choose one of {', '.join(KIND_LABELS)}")
        self.experiment: Experiment | None = None
        self.page: DisagreementPage | None = None
        self.shown: list[Disagreement] = []
        self.saved: list[Review] = []
        self._held: Disagreement | None = None
        self.chosen_threshold = threshold
        """The threshold the person chose (None: the default for the experiment's labels)."""

        self.chooser = Choice("Experiment", on_select=self.guard("choosing an experiment", self._chosen))
        self.chooser.widget.layout.width = "560px"
        self.reload_button = self.button("Reload", self.reload, tooltip="read the cases and reviews again")
        self._list_controls(kind)
        self.detail = CaseDetailView(self.store, with_summary=False)
        review_box = self._review_panel()
        sample_box = self._sample_panel()
        self.add_class(ROOT_CLASS)
        self.children = [
            w.HTML(STYLE),
            w.HBox([self.chooser.widget, self.reload_button]),
            self.kind,
            w.HBox([self.arm.widget, self.state, self.sort]),
            w.HBox([self.threshold_box, self.default_threshold_button, self.threshold_html]),
            self.search,
            sample_box,
            self.count_html,
            w.HBox([self.previous_page_button, self.page_html, self.next_page_button]),
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

    def _list_controls(self, kind: str) -> None:
        """The kind, arm, review state, search and sort that choose the cases listed, and the list."""
        self.kind = w.ToggleButtons(options=[(label, k) for k, label in KIND_LABELS.items()], value=kind)
        self.kind.style.button_width = "170px"
        self.kind.tooltips = [
            "the answer was graded wrong (disagrees with the gold)",
            "the answer's confidence is below the threshold (Low conf. <)",
            "an arm with a skill cited none of it",
            "an arm was right in some rounds and wrong in others",
            "the arms answer differently, or one is right where another is wrong",
            "the runs of the latest random review sample (draw one below): what corrects the judge",
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
        for widget in (self.kind, self.state, self.search):
            self.on_change(widget, lambda _v: None if self._relabelling else self.refilter())
        # A new order starts at its first page; the chosen case stays chosen (and open) wherever it went.
        self.on_change(self.sort, lambda _v: self.refilter(page=1))
        self.count_html = w.HTML()
        self._threshold_controls()
        self.cases = Choice(kind=w.Select, on_select=self.guard("opening a case", self._case_chosen), rows=8)
        self.cases.widget.layout.width = "100%"
        self.page_html = w.HTML()
        self.previous_page_button = self.button(
            "Previous page", self.previous_page, icon="chevron-left", tooltip="the cases before these"
        )
        self.next_page_button = self.button(
            "Next page", self.next_page, icon="chevron-right", tooltip="the cases after these"
        )

    def _threshold_controls(self) -> None:
        """The low-confidence threshold: a box, a button back to the default, and what it means."""
        self.threshold_box = w.BoundedFloatText(
            value=0.5, min=0.0, max=1.0, step=0.05, description="Low conf. <", layout={"width": "190px"}
        )
        self.threshold_box.add_class("abbench-threshold")
        self.default_threshold_button = self.button(
            "Default", self.use_default_threshold, tooltip="halfway between chance (1/k) and certainty"
        )
        self.threshold_html = w.HTML()
        self._threshold = 0.5
        self.on_change(self.threshold_box, self._threshold_typed)

    def _threshold_typed(self, value: float) -> None:
        if self._relabelling:
            return
        self.chosen_threshold = float(value)
        self.refilter()

    def use_default_threshold(self) -> None:
        """Go back to the default threshold for the experiment's labels."""
        self.chosen_threshold = None
        self.refilter()

    @property
    def threshold(self) -> float:
        """The low-confidence threshold in force (chosen, or the default for the experiment's labels); the
        box shows it to three places (a default of 2/3 reads 0.667, as the count's words say it)."""
        return self._threshold

    def _show_threshold(self) -> str:
        """Put the threshold in force in the box (quietly) and say what it is; returns the words."""
        if self.experiment is None:
            self.threshold_html.value = ""
            return ""
        found = low_confidence_threshold(self.experiment, self.chosen_threshold, store=self.store)
        self._threshold = found.threshold
        self._relabelling = True
        try:
            self.threshold_box.value = round(found.threshold, 3)
        finally:
            self._relabelling = False
        self.default_threshold_button.disabled = not found.chosen
        self.threshold_html.value = note(f"low confidence: {found.text}")
        return found.text

    def _sample_panel(self) -> Any:
        """Draw a seeded random sample of judged runs to review, and the judge's accuracy it corrects."""
        self.sample_size = w.BoundedIntText(value=100, min=1, max=1_000_000, description="Sample")
        self.sample_seed = w.IntText(value=0, description="Seed")
        self.sample_button = self.button(
            "Draw random sample", self.draw_sample, tooltip="a seeded random sample of judged runs to review"
        )
        self.sample_html = w.HTML()
        return w.VBox([w.HBox([self.sample_size, self.sample_seed, self.sample_button]), self.sample_html])

    def draw_sample(self) -> None:
        """Draw and record a random sample (of the arm filtered on, or of every arm) and list its cases."""
        if self.experiment is None:
            raise UsageError("choose an experiment first")
        draw_review_sample(
            self.experiment.id, int(self.sample_size.value), seed=int(self.sample_seed.value),
            arm=self.arm.value or None, store=self.store,
        )  # fmt: skip
        # The sample's cases listed once: the kind set quietly, then one read of the list (not two).
        self._relabelling = True
        try:
            self.kind.value = "sample"
        finally:
            self._relabelling = False
        self._sample_text()
        self.refilter(reopen=True)

    def _sample_text(self) -> None:
        """The latest sample and, per arm, the judge's accuracy corrected by the people's verdicts on it."""
        exp = self.experiment
        samples = self.store.reviews.samples(exp.id) if exp is not None else []
        if exp is None or not samples:
            self.sample_html.value = note(
                "a random sample of judged runs, once reviewed, corrects the judge's accuracy "
                "(prediction-powered inference); reviews of disagreements cannot, they are not random"
            )
            return
        lines = [figure.text for figure in corrected_accuracy(exp.id, store=self.store)]
        self.sample_html.value = "".join(note(line) for line in lines)

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
        self.blind_html = w.HTML()
        self.second_reviewer = w.Text(placeholder="second reviewer", layout={"width": "200px"})
        self.assign_button = self.button(
            "Assign for a blind review",
            self.assign,
            icon="user-plus",
            tooltip="give this case (the arm chosen) to a second reviewer, who will not see your verdict",
        )
        self.shortcuts = KeyCatcher(fields={NOTE_KEY: ".abbench-review-note textarea"})
        self.shortcuts.bind_field(NOTE_KEY, self.note)
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
                self.blind_html,
                w.HBox([self.second_reviewer, self.assign_button]),
                w.HTML(note(KEYS_HELP)),
            ]
        )

    # -- lists -----------------------------------------------------------------------------------------

    def _list_experiments(self) -> None:
        self.chooser.set_options(experiment_options(self.store))

    def select_experiment(self, ref: int | str | Experiment) -> None:
        """Review an experiment, as choosing it in the list does."""
        self.chooser.select_listed(self.store.experiments.get(ref).id, self._list_experiments)

    def select_case(self, case_id: str) -> None:
        """Open a case, as clicking it in the list does, on the page holding it (it waits for a filter
        that hides it)."""
        self.open_listed(case_id)
        if self.cases.missing is not None:
            self._case_chosen(None)

    def _chosen(self, value: Any) -> None:
        self.experiment = self.store.experiments.get(value) if value else None
        self.reload()

    def reload(self) -> None:
        """Read the experiments, the cases to review and their reviews again, keeping every choice made."""
        self._list_experiments()
        if self.chooser.missing is not None:
            self.experiment = None
        if self.experiment is not None:
            self.experiment = self.store.experiments.get(self.experiment.id)
            self.arm.set_options([("any arm", ""), *((a.name, a.name) for a in self.experiment.arms)])
            if self.arm.intended is None:
                self.arm.select("", notify=False)
        self._sample_text()
        self.refilter(reopen=True, page=self.page_number)

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

    def _fetch(self, page: int) -> DisagreementPage | None:
        """One page of the list as the kind, arm, review state, search and sort choose it (from the store)."""
        if self.experiment is None:
            return None
        state = self.state.value
        return disagreement_page(
            self.experiment.id, "sample" if self.kind.value == "sample" else self.kind.value,
            store=self.store, offset=(max(page, 1) - 1) * PAGE_SIZE, limit=PAGE_SIZE,
            arm=self.arm.value or None, reviewed=None if state == "any" else state == "done",
            search=self.search.value.strip() or None, sort=self.sort.value, sample=True,
            threshold=self.chosen_threshold,
        )  # fmt: skip

    def refilter(self, *, reopen: bool = False, page: int | None = None) -> None:
        """Apply the kind, arm, review state, search and sort to the cases, keeping the chosen case.

        The list shows one page (`PAGE_SIZE` cases) read from the store; the page shown is `page`,
        or else the one holding the chosen case, or else the first.

        Args:
            reopen: Read the chosen case's detail again even when the choice did not change (after a reload).
            page: The page to show (from 1; clamped to the pages there are).
        """
        found = self._fetch(page or 1)
        wanted = self.cases.intended
        if found is not None and page is None and wanted is not None:
            at = found.page_of(wanted)
            if at is not None and at != found.page:
                found = self._fetch(at)
        if found is not None and found.offset >= found.total > 0:  # past the end: the last page
            found = self._fetch(found.pages)
        self.page = found
        self.shown = list(found.items) if found is not None else []
        self._show_counts(found)
        self.cases.set_options([(self._label(d), d.case_id) for d in self.shown])
        self._show_pager(found)
        if self.cases.missing is not None and (found is None or found.page_of(self.cases.missing) is None):
            self.count_html.value += note(
                f"{self.cases.missing} (your choice) is not in this list; change the filters to see it again",
                "warn",
            )
        chosen = self.chosen_case_id
        if chosen is not None and chosen != self.cases.value:  # listed on another page: it stays open
            self._held = self._held if self._held is not None and self._held.case_id == chosen else None
        if reopen or self.detail.case_id != chosen:
            self._case_chosen(chosen)
        else:
            self._show_review_panel()

    def _show_counts(self, found: DisagreementPage | None) -> None:
        """The kind buttons' numbers, the "23 of 232 reviewed" counter and how many cases are listed."""
        kind = self.kind.value
        counts = found.counts if found is not None else {}
        below = self._show_threshold()
        with self._quiet_kind():
            self.kind.options = [
                (f"{label}{f' < {self.threshold:.3g}' if k == 'low_confidence' and below else ''} "
                 f"({counts.get(k, 0):,})", k)
                for k, label in KIND_LABELS.items()
            ]  # fmt: skip
        done, pool = (found.done, found.pool) if found is not None else (0, 0)
        self.progress_html.value = (
            f"<b>{done:,} of {pool:,} reviewed</b>"
            + (" · all done" if pool and done == pool else "")
            + f" <span class='abbench-muted'>({escape(KIND_LABELS[kind])})</span>"
        )
        kinds_note = "" if kind == "all" else f" ({KIND_LABELS[kind]})"
        total = found.total if found is not None else 0
        self.count_html.value = note(f"{total:,} of {counts.get('all', 0):,} cases listed{kinds_note}") + (
            note(f"low confidence: {below}") if below and kind in ("low_confidence", "all") else ""
        )

    def _show_pager(self, found: DisagreementPage | None) -> None:
        if found is None or not found.total:
            self.page_html.value = ""
            first = last = 0
        else:
            first, last = found.offset + 1, found.offset + len(found.items)
            self.page_html.value = note(
                f"page {found.page:,} of {found.pages:,} · cases {first:,}–{last:,} of {found.total:,}"
            )
        self.previous_page_button.disabled = found is None or found.page <= 1
        self.next_page_button.disabled = found is None or found.page >= found.pages

    @property
    def page_number(self) -> int | None:
        """The page shown, from 1 (None before a list is read)."""
        return self.page.page if self.page is not None else None

    def next_page(self) -> None:
        """Show the next page of the list."""
        self.go_to_page((self.page_number or 1) + 1)

    def previous_page(self) -> None:
        """Show the page before."""
        self.go_to_page((self.page_number or 1) - 1)

    def go_to_page(self, number: int) -> None:
        """Show page `number` (from 1; clamped to the pages there are); the chosen case stays chosen."""
        pages = self.page.pages if self.page is not None else 1
        self.refilter(page=max(1, min(int(number), pages)))

    def _label(self, d: Disagreement) -> str:
        reviewed = ", ".join(f"{r.arm or 'case'}={r.verdict}" for r in d.reviews)
        # the input alone can mislead ("the third one"): say that it answers earlier turns
        turns = len(d.case.turns)
        text = (f"after {plural(turns, 'turn')}: " if turns else "") + clip(d.case.input, 40)
        return f"{d.case_id} · {d.case.domain or '—'} · gold {d.case.expected} · {_answers(d)} · {text}" + (
            f" · reviewed {reviewed}" if reviewed else ""
        )

    @property
    def items(self) -> list[Disagreement]:
        """The cases of the page shown (as `shown`)."""
        return self.shown

    # -- the case --------------------------------------------------------------------------------------

    @property
    def chosen_case_id(self) -> str | None:
        """The chosen case: selected on the page shown, or listed on another page (after a sort or a
        turn of the page it stays chosen, and its detail stays open)."""
        if self.cases.value is not None:
            return str(self.cases.value)
        missing = self.cases.missing
        if missing is not None and self.page is not None and self.page.page_of(missing) is not None:
            return str(missing)
        return None

    @property
    def case(self) -> Disagreement | None:
        """The chosen case, as listed (on the page shown, or as it was listed when it was chosen)."""
        chosen = self.chosen_case_id
        for d in self.shown:
            if d.case_id == chosen:
                self._held = d
                return d
        return self._held if self._held is not None and self._held.case_id == chosen else None

    def _case_chosen(self, case_id: Any) -> None:
        self.detail.blind_for = self._blind_for(case_id)
        if not case_id or self.experiment is None:
            self.detail.clear("choose a case in the list" if self.shown else "no case to review")
        else:
            self.detail.show([(self.experiment, None)], case_id)
        self._show_review_panel()

    def _show_review_panel(self) -> None:
        d = self.case
        # Every arm that ran the case: a reviewer may judge any answer, not only the kinds' arms.
        ran = {r.arm for r in d.runs} if d is not None else set()
        arms = [a.name for a in self.experiment.arms if a.name in ran] if self.experiment is not None else []
        options = [("the case as a whole", WHOLE_CASE), *((f"arm {a}", a) for a in arms)]
        current = self.review_arm.value
        self.review_arm.options = options
        # The arm the person chose stays chosen from case to case while the case has it.
        self.review_arm.value = current if current in [v for _, v in options] else WHOLE_CASE
        for button in self.verdict_buttons.values():
            button.disabled = d is None
        self.undo_button.disabled = not self.saved
        blind = d is not None and self._blind_for(d.case_id) is not None
        shown = (
            visible_reviews(self.experiment.id, d.case_id, self.reviewer, store=self.store)
            if d is not None and self.experiment is not None and blind
            else (d.reviews if d is not None else [])
        )
        if shown:
            self.saved_html.value = "".join(
                note(f"saved: {r.arm or 'case'} → {r.verdict}" + (f" — {r.note}" if r.note else ""), "ok")
                for r in shown
            )
        else:
            self.saved_html.value = ""
        self.blind_html.value = (
            note(f"blind second review for {self.reviewer}: other reviewers' verdicts are hidden", "warn")
            if blind
            else ""
        )
        self.assign_button.disabled = d is None

    def next_case(self) -> None:
        """Open the case after the chosen one in the list."""
        self._step(1)

    def previous_case(self) -> None:
        """Open the case before the chosen one in the list."""
        self._step(-1)

    def _step(self, by: int) -> None:
        ids = list(self.page.case_ids) if self.page is not None else []
        if not ids:
            raise UsageError("the list is empty")
        current = self.cases.value if self.cases.value is not None else self.cases.intended  # on another page
        at = ids.index(current) + by if current in ids else (0 if by > 0 else len(ids) - 1)
        self.open_listed(ids[max(0, min(at, len(ids) - 1))])

    def open_listed(self, case_id: str) -> None:
        """Open a case of the list, turning to the page that holds it."""
        at = self.page.page_of(case_id) if self.page is not None else None
        if at is not None and at != self.page_number:
            self.cases.select(case_id, notify=False)
            self.refilter(page=at)
        self.cases.select(case_id)

    def _next_unreviewed(self, case_id: str) -> str | None:
        """The first case after `case_id` in the list (going round, over every page) with no review yet."""
        if self.page is None:
            return None
        ids, done = list(self.page.case_ids), self.page.reviewed_ids
        start = ids.index(case_id) + 1 if case_id in ids else 0
        for other in ids[start:] + ids[:start]:
            if other != case_id and other not in done:
                return other
        return None

    def _blind_for(self, case_id: Any) -> str | None:
        """This widget's reviewer, when `case_id` is assigned to them for a blind second review."""
        if not case_id or self.experiment is None:
            return None
        mine = review_assignments(self.experiment.id, reviewer=self.reviewer, store=self.store)
        return self.reviewer if any(a.case_id == case_id for a in mine) else None

    def assign(self, reviewer: str | None = None) -> ReviewAssignment:
        """Give the chosen case (the arm chosen under *About*) to `reviewer` (default: the name typed) for
        a blind second review (`abbench.review.assign_review`)."""
        d = self.case
        if d is None or self.experiment is None:
            raise UsageError("choose a case in the list first")
        name = (reviewer or self.second_reviewer.value).strip()
        if not name:
            raise UsageError("type the second reviewer's name first")
        if name == self.reviewer:
            raise UsageError(f"{name} is reviewing here already: a second review needs another person")
        made = assign_review(
            self.experiment.id, d.case_id, name, arm=self.review_arm.value or None, store=self.store
        )
        self.saved_html.value += note(f"assigned {d.case_id} to {name} for a blind second review", "ok")
        return made

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
            reviewer=self.reviewer,
            store=self.store,
        )
        self.saved.append(review)
        self.note.value = ""
        target = self._next_unreviewed(d.case_id) if self.advance.value else d.case_id
        self.refilter()
        self._sample_text()
        self.open_listed(target or d.case_id)
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
        self.refilter()
        self.open_listed(review.case_id)
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

"""`CasesWidget`: every case of an experiment — each arm's outcome per round — filtered, sorted, paged, exported."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import ipywidgets as w

from abbench._text import clip
from abbench.errors import UsageError
from abbench.export import write_csv, write_xlsx
from abbench.formatting import plural
from abbench.review import (
    CASE_OUTCOMES,
    DISAGREEMENT_KINDS,
    CasePage,
    CaseRow,
    CaseRun,
    case_page,
    case_table,
)
from abbench.store import CASE_SORTS, Experiment
from abbench.types import outcome_word
from abbench.widgets._base import (
    NONE,
    STYLE,
    Choice,
    StoreLike,
    View,
    escape,
    experiment_options,
    html_table,
    note,
)
from abbench.widgets._case import CaseDetailView

PAGE_SIZE = 50
"""Cases the table shows at a time; the pager turns to the others."""
INPUT_SHOWN = 60
"""Characters of a case's input shown in the table (the case drawer shows all of it)."""
ANY = "\x00any"
"""The filters' value for "no filter" (no domain or gold holds a NUL; "" is "none")."""
SORT_LABELS = {
    "order": "dataset order",
    "case_id": "case id",
    "domain": "domain",
    "gold": "gold",
    "wrong": "most wrong runs",
}
KIND_WORDS = {
    "gold": "answer ≠ gold",
    "low_confidence": "low confidence",
    "no_evidence": "no evidence",
    "flaky": "flaky across rounds",
    "arms": "arms disagree",
}
EXPORT_FORMATS = ("csv", "xlsx")

_MARKS = {
    "pass": ("✓", "color:#1a6b1a"),
    "fail": ("✗", "color:#a40000;background:#fde8e8;font-weight:600"),
    "execution_failed": ("⚠", "color:#8a5a00;background:#fff4dc"),
    "grading_failed": ("⚠", "color:#8a5a00;background:#fff4dc"),
    "cancelled": ("–", "color:#777"),
    "scored": ("•", "color:#555"),
    "unfinished": ("…", "color:#777"),
}


def _mark(run: CaseRun | None) -> str:
    """One run as a table cell (escaped HTML): ✓/✗ and the answer, the outcome word as its tooltip."""
    if run is None:
        return f'<span title="no run" class="abbench-muted">{NONE}</span>'
    mark, style = _MARKS.get(run.outcome, ("?", "color:#777"))
    answer = "" if run.answer is None else f" {escape(clip(str(run.answer), 24))}"
    return f'<span style="{style}" title="{escape(run.word)}">{mark}{answer}</span>'


def _marks_text(runs: tuple[CaseRun | None, ...]) -> str:
    """One arm's rounds as marks for a list line: ✓✗✓."""
    return "".join("·" if r is None else _MARKS.get(r.outcome, ("?", ""))[0] for r in runs)


def after_turns(row: CaseRow) -> str:
    """``(after 2 earlier turns) `` before the input of a case that answers a conversation (as the CLI's
    `disagreements` words it: the input alone can mislead), else empty; the drawer shows the turns."""
    turns = len(row.turns)
    return f"(after {plural(turns, 'earlier turn')}) " if turns else ""


def _chosen(box: w.Dropdown) -> str | None:
    """A filter's value (None: any)."""
    return None if box.value in (ANY, None) else str(box.value)


class CasesWidget(View):
    """Every case of an experiment with each arm's outcome per round, a page at a time.

    Filter by outcome (of one arm, or any), domain, gold label, disagreement kind and words (the
    case's id, input, gold, domain or an answer); sort; turn the pages ("page 3 of 2,000 · cases
    101–150 of 100,000"); choose a case to open it in full below (the case drawer: every run, the
    evidence, the transcripts); *Export this view* writes exactly the listed cases, every page, as
    CSV or XLSX. A view over `abbench.review.case_page` and `case_table`; the store filters, sorts
    and pages, so a 100,000-case experiment opens as fast as a small one.

    Args:
        store: The store (an open `Store`, a folder, or None to find the notebook's store).
        experiment: The experiment to show (id, ``#id`` or name; default: choose it in the widget).
        exports_dir: Where *Export this view* writes by default.

    Attributes:
        experiment: The experiment shown.
        page: The `CasePage` shown (None before an experiment is chosen).
        rows: The cases of the page shown.
        detail: The `CaseDetailView` of the opened case (the drawer).
        exported: The file the last export wrote (None before one).
    """

    def __init__(
        self,
        store: StoreLike = None,
        *,
        experiment: int | str | None = None,
        exports_dir: str = "exports",
        **kwargs: Any,
    ):
        super().__init__(store, **kwargs)
        self.experiment: Experiment | None = None
        self.page: CasePage | None = None
        self.exported: Path | None = None
        self._exports_dir = exports_dir
        self._number = 1
        self._quiet = False
        self.chooser = Choice("Experiment", on_select=self.guard("choosing an experiment", self._chosen))
        self.chooser.widget.layout.width = "560px"
        self.reload_button = self.button("Reload", self.reload, tooltip="read the cases again")
        self._filter_controls()
        self._pager_controls()
        self._export_controls()
        self.detail = CaseDetailView(self.store)
        self.drawer = w.Accordion(children=[self.detail], selected_index=None)
        self.drawer.titles = ("Case: choose one in the list above",)
        self.add_class("abbench-cases")
        self.children = [
            w.HTML(STYLE),
            w.HBox([self.chooser.widget, self.reload_button]),
            w.HBox([self.outcome, self.arm, self.kind]),
            w.HBox([self.domain, self.gold]),
            w.HBox([self.search, self.sort, self.descending]),
            self.errors,
            w.HBox([self.previous_page_button, self.page_html, self.next_page_button]),
            self.table_html,
            self.cases.widget,
            self.drawer,
            w.HBox([self.export_format, self.export_path, self.export_button]),
            self.export_html,
        ]
        self.guard("listing experiments", self._list_experiments)()
        if experiment is not None:
            self.guard("choosing an experiment", self.select_experiment)(experiment)

    # -- controls ----------------------------------------------------------------------------------------

    def _filter_controls(self) -> None:
        self.outcome = w.Dropdown(
            options=[("any", ANY), *[(outcome_word(o), o) for o in CASE_OUTCOMES]],
            value=ANY,
            description="Outcome",
            tooltip="only cases with a run of this outcome (of the arm chosen, else of any arm)",
        )
        self.arm = w.Dropdown(options=[("any", ANY)], value=ANY, description="Arm")
        self.kind = w.Dropdown(
            options=[("any", ANY), *[(KIND_WORDS.get(k, k), k) for k in DISAGREEMENT_KINDS]],
            value=ANY,
            description="Disagreement",
            style={"description_width": "initial"},
        )
        self.domain = w.Dropdown(options=[("any", ANY)], value=ANY, description="Domain")
        self.gold = w.Dropdown(options=[("any", ANY)], value=ANY, description="Gold")
        for box in (self.domain, self.gold):
            box.layout.width = "360px"
        self.search = w.Text(
            description="Search",
            placeholder="case id, words of the input, the gold, an answer",
            continuous_update=False,
        )
        self.sort = w.Dropdown(
            options=[(SORT_LABELS[s], s) for s in CASE_SORTS], value="order", description="Sort"
        )
        self.descending = w.Checkbox(value=False, description="reversed", indent=False)
        for widget in (self.outcome, self.arm, self.kind, self.domain, self.gold, self.search, self.sort):
            self.on_change(widget, lambda _v: None if self._quiet else self.refilter())
        self.on_change(self.descending, lambda _v: self.refilter())

    def _pager_controls(self) -> None:
        self.page_html = w.HTML()
        self.previous_page_button = self.button(
            "Previous page", self.previous_page, icon="chevron-left", tooltip="the cases before these"
        )
        self.next_page_button = self.button(
            "Next page", self.next_page, icon="chevron-right", tooltip="the cases after these"
        )
        self.table_html = w.HTML()
        self.cases = Choice(
            "Open", kind=w.Select, on_select=self.guard("opening a case", self._case_chosen), rows=6
        )
        self.cases.widget.layout.width = "100%"

    def _export_controls(self) -> None:
        self.export_format = w.Dropdown(
            options=[("CSV", "csv"), ("XLSX", "xlsx")], value="csv", description="Export"
        )
        self.export_path = w.Text(placeholder="file (default: exports/<experiment>-cases.<format>)")
        self.export_path.layout.width = "420px"
        self.export_button = self.button(
            "Export this view",
            self.export_view,
            icon="download",
            tooltip="every case the filters list, every page, in this order",
        )
        self.export_html = w.HTML()

    # -- the experiment ----------------------------------------------------------------------------------

    def _list_experiments(self) -> None:
        self.chooser.set_options(experiment_options(self.store))

    def select_experiment(self, experiment: int | str) -> None:
        """Show an experiment (id, ``#id`` or name), as choosing it in the list does."""
        exp = self.store.experiments.get(experiment)
        self.chooser.select_listed(exp.id, self._list_experiments)

    def _chosen(self, exp_id: Any) -> None:
        self.experiment = None if exp_id is None else self.store.experiments.get(exp_id)
        self._choices()
        self._number = 1
        self.detail.clear()
        self.drawer.titles = ("Case: choose one in the list above",)
        self.refilter()

    def _choices(self) -> None:
        """The arm, domain and gold filters' choices for the experiment (each case counted once)."""
        exp = self.experiment
        arms = [("any", ANY)] + ([(a.name, a.name) for a in exp.arms] if exp else [])
        domains = self.store.runs.case_list_values(exp.id, "domain") if exp else []
        golds = self.store.runs.case_list_values(exp.id, "gold") if exp else []
        self._quiet = True  # the list is read once, after every choice is set
        try:
            for box, options in (
                (self.arm, arms),
                (self.domain, [("any", ANY)] + [(f"{v or '(none)'} · {n:,}", v) for v, n in domains]),
                (self.gold, [("any", ANY)] + [(f"{v or '(none)'} · {n:,}", v) for v, n in golds]),
            ):
                keep = box.value if box.value in [o[1] for o in options] else ANY
                box.options = options
                box.value = keep
        finally:
            self._quiet = False

    def reload(self) -> None:
        """Read the experiments, the filters' choices and the page again (the filters and page stay)."""
        self._list_experiments()
        if self.experiment is not None:
            self.experiment = self.store.experiments.get(self.experiment.id)
            self._choices()
        self.refilter(page=self._number)

    # -- the list ----------------------------------------------------------------------------------------

    def filters(self) -> dict[str, Any]:
        """The filters and sort chosen, as `case_page` and `case_table` take them."""
        return {
            "outcome": _chosen(self.outcome),
            "arm": _chosen(self.arm),
            "domain": _chosen(self.domain),
            "gold": _chosen(self.gold),
            "kind": _chosen(self.kind),
            "search": self.search.value.strip() or None,
            "sort": self.sort.value,
            "descending": bool(self.descending.value),
        }

    def refilter(self, *, page: int | None = None) -> None:
        """Read the page (`page`, from 1; default the first, as after a filter or sort changes) again."""
        if self.experiment is None:
            self.page, self.table_html.value = None, note("choose an experiment")
            self._show_pager()
            self.cases.set_options([])
            return
        number = max(1, page or 1)
        found = self._fetch(number)
        if found.offset >= found.total > 0:  # past the end: the last page
            found = self._fetch(found.pages)
        self.page, self._number = found, found.page
        self._show_table(found)
        self._show_pager()  # after the table: a pager that names the page means its rows are there

    def _fetch(self, number: int) -> CasePage:
        assert self.experiment is not None
        return case_page(
            self.experiment.id,
            store=self.store,
            offset=(number - 1) * PAGE_SIZE,
            limit=PAGE_SIZE,
            **self.filters(),
        )

    @property
    def rows(self) -> tuple[CaseRow, ...]:
        """The cases of the page shown."""
        return self.page.rows if self.page is not None else ()

    def _show_pager(self) -> None:
        found = self.page
        if found is None:
            self.page_html.value = ""
        elif found.total == 0:
            self.page_html.value = note(f"no case matches these filters (of {found.cases:,} cases)")
        else:
            first, last = found.offset + 1, min(found.offset + found.limit, found.total)
            of = "" if found.total == found.cases else f" (of {found.cases:,} in the experiment)"
            self.page_html.value = note(
                f"page {found.page:,} of {found.pages:,} · cases {first:,}–{last:,} of {found.total:,}{of}"
            )
        self.previous_page_button.disabled = found is None or found.page <= 1
        self.next_page_button.disabled = found is None or found.page >= found.pages

    def _show_table(self, found: CasePage) -> None:
        rounds = range(found.rounds)
        columns = ["case", "input", "gold", "domain"]
        columns += [f"{a} · round {r + 1}" if found.rounds > 1 else a for a in found.arms for r in rounds]
        columns.append("review")
        arm_cells = len(found.arms) * found.rounds
        rows = [
            (
                row.case_id,
                after_turns(row) + clip(" ".join(str(row.input).split()), INPUT_SHOWN),
                row.gold,
                row.domain,
                *[_mark(run) for a in found.arms for run in row.runs[a]],
                row.review or "",
            )
            for row in found.rows
        ]
        raw = tuple(range(4, 4 + arm_cells))
        self.table_html.value = html_table(columns, rows, raw=raw, wide=(1,), nowrap=(0,)) if rows else ""
        self.cases.set_options(
            [
                (
                    f"{row.case_id} · {after_turns(row)}{clip(' '.join(str(row.input).split()), 40)} · "
                    + " · ".join(f"{a} {_marks_text(row.runs[a])}" for a in found.arms),
                    row.case_id,
                )
                for row in found.rows
            ]
        )

    def next_page(self) -> None:
        """Show the next page of the list."""
        self.go_to_page(self._number + 1)

    def previous_page(self) -> None:
        """Show the page before."""
        self.go_to_page(self._number - 1)

    def go_to_page(self, number: int) -> None:
        """Show page `number` (from 1; clamped to the pages there are)."""
        pages = self.page.pages if self.page is not None else 1
        self.refilter(page=max(1, min(int(number), pages)))

    # -- the case drawer ---------------------------------------------------------------------------------

    def _case_chosen(self, case_id: Any) -> None:
        if case_id is None or self.experiment is None:
            return
        self.detail.show([(self.experiment, None)], str(case_id))
        self.drawer.titles = (f"Case {case_id}",)
        self.drawer.selected_index = 0

    def open_case(self, case_id: str) -> None:
        """Open a case in the drawer below the list, as choosing it in the list does (a case on another
        page, or filtered out, opens too)."""
        if case_id in self.cases.values:
            self.cases.select(case_id)
        else:
            self._case_chosen(case_id)

    # -- export ------------------------------------------------------------------------------------------

    def export_view(self, path: str | Path | None = None, format: str | None = None) -> Path:
        """Write exactly the cases the filters list — every page, in the list's order — as CSV or XLSX.

        Args:
            path: The file (default: the path typed, else ``exports/<experiment>-cases.<format>``).
            format: ``csv`` or ``xlsx`` (default: the one chosen, else the path's suffix).

        Returns:
            The file written.
        """
        if self.experiment is None:
            raise UsageError("choose an experiment first")
        typed = path if path is not None else (self.export_path.value.strip() or None)
        fmt = format or (Path(typed).suffix.lstrip(".").lower() if typed else "") or self.export_format.value
        if fmt not in EXPORT_FORMATS:
            raise UsageError(f"cannot export as {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}")
        out = Path(typed) if typed else Path(self._exports_dir) / f"{self.experiment.name}-cases.{fmt}"
        out.parent.mkdir(parents=True, exist_ok=True)
        table = case_table(self.experiment.id, store=self.store, **self.filters())
        count = write_csv(table, out) if fmt == "csv" else write_xlsx(table, out)
        self.exported = out
        self.export_html.value = note(f"wrote {count:,} cases to {out}", "ok")
        return out

"""`DiffWidget`: two experiments (or two arms) case by case — metric deltas, what moved, and each case in detail."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import ipywidgets as w

from abbench import formatting as fm
from abbench._text import clip
from abbench.compare import Comparison, VerdictCode, compare_arms, compare_experiments, experiment_pair
from abbench.errors import ComparisonRefused, UsageError
from abbench.metrics import NO_DOMAIN
from abbench.snapshot import SnapshotDiff, diff_snapshots
from abbench.store import Experiment
from abbench.types import ExperimentStatus
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

LISTS = ("fixed", "regressed", "reason changed", "evidence appeared", "evidence disappeared")
INPUT_SHOWN = 40
"""Characters of a case's input shown in the case lists (the whole input is the list's tooltip)."""
LIST_PAGE = 100
"""Cases a case list shows at a time; its pager turns to the others."""


def _moved_line(x: Any, domain: str, said: str) -> str:
    """A fixed or regressed case's line: id, input, domain, each side's pass rate."""
    return f"{x.case_id} · {said}{domain} · {x.rates}"


def _reason_line(x: Any, said: str) -> str:
    """A case answered for another reason: id, input, the answer, B's reason."""
    return f"{x.case_id} · {said} · {x.prediction} · {(x.reason_b or '')[:80]}"


def _evidence_line(x: Any, sign: str, refs: Any, said: str) -> str:
    """A case whose cited evidence appeared (+) or disappeared (−): id, input, the references."""
    return f"{x.case_id} · {said} · {sign} {', '.join(refs)}"


def _signed(value: float | None, unit: str, digits: int = 1) -> str:
    if value is None:
        return NONE
    if unit == "points":
        return f"{100 * value:+.{digits}f} points"
    return f"{value:+.4g}"


def _interval(interval: Any, unit: str) -> str:
    if interval is None:
        return NONE
    return f"[{_signed(interval.low, unit)}, {_signed(interval.high, unit)}]"


def _p(value: float | None) -> str:
    if value is None:
        return NONE
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


def _value(value: float | None, unit: str) -> str:
    if value is None:
        return NONE
    return fm.pct(value) if unit == "points" else f"{value:.4g}"


def _usage_row(u: Any) -> tuple[str, ...]:
    name = fm.USAGE_NAMES.get(u.metric, u.metric)
    fmt: Callable[..., str] = (
        partial(fm.usage, u.metric)  # cost, latency, tokens in their units
        if u.metric in fm.USAGE_NAMES
        else lambda v, signed=False: _signed(v, "score") if signed else _value(v, "score")
    )
    interval = (
        f"[{fmt(u.interval.low, signed=True)}, {fmt(u.interval.high, signed=True)}]" if u.interval else NONE
    )
    return (
        name,
        fmt(u.value_a),
        fmt(u.value_b),
        fmt(u.difference, signed=True) + (f" ({100 * u.relative:+.1f}%)" if u.relative is not None else ""),
        interval,
        _p(u.p_value),
        u.method + (f" — {u.reason}" if u.reason else ""),
    )


def default_pair(store: Any, a: Any = None, b: Any = None) -> tuple[Experiment, Experiment] | str:
    """The two experiments a comparison opens on, or the sentence saying how to get a pair.

    `a` and `b` as given (b defaults to a). Given none: the newest finished experiment (the newest of all
    when none has finished) when it has two arms or more; when it has one, the newest earlier experiment on the same dataset fingerprint as its baseline.
    A single experiment with one arm gets the sentence: what to run so that there is something to compare.
    """
    if a is not None:
        ea = store.experiments.get(a)
        if b is not None:
            return ea, store.experiments.get(b)
        if len(ea.arms) >= 2:
            return ea, ea
        newest = ea
    else:
        experiments = store.experiments.all()
        if not experiments:
            return "nothing to compare yet: run an experiment first (the 02_run notebook, or abbench.run_experiment)"
        # A cancelled or unfinished newest experiment would open on partial figures: the newest that
        # finished comes first, the newest of all when none has.
        newest = next((e for e in experiments if e.status == ExperimentStatus.FINISHED), experiments[0])
        if len(newest.arms) >= 2:
            return newest, newest
    earlier = [e for e in store.experiments.all() if e.id != newest.id and e.dataset == newest.dataset]
    if earlier:
        return earlier[0], newest
    return (
        f"nothing to compare yet: #{newest.id} {newest.name} has a single arm ({newest.arms[0].name}) and no "
        f"other experiment ran on {newest.dataset}. Choose another experiment above, or make a pair: clone it "
        "in 02_run with a second arm (or a changed skill), or run another experiment on the same dataset."
    )


_DIFF_LINE = {"+": "background:#e6ffec", "-": "background:#ffebe9", "@": "color:#6a737d"}


def _diff_pre(text: str) -> str:
    lines = []
    for line in text.splitlines():
        style = _DIFF_LINE.get(line[:1], "") if not line.startswith(("+++", "---")) else "color:#6a737d"
        lines.append(f'<span style="{style}">{escape(line)}</span>' if style else escape(line))
    return (
        '<pre style="font-size:12px;line-height:1.4;overflow-x:auto;margin:2px 0">'
        + "\n".join(lines)
        + "</pre>"
    )


def skill_diff_html(diff: SnapshotDiff, context: int = 3) -> str:
    """A skill diff as `abbench diff-skill` prints it: the summary, then each changed section as a unified
    diff (added lines green, removed red); added and removed sections folded with their text."""
    # The summary's counts; the sections themselves are listed once, below, each with its diff or text.
    counts = "\n".join(line for line in diff.summary().splitlines() if not line.startswith("  "))
    parts = [f"<pre style='font-size:12px;margin:2px 0'>{escape(counts)}</pre>"]
    unfold = " open" if len(diff.sections_changed) <= 5 else ""  # many: the summary above names them
    for change in diff.sections_changed:
        parts.append(
            f"<details{unfold}><summary><b>~ {escape(change.ref)}</b> (+{change.lines_added} −{change.lines_removed} lines)"
            f"</summary>{_diff_pre(change.unified_diff(context))}</details>"
        )
    for mark, sections in (("+", diff.sections_added), ("−", diff.sections_removed)):
        for section in sections:
            parts.append(
                f"<details><summary><b>{mark} {escape(section.ref)}</b> ({'added' if mark == '+' else 'removed'})"
                f"</summary><pre style='font-size:12px'>{escape(section.text)}</pre></details>"
            )
    return "".join(parts)


class DiffWidget(View):
    """Compare two arms — of one experiment, or of two experiments on the same dataset — case by case.

    Shows the metric deltas with their intervals (the paired difference, McNemar, the minimum detectable
    effect, cost, latency and tokens, each domain), the verdict, and the cases that were fixed, regressed,
    answered for another reason, or cited evidence that appeared or disappeared; choosing a case opens
    it in detail on both sides. Experiments on different dataset fingerprints are refused, with why.
    A view over `abbench.compare.compare_arms` and `compare_experiments`.

    Args:
        store: The store (an open `Store`, a folder, or None to find the notebook's store).
        a: The baseline experiment (id, ``#id`` or name).
        b: The experiment compared with it (default: the same as `a`, to compare two of its arms).
        arm_a: The baseline's arm (default: the first arm when `a` and `b` are the same, else the last).
        arm_b: The other side's arm (default: its last arm).

    Attributes:
        comparison: The `Comparison` shown (None before one, or when refused).
        refusal: The refusal's message when the two sides cannot be compared, else None.
        lists: List name (see `LISTS`) → every case id it holds (shown `LIST_PAGE` at a time).
        list_pages: List name → the page of it shown, from 1.
        skill_diff: The `SnapshotDiff` between the two sides' skills (None when a side has none).
        detail: The `CaseDetailView` of the chosen case.
    """

    def __init__(
        self,
        store: StoreLike = None,
        *,
        a: int | str | None = None,
        b: int | str | None = None,
        arm_a: str | None = None,
        arm_b: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(store, **kwargs)
        self.comparison: Comparison | None = None
        self.refusal: str | None = None
        self.lists: dict[str, list[str]] = {name: [] for name in LISTS}
        self.list_pages: dict[str, int] = {name: 1 for name in LISTS}
        self._lines: dict[str, dict[str, Callable[[str], str]]] = {name: {} for name in LISTS}
        self._dataset: int | None = None
        self._inputs: dict[str, str] = {}
        self.skill_diff: SnapshotDiff | None = None
        self._quiet = False

        self.exp_a = Choice(
            "A", on_select=self.guard("choosing experiment A", lambda _v: self._sides_changed())
        )
        self.exp_b = Choice(
            "B", on_select=self.guard("choosing experiment B", lambda _v: self._sides_changed())
        )
        self.arm_a = Choice("arm", on_select=self.guard("choosing arm A", lambda _v: self.compare()))
        self.arm_b = Choice("arm", on_select=self.guard("choosing arm B", lambda _v: self.compare()))
        for choice in (self.exp_a, self.exp_b):
            choice.widget.layout.width = "520px"
        self.reload_button = self.button("Reload", self.reload, tooltip="read the experiments again")
        self.refusal_html = w.HTML()
        self.verdict_html = w.HTML()
        self.metrics_html = w.HTML()
        self.domains_html = w.HTML()
        self.skill_html = w.HTML()
        self.case_lists = {
            name: Choice(kind=w.Select, on_select=self.guard("opening a case", self._case_chosen), rows=10)
            for name in LISTS
        }
        for choice in self.case_lists.values():
            choice.widget.layout.width = "100%"
        self.list_tabs = w.Tab(children=[c.widget for c in self.case_lists.values()], titles=LISTS)
        # Another tab shows its own chosen case (each list keeps its own choice) and its own page.
        self.on_change(self.list_tabs, self._tab_chosen, "selected_index")
        self.list_page_html = w.HTML()
        self.list_previous_button = self.button(
            "Previous page", self.previous_list_page, icon="chevron-left", tooltip="the cases before these"
        )
        self.list_next_button = self.button(
            "Next page", self.next_list_page, icon="chevron-right", tooltip="the cases after these"
        )
        self.detail = CaseDetailView(self.store)
        self.children = [
            w.HTML(STYLE),
            w.HBox([self.exp_a.widget, self.arm_a.widget]),
            w.HBox([self.exp_b.widget, self.arm_b.widget, self.reload_button]),
            self.refusal_html,
            self.errors,
            self.verdict_html,
            self.metrics_html,
            self.domains_html,
            self.skill_html,
            self.list_tabs,
            w.HBox([self.list_previous_button, self.list_page_html, self.list_next_button]),
            self.detail,
        ]
        self.guard("listing experiments", self._list)()
        self.guard("choosing the experiments", self._open)(a, b, arm_a, arm_b)

    # -- choosing the sides ----------------------------------------------------------------------------

    def _list(self) -> None:
        options = experiment_options(self.store)
        self.exp_a.set_options(options)
        self.exp_b.set_options(options)

    def _open(self, a: Any, b: Any, arm_a: str | None, arm_b: str | None) -> None:
        """Open on a pair that can be compared: the one asked for, else the newest one the store holds.

        Arm names given are preferences (a notebook's defaults, ``v1`` and ``v2``): an experiment
        without them opens on its own arms, and says so.
        """
        pair = default_pair(self.store, a, b)
        if isinstance(pair, str):
            self._clear(pair)
            return
        ea, eb = pair
        wanted = {"A": (ea, arm_a), "B": (eb, arm_b)}
        absent = [f"{side}: {exp.name!r} has no arm {arm!r}" for side, (exp, arm) in wanted.items()
                  if arm and arm not in [x.name for x in exp.arms]]  # fmt: skip
        names_a, names_b = [x.name for x in ea.arms], [x.name for x in eb.arms]
        arm_a = arm_a if arm_a in names_a else None
        arm_b = arm_b if arm_b in names_b else None
        if ea.id != eb.id and arm_b is None and arm_a is None:
            common = [n for n in names_b if n in names_a]
            arm_a = arm_b = common[-1] if common else None  # the same arm in both: the version question
        if ea.id == eb.id and arm_a is not None and arm_a == arm_b:
            arm_a = None
        self.select(ea, eb, arm_a=arm_a, arm_b=arm_b)
        if absent:
            self.verdict_html.value = note("; ".join(absent) + ": its own arms are shown", "warn") + (
                self.verdict_html.value
            )

    def select(
        self,
        a: int | str | Experiment,
        b: int | str | Experiment | None = None,
        *,
        arm_a: str | None = None,
        arm_b: str | None = None,
    ) -> None:
        """Compare experiment `b` (default `a`) against `a`, with these arms, as choosing them in the form does."""
        ea = self.store.experiments.get(a)
        eb = self.store.experiments.get(b) if b is not None else ea
        self._quiet = True
        try:
            self.exp_a.select(ea.id, notify=False)
            self.exp_b.select(eb.id, notify=False)
            self._arm_options(ea, eb)
            if arm_a is not None:
                self.arm_a.select(ea.arm(arm_a).name, notify=False)
            if arm_b is not None:
                self.arm_b.select(eb.arm(arm_b).name, notify=False)
        finally:
            self._quiet = False
        self.compare()

    def _sides_changed(self) -> None:
        if self._quiet:
            return
        ea = self.store.experiments.get(self.exp_a.value) if self.exp_a.value is not None else None
        eb = self.store.experiments.get(self.exp_b.value) if self.exp_b.value is not None else None
        self._quiet = True
        try:
            self.arm_a.intended = self.arm_b.intended = None  # arms belong to their experiment
            self._arm_options(ea, eb)
        finally:
            self._quiet = False
        self.compare()

    def _arm_options(self, ea: Experiment | None, eb: Experiment | None) -> None:
        self.arm_a.set_options([(x.name, x.name) for x in ea.arms] if ea else [])
        self.arm_b.set_options([(x.name, x.name) for x in eb.arms] if eb else [])
        named = experiment_pair(eb) if eb is not None and ea is not None and ea.id == eb.id else None
        if named is not None and self.arm_a.value is None and self.arm_b.value is None:
            # The experiment's decision: names the pair: start from it (any other pair can be chosen).
            self.arm_a.select(named[0], notify=False)
            self.arm_b.select(named[1], notify=False)
        if eb is not None and self.arm_b.value is None:
            self.arm_b.select(eb.arms[-1].name, notify=False)
        if ea is not None and self.arm_a.value is None:
            if eb is not None and ea.id == eb.id:
                first = next((x.name for x in ea.arms if x.name != self.arm_b.value), ea.arms[0].name)
                self.arm_a.select(first, notify=False)
            else:
                self.arm_a.select(ea.arms[-1].name, notify=False)

    def reload(self) -> None:
        """Read the experiments again and compare anew, keeping the chosen sides, arms and case."""
        self._list()
        self.compare()

    # -- comparing -------------------------------------------------------------------------------------

    def compare(self) -> Comparison | None:
        """Compare the chosen sides and show the result (or the refusal)."""
        if self._quiet:
            return None
        self.comparison, self.refusal = None, None
        self.refusal_html.value = ""
        if None in (self.exp_a.value, self.exp_b.value, self.arm_a.value, self.arm_b.value):
            self._clear("choose both sides: an experiment and an arm each")
            return None
        ea, eb = self.exp_a.value, self.exp_b.value
        self._clear()  # whatever happens next, nothing of the previous pair stays on screen
        try:
            if ea == eb:
                comparison = compare_arms(
                    ea, self.arm_a.value, self.arm_b.value, store=self.store, details=True
                )
            else:
                comparison = compare_experiments(
                    ea, eb, arm_a=self.arm_a.value, arm_b=self.arm_b.value, store=self.store, details=True
                )
        except ComparisonRefused as exc:
            self.refusal = str(exc)
            self.refusal_html.value = (
                '<div class="abbench-error" style="font-size:14px"><b>Comparison refused.</b> '
                f"{escape(exc)}</div>"
            )
            self._clear()
            return None
        self.comparison = comparison
        self._render(comparison)
        return comparison

    def _clear(self, message: str = "") -> None:
        self.verdict_html.value = note(message) if message else ""
        self.metrics_html.value = self.domains_html.value = self.skill_html.value = ""
        self.skill_diff = None
        for name, choice in self.case_lists.items():
            self.lists[name] = []
            self.list_pages[name] = 1
            choice.set_options([])
        self.list_tabs.titles = LISTS
        self._show_list_pager()
        self.detail.clear()

    def _render(self, c: Comparison) -> None:
        """Show a comparison: the verdict, the metric deltas, the domains, the skill diff, the case lists."""
        self._show_verdict(c)
        self._show_metrics(c)
        self._show_domains(c)
        self._show_skill_diff()
        self._show_case_lists(c)

    def _show_verdict(self, c: Comparison) -> None:
        self.verdict_html.value = (
            f'<div class="abbench-{"ok" if c.verdict.code == VerdictCode.B_BETTER else "warn" if c.verdict.code == VerdictCode.B_WORSE else "note"}" '
            f'style="font-size:15px"><b>{escape(c.verdict.text)}</b></div>'
            + note(f"A = {c.a.label}; B = {c.b.label}; {c.n_cases:,} paired cases of {c.dataset}")
            + "".join(
                note(f"{reason}: {len(ids)} cases left out", "warn") for reason, ids in c.excluded.items()
            )
            + "".join(note(n) for n in c.notes)
        )

    def _show_metrics(self, c: Comparison) -> None:
        unit = c.unit
        rows: list[tuple[str, ...]] = []
        main = c.main
        rows.append(
            (
                "accuracy" if unit == "points" else "score",
                _value(c.value_a.value, unit),
                _value(c.value_b.value, unit),
                _signed(main.difference if main else None, unit),
                _interval(c.interval, unit),
                _p(c.verdict.p_value),
                f"{c.verdict.test}; interval: {c.interval_method}" if main else NONE,
            )
        )
        if c.mcnemar is not None:
            rows.append(
                (
                    "cases right in one arm only",
                    f"{c.mcnemar.b:,} (regressed)",
                    f"{c.mcnemar.c:,} (fixed)",
                    f"{c.mcnemar.c - c.mcnemar.b:+,d} cases",
                    NONE,
                    _p(c.mcnemar.p_value),
                    "exact McNemar on discordant cases",
                )
            )
        for u in c.usage:
            rows.append(_usage_row(u))
        mde = (
            note(
                f"the smallest difference {c.n_cases:,} cases detect with {c.power:.0%} power: {_signed(c.mde.delta, unit)}"
            )
            if c.mde is not None
            else ""
        )
        self.metrics_html.value = (
            "<b>Metric deltas (B − A)</b>"
            + html_table(
                ["metric", "A", "B", "B − A", f"{c.confidence:.0%} interval", "p", "method"],
                rows,
                nowrap=(1, 2, 3, 4, 5),
            )
            + mde
        )

    def _show_domains(self, c: Comparison) -> None:
        unit = c.unit
        if not c.has_domain_breakdown:
            self.domains_html.value = "<b>Per domain</b>" + note(fm.NO_DOMAINS)
            return
        self.domains_html.value = "<b>Per domain</b>" + html_table(
            ["domain", "cases", "A", "B", "B − A", "interval", "moved (tested)", "p (Holm)", ""],
            numeric=(1, 2, 3, 4, 7),
            nowrap=(5,),
            rows=[
                (
                    d.domain,
                    d.n_cases,
                    _value(d.value_a, unit),
                    _value(d.value_b, unit),
                    _signed(d.difference, unit),
                    _interval(d.interval, unit),
                    d.moved_text,
                    _p(d.p_adjusted),
                    "significantly worse"
                    if d.significant_regression
                    else "significantly better"
                    if d.significant_improvement
                    else "",
                )
                for d in c.by_domain
            ],
        )

    def _show_case_lists(self, c: Comparison) -> None:
        """The fixed, regressed, reason-changed and evidence lists, each a page at a time (`LIST_PAGE` cases,
        each with its input shortened: only the inputs of a page shown are read)."""
        text = c.text

        def domain(name: str) -> str:  # no "· (none) ·" on every line of a dataset without domains
            return "" if name == NO_DOMAIN else f" · {name}"

        entries: dict[str, list[tuple[str, Callable[[str], str]]]] = {
            "fixed": [(x.case_id, partial(_moved_line, x, domain(x.domain))) for x in c.fixed],
            "regressed": [(x.case_id, partial(_moved_line, x, domain(x.domain))) for x in c.regressed],
            "reason changed": [
                (x.case_id, partial(_reason_line, x)) for x in (text.reason_changed if text else ())
            ],
            "evidence appeared": [
                (x.case_id, partial(_evidence_line, x, "+", x.appeared))
                for x in (text.evidence if text else ())
                if x.appeared
            ],
            "evidence disappeared": [
                (x.case_id, partial(_evidence_line, x, "−", x.disappeared))
                for x in (text.evidence if text else ())
                if x.disappeared
            ],
        }
        self._dataset = self.store.experiments.get(self.exp_b.value).dataset_id
        self._inputs = {}
        for name, items in entries.items():
            self.lists[name] = [case_id for case_id, _ in items]
            self._lines[name] = dict(items)
            kept = self.case_lists[name].intended
            at = self.lists[name].index(kept) // LIST_PAGE + 1 if kept in self.lists[name] else 1
            self._show_list_page(name, at)
        self.list_tabs.titles = tuple(f"{name} ({len(entries[name]):,})" for name in LISTS)
        self._show_list_pager()
        chosen = self.case_lists[LISTS[self.list_tabs.selected_index or 0]].value
        self._case_chosen(chosen)

    def _show_list_page(self, name: str, number: int) -> None:
        """Show page `number` (from 1, clamped) of the list `name`, reading the inputs of its cases."""
        ids = self.lists[name]
        number = max(1, min(int(number), max(1, -(-len(ids) // LIST_PAGE))))
        self.list_pages[name] = number
        page = ids[(number - 1) * LIST_PAGE : number * LIST_PAGE]
        unread = [case_id for case_id in page if case_id not in self._inputs]
        if unread and self._dataset is not None:
            read = self.store.datasets.case_inputs(self._dataset, unread)
            self._inputs.update({case_id: " ".join(str(v).split()) for case_id, v in read.items()})
        lines = self._lines[name]
        said = {case_id: clip(self._inputs.get(case_id, ""), INPUT_SHOWN) for case_id in page}
        self.case_lists[name].set_options([(lines[case_id](said[case_id]), case_id) for case_id in page])
        self.case_lists[name].widget.tooltip = self._tooltip(self.case_lists[name].value)

    def _show_list_pager(self) -> None:
        """The pager of the list whose tab is open: "page 3 of 241 · cases 201–300 of 24,064"."""
        name = LISTS[self.list_tabs.selected_index or 0]
        total, number = len(self.lists[name]), self.list_pages.get(name, 1)
        pages = max(1, -(-total // LIST_PAGE))
        first, last = (number - 1) * LIST_PAGE + 1, min(number * LIST_PAGE, total)
        self.list_page_html.value = (
            note(f"page {number:,} of {pages:,} · cases {first:,}–{last:,} of {total:,}") if total else ""
        )
        self.list_previous_button.disabled = number <= 1
        self.list_next_button.disabled = number >= pages

    def list_page(self, list_name: str | None = None) -> int:
        """The page shown of a list (default: the list whose tab is open), from 1."""
        return self.list_pages.get(list_name or LISTS[self.list_tabs.selected_index or 0], 1)

    def go_to_list_page(self, number: int, list_name: str | None = None) -> None:
        """Show page `number` (from 1; clamped) of a list (default: the open tab's); its choice stays."""
        name = list_name or LISTS[self.list_tabs.selected_index or 0]
        self._show_list_page(name, number)
        self._show_list_pager()

    def next_list_page(self) -> None:
        """Show the next page of the open tab's list."""
        self.go_to_list_page(self.list_page() + 1)

    def previous_list_page(self) -> None:
        """Show the page before of the open tab's list."""
        self.go_to_list_page(self.list_page() - 1)

    def _show_skill_diff(self) -> None:
        """Which rules changed between the two sides' skills (the question behind a version comparison)."""
        ea = self.store.experiments.get(self.exp_a.value)
        eb = self.store.experiments.get(self.exp_b.value)
        snap_a, snap_b = ea.arm(self.arm_a.value).snapshot, eb.arm(self.arm_b.value).snapshot
        self.skill_diff = None
        head = "<b>Skill text: what changed from A to B</b>"
        if snap_a is None and snap_b is None:
            self.skill_html.value = head + note("neither side uses a skill")
            return
        if snap_a is None or snap_b is None:
            side, only = ("A", snap_a) if snap_a is not None else ("B", snap_b)
            assert only is not None  # one side has a skill
            with_skill = self.store.snapshots.get(only)
            self.skill_html.value = head + note(
                f"only {side} uses a skill ({with_skill.label}): every rule in it is what differs"
            )
            return
        self.skill_diff = diff_snapshots(self.store.snapshots.get(snap_a), self.store.snapshots.get(snap_b))
        self.skill_html.value = head + skill_diff_html(self.skill_diff)

    def report_options(self) -> dict[str, Any]:
        """What `abbench.report.render_report` takes to report on the pair shown: the experiment, the
        baseline experiment (`vs`, when the sides are two experiments) and the two arms, baseline first.

        Raises:
            UsageError: the two sides are not both chosen.
        """
        if None in (self.exp_a.value, self.exp_b.value, self.arm_a.value, self.arm_b.value):
            raise UsageError("choose both sides first: an experiment and an arm each")
        same = self.exp_a.value == self.exp_b.value
        return {
            "experiment": self.exp_b.value,
            "vs": None if same else self.exp_a.value,
            "arms": [self.arm_a.value, self.arm_b.value],
        }

    def _tooltip(self, case_id: Any) -> str | None:
        """The list's tooltip: the chosen case's whole input (a list cannot give each option its own)."""
        text = self._inputs.get(case_id) if case_id else None
        return f"{case_id}: {text}" if text else "choose a case to read its whole input here and below"

    def _tab_chosen(self, index: Any) -> None:
        self._show_list_pager()
        self._case_chosen(self.case_lists[LISTS[index or 0]].value)

    def _case_chosen(self, case_id: Any) -> None:
        for choice in self.case_lists.values():
            if choice.value == case_id or not case_id:
                choice.widget.tooltip = self._tooltip(choice.value)
        if not case_id or self.comparison is None:
            self.detail.clear("choose a case in a list to see it on both sides" if self.comparison else "")
            return
        ea = self.store.experiments.get(self.exp_a.value)
        eb = self.store.experiments.get(self.exp_b.value)
        self.detail.show([(ea, [self.arm_a.value]), (eb, [self.arm_b.value])], case_id)

    def open_case(self, list_name: str, case_id: str) -> None:
        """Open a case from one of the lists (see `LISTS`), as clicking it does, turning to its page."""
        self.list_tabs.selected_index = LISTS.index(list_name)
        if case_id in self.lists[list_name] and case_id not in self.case_lists[list_name].values:
            self.go_to_list_page(self.lists[list_name].index(case_id) // LIST_PAGE + 1, list_name)
        self.case_lists[list_name].select(case_id)

"""`ResultsWidget`: an experiment's figures per arm, confusion, domains, stability, cost, and the decision."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import ipywidgets as w

from abbench import formatting as fm
from abbench.agents import stand_in_note
from abbench.errors import AbbenchError, PairNotNamed, UsageError
from abbench.gate import (
    GateOutcome,
    GateResult,
    Measured,
    RuleStatus,
    Severity,
    decision_pair,
    evaluate_gate,
    metric_unit,
)
from abbench.metrics import (
    NO_RUN_EXECUTED,
    ArmMetrics,
    Estimate,
    ExperimentMetrics,
    GroupAccuracy,
    experiment_metrics,
)
from abbench.store import Experiment
from abbench.widgets._activation import ActivationView
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
from abbench.widgets._confusion import ConfusionView
from abbench.widgets._figures import (
    domain_figure,
    label_distribution_figure,
    latency_figure,
    rounds_figure,
    show_figure,
)
from abbench.widgets._following import FollowingView
from abbench.widgets._gate import GatePicker

TABS = (
    "Arms",
    "Confusion",
    "Domains",
    "Stability",
    "Cost & latency",
    "Decision",
    "Activation",
    "Skill-following",
)
FLIPPED_SHOWN = 30

RESULTS_CSS = """<style>
.abbench-results .abbench-chart {overflow-x:auto; max-width:100%}
.abbench-headline {font-size:16px; font-weight:bold; line-height:1.45; margin:4px 0}
.abbench-headline.abbench-muted {color:#555}
</style>"""
"""A chart wider than the notebook scrolls in its own box; the decision's headline."""

_TONES = {GateOutcome.PASS: "ok", GateOutcome.PASS_WITH_WARNINGS: "warn", GateOutcome.BLOCK: "error"}
"""The banner's colour per gate outcome; incomplete and inconclusive are grey: nothing was passed."""


def fmt_estimate(e: Estimate | None, digits: int = 1, *, share: bool = True) -> str:
    """``90.4% [87.5%, 93.2%]`` for a share (``0.73 [0.61, 0.84]`` for a score), or why there is no value."""
    if e is None:
        return NONE
    if e.value is None:
        return f"{NONE} ({e.reason})" if e.reason else NONE

    def fmt(v: float | None) -> str:
        return fm.pct(v, digits) if share else NONE if v is None else f"{v:.2f}"

    if e.interval is None:
        return fmt(e.value)
    return f"{fmt(e.value)} [{fmt(e.low)}, {fmt(e.high)}]"


def _rule_word(r: Any) -> str:
    """What became of a rule, in the words the report uses."""
    if r.blocks:
        return "BLOCKS"
    if r.status == RuleStatus.PASS:
        return "pass"
    if r.status == RuleStatus.INCONCLUSIVE and r.rule.severity == Severity.BLOCK:
        return "INCONCLUSIVE"
    if r.status == RuleStatus.MISSING:
        return "not assessed (allowed)" if r.rule.allow_missing else "not assessed (warning)"
    return f"{r.status} (warning)"


def _pass_k_table(m: ExperimentMetrics) -> str:
    """pass@k and pass^k per arm and k (Stability tab); empty with one round or no pass/fail verdicts."""

    def cell(value: float, iv: Any) -> str:
        import math

        spread = "" if math.isnan(iv.low) else f" [{fm.pct(iv.low)}, {fm.pct(iv.high)}]"
        return f"{fm.pct(value)}{spread}"

    rows = [
        (a.arm, p.k, cell(p.pass_at_k, p.pass_at_k_interval), cell(p.pass_hat_k, p.pass_hat_k_interval),
         p.n_cases if not p.n_short else f"{p.n_cases} ({p.n_short} with fewer attempts left out)")
        for a in m.arms
        for p in a.stability.pass_k
    ]  # fmt: skip
    if not rows:
        return ""
    return html_table(["arm", "k", "pass@k (one of k right)", "pass^k (all k right)", "cases"], rows) + note(
        "Unbiased estimators (Chen et al. 2021; τ-bench) averaged over cases, t-intervals over cases; "
        "a run that failed to execute counts as not passed."
    )


def _num(value: float | None, digits: int = 1) -> str:
    return NONE if value is None else f"{value:,.{digits}f}"


class ResultsWidget(View):
    """An experiment's results: metrics with intervals per arm, confusion matrices, per-domain accuracy,
    stability across rounds, cost and latency, and the decision and gate outcome.

    Views over `abbench.metrics.experiment_metrics` and `abbench.gate.evaluate_gate`; charts are plotly
    figures (kept in `figures`). The chosen experiment, the compared arms and the tab survive reloads.

    Args:
        store: The store (an open `Store`, a folder, or None to find the notebook's store).
        experiment: The experiment to show (id, ``#id`` or name).
        baseline: The arm the decision compares against (default: the gate's or the experiment's
            ``decision:`` pair, else the first of two arms; with three or more arms and no pair named,
            none: the decision tab asks for one).
        candidate: The arm the decision is about (default: likewise).
        gate: Gate rules (a file, or a list of rules); default: the experiment's own, else the default rules.
            The Decision tab's gate picker changes it: the experiment's own, abbench's defaults, a gate
            file found in the current folder or next to the store, or one typed in.
        cluster: ``"domain"`` for intervals clustered by domain.

    Attributes:
        experiment: The experiment shown.
        metrics: Its `ExperimentMetrics`.
        gate_result: The `GateResult` for the chosen arms (None when it could not be evaluated).
        gate: The gate picker (`GatePicker`); ``gate.says(experiment)`` names the rules deciding.
        figures: Chart name → plotly figure (``confusion``, ``domains``, ``rounds``, ``latency``; with many
            labels ``confusion:<arm>``, see `ConfusionView`). A chart tab is drawn when it is first shown;
            reading `figures` draws them all.
        confusion: The Confusion tab (`ConfusionView`).
        tabs: The ``Tab`` holding the sections; ``tabs.selected_index`` is the section shown.
        activation: The Activation tab (`ActivationView`): offered arms' activation, and the decision
            pair's trigger-vs-help split.
        following: The Skill-following tab (`FollowingView`): each arm's share of applicable skill sections
            followed, the sections skipped most, and the decision pair's difference.
    """

    def __init__(
        self,
        store: StoreLike = None,
        *,
        experiment: int | str | None = None,
        baseline: str | None = None,
        candidate: str | None = None,
        gate: Any = None,
        cluster: str | None = None,
        **kwargs: Any,
    ):
        super().__init__(store, **kwargs)
        self.experiment: Experiment | None = None
        self.metrics: ExperimentMetrics | None = None
        self.gate_result: GateResult | None = None
        self._charted: dict[str, Any] = {}  # the charts of `charts` drawn, by name
        self._undrawn: dict[int, Any] = {}  # tab index → what draws its charts when the tab is first shown
        self._cluster = cluster
        self._arms_by_person = bool(baseline or candidate)
        self._refusal: str | None = None
        self._default: Any = None

        self.chooser = Choice("Experiment", on_select=self.guard("choosing an experiment", self._chosen))
        self.chooser.widget.layout.width = "560px"
        self.chooser.widget.layout.max_width = "100%"
        self.reload_button = self.button("Reload", self.reload, tooltip="read the experiment again")
        self._decision_controls(baseline, candidate, gate)
        self.summary_html = w.HTML()
        self.tabs = self._sections()
        self.tabs.observe(
            self.guard("drawing the charts", lambda c: self._draw_tab(c["new"])), "selected_index"
        )
        self.add_class("abbench-results")
        self.children = [
            w.HTML(STYLE + RESULTS_CSS),
            w.HBox([self.chooser.widget, self.reload_button], layout=w.Layout(flex_flow="row wrap")),
            self.summary_html,
            self.headline_html,
            self.errors,
            self.tabs,
        ]
        self.guard("listing experiments", self._list)()
        if experiment is not None:
            self.guard("choosing an experiment", self.select_experiment)(experiment)
        else:
            self.summary_html.value = note("choose an experiment")

    def _decision_controls(self, baseline: str | None, candidate: str | None, gate: Any) -> None:
        """The arms the decision compares, the gate picker, its rules and the headline."""
        wide = {
            "style": {"description_width": "initial"},
            "layout": w.Layout(width="260px", max_width="100%"),
        }
        self.baseline = Choice(
            "Baseline (A)", on_select=self.guard("choosing the baseline", self._arms_chosen), **wide
        )
        wide["layout"] = w.Layout(width="260px", max_width="100%")
        self.candidate = Choice(
            "Candidate (B)", on_select=self.guard("choosing the candidate", self._arms_chosen), **wide
        )
        self.gate = GatePicker(
            self.guard("choosing the gate", self._gate_chosen),
            gate=gate,
            folders=[Path.cwd(), self.store.path.parent],
        )
        self.rules_html = w.HTML()
        self.headline_html = w.HTML()
        if baseline:
            self.baseline.intended = baseline
        if candidate:
            self.candidate.intended = candidate

    def _sections(self) -> Any:
        """The tabs: arms, confusion, domains, stability, cost and latency, decision."""
        self.arms_html = w.HTML()
        self.confusion = ConfusionView()
        self.classes_html = self.confusion.classes_html
        self.domains_html = w.HTML()
        self.stability_html = w.HTML()
        self.usage_html = w.HTML()
        self.decision_html = w.HTML()
        self.activation = ActivationView()
        self.following = FollowingView()
        self.charts = {name: w.Output() for name in ("labels", "domains", "rounds", "latency")}
        for out in self.charts.values():
            out.add_class("abbench-chart")
        sections = [
            w.VBox([self.arms_html, self.charts["labels"]]),
            self.confusion,
            w.VBox([self.charts["domains"], self.domains_html]),
            w.VBox([self.charts["rounds"], self.stability_html]),
            w.VBox([self.charts["latency"], self.usage_html]),
            w.VBox(
                [
                    w.HBox(
                        [self.baseline.widget, self.candidate.widget], layout=w.Layout(flex_flow="row wrap")
                    ),
                    self.gate.widget,
                    self.rules_html,
                    self.decision_html,
                ]
            ),
            self.activation,
            self.following,
        ]
        return w.Tab(children=sections, titles=TABS)

    # -- choosing --------------------------------------------------------------------------------------

    def _list(self) -> None:
        self.chooser.set_options(experiment_options(self.store, status=True))

    def select_experiment(self, ref: int | str | Experiment) -> None:
        """Show an experiment, as choosing it in the list does."""
        self.chooser.select_listed(self.store.experiments.get(ref).id, self._list)

    def _chosen(self, value: Any) -> None:
        previous = self.experiment
        self.experiment = self.store.experiments.get(value) if value else None
        if previous is not None and self.experiment is not None and previous.id != self.experiment.id:
            # Arms belong to their experiment: another experiment starts from its own first and last arm.
            self.baseline.intended = self.candidate.intended = None
            self._arms_by_person = False
        self.reload()

    def _gate_chosen(self) -> None:
        if not self._arms_by_person:
            # Arms nobody chose follow the pair the new gate names (or the experiment's decision:).
            self.baseline.intended = self.candidate.intended = None
        if self.experiment is not None:
            self.reload()

    def rules(self) -> Any:
        """The gate the decision uses, as `abbench.gate.evaluate_gate` and `render_report` take it
        (None: the experiment's own, else the defaults; a file's path; or a list of rules).

        Raises:
            UsageError: no experiment chosen.
        """
        if self.experiment is None:
            raise UsageError("choose an experiment first")
        return self.gate.rules(self.experiment)

    def report_options(self) -> dict[str, Any]:
        """What `abbench.report.render_report` takes to report what the widget shows: the experiment,
        the two arms (baseline first) and the gate, so the page's verdict is the widget's.

        Raises:
            UsageError: no experiment, or not both arms chosen.
        """
        if self.experiment is None:
            raise UsageError("choose an experiment first")
        arms = [self.baseline.value, self.candidate.value]
        if len(self.experiment.arms) >= 2 and None in arms:
            raise UsageError("choose the baseline and the candidate first (the Decision tab)")
        return {
            "experiment": self.experiment.id,
            "arms": arms if len(self.experiment.arms) >= 2 else None,
            "gate": self.rules(),
        }

    def reload(self) -> None:
        """Read the experiment list and the shown experiment's results again, keeping every choice."""
        self._list()
        if self.chooser.missing is not None or self.experiment is None:
            self.experiment = None
            self.metrics = self.gate_result = None
            self.headline_html.value = self.rules_html.value = ""
            self.summary_html.value = note(
                f"experiment #{self.chooser.missing} is not in the store any more"
                if self.chooser.missing is not None
                else "choose an experiment",
                "warn" if self.chooser.missing is not None else "note",
            )
            return
        self.experiment = self.store.experiments.get(self.experiment.id)
        names = [a.name for a in self.experiment.arms]
        self.baseline.set_options([(n, n) for n in names])
        self.candidate.set_options([(n, n) for n in names])
        self._refusal = None
        self._default = None
        self.gate.scan(self.experiment)
        self.rules_html.value = note(self.gate.says(self.experiment, why=True))
        try:
            # The pair the gate or the experiment names (or the only two arms): never a guess among three.
            self._default = decision_pair(self.experiment.id, self.rules(), store=self.store)
        except PairNotNamed as exc:
            self._refusal = str(exc)
        except AbbenchError:
            # The gate itself is wrong (evaluating it says why): the arms still come from the experiment.
            try:
                self._default = decision_pair(self.experiment.id, [], store=self.store)
            except AbbenchError:
                self._default = None
        if self._default is not None:
            if self.candidate.value is None:
                self.candidate.select(self._default.candidate, notify=False)
            if self.baseline.value is None and self._default.baseline is not None:
                self.baseline.select(self._default.baseline, notify=False)
            elif self.baseline.value is None and len(names) == 1:
                self.baseline.select(names[0], notify=False)
        self.metrics = experiment_metrics(self.experiment.id, store=self.store, cluster=self._cluster)
        self._render_metrics(self.metrics)
        self._decide()

    def _arms_chosen(self, _value: Any) -> None:
        self._arms_by_person = True
        if self.experiment is not None:
            self._decide()

    # -- sections --------------------------------------------------------------------------------------

    def _render_metrics(self, m: ExperimentMetrics) -> None:
        exp = self.experiment
        assert exp is not None  # metrics are read for the experiment shown
        self.summary_html.value = note(
            f"#{exp.id} {exp.name} on {m.dataset}: {len(m.arms)} arms × {m.rounds} rounds, main figure: "
            f"{'accuracy' if m.outcome == 'passed' else 'mean score'} ({m.confidence:.0%} intervals"
            + (f", clustered by {m.cluster}" if m.cluster else "")
            + ")"
        ) + "".join(note(n, "warn") for n in m.notes)
        stand_in = stand_in_note([a.name for a in exp.arms if a.agent == "builtin"])
        if stand_in:
            self.summary_html.value += note(stand_in, "warn")
        self.arms_html.value = self._arms_table(m)
        # Plotly figures are what costs: a chart tab is drawn when it is first shown (or `figures` read).
        self.confusion.show(m, draw=False)
        self._charted = {}
        for out in self.charts.values():
            out.outputs = ()
        self._undrawn = {
            TABS.index("Arms"): lambda: self._chart("labels", label_distribution_figure(m.arms)),
            TABS.index("Confusion"): self.confusion.draw,
            TABS.index("Domains"): lambda: self._chart("domains", domain_figure(m)),
            TABS.index("Stability"): lambda: self._chart("rounds", rounds_figure(m)),
            TABS.index("Cost & latency"): lambda: self._chart("latency", latency_figure(m.arms)),
        }
        self._draw_tab(self.tabs.selected_index)
        self.domains_html.value = self._domains_table(m)
        self.stability_html.value = self._stability_table(m)
        self.usage_html.value = self._usage_table(m)
        self.activation.show(m)
        self.following.show(m)

    @property
    def figures(self) -> dict[str, Any]:
        """Chart name → plotly figure (see the class docstring); reading it draws every chart not drawn yet."""
        self.draw_charts()
        return {**self.confusion.figures, **{n: self._charted[n] for n in self.charts if n in self._charted}}

    def draw_charts(self) -> None:
        """Draw every chart not drawn yet (a chart tab is otherwise drawn when it is first shown)."""
        for index in list(self._undrawn):
            self._draw_tab(index)

    def _draw_tab(self, index: int | None) -> None:
        draw = self._undrawn.pop(index, None) if index is not None else None
        if draw is not None:
            draw()

    def _chart(self, name: str, figure: Any) -> None:
        self._charted[name] = figure
        show_figure(self.charts[name], figure)

    @staticmethod
    def _arms_table(m: ExperimentMetrics) -> str:
        rows = []
        for a in m.arms:
            c = a.counts
            rows.append(
                (
                    a.label,
                    fmt_estimate(a.accuracy),
                    a.accuracy.method,
                    fmt_estimate(a.strict_accuracy),
                    fmt_estimate(a.score, share=False) if a.score is not None else NONE,
                    f"{c.runs:,}",
                    f"{c.passed:,} / {c.failed:,}"
                    + (f" ({c.scored:,} scored, no verdict)" if c.scored else ""),
                    f"{c.execution_failed:,}"
                    + (
                        f" ({', '.join(f'{k} {v}' for k, v in c.failure_types.items())})"
                        if c.failure_types
                        else ""
                    ),
                    f"{c.grading_failed:,}",
                    f"{c.cancelled:,} / {c.unfinished:,}",
                )
            )
        return html_table(
            [
                "arm",
                f"accuracy [{m.confidence:.0%} interval]",
                "interval method",
                "strict accuracy",
                "score",
                "runs",
                "right / wrong",
                "execution failed",
                "grading failed",
                "cancelled / unfinished",
            ],
            rows,
            numeric=(1, 3, 4, 5, 6, 8, 9),
        )

    @staticmethod
    def _domains_table(m: ExperimentMetrics) -> str:
        arms = [a.arm for a in m.arms]
        if not m.has_domain_breakdown:  # as the report says it: one row would only repeat the Arms tab
            return note(fm.NO_DOMAINS)
        domains: dict[Any, dict[str, GroupAccuracy]] = {}
        for g in m.by_domain:
            domains.setdefault(g.group, {})[g.arm] = g
        rows = []
        for domain, per_arm in domains.items():
            cells = [domain]
            for arm in arms:
                found = per_arm.get(arm)
                cells.append(
                    NONE
                    if found is None
                    else f"{fmt_estimate(found.accuracy, share=m.outcome == 'passed')} · {found.accuracy.n_cases} cases"
                )
            rows.append(cells)
        return html_table(["domain", *arms], rows, nowrap=tuple(range(1, len(arms) + 1)))

    @staticmethod
    def _stability_table(m: ExperimentMetrics) -> str:
        rows = []
        for a in m.arms:
            s = a.stability
            flipped = ", ".join(s.flipped[:FLIPPED_SHOWN]) + (" …" if len(s.flipped) > FLIPPED_SHOWN else "")
            rows.append(
                (
                    a.arm,
                    s.rounds,
                    fm.pct(s.agreement),
                    fm.pct(s.flip_rate),
                    fm.pct(s.flaky_rate),
                    _num(s.within_variance, 4),
                    flipped or (s.reason or NONE),
                )
            )
        by_round: dict[str, list[str]] = {}
        for g in m.by_round:
            by_round.setdefault(g.arm, []).append(
                f"round {int(g.group)}: {fmt_estimate(g.accuracy, share=m.outcome == 'passed')}"
            )
        return (
            html_table(
                [
                    "arm",
                    "rounds",
                    "answer agreement",
                    "flip rate",
                    "flaky rate",
                    "within-case variance",
                    "cases that flip",
                ],
                rows,
            )
            + "".join(note(f"{arm}: " + "; ".join(v)) for arm, v in by_round.items())
            + _pass_k_table(m)
        )

    @staticmethod
    def _usage_table(m: ExperimentMetrics) -> str:
        rows = []
        for a in m.arms:
            u, g = a.usage, a.grounding
            # nothing executed: the cost is unknown, never $0 (the figures below would read as free)
            cash: Callable[[float | None], str] = fm.money if u.executed else (lambda _value: NO_RUN_EXECUTED)
            rows.append(
                (
                    a.arm,
                    f"{u.executed:,}",
                    fm.ms(u.latency_ms.p50),
                    fm.ms(u.latency_ms.p95),
                    fm.ms(u.latency_ms.mean),
                    _num(u.tokens.mean, 0),
                    cash(u.cost.mean),
                    cash(u.cost.p50),
                    cash(u.total_cost),
                    cash(u.cost_per_correct),
                    cash(u.judge_cost),
                    fm.pct(g.no_evidence.value),
                    fm.pct(g.low_confidence.value),
                    fm.pct(g.skill_read.value),
                )
            )
        return html_table(
            [
                "arm",
                "executed",
                "latency p50",
                "p95",
                "mean",
                "tokens / run",
                "cost / run (mean)",
                "cost / run (median)",
                "agent cost (total)",
                "cost / right answer",
                "judge cost",
                "no evidence",
                "low confidence",
                "skill read",
            ],
            rows,
            numeric=tuple(range(1, 14)),
        ) + "".join(note(f"{a.arm}: {a.usage.cost_gap}") for a in m.arms if a.usage.cost_gap)

    def _decide(self) -> None:
        exp = self.experiment
        a, b = self.baseline.value, self.candidate.value
        self.gate_result = None
        self.headline_html.value = ""
        if exp is None or b is None or (len(exp.arms) >= 2 and a is None):
            self.decision_html.value = (
                note(f"no decision: {self._refusal}; or choose the baseline and the candidate above", "warn")
                if self._refusal
                else note("choose the baseline and the candidate to decide on")
            )
            self.headline_html.value = note("no decision yet: choose the pair in the Decision tab")
            return
        if len(exp.arms) >= 2 and a == b:
            self.decision_html.value = note(
                "choose two different arms: the baseline and the candidate", "warn"
            )
            self.headline_html.value = note(
                "no decision: the baseline and the candidate are the same arm", "warn"
            )
            return
        default = self._default
        named = default is not None and (default.baseline, default.candidate) == (a, b)
        arms = (a, b) if len(exp.arms) >= 2 and not named else None
        try:
            rules = self.rules()
            # The metrics shown above (read at the last reload) are the gate's: measured once, not twice.
            result = evaluate_gate(
                exp.id, rules, store=self.store, arms=arms, cluster=self._cluster,
                measured=Measured(metrics=self.metrics),
            )  # fmt: skip
        except Exception as exc:
            # No verdict at all rather than the last one: a stale PASS under a broken gate misleads.
            why = str(exc) if isinstance(exc, AbbenchError) else f"{type(exc).__name__}: {exc}"
            self.decision_html.value = note(
                f"no decision with {self.gate.says(exp)}: {why}. Fix it and press Reload, or choose another "
                "gate above.",
                "error",
            )
            self.headline_html.value = note(
                f"no decision: {self.gate.says(exp)} could not be applied (see the Decision tab)", "error"
            )
            raise
        self.gate_result = result
        self.decision_html.value = self._decision_html(result, self.gate.says(exp))
        self.activation.show_pair(result.comparison)
        self.following.show_pair(result.comparison)
        tone = _TONES.get(result.outcome, "muted")
        # Why, under anything but a plain pass: an inconclusive gate says what the evidence leaves open and
        # about how many more cases would settle it, so nobody reads it as a near-pass or a near-block.
        kind = "error" if result.outcome == GateOutcome.BLOCK else "warn"
        why = note(f"{result.outcome}: {result.reason}", kind) if result.outcome != GateOutcome.PASS else ""
        self.headline_html.value = (
            f'<div class="abbench-headline abbench-{tone}">{escape(result.pair_text)}: gate '
            f"{escape(result.outcome.upper())} — {escape(result.coverage.text)}</div>"
            + why
            + note(f"{self.gate.says(exp)} · pair named by {self._named_by(result)}")
        )

    def _named_by(self, g: GateResult) -> str:
        """Who named the pair, with a gate file's path shown as in the picker."""
        by = g.pair.named_by
        return "the gate file" if by == g.source and self.gate.choice.value == by else by

    @staticmethod
    def _decision_html(g: GateResult, says: str) -> str:
        kind = _TONES.get(g.outcome, "muted")
        # The pair first, then the outcome and the coverage it rests on, as in the CLI and the report.
        head = (
            f'<div class="abbench-{kind}" style="font-size:16px;font-weight:bold">{escape(g.pair_text)}: gate '
            f"{escape(g.outcome.upper())} — {escape(g.coverage.text)}</div>"
        )
        if g.outcome != GateOutcome.PASS:
            head += note(f"{g.outcome}: {g.reason}", "error" if g.outcome == GateOutcome.BLOCK else "warn")
        verdict = note(g.verdict) if g.verdict else ""
        dims = html_table(
            ["dimension", "conclusion", "why"],
            [(d.name, d.conclusion, d.summary) for d in g.decision.dimensions],
            wide=(2,),
        )
        ops = {">=": "≥", "<=": "≤", "==": "=", "!=": "≠"}
        rules = html_table(
            ["rule", "value", "outcome", "condition", "severity"],
            [
                (
                    r.rule.name or r.rule.metric,
                    fm.in_unit(r.value, metric_unit(r.rule.metric)),
                    _rule_word(r),
                    f"{r.rule.metric} {ops.get(r.rule.op, r.rule.op)} "
                    f"{fm.in_unit(r.rule.value, metric_unit(r.rule.metric))}",
                    r.rule.severity,
                )
                for r in g.rules
            ],
            numeric=(1,),
        )
        notes = "".join(note(n, "warn") for n in g.notes)
        return (
            head
            + verdict
            + f"<b>Decision ({escape(g.pair_text)}): {escape(g.decision.headline)}</b>"
            + dims
            + f'<b title="{escape(g.source)}">Rules</b> ({escape(says.removeprefix("rules: "))})'
            + rules
            + notes
        )

    def arm(self, name: str) -> ArmMetrics:
        """The shown experiment's figures for one arm.

        Raises:
            NotFoundError: no such arm.
        """
        if self.metrics is None:
            raise UsageError("choose an experiment first")
        return self.metrics.arm(name)

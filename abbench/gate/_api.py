"""Evaluating a gate: compare, measure, decide, and check every rule, with warnings that never block."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from abbench import _actions as do
from abbench._result import read_record
from abbench.compare import (
    ARMS_GIVEN,
    DEFAULT_MARGIN,
    CompareOptions,
    Comparison,
    Pair,
    Side,
    Votes,
    compare_arms,
    compare_experiments,
    experiment_arm,
    experiment_pair,
    resolve_pair,
    vote_policy,
)
from abbench.errors import Action, NotFoundError, UsageError, View
from abbench.formatting import in_unit
from abbench.gate._coverage import FULL, Coverage, coverage
from abbench.gate._decision import Decision, DecisionPolicy, decide
from abbench.gate._metric import Unsettled, format_value as _format
from abbench.gate._namespace import metric_unit, speaks_of_cost
from abbench.gate._params import check_params
from abbench.gate._rules import COST_WARNING, OPS, GateRule, GateSpec, load_gate, parse_rules
from abbench.gate._words import GateOutcome, RuleStatus, Severity
from abbench.graders import experiment_self_judging
from abbench.metrics import ArmMetrics, ExperimentMetrics, Result, experiment_metrics
from abbench.review import corrected_accuracy
from abbench.store import Experiment, Store, open_store

STATUSES = tuple(RuleStatus)
"""A rule's status: its condition holds, does not hold, its metric has no value, or the evidence does
not settle it (``non_inferior`` or ``capability_pass`` with an interval straddling the margin)."""

OUTCOMES = tuple(GateOutcome)
"""A gate's outcome: every rule holds; they hold but a warning fired; a ``block`` rule failed (or had no
value); the decision rests on fewer runs than it needs (`min_coverage`); or the evidence does not decide
(a ``block`` rule is inconclusive — ``non_inferior``, or the default rules' ``capability_pass``, with an
interval straddling the margin — and none blocks, or no rule could be assessed at all). Only the first two
are a pass. As NVIDIA NeMo Evaluator's gate (PASS / WARN / BLOCK / INCONCLUSIVE), not enough evidence is
told apart from evidence of a loss."""


@dataclass(frozen=True)
class RuleOutcome(Result):
    """One rule, its metric's value and what came of it.

    Attributes:
        rule: The rule.
        value: The metric's value (None when it could not be computed).
        status: ``pass``, ``fail``, ``missing`` or ``inconclusive`` (see `STATUSES`).
        blocks: Whether this outcome blocks the gate (a failing or missing ``block`` rule).
        message: One line for people: the rule, the value and the outcome (and why a value is missing).
        reason: Why the metric has no value — missing, or not settled by the evidence (the interval and
            about how many more cases would settle it); None with a value. Part of `message`.
    """

    rule: GateRule
    value: Any
    status: RuleStatus
    blocks: bool
    message: str
    reason: str | None = field(default=None, compare=False)
    speaks_of: tuple[str, ...] = ()

    @property
    def cited(self) -> str:
        """The rule by its name with its figure and what it asks for: ``at most 15 cases regressed
        (regressed 16; the rule asks ≤ 15)`` — and, when its name speaks of an arm outside the pair decided
        on, which arms (the figure is always the decided pair's)."""
        rule = self.rule
        unit = metric_unit(rule.metric)
        figure = in_unit(self.value, unit, missing="no value")
        words = {">=": "≥", "<=": "≤", "==": "=", "!=": "≠"}
        asked = f"{words.get(rule.op, rule.op)} {in_unit(rule.value, unit)}"
        named = f" [its name speaks of {', '.join(self.speaks_of)}]" if self.speaks_of else ""
        return f"{rule.name or rule.text} ({rule.metric} {figure}; the rule asks {asked}){named}"

    @property
    def assessed(self) -> bool:
        """Whether the rule's metric had a value (a rule without one is not assessed, never passed)."""
        return self.status != RuleStatus.MISSING

    @property
    def explanation(self) -> str:
        """`reason` without its ``inconclusive:`` opening: the clause the gate's own reason quotes."""
        return (self.reason or "").removeprefix("inconclusive: ")


@dataclass(frozen=True)
class GateResult(Result):
    """A gate's outcome for an experiment.

    Attributes:
        experiment: The gated experiment's name.
        experiment_id: Its id.
        a: The baseline side (None when there was nothing to compare with).
        b: The side the gate decides on.
        pair: The pair and who named it (``--arms``, the gate file, the experiment's ``decision:``, ...).
        source: Where the rules came from: a file, ``experiment gate``, ``rules given`` or ``default rules``.
        outcome: One of `OUTCOMES`.
        coverage: On how many of the pair's planned runs the decision rests, said first in every view.
        rules: Every rule's outcome, in order.
        decision: Capability, cost and stability with their evidence.
        verdict: The comparison's verdict in words (None without a comparison).
        notes: Caveats (e.g. what could not be measured).
        verdict_outcome: The comparison's outcome against its margin in words (better / not worse /
            worse / inconclusive, with how many more cases would settle it); None without a comparison.
        votes: The per-case votes when the experiment's ``decision:`` says ``policy: votes``.
        stopped: Where the experiment's stopping rule stopped it (``decided after 120 of 500 cases:
            better …``); its intervals and p-values are then the anytime-valid ones. None otherwise.
        comparison: The comparison the gate decided on (None for one arm), for views that show more of it
            than the gate's figures (not exported: `abbench compare --json` has it).
    """

    experiment: str
    experiment_id: int
    a: Side | None
    b: Side
    pair: Pair
    source: str
    outcome: GateOutcome
    coverage: Coverage
    rules: tuple[RuleOutcome, ...]
    decision: Decision
    verdict: str | None
    notes: tuple[str, ...]
    verdict_outcome: str | None = None
    votes: Any = None
    stopped: str | None = None
    comparison: Comparison | None = field(default=None, repr=False, compare=False, metadata={"export": False})

    @property
    def passed(self) -> bool:
        """True for ``pass`` and ``pass with warnings``; never for block, incomplete or inconclusive."""
        return self.outcome in (GateOutcome.PASS, GateOutcome.PASS_WITH_WARNINGS)

    @property
    def pair_text(self) -> str:
        """``v2 vs v1``: how every verdict line on this gate opens."""
        return f"{self.b.name} vs {self.a.name}" if self.a is not None else self.b.name

    @property
    def headline(self) -> str:
        """``v2 vs v1: INCOMPLETE — decided on 462 of 1,203 runs per arm``: pair, outcome, coverage."""
        stopped = f" — stopped by its rule: {self.stopped}" if self.stopped else ""
        return f"{self.pair_text}: {self.outcome.upper()} — {self.coverage.text}{stopped}"

    @property
    def next_steps(self) -> tuple[Action, ...]:
        """What would complete an incomplete gate's runs, each worded for every view (empty otherwise):
        retry the cancelled runs, run the unfinished, retry the failed, re-grade those without a verdict."""
        if self.outcome != GateOutcome.INCOMPLETE:
            return ()
        arms, ref = self.coverage.arms, self.experiment_id
        todo = [
            (sum(a.cancelled for a in arms), do.retry_runs(ref, "cancelled")),
            (sum(a.unfinished for a in arms), do.run_experiment(ref)),
            (sum(a.execution_failed for a in arms), do.retry_runs(ref)),
            (sum(a.grading_failed for a in arms), do.regrade_failed(ref)),
        ]
        return tuple(action for n, action in todo if n) or (do.run_experiment(ref),)

    @property
    def reason(self) -> str:
        """Why the outcome is what it is, in one sentence (what to do in Python calls; `worded_reason`
        words it for the CLI or the server)."""
        return self.worded_reason("python")

    def worded_reason(self, view: View) -> str:
        """`reason` as `view` words it: what to do as the CLI's commands, Python calls or HTTP requests."""
        if self.outcome == GateOutcome.INCOMPLETE:
            steps = ", ".join(step.worded(view) for step in self.next_steps)
            return (
                f"the decision needs {self.coverage.required_text} of each arm graded and rests on "
                f"{self.coverage.share:.0%} ({self.coverage.gap or 'nothing planned'}); finish the runs ({steps}) "
                "or allow less with min_coverage in the gate file"
            )
        if self.outcome == GateOutcome.INCONCLUSIVE:
            if self.unsettled:
                said = [f"{r.rule.name or r.rule.text}: {r.explanation}" for r in self.unsettled]
                return "not decided by the evidence: " + "; ".join(said)
            return "no rule could be assessed: every rule's metric has no value on these data"
        if self.outcome == GateOutcome.BLOCK:
            return f"blocked on {self.pair_text} by " + "; ".join(r.cited for r in self.blocking)
        if self.outcome == GateOutcome.PASS_WITH_WARNINGS:
            said = []
            if self.warnings:
                said.append(f"warnings on {self.pair_text}: " + "; ".join(r.cited for r in self.warnings))
            if self.not_assessed:
                said.append(
                    "not assessed: " + "; ".join(r.rule.name or r.rule.text for r in self.not_assessed)
                )
            return "every block rule holds; " + "; ".join(said)
        return "every rule holds"

    def as_dict(self, view: View = "python") -> dict[str, Any]:
        """The fields as plain values, with `reason` worded for `view` and every wording of `next_steps`."""
        steps = [step.to_dict() for step in self.next_steps]
        data = {**super().as_dict(), "reason": self.worded_reason(view), "next_steps": steps}
        data["pair"] = {**data["pair"], "named_by": self.pair.named_in(view), "given": self.pair.given}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GateResult:
        """The gate `as_dict` wrote for any view (a server's answer): the pair as it was named (so each
        view words it again), the decision's coverage the gate's; `comparison` is not sent (None)."""
        pair, given = data["pair"], data["pair"].get("given")
        named = ARMS_GIVEN if given else pair["named_by"]
        result = read_record(cls, {**data, "pair": {**pair, "named_by": named, "given": given}})
        decision = replace(result.decision, coverage=result.coverage)
        votes = read_record(Votes, data["votes"]) if data.get("votes") else None
        return replace(result, decision=decision, votes=votes)

    @property
    def blocking(self) -> tuple[RuleOutcome, ...]:
        """The rules that block."""
        return tuple(r for r in self.rules if r.blocks)

    @property
    def unsettled(self) -> tuple[RuleOutcome, ...]:
        """The ``block`` rules the evidence does not settle (each message says why and what would settle it)."""
        return tuple(
            r for r in self.rules if r.status == RuleStatus.INCONCLUSIVE and r.rule.severity == Severity.BLOCK
        )

    @property
    def not_assessed(self) -> tuple[RuleOutcome, ...]:
        """The rules allowed to have no value that had none: never a plain *pass* while any is left."""
        return tuple(r for r in self.rules if r.status == RuleStatus.MISSING and r.rule.allow_missing)

    @property
    def warnings(self) -> tuple[RuleOutcome, ...]:
        """The ``warn`` rules that did not pass (a missing value the rule allows is `not_assessed` instead)."""
        return tuple(
            r
            for r in self.rules
            if r.rule.severity == Severity.WARN
            and r.status != RuleStatus.PASS
            and not (r.status == RuleStatus.MISSING and r.rule.allow_missing)
        )


def _experiment_gate(exp: Experiment, arms: tuple[str, ...]) -> GateSpec | None:
    gate = exp.gate
    if not gate:
        return None
    if isinstance(gate, str):
        path = Path(gate).expanduser()
        if not path.is_file():
            raise UsageError(
                f"experiment {exp.name!r} names the gate file {gate!r}, which does not exist here (relative paths "
                "are read from the current folder); run from the definition's folder or give the rules (",
                do.evaluate_gate(exp.id),
                ")",
                kind="gate file",
                name=gate,
            )
        return load_gate(path, arms=arms)
    spec = load_gate(gate, arms=arms, origin=f"experiment {exp.name} gate")
    return GateSpec(spec.rules, "experiment gate", spec.baseline, spec.candidate, spec.min_coverage)


def _resolve(
    exp: Experiment, gate: GateSpec, arms: Any, base: Experiment | None
) -> tuple[Pair, str | None, str, list[str]]:
    """The pair (display names), the baseline's and the candidate's arm names, and notes on the choice."""
    notes: list[str] = []
    if base is not None:
        where = "--arms" if arms else f"{gate.source}: baseline/candidate"
        named = tuple(arms) if arms else gate.pair
        arm_a = experiment_arm(base, named[0] if named else None, "baseline", where)
        arm_b = experiment_arm(exp, named[1] if named else None, "candidate", where)
        by = ARMS_GIVEN if arms else (gate.source if gate.pair else "the experiments' candidates")
        return (
            Pair(
                f"{base.name}/{arm_a.name}",
                f"{exp.name}/{arm_b.name}",
                by,
                (arm_a.name, arm_b.name) if arms else None,
            ),
            arm_a.name,
            arm_b.name,
            notes,
        )
    pair = resolve_pair(exp, arms, gate_pair=gate.pair, gate_source=gate.source)
    own = experiment_pair(exp)
    if pair.named_by != "experiment decision" and own is not None and own != (pair.baseline, pair.candidate):
        notes.append(
            f"the experiment's decision: names {own[1]} vs {own[0]}; "
            f"{'the arms given name' if pair.named_by == ARMS_GIVEN else pair.named_by + ' names'} "
            f"{pair.candidate} vs {pair.baseline}, which is the pair decided on"
        )
    return pair, pair.baseline, pair.candidate, notes


def _gate_of(exp: Experiment, rules: Any) -> GateSpec:
    names = tuple(a.name for a in exp.arms)
    gate = load_gate(rules, arms=names) if rules is not None else _experiment_gate(exp, names)
    return gate if gate is not None else load_gate(None, arms=names)


def decision_pair(
    experiment: int | str | Experiment,
    rules: str | os.PathLike[str] | list[Any] | dict[str, Any] | None = None,
    *,
    store: str | os.PathLike[str] | Store | None = None,
    arms: tuple[str, str] | list[str] | None = None,
    vs: int | str | Experiment | None = None,
) -> Pair:
    """The pair `evaluate_gate` decides on with these arguments, as plain arm names (with `vs`: the
    baseline experiment's arm and this experiment's), without measuring anything.

    Raises:
        PairNotNamed: three or more arms and no pair named anywhere.
        UsageError: an unknown arm (with "did you mean"), or an invalid gate.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    _check_arms(arms)
    base = store.experiments.get(vs) if vs is not None else None
    pair, a_name, b_name, _ = _resolve(exp, _gate_of(exp, rules), arms, base)
    return Pair(a_name, b_name, pair.named_by)


def _self_judging_notes(exp: Experiment, base: Experiment | None, pair: tuple[str | None, str]) -> list[str]:
    """A caveat for each judge of the pair's own model or family (self-preference)."""
    return [
        f"judge ≠ agent: {w.message}"
        for judged in ((exp,) if base is None else (base, exp))
        for w in experiment_self_judging(judged)
        if w.arm in pair
    ]


def evaluate_gate(
    experiment: int | str | Experiment,
    rules: str | os.PathLike[str] | list[Any] | dict[str, Any] | GateSpec | None = None,
    *,
    store: str | os.PathLike[str] | Store | None = None,
    arms: tuple[str, str] | list[str] | None = None,
    vs: int | str | Experiment | None = None,
    policy: DecisionPolicy | None = None,
    cluster: str | None = None,
    confidence: float = 0.95,
    alpha: float = 0.05,
    power: float = 0.8,
    measured: Measured | None = None,
) -> GateResult:
    """Decide whether an experiment's candidate arm passes its gate.

    The pair is named, never guessed: by `arms`, else the gate's ``baseline:``/``candidate:``, else the
    experiment's ``decision:``; an experiment with exactly two arms needs no name (first is the baseline),
    one with three or more and no name is refused. The candidate is compared with the baseline, measured,
    and decided on in three dimensions; then every rule is checked. The outcome (see `OUTCOMES`) is
    *incomplete* while fewer of the pair's planned runs are graded than the gate's ``min_coverage``
    (default: all of them), *block* when a ``block`` rule fails — or has no value, unless it says
    ``allow_missing`` — *inconclusive* when no rule was assessed or a ``block`` rule is left unsettled
    (an interval straddling the margin), else *pass* (*with warnings* when a ``warn`` rule did not hold
    or a rule allowed to have no value had none: never a plain *pass* while something was not assessed).

    Args:
        experiment: The gated experiment.
        rules: A gate file (JSON or YAML), a list of rules, ``{rules, baseline, candidate, min_coverage}``
            or a loaded `GateSpec`. Default: the experiment's own gate, else the default rules (see `DEFAULT_RULES`).
        store: The store.
        arms: ``(A, B)``: the baseline and candidate arms (overrides the gate's and the experiment's pair).
            With `vs`, the arm of the baseline experiment and the arm of this one.
        vs: A baseline experiment on the same dataset (the gated experiment is then B).
        policy: When the dimensions block (see `DecisionPolicy`). Default: the experiment's
            ``decision:`` — ``policy: votes`` (with its ``margin`` and ``min_cases``) decides capability
            by per-case votes — else `DecisionPolicy()`.
        cluster: ``"domain"`` for cluster-robust intervals.
        confidence: Coverage of the intervals.
        alpha: Significance level.
        power: Power for the minimum detectable effect.
        measured: Figures the caller has (`Measured`), each used only when of this pair and options.

    Raises:
        PairNotNamed: three or more arms and no pair named anywhere (listing the arms and ways to name it).
        ComparisonRefused: the baseline ran on another dataset.
        UsageError: an invalid rule (with its line and field) or option; an unknown arm, class or domain.
        NotFoundError: no such experiment or arm.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    _check_arms(arms)
    gate = _gate_of(exp, rules)
    base = store.experiments.get(vs) if vs is not None else None
    pair, a_name, b_name, notes = _resolve(exp, gate, arms, base)  # refused before anything is measured
    options = _options(gate.rules, cluster, confidence, alpha, power)
    m = _measure(store, exp, base, a_name, b_name, options, notes, gate.rules, measured or Measured())
    comparison = m.comparison
    check_params(gate.rules, exp, store, [x for x in (m.metrics_a, m.metrics_b) if x is not None])
    covered = _covered(gate, m, b_name, _stopped(exp, base).get("skipped"))
    decision = replace(decide(comparison, m.arm_a, m.arm_b, _policy(exp, policy)), coverage=covered)
    outcomes = _with_cost_warning(gate, _rule_outcomes(gate, decision, m, notes), decision, m)
    notes += _self_judging_notes(exp, base, (a_name, b_name))
    return GateResult(
        experiment=exp.name,
        experiment_id=exp.id,
        b=comparison.b if comparison is not None else _one_side(exp, b_name),
        pair=pair,
        source=gate.source,
        outcome=_outcome(covered, outcomes),
        coverage=covered,
        rules=outcomes,
        decision=decision,
        notes=tuple(notes) + (comparison.notes if comparison is not None else ()),
        votes=decision.votes,
        stopped=_stopped(exp, base).get("text"),
        **_from_comparison(comparison),
    )


def _rule_outcomes(
    gate: GateSpec, decision: Decision, m: _Measured, notes: list[str]
) -> tuple[RuleOutcome, ...]:
    """Every rule checked on the pair's figures, each whose name speaks of another arm marked so."""
    return _named_for_another_pair(
        tuple(_check(r, m.comparison, decision, m) for r in gate.rules), gate, m, notes
    )


def _with_cost_warning(
    gate: GateSpec, outcomes: tuple[RuleOutcome, ...], decision: Decision, m: _Measured
) -> tuple[RuleOutcome, ...]:
    """The rules' outcomes, and the default cost warning (`COST_WARNING`) when no rule speaks of cost and the
    candidate is shown to cost more than `COST_WARN_SHARE` extra per case: never a plain pass beside it."""
    if any(speaks_of_cost(r.metric) for r in gate.rules):
        return outcomes
    added = _check(parse_rules([COST_WARNING], origin="added")[0], m.comparison, decision, m)
    return (*outcomes, added) if added.status == RuleStatus.FAIL else outcomes


def _named_for_another_pair(
    outcomes: tuple[RuleOutcome, ...], gate: GateSpec, m: _Measured, notes: list[str]
) -> tuple[RuleOutcome, ...]:
    """The rules whose names speak of an arm the figure is not about, marked.

    A gate file written for v1 → v2 and applied with ``--arms no-skill v2`` keeps names that say v1 (and,
    applied to v2 → no-skill, names that say "v2 accuracy" over no-skill's accuracy). A rule's name is
    suspect when it names an arm outside the pair decided on, or any arm at all when the pair is not the
    one the gate file names; its message then says whose figure it is, and a note says it once."""
    c = m.comparison
    if c is None:
        return outcomes
    decided = (c.a.arm_name, c.b.arm_name)
    arms = {a.arm for x in (m.metrics_a, m.metrics_b) if x is not None for a in x.arms}
    moved = gate.pair is not None and tuple(gate.pair) != decided
    suspects = sorted(arms if moved else arms - set(decided), key=len, reverse=True)
    if moved and gate.pair is not None:
        notes.append(
            f"{gate.source} names {gate.pair[1]} vs {gate.pair[0]}; this gate decides {c.b.name} vs {c.a.name}: "
            f"every figure is {c.b.name} vs {c.a.name}'s (an unprefixed arm metric is {c.b.name}'s), whatever a "
            "rule's name says"
        )
    marked = []
    for o in outcomes:
        name = o.rule.name or ""
        hits = {a: re.search(rf"(?<![\w.-]){re.escape(a)}(?![\w.-])", name) for a in suspects}
        at = {a: hit.start() for a, hit in hits.items() if hit is not None}
        found = tuple(sorted(at, key=at.__getitem__))  # in the order the name says them
        if found:
            whose = _whose(o.rule, c)
            o = replace(
                o, speaks_of=found, message=f"{o.message} [its name speaks of {', '.join(found)}; {whose}]"
            )
        marked.append(o)
    return tuple(marked)


def _whose(rule: GateRule, c: Comparison) -> str:
    """Whose figure a rule reads: ``the figure is no-skill's`` or ``the figure is v2 vs no-skill's``."""
    ref = rule.ref
    if ref is None or ref.definition.scope != "arm":
        return f"the figure is {c.b.name} vs {c.a.name}'s"
    if ref.arm == "a":
        return f"the figure is {c.a.name}'s"
    if ref.arm in (None, "b"):
        return f"the figure is {c.b.name}'s"
    return f"the figure is {ref.arm}'s"


def _from_comparison(c: Comparison | None) -> dict[str, Any]:
    """What a `GateResult` takes from the comparison it decided on (nothing for one arm)."""
    if c is None:
        return {"a": None, "verdict": None, "verdict_outcome": None, "comparison": None}
    return {"a": c.a, "verdict": c.verdict.text, "verdict_outcome": c.verdict.outcome_text, "comparison": c}


@dataclass(frozen=True)
class Measured:
    """Figures a caller of `evaluate_gate` already has, so the gate does not measure them again.

    Attributes:
        metrics: `experiment_metrics` of the gated experiment.
        base_metrics: Of the baseline experiment (with ``vs``).
        comparison: The pair's comparison (`compare_arms`, or `compare_experiments` with ``vs``).
    """

    metrics: ExperimentMetrics | None = None
    base_metrics: ExperimentMetrics | None = None
    comparison: Comparison | None = None

    def metrics_of(
        self, exp: Experiment, given: ExperimentMetrics | None, options: CompareOptions, store: Store
    ) -> ExperimentMetrics:
        """`given` when it is `exp`'s, measured with these options; else `exp`'s metrics measured now."""
        if (
            given is not None
            and given.grader is None  # one grader's figures are a view, never the gate's
            and given.experiment_id == exp.id
            and given.cluster == options.cluster
            and given.confidence == options.confidence
        ):
            return given
        return experiment_metrics(exp, store=store, cluster=options.cluster, confidence=options.confidence)

    def comparison_of(
        self, a: Experiment, a_name: str, b: Experiment, b_name: str, options: CompareOptions
    ) -> Comparison | None:
        """The given comparison when it is of this pair, with these options; else None."""
        c = self.comparison
        if c is None or c.grader is not None:  # one grader's comparison is a view, never the gate's
            return None
        if (c.a.experiment_id, c.a.arm, c.b.experiment_id, c.b.arm) != (
            a.id,
            a_name,
            b.id,
            b_name,
        ):
            return None
        if (c.confidence, c.alpha, c.power, c.verdict.margin) != (
            options.confidence,
            options.alpha,
            options.power,
            options.margin,
        ):
            return None  # the capability dimension follows the verdict's outcome, judged on its margin
        return c if (c.clustered is not None) == (options.cluster is not None) else None


@dataclass(frozen=True)
class _Measured:
    """The gated pair compared and measured: the comparison (None for one arm), both experiments' metrics
    (A's None for one arm; the same object when both arms are in one experiment) and each arm's figures."""

    comparison: Comparison | None
    metrics_a: ExperimentMetrics | None
    metrics_b: ExperimentMetrics
    arm_a: ArmMetrics | None
    arm_b: ArmMetrics


def _measure(
    store: Store,
    exp: Experiment,
    base: Experiment | None,
    a_name: str | None,
    b_name: str,
    options: CompareOptions,
    notes: list[str],
    rules: Sequence[GateRule] = (),
    given: Measured = Measured(),
) -> _Measured:
    """Compare candidate `b_name` with the baseline (an arm of `exp`, or of `base`) and measure both (with
    people's corrected accuracy when a rule asks for it), reusing what `given` holds of them."""
    comparison: Comparison | None = None
    metrics_b = given.metrics_of(exp, given.metrics, options, store)
    metrics_a: ExperimentMetrics | None
    if base is not None:
        comparison = given.comparison_of(base, a_name or "", exp, b_name, options) or compare_experiments(
            base, exp, arm_a=a_name, arm_b=b_name, store=store, options=options
        )
        metrics_a = given.metrics_of(base, given.base_metrics, options, store)
    elif a_name is not None:
        comparison = given.comparison_of(exp, a_name, exp, b_name, options) or compare_arms(
            exp, a_name, b_name, store=store, options=options
        )
        metrics_a = metrics_b
    else:
        metrics_a = None
        notes.append(
            "one arm: comparison metrics have no value (give another experiment as the baseline: vs)"
        )
    arm_a = metrics_a.arm(a_name) if metrics_a is not None and a_name is not None else None
    measured = _Measured(comparison, metrics_a, metrics_b, arm_a, metrics_b.arm(b_name))
    if any(rule.metric == CORRECTED for rule in rules):
        return _with_corrected(measured, store, exp, base, options.confidence)
    return measured


CORRECTED = "corrected_accuracy"
"""The gate metric read from people's reviews of a random sample (measured only when a rule names it)."""


def _with_corrected(
    m: _Measured, store: Store, exp: Experiment, base: Experiment | None, confidence: float
) -> _Measured:
    """`m` with each side's PPI-corrected accuracy per arm (or why there is none) on its metrics."""

    def of(experiment: Experiment, metrics: ExperimentMetrics) -> ExperimentMetrics:
        try:
            figures = corrected_accuracy(experiment, store=store, confidence=confidence)
        except UsageError as exc:  # no random review sample: say so, never a value
            return replace(metrics, corrected={a.arm: (None, str(exc)) for a in metrics.arms})
        found: dict[str, tuple[float | None, str | None]] = {
            f.arm: (f.ppi.estimate, None) if f.ppi is not None else (None, f.text) for f in figures
        }
        for a in metrics.arms:
            found.setdefault(a.arm, (None, f"arm {a.arm!r} is not in the random review sample"))
        return replace(metrics, corrected=found)

    metrics_b = of(exp, m.metrics_b)
    metrics_a = m.metrics_a
    if metrics_a is not None:
        metrics_a = metrics_b if base is None else of(base, metrics_a)
    arm_a = metrics_a.arm(m.arm_a.arm) if metrics_a is not None and m.arm_a is not None else None
    return replace(m, metrics_a=metrics_a, metrics_b=metrics_b, arm_a=arm_a, arm_b=metrics_b.arm(m.arm_b.arm))


def _check_arms(arms: tuple[str, str] | list[str] | None) -> None:
    if arms is not None and len(arms) != 2:
        raise UsageError(f"arms takes two arm names (baseline, candidate); got {list(arms)!r}")


def _stopped(exp: Experiment, base: Experiment | None) -> dict[str, Any]:
    """The experiment's stop reason (`abbench.runner.StopReason` as stored) when its own pair is gated."""
    return dict(exp.stop_reason or {}) if base is None else {}


def _covered(gate: GateSpec, m: _Measured, b_name: str, not_needed: dict[str, int] | None) -> Coverage:
    """How many of the pair's planned runs are graded, against the gate's ``min_coverage`` (the runs a
    stopping rule left out once it decided, `not_needed`, are not planned any more)."""
    sides = [(b_name, m.arm_b)]
    if m.comparison is not None and m.arm_a is not None:
        sides = [(m.comparison.a.name, m.arm_a), (m.comparison.b.name, m.arm_b)]
    return coverage(sides, gate.min_coverage if gate.min_coverage is not None else FULL, not_needed)


def _one_side(exp: Experiment, name: str) -> Side:
    """The gated arm as a comparison side, when there is no comparison (one arm)."""
    arm = exp.arm(name)
    return Side(exp.name, exp.id, name, arm.label, arm.snapshot, exp.rounds)


def _options(
    rules: Sequence[GateRule], cluster: str | None, confidence: float, alpha: float, power: float
) -> CompareOptions:
    """The pair's comparison options. Its verdict and the capability dimension are judged on the margin
    of the gate's ``block`` ``non_inferior`` rules (the narrowest, when they differ), so a gate that passes
    on its own margin never shows its decision unsettled at another; else on
    `abbench.compare.DEFAULT_MARGIN`. A ``warn`` rule's margin neither loosens nor tightens what blocks."""
    margins = [
        DEFAULT_MARGIN if r.margin is None else r.margin
        for r in rules
        if r.metric == "non_inferior" and r.severity == Severity.BLOCK
    ]
    margin = min(margins, default=DEFAULT_MARGIN)
    return CompareOptions(cluster=cluster, confidence=confidence, alpha=alpha, power=power, margin=margin)


def _policy(exp: Experiment, policy: DecisionPolicy | None) -> DecisionPolicy | None:
    """The policy given, else the experiment's ``decision:`` votes policy, else None (the default)."""
    if policy is None:
        votes = vote_policy(exp)
        if votes is not None:
            return DecisionPolicy(
                capability="votes", vote_margin=votes["margin"], vote_min_cases=votes["min_cases"]
            )
    return policy


def _outcome(covered: Coverage, outcomes: tuple[RuleOutcome, ...]) -> GateOutcome:
    """The gate's outcome (one of `OUTCOMES`) from its coverage and its rules' outcomes."""
    if not covered.complete:
        return GateOutcome.INCOMPLETE
    if not any(o.assessed for o in outcomes):
        return GateOutcome.INCONCLUSIVE
    if any(o.blocks for o in outcomes):
        return GateOutcome.BLOCK
    if any(o.status == RuleStatus.INCONCLUSIVE and o.rule.severity == Severity.BLOCK for o in outcomes):
        return GateOutcome.INCONCLUSIVE
    warned = any(
        o.rule.severity == Severity.WARN
        and o.status != RuleStatus.PASS
        and not (o.status == RuleStatus.MISSING and o.rule.allow_missing)
        for o in outcomes
    )
    # A rule that could not be assessed is allowed (allow_missing), never passed: the gate says so.
    unassessed = any(o.status == RuleStatus.MISSING and o.rule.allow_missing for o in outcomes)
    return GateOutcome.PASS_WITH_WARNINGS if warned or unassessed else GateOutcome.PASS


def _value(
    rule: GateRule,
    comparison: Comparison | None,
    decision: Decision,
    metrics_a: ExperimentMetrics | None,
    metrics_b: ExperimentMetrics,
    arm_a: ArmMetrics | None,
    arm_b: ArmMetrics,
) -> tuple[Any, str | None]:
    ref = rule.ref
    if ref is None:  # never: a rule is read with its metric parsed (`load_gate`)
        return None, f"rule {rule.text!r} has no metric"
    definition = ref.definition
    if definition.scope == "decision":
        return definition.get(decision, ref.param)
    if definition.scope == "comparison":
        if comparison is None:
            return (
                None,
                "no comparison (the experiment has one arm; give another experiment as the baseline: vs)",
            )
        return definition.get(comparison, rule.margin if rule.margin is not None else ref.param)
    if ref.arm == "a":
        if arm_a is None:
            return None, "no baseline arm A"
        return definition.get(arm_a, metrics_a, ref.param)
    if ref.arm == "b" or ref.arm is None:  # an arm metric always has its arm (`parse_metric`)
        return definition.get(arm_b, metrics_b, ref.param)
    try:
        arm = metrics_b.arm(ref.arm)
    except NotFoundError as exc:
        return None, str(exc)
    return definition.get(arm, metrics_b, ref.param)


def _check(rule: GateRule, comparison: Comparison | None, decision: Decision, m: _Measured) -> RuleOutcome:
    value, reason = _value(rule, comparison, decision, m.metrics_a, m.metrics_b, m.arm_a, m.arm_b)
    if isinstance(value, float) and not math.isfinite(value):
        value, reason = None, reason or "not a finite number"
    label = f"{rule.name}: " if rule.name else ""
    if value is None and isinstance(reason, Unsettled):
        # Not enough evidence is not evidence of a loss: the rule is inconclusive, and the gate with it
        # unless another rule blocks (`abbench gate --allow-inconclusive` lets such a gate exit 0).
        then = "INCONCLUSIVE" if rule.severity == Severity.BLOCK else Severity.WARN
        return RuleOutcome(
            rule, None, RuleStatus.INCONCLUSIVE, False, f"{label}{rule.text}: {reason} → {then}", str(reason)
        )
    if value is None:
        blocks = rule.severity == Severity.BLOCK and not rule.allow_missing
        then = "allowed (allow_missing)" if rule.allow_missing else ("blocks" if blocks else "warning")
        return RuleOutcome(
            rule,
            None,
            RuleStatus.MISSING,
            blocks,
            f"{label}{rule.text}: no value ({reason}) → {then}",
            reason,
        )
    ok = bool(OPS[rule.op](value, rule.value))
    status = RuleStatus.PASS if ok else RuleStatus.FAIL
    blocks = not ok and rule.severity == Severity.BLOCK
    then = RuleStatus.PASS if ok else ("BLOCK" if blocks else Severity.WARN)
    return RuleOutcome(rule, value, status, blocks, f"{label}{rule.text}: {_format(value)} → {then}")

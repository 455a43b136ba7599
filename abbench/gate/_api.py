"""Evaluating a gate: compare, measure, decide, and check every rule, with warnings that never block."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abbench.compare import Comparison, Side, compare_arms, compare_experiments
from abbench.errors import NotFoundError, UsageError
from abbench.gate._decision import Decision, DecisionPolicy, decide
from abbench.gate._rules import OPS, GateRule, load_rules, parse_rules, read_gate_file
from abbench.metrics import ArmMetrics, ExperimentMetrics, Result, experiment_metrics
from abbench.store import Store, open_store
from abbench.store._experiments import Experiment

STATUSES = ("pass", "fail", "missing")
"""A rule's status: its condition holds, does not hold, or its metric has no value."""


@dataclass(frozen=True)
class RuleOutcome(Result):
    """One rule, its metric's value and what came of it.

    Attributes:
        rule: The rule.
        value: The metric's value (None when it could not be computed).
        status: ``pass``, ``fail`` or ``missing`` (see `STATUSES`).
        blocks: Whether this outcome blocks the gate (a failing or missing ``block`` rule).
        message: One line for people: the rule, the value and the outcome (and why a value is missing).
    """

    rule: GateRule
    value: Any
    status: str
    blocks: bool
    message: str


@dataclass(frozen=True)
class GateResult(Result):
    """A gate's outcome for an experiment.

    Attributes:
        experiment: The gated experiment's name.
        experiment_id: Its id.
        a: The baseline side (None when there was nothing to compare with).
        b: The side the gate decides on.
        source: Where the rules came from: a file, ``experiment gate``, ``rules given`` or ``default rules``.
        outcome: ``pass`` or ``block``.
        rules: Every rule's outcome, in order.
        decision: Capability, cost and stability with their evidence.
        verdict: The comparison's verdict in words (None without a comparison).
        notes: Caveats (e.g. what could not be measured).
    """

    experiment: str
    experiment_id: int
    a: Side | None
    b: Side
    source: str
    outcome: str
    rules: tuple[RuleOutcome, ...]
    decision: Decision
    verdict: str | None
    notes: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """True unless a ``block`` rule failed."""
        return self.outcome == "pass"

    @property
    def blocking(self) -> tuple[RuleOutcome, ...]:
        """The rules that block."""
        return tuple(r for r in self.rules if r.blocks)

    @property
    def warnings(self) -> tuple[RuleOutcome, ...]:
        """The ``warn`` rules that did not pass (reported, never blocking)."""
        return tuple(r for r in self.rules if r.rule.severity == "warn" and r.status != "pass")


def _format(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def _experiment_rules(exp: Experiment, arms: tuple[str, ...]) -> tuple[list[GateRule], str] | None:
    gate = exp.gate
    if not gate:
        return None
    if isinstance(gate, str):
        path = Path(gate).expanduser()
        if not path.is_file():
            raise UsageError(
                f"experiment {exp.name!r} names the gate file {gate!r}, which does not exist here (relative paths "
                "are read from the current folder); run from the definition's folder or pass --rules FILE"
            )
        raw, lines = read_gate_file(path)
        return parse_rules(raw, origin=str(path), lines=lines, arms=arms), str(path)
    return parse_rules(gate, origin=f"experiment {exp.name} gate", arms=arms), "experiment gate"


def evaluate_gate(
    experiment: int | str | Experiment,
    rules: str | os.PathLike | list[Any] | dict[str, Any] | None = None,
    *,
    store: str | os.PathLike | Store | None = None,
    arms: tuple[str, str] | list[str] | None = None,
    vs: int | str | Experiment | None = None,
    policy: DecisionPolicy | None = None,
    cluster: str | None = None,
    confidence: float = 0.95,
    alpha: float = 0.05,
    power: float = 0.8,
) -> GateResult:
    """Decide whether an experiment's candidate arm passes its gate.

    The candidate (B) is compared with a baseline (A), measured, and decided on in three dimensions;
    then every rule is checked. A ``block`` rule that fails — or whose metric cannot be computed, unless
    it says ``allow_missing`` — blocks; ``warn`` rules are reported and never block.

    Args:
        experiment: The gated experiment.
        rules: A gate file (JSON or YAML), a list of rules, or ``{rules: [...]}``. Default: the
            experiment's own gate, else the default rules (the three dimensions must pass).
        store: The store.
        arms: ``(A, B)``: the baseline and candidate arms (default: the first and the last arm). With `vs`,
            the arm of the baseline experiment and the arm of this one.
        vs: A baseline experiment on the same dataset (the gated experiment is then B).
        policy: When the dimensions block (see `DecisionPolicy`).
        cluster: ``"domain"`` for cluster-robust intervals.
        confidence: Coverage of the intervals.
        alpha: Significance level.
        power: Power for the minimum detectable effect.

    Raises:
        ComparisonRefused: the baseline ran on another dataset.
        UsageError: an invalid rule (named, with its line and field) or option.
        NotFoundError: no such experiment or arm.
    """
    store = open_store(store)
    exp = store.get_experiment(experiment)
    names = tuple(a.name for a in exp.arms)
    if arms is not None and len(arms) != 2:
        raise UsageError(f"arms takes two arm names (baseline, candidate); got {list(arms)!r}")
    comparison: Comparison | None = None
    notes: list[str] = []
    options = {"cluster": cluster, "confidence": confidence, "alpha": alpha, "power": power}
    metrics_b = experiment_metrics(exp, store=store, cluster=cluster, confidence=confidence)
    if vs is not None:
        base = store.get_experiment(vs)
        arm_a = arms[0] if arms else None
        arm_b = arms[1] if arms else None
        comparison = compare_experiments(base, exp, arm_a=arm_a, arm_b=arm_b, store=store, **options)
        metrics_a = experiment_metrics(base, store=store, cluster=cluster, confidence=confidence)
        a_name = comparison.a.arm.split("/", 1)[1]
        b_name = comparison.b.arm.split("/", 1)[1]
    elif len(exp.arms) >= 2:
        a_name, b_name = (arms[0], arms[1]) if arms else (exp.arms[0].name, exp.arms[-1].name)
        comparison = compare_arms(exp, a_name, b_name, store=store, **options)
        metrics_a = metrics_b
        if arms is None and len(exp.arms) > 2:
            notes.append(f"{len(exp.arms)} arms: gating the last ({b_name}) against the first ({a_name})")
    else:
        metrics_a, a_name, b_name = None, None, exp.arms[0].name
        notes.append("one arm: comparison metrics have no value")
    arm_b = metrics_b.arm(b_name)
    arm_a = metrics_a.arm(a_name) if metrics_a is not None and a_name is not None else None
    decision = decide(comparison, arm_a, arm_b, policy)
    if rules is not None:
        parsed, source = load_rules(rules, arms=names)
    else:
        own = _experiment_rules(exp, names)
        parsed, source = own if own is not None else load_rules(None)
    outcomes = tuple(
        _check(rule, comparison, decision, metrics_a, metrics_b, arm_a, arm_b) for rule in parsed
    )
    blocked = any(o.blocks for o in outcomes)
    side_b = (
        comparison.b
        if comparison is not None
        else Side(exp.name, exp.id, b_name, exp.arm(b_name).label, exp.arm(b_name).snapshot, exp.rounds)
    )
    return GateResult(
        experiment=exp.name,
        experiment_id=exp.id,
        a=comparison.a if comparison is not None else None,
        b=side_b,
        source=source,
        outcome="block" if blocked else "pass",
        rules=outcomes,
        decision=decision,
        verdict=comparison.verdict.text if comparison is not None else None,
        notes=tuple(notes) + (comparison.notes if comparison is not None else ()),
    )


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
    definition = ref.definition
    if definition.scope == "decision":
        return definition.get(decision, ref.param)
    if definition.scope == "comparison":
        if comparison is None:
            return None, "no comparison (the experiment has one arm; give a baseline with --vs)"
        return definition.get(comparison, ref.param)
    if ref.arm == "a":
        if arm_a is None:
            return None, "no baseline arm A"
        return definition.get(arm_a, metrics_a, ref.param)
    if ref.arm == "b":
        return definition.get(arm_b, metrics_b, ref.param)
    try:
        arm = metrics_b.arm(ref.arm)
    except NotFoundError as exc:
        return None, str(exc)
    return definition.get(arm, metrics_b, ref.param)


def _check(
    rule: GateRule,
    comparison: Comparison | None,
    decision: Decision,
    metrics_a: ExperimentMetrics | None,
    metrics_b: ExperimentMetrics,
    arm_a: ArmMetrics | None,
    arm_b: ArmMetrics,
) -> RuleOutcome:
    value, reason = _value(rule, comparison, decision, metrics_a, metrics_b, arm_a, arm_b)
    if isinstance(value, float) and not math.isfinite(value):
        value, reason = None, reason or "not a finite number"
    label = f"{rule.name}: " if rule.name else ""
    if value is None:
        blocks = rule.severity == "block" and not rule.allow_missing
        then = "allowed (allow_missing)" if rule.allow_missing else ("blocks" if blocks else "warning")
        return RuleOutcome(rule, None, "missing", blocks, f"{label}{rule.text}: no value ({reason}) → {then}")
    ok = bool(OPS[rule.op](value, rule.value))
    status = "pass" if ok else "fail"
    blocks = not ok and rule.severity == "block"
    then = "pass" if ok else ("BLOCK" if blocks else "warn")
    return RuleOutcome(rule, value, status, blocks, f"{label}{rule.text}: {_format(value)} → {then}")

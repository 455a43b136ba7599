"""Skill activation: did an agent offered a catalogue of skills load the right one, and only when it should?

Every figure is per arm, over the arm's runs whose *execution finished* — an execution failure is a run
state, never a correct non-trigger, so it is left out of every denominator and counted beside the
figures (`ArmActivation.execution_failed`); cancelled and unfinished runs are left out too. An arm that
injects its skill, or has none, is *not offered*: its activation figures are not assessed (None, with
the reason), never 0.

Rounds count as accuracy does elsewhere in `abbench.metrics`: each case's share of its counted rounds
first (``k`` of ``n``), then `estimate_rate` over cases — Wilson's interval with one round, the
standard error of per-case means with several (Miller 2024), Wilson over cases when every case has the
same share. A case weighs the same whatever its number of rounds.

Definitions, per counted run of an offered arm (``loaded`` = the skills the agent loaded, in order):

- **activation rate**: the run loaded at least one skill (every case).
- **recall** (should-trigger cases, ``expected_skill`` = a skill name): the expected skill is in
  ``loaded``. Runs whose expected skill was not among the offered skills are left out and counted.
- **precision** (runs that loaded a skill, on cases with an ``expected_skill``): the expected skill
  is in ``loaded`` (a load on a must-not-trigger case is never precise).
- **false-activation rate** (must-not-trigger cases, ``expected_skill`` = ``none``): the run loaded a skill.
- **wrong-skill rate** (should-trigger cases of runs offered two or more skills): the *first* skill
  loaded is not the expected one — a sibling fired first (``corrected`` counts those that loaded the
  expected one afterwards).
- **skill selection accuracy** (should-trigger runs offered two or more skills, the expected one among
  them, that loaded a skill): given the catalogue the agent saw, the skill it loaded first is the
  expected one — the choice among siblings, apart from whether it loaded at all (recall).

Cases without an ``expected_skill`` count for the activation rate only: recall, precision and false
activation are not assessed on them.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from abbench._result import Result
from abbench.errors import UsageError
from abbench.metrics._base import Estimate, check_level, estimate_rate
from abbench.stats import Interval, mcnemar_exact, paired_proportion_interval
from abbench.store import Arm, Experiment, Store, open_store
from abbench.types import NO_SKILL, run_outcome

_EXECUTED = frozenset(("pass", "fail", "grading_failed", "executed", "evaluating"))
"""Run outcomes (`abbench.types.run_outcome`) whose execution finished: activation is known."""

_INJECTED = "the arm injects its skill into the task: nothing to activate"
_NO_SKILL_ARM = "the arm offers no skill"

ACTIVATION_DEFINITIONS = """\
- activation rate: the run loaded at least one skill (every case).
- recall (should-trigger cases, expected_skill = a skill name): the expected skill is
  among the skills loaded. Runs whose expected skill was not among the offered skills are left out and counted.
- precision (runs that loaded a skill, on cases with an expected_skill): the expected skill
  is among them (a load on a must-not-trigger case is never precise).
- false-activation rate (must-not-trigger cases, expected_skill = none): the run loaded a skill.
- wrong-skill rate (should-trigger cases of runs offered two or more skills): the *first* skill
  loaded is not the expected one — a sibling fired first (corrected counts those that loaded the
  expected one afterwards).
- skill selection accuracy (should-trigger runs offered two or more skills that loaded one): the
  first skill loaded is the expected one — the right choice from the catalogue, given a load.
"""
"""How each activation figure counts (for `abbench metrics` and the report)."""


ACTIVATION_FIGURES: tuple[tuple[str, str], ...] = (
    ("activation", "activation rate"),
    ("recall", "recall"),
    ("precision", "precision"),
    ("false_activation", "false activation"),
    ("wrong_skill", "wrong skill"),
    ("selection", "skill selection accuracy"),
)
"""The figures of an `ArmActivation` (attribute, then what every view calls it), in the order shown."""


@dataclass(frozen=True)
class ActivationRun(Result):
    """What activation analysis needs of one run: its case, its outcome and what the agent loaded.

    Attributes:
        arm: The arm's name.
        case_idx: The case's position in the dataset (pairs the arms).
        case_id: The case's id.
        round: 0-based round.
        outcome: `abbench.types.run_outcome` of the run (``pass``, ``fail``, ``execution_failed``, ...).
        expected_skill: The case's expected skill, ``none`` (must not trigger), or None (not assessed).
        skills_offered: The skills in the run's catalogue; None when the arm did not offer skills.
        skills_loaded: The skills loaded, in load order (``()``: offered, nothing loaded); None when not
            recorded.
        first_load_turn: The agent turn of the first load, or None.
        passed: The run's verdict (True right, False wrong, None not graded).
        has_skill: Whether the arm has a skill at all (an injected arm's skill is always "loaded").
    """

    arm: str
    case_idx: int
    case_id: str
    round: int
    outcome: str
    expected_skill: str | None
    skills_offered: tuple[str, ...] | None
    skills_loaded: tuple[str, ...] | None
    first_load_turn: int | None = None
    passed: bool | None = None
    has_skill: bool = True

    @property
    def executed(self) -> bool:
        """True when the execution finished, so whether a skill was loaded is known."""
        return self.outcome in _EXECUTED

    @property
    def skill(self) -> str | None:
        """The skill under test in this run's catalogue: the case's expected skill when it names one, else
        the arm's first skill (the others are its siblings); None when nothing was offered."""
        if not self.skills_offered:
            return None
        if self.expected_skill not in (None, NO_SKILL) and self.expected_skill in self.skills_offered:
            return self.expected_skill
        return self.skills_offered[0]

    @property
    def loaded(self) -> bool:
        """True when the run had its skill: loaded the skill under test from the catalogue (a sibling
        loaded instead does not count), or had it injected."""
        if self.skills_offered is None:
            return self.has_skill
        return self.skill is not None and self.skill in (self.skills_loaded or ())


@dataclass(frozen=True)
class ArmActivation(Result):
    """One arm's activation figures (see the module docstring for how each counts).

    An arm that does not offer skills has no figures (each says why) and only `runs` is counted.

    Attributes:
        arm: The arm's name.
        mode: ``offered``, ``injected`` (its skill is put into the task) or ``none`` (no skill).
        skills_offered: Every skill its runs were offered, in first-seen order.
        runs: All of the arm's runs.
        counted: Runs whose execution finished and recorded what was loaded: the denominators.
        execution_failed: Runs left out because their execution failed (never a correct non-trigger).
        not_executed: Runs left out because they were cancelled or have not finished executing.
        not_recorded: Executed runs of an offered arm that recorded no loads (left out).
        cases: Cases with at least one counted run.
        should_trigger_cases: Of them, cases whose ``expected_skill`` names a skill.
        must_not_trigger_cases: Cases whose ``expected_skill`` is ``none``.
        expected_not_offered: Counted runs of should-trigger cases whose expected skill was not offered
            (left out of recall and the wrong-skill rate).
        activation: Share of counted runs that loaded a skill.
        recall: Share of should-trigger runs that loaded the expected skill.
        precision: Share of loading runs (of assessed cases) that loaded the expected skill.
        false_activation: Share of must-not-trigger runs that loaded a skill.
        wrong_skill: Share of should-trigger runs offered two or more skills whose first load was another
            skill; not assessed with a single skill offered.
        corrected: Of the wrong-skill runs, those that loaded the expected skill afterwards.
        loads: Counted runs that loaded each skill.
        first_load_turn: Median agent turn of the first load over runs that loaded (None if unknown).
        reason: Why the arm's figures are not assessed (not offered), else None.
        selection: Skill selection accuracy: share of should-trigger runs offered two or more skills
            (the expected one among them) that loaded a skill, whose first load was the expected one;
            not assessed with a single skill offered.
    """

    arm: str
    mode: str
    skills_offered: tuple[str, ...]
    runs: int
    counted: int
    execution_failed: int
    not_executed: int
    not_recorded: int
    cases: int
    should_trigger_cases: int
    must_not_trigger_cases: int
    expected_not_offered: int
    activation: Estimate
    recall: Estimate
    precision: Estimate
    false_activation: Estimate
    wrong_skill: Estimate
    corrected: int
    loads: dict[str, int]
    first_load_turn: float | None
    reason: str | None = None
    selection: Estimate = field(default_factory=lambda: not_assessed("not computed"))

    @property
    def offered(self) -> bool:
        """True when the arm offered its skills in a catalogue (its figures are assessed)."""
        return self.mode == "offered"


def not_assessed(reason: str) -> Estimate:
    """An activation figure that has no value, with the reason (never 0)."""
    return Estimate(None, None, None, "none", 0, 0, None, reason)


def arm_activation(runs: Sequence[ActivationRun], confidence: float = 0.95) -> ArmActivation:
    """The activation figures of one arm's runs (all of one arm; see the module docstring).

    Raises:
        UsageError: `confidence` not strictly between 0 and 1, or runs of more than one arm.
    """
    confidence = check_level(confidence)
    names = {r.arm for r in runs}
    if len(names) > 1:
        raise UsageError(f"arm_activation takes the runs of one arm; got arms {', '.join(sorted(names))}")
    arm = next(iter(names), "")
    offered = _first_seen(s for r in runs for s in (r.skills_offered or ()))
    executed = [r for r in runs if r.executed]
    failed = sum(r.outcome == "execution_failed" for r in runs)
    is_offered = any(r.skills_offered is not None for r in runs)
    if not is_offered:
        mode = "injected" if any(r.has_skill for r in runs) else "none"
        reason = _INJECTED if mode == "injected" else _NO_SKILL_ARM
        return _not_offered(arm, mode, runs, executed, failed, reason)
    counted = [r for r in executed if r.skills_offered is not None and r.skills_loaded is not None]
    return _offered(arm, offered, runs, counted, len(executed) - len(counted), failed, confidence)


def _not_offered(
    arm: str,
    mode: str,
    runs: Sequence[ActivationRun],
    executed: list[ActivationRun],
    failed: int,
    reason: str,
) -> ArmActivation:
    none = not_assessed(reason)
    return ArmActivation(
        arm, mode, (), len(runs), 0, failed, len(runs) - len(executed) - failed, 0, 0, 0, 0, 0,
        none, none, none, none, none, 0, {}, None, reason, none,
    )  # fmt: skip


class _PerCase:
    """Per-case counts ``k`` of ``n`` for one figure, keyed by case position."""

    def __init__(self) -> None:
        self.k: Counter[int] = Counter()
        self.n: Counter[int] = Counter()

    def add(self, case: int, hit: bool) -> None:
        self.n[case] += 1
        self.k[case] += int(hit)

    def estimate(self, confidence: float, reason: str) -> Estimate:
        if not self.n:
            return not_assessed(reason)
        cases = sorted(self.n)
        k = np.fromiter((self.k[c] for c in cases), dtype=np.int64, count=len(cases))
        n = np.fromiter((self.n[c] for c in cases), dtype=np.int64, count=len(cases))
        return estimate_rate(k, n, confidence)


def _offered(
    arm: str,
    offered: tuple[str, ...],
    runs: Sequence[ActivationRun],
    counted: list[ActivationRun],
    not_recorded: int,
    failed: int,
    confidence: float,
) -> ArmActivation:
    figures = {
        name: _PerCase() for name in ("activation", "recall", "precision", "false", "wrong", "selection")
    }
    not_offered = corrected = 0
    loads: Counter[str] = Counter()
    turns: list[int] = []
    for r in counted:
        loaded = r.skills_loaded or ()
        loads.update(dict.fromkeys(loaded, 1))
        if loaded and r.first_load_turn is not None:
            turns.append(r.first_load_turn)
        figures["activation"].add(r.case_idx, bool(loaded))
        expected = r.expected_skill
        if expected is None:
            continue
        if loaded:
            figures["precision"].add(r.case_idx, expected != NO_SKILL and expected in loaded)
        if expected == NO_SKILL:
            figures["false"].add(r.case_idx, bool(loaded))
        elif expected not in (r.skills_offered or ()):
            not_offered += 1
        else:
            figures["recall"].add(r.case_idx, expected in loaded)
            if len(r.skills_offered or ()) >= 2:
                wrong = bool(loaded) and loaded[0] != expected
                figures["wrong"].add(r.case_idx, wrong)
                corrected += int(wrong and expected in loaded)
                if loaded:
                    figures["selection"].add(r.case_idx, loaded[0] == expected)
    est = _estimates(figures, counted, not_offered, offered, confidence)
    return ArmActivation(
        arm=arm,
        mode="offered",
        skills_offered=offered,
        runs=len(runs),
        counted=len(counted),
        execution_failed=failed,
        not_executed=len(runs) - len(counted) - not_recorded - failed,
        not_recorded=not_recorded,
        cases=len({r.case_idx for r in counted}),
        should_trigger_cases=len({r.case_idx for r in counted if r.expected_skill not in (None, NO_SKILL)}),
        must_not_trigger_cases=len({r.case_idx for r in counted if r.expected_skill == NO_SKILL}),
        expected_not_offered=not_offered,
        activation=est["activation"],
        recall=est["recall"],
        precision=est["precision"],
        false_activation=est["false_activation"],
        wrong_skill=est["wrong_skill"],
        corrected=corrected,
        loads=dict(loads.most_common()),
        first_load_turn=float(np.median(turns)) if turns else None,
        selection=est["selection"],
    )


def _estimates(
    figures: dict[str, _PerCase],
    counted: list[ActivationRun],
    not_offered: int,
    offered: tuple[str, ...],
    confidence: float,
) -> dict[str, Estimate]:
    """Each figure's estimate, or why it is not assessed."""
    assessed = any(r.expected_skill is not None for r in counted)
    no_expected = "no case has an expected_skill: activation against it is not assessed"
    if not counted:
        no_expected = "no counted run (none executed and recorded its loads)"
    recall_reason = no_expected
    if assessed:
        recall_reason = "no should-trigger case (expected_skill naming a skill)"
        if not_offered:
            recall_reason = (
                f"the expected skills of {not_offered} should-trigger runs were not offered "
                f"(offered: {', '.join(offered)})"
            )
    return {
        "activation": figures["activation"].estimate(confidence, no_expected),
        "recall": figures["recall"].estimate(confidence, recall_reason),
        "precision": figures["precision"].estimate(
            confidence, no_expected if not assessed else "no run of an assessed case loaded a skill"
        ),
        "false_activation": figures["false"].estimate(
            confidence, no_expected if not assessed else "no must-not-trigger case (expected_skill: none)"
        ),
        "wrong_skill": figures["wrong"].estimate(
            confidence,
            "one skill offered: no sibling to pick instead"
            if len(offered) < 2
            else (recall_reason if assessed else no_expected),
        ),
        "selection": figures["selection"].estimate(
            confidence,
            "one skill offered: no sibling to pick instead"
            if len(offered) < 2
            else ("no should-trigger run loaded a skill" if assessed else no_expected),
        ),
    }


def _first_seen(names: object) -> tuple[str, ...]:
    return tuple(dict.fromkeys(names))  # type: ignore[call-overload]


def activation_by_arm(
    runs: Sequence[ActivationRun], arms: Sequence[str] | None = None, confidence: float = 0.95
) -> tuple[ArmActivation, ...]:
    """Every arm's activation figures, in the order of `arms` (default: first seen in `runs`)."""
    order = tuple(arms) if arms is not None else _first_seen(r.arm for r in runs)
    grouped: dict[str, list[ActivationRun]] = {a: [] for a in order}
    for r in runs:
        if r.arm in grouped:
            grouped[r.arm].append(r)
    return tuple(arm_activation(grouped[a], confidence) if grouped[a] else _empty(a) for a in order)


def _empty(arm: str) -> ArmActivation:
    return _not_offered(arm, "none", [], [], 0, "the arm has no run")


@dataclass(frozen=True)
class ActivationComparison(Result):
    """Activation of two arms on the same cases, case by case (differences are b − a).

    With rounds a case counts as activated in an arm when it was in more than half of its counted
    rounds (as `abbench.compare` counts a case right). Exact McNemar on the discordant cases; the
    difference's interval is Newcombe's on the paired 2×2 table.

    Attributes:
        a: The baseline arm.
        b: The arm compared with it.
        what: ``loaded`` (loaded any skill, every case), ``correct`` (did what the case expects:
            loaded the expected skill, or nothing on a must-not-trigger case; assessed cases only) or
            ``selection`` (skill selection accuracy: the first skill loaded was the expected one, on
            should-trigger cases offered several skills where the run loaded one).
        n_paired: Cases counted in both arms.
        both: Cases activated (or correct) in both.
        only_a: In A only.
        only_b: In B only.
        neither: In neither.
        rate_a: A's share over the paired cases (None with no paired case).
        rate_b: B's share.
        diff: ``rate_b − rate_a``.
        interval: Newcombe's interval of `diff`.
        p_value: Exact McNemar p-value (two-sided) on `only_a` vs `only_b`.
        excluded: Cases counted in one arm only (execution failures, unfinished, not assessed).
        reason: Why there is no comparison (an arm not offered, no paired case), else None.
    """

    a: str
    b: str
    what: str
    n_paired: int
    both: int
    only_a: int
    only_b: int
    neither: int
    rate_a: float | None
    rate_b: float | None
    diff: float | None
    interval: Interval | None
    p_value: float | None
    excluded: int
    reason: str | None = None


COMPARED = ("loaded", "correct", "selection")
"""What `compare_activation` compares: any load, the load the case expects, or the choice among siblings."""


def _case_outcomes(runs: Sequence[ActivationRun], what: str) -> dict[int, bool]:
    """Each counted case's majority outcome over its rounds (ties are not activated)."""
    k: Counter[int] = Counter()
    n: Counter[int] = Counter()
    for r in runs:
        if not r.executed or r.skills_offered is None or r.skills_loaded is None:
            continue
        loaded = r.skills_loaded
        if what == "loaded":
            hit = bool(loaded)
        elif what == "selection":
            offered = r.skills_offered or ()
            if r.expected_skill in (None, NO_SKILL) or r.expected_skill not in offered or len(offered) < 2:
                continue
            if not loaded:
                continue
            hit = loaded[0] == r.expected_skill
        elif r.expected_skill is None:
            continue
        elif r.expected_skill == NO_SKILL:
            hit = not loaded
        else:
            hit = r.expected_skill in loaded
        n[r.case_idx] += 1
        k[r.case_idx] += int(hit)
    return {c: 2 * k[c] > n[c] for c in n}


def compare_activation(
    runs: Sequence[ActivationRun], a: str, b: str, what: str = "loaded", confidence: float = 0.95
) -> ActivationComparison:
    """Paired comparison of two arms' activation over the cases both counted (see `ActivationComparison`).

    Raises:
        UsageError: `what` is not one of `COMPARED`, or an invalid `confidence`.
    """
    confidence = check_level(confidence)
    if what not in COMPARED:
        raise UsageError(f"what must be one of {', '.join(COMPARED)}; got {what!r}")
    side_a = [r for r in runs if r.arm == a]
    side_b = [r for r in runs if r.arm == b]
    for name, side in ((a, side_a), (b, side_b)):
        if not any(r.skills_offered is not None for r in side):
            return _no_comparison(
                a, b, what, f"arm {name!r} does not offer skills: its activation is not assessed"
            )
    ca, cb = _case_outcomes(side_a, what), _case_outcomes(side_b, what)
    common = sorted(set(ca) & set(cb))
    excluded = len(set(ca) ^ set(cb))
    if not common:
        reason = "no case counted in both arms" + {
            "correct": " with an expected_skill",
            "selection": " where a skill was loaded from two or more offered, the expected one among them",
        }.get(what, "")
        return _no_comparison(a, b, what, reason, excluded)
    both = sum(ca[c] and cb[c] for c in common)
    only_a = sum(ca[c] and not cb[c] for c in common)
    only_b = sum(cb[c] and not ca[c] for c in common)
    neither = len(common) - both - only_a - only_b
    n = len(common)
    return ActivationComparison(
        a, b, what, n, both, only_a, only_b, neither,
        (both + only_a) / n, (both + only_b) / n, (only_b - only_a) / n,
        paired_proportion_interval(both, only_b, only_a, neither, confidence),
        mcnemar_exact(only_a, only_b).p_value, excluded,
    )  # fmt: skip


def _no_comparison(a: str, b: str, what: str, reason: str, excluded: int = 0) -> ActivationComparison:
    return ActivationComparison(a, b, what, 0, 0, 0, 0, 0, None, None, None, None, None, excluded, reason)


@dataclass(frozen=True)
class ExperimentActivation(Result):
    """Activation figures of an experiment's arms, and paired comparisons between its offered arms.

    Attributes:
        experiment: The experiment's name.
        confidence: Coverage of every interval.
        arms: Per arm, in the experiment's order.
        comparisons: For each pair of offered arms (in arm order), ``loaded``; when cases say what
            should trigger, ``correct``; when both offered several skills, ``selection``.
        definitions: How each figure counts.
    """

    experiment: str
    confidence: float
    arms: tuple[ArmActivation, ...]
    comparisons: tuple[ActivationComparison, ...]
    definitions: str = ACTIVATION_DEFINITIONS

    @property
    def offered(self) -> bool:
        """True when at least one arm offered its skills (there is something to show)."""
        return any(a.offered for a in self.arms)

    @property
    def assessed(self) -> bool:
        """True when some offered arm's runs have cases with an ``expected_skill``."""
        return any(a.should_trigger_cases or a.must_not_trigger_cases for a in self.arms if a.offered)

    def arm(self, name: str) -> ArmActivation | None:
        """The figures of arm `name`, or None."""
        return next((a for a in self.arms if a.arm == name), None)


def arm_offers(arm: Arm) -> bool:
    """True when a stored arm offers its skills in a catalogue (``skill_mode: offered``)."""
    return arm.offered


def activation_report(
    runs: Sequence[ActivationRun],
    arms: Sequence[str],
    experiment: str = "",
    confidence: float = 0.95,
) -> ExperimentActivation:
    """Every arm's figures and the paired comparisons of the offered arms, from activation runs."""
    per_arm = activation_by_arm(runs, arms, confidence)
    offered = [a.arm for a in per_arm if a.offered]
    comparisons = []
    for i, a in enumerate(offered):
        for b in offered[i + 1 :]:
            comparisons.append(compare_activation(runs, a, b, "loaded", confidence))
            if any(r.expected_skill is not None for r in runs if r.arm in (a, b)):
                comparisons.append(compare_activation(runs, a, b, "correct", confidence))
            if all(any(len(r.skills_offered or ()) >= 2 for r in runs if r.arm == x) for x in (a, b)):
                comparisons.append(compare_activation(runs, a, b, "selection", confidence))
    return ExperimentActivation(experiment, confidence, per_arm, tuple(comparisons))


def activation_runs(store: Store, exp: Experiment, arms: Sequence[str] | None = None) -> list[ActivationRun]:
    """The activation view of an experiment's runs (of `arms`, default all), with each case's expected skill."""
    expected = [c.expected_skill for c in store.datasets.load_cases(exp.dataset_id, source_rows=False)]
    by_name = {a.name: a for a in exp.arms}
    wanted = set(arms) if arms is not None else set(by_name)
    out = []
    for rec in store.runs.records(exp.id):
        arm = by_name.get(rec.arm)
        if arm is None or rec.arm not in wanted:
            continue
        offered = rec.skills_offered
        if offered is None and arm_offers(arm):
            offered = ()  # not executed yet: the arm offers, the catalogue is not known
        out.append(
            ActivationRun(
                arm=rec.arm,
                case_idx=rec.case_idx,
                case_id=rec.case_id,
                round=rec.round,
                outcome=run_outcome(rec.state, rec.failure_type, rec.passed),
                expected_skill=expected[rec.case_idx] if rec.case_idx < len(expected) else None,
                skills_offered=offered,
                skills_loaded=rec.skills_loaded if offered is not None else None,
                first_load_turn=rec.first_load_turn,
                passed=rec.passed,
                has_skill=arm.snapshot is not None or bool(arm.snapshots),
            )
        )
    return out


def experiment_activation(
    experiment: int | str | Experiment,
    *,
    store: str | os.PathLike[str] | Store | None = None,
    arms: Sequence[str] | None = None,
    confidence: float = 0.95,
) -> ExperimentActivation:
    """Activation figures of an experiment's arms, from the store (see the module docstring).

    Raises:
        NotFoundError: no such experiment or arm.
        UsageError: an invalid `confidence`.
    """
    confidence = check_level(confidence)
    store = open_store(store)
    exp = store.experiments.get(experiment)
    names = [exp.arm(a).name for a in arms] if arms is not None else [a.name for a in exp.arms]
    offered = [n for n in names if arm_offers(exp.arm(n))]
    if not offered:  # nothing to read: every arm injects its skill or has none
        totals = {arm: sum(states.values()) for arm, states in store.runs.counts(exp.id).items()}
        return ExperimentActivation(
            exp.name, confidence, tuple(_stored(exp, n, totals.get(n, 0)) for n in names), ()
        )
    runs = activation_runs(store, exp, offered)
    report = activation_report(runs, offered, exp.name, confidence)
    totals = {arm: sum(states.values()) for arm, states in store.runs.counts(exp.id).items()}
    per_arm = tuple(report.arm(n) or _stored(exp, n, totals.get(n, 0)) for n in names)
    return replace(report, arms=per_arm)


def _stored(exp: Experiment, name: str, runs: int) -> ArmActivation:
    """A stored arm that does not offer skills: not assessed (its runs are counted, not read)."""
    arm = exp.arm(name)
    if arm.snapshot is not None or bool(arm.snapshots):
        return replace(_not_offered(name, "injected", [], [], 0, _INJECTED), runs=runs)
    return replace(_not_offered(name, "none", [], [], 0, _NO_SKILL_ARM), runs=runs)

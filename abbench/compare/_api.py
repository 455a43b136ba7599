"""Paired comparison of two arms (of one experiment, or of two experiments on the same dataset)."""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from abbench import _actions as do
from abbench.compare._activation import TriggerHelp, trigger_help
from abbench.compare._corroborate import corroborate, judges_of
from abbench.compare._corroboration import Corroboration
from abbench.compare._figures import _domains, _usage_differences
from abbench.compare._following import following_comparison
from abbench.compare._format import format_comparison
from abbench.compare._grader import GraderSides, grader_comparison_note, grader_sides
from abbench.compare._heterogeneity import heterogeneity, what_it_answers
from abbench.compare._model import (
    CaseTable,
    Comparison,
    PairwiseSummary,
    Side,
)
from abbench.compare._options import CompareOptions
from abbench.compare._pair import experiment_arm, resolve_pair
from abbench.compare._sequential import monitored, sequential_main
from abbench.compare._text import TextChanges, text_changes
from abbench.compare._verdict import Verdict, verdict
from abbench.errors import ComparisonRefused, UsageError
from abbench.graders import rubric_totals, swap_sides
from abbench.metrics import (
    NO_DOMAIN,
    activation_runs,
    arm_offers,
    dataset_labels,
    estimate_mean,
    estimate_rate,
    grader_kinds,
    resolve_outcome,
    round_lists,
)
from abbench.review import judge_agreement
from abbench.stats import (
    FewClustersWarning,
    Interval,
    StatsWarning,
    estimate_power_inputs,
    exact_means,
    mcnemar_exact,
    mcnemar_midp,
    mcnemar_score,
    paired_difference,
    paired_outcomes,
    paired_proportion_interval,
)
from abbench.store import Arm, CaseOutcomes, Experiment, Store, open_store

if TYPE_CHECKING:
    from abbench.review import JudgeAgreement

DETAILS_MAX_CASES = 20_000
"""Above this many cases, reasons and evidence are compared only when asked (``details=True``).

Comparing words reads every run's text; past tens of thousands of cases that costs seconds and
yields lists too long to read, while the counts and tests above do not need it.
"""
MIN_CASES = 10
"""Fewer paired cases than this give no verdict from an interval (an exact test still decides)."""


class _Arms(NamedTuple):
    """The two arms compared, each with its experiment (the same one for `compare_arms`), and their store."""

    store: Store
    ea: Experiment
    arm_a: Arm
    eb: Experiment
    arm_b: Arm


def _side(exp: Experiment, arm: Arm) -> Side:
    return Side(exp.name, exp.id, arm.name, arm.label, arm.snapshot, exp.rounds)


def compare_arms(
    experiment: int | str | Experiment,
    a: str | None = None,
    b: str | None = None,
    *,
    store: str | os.PathLike[str] | Store | None = None,
    options: CompareOptions | None = None,
    **settings: Any,
) -> Comparison:
    """Compare arm `b` against arm `a` of one experiment, case by case (differences are b − a).

    Args:
        experiment: The experiment (id, ``#id``, name, or Experiment).
        a: The baseline arm. With neither `a` nor `b`: the experiment's ``decision:`` pair, else the
            first of its two arms (three or more arms and no ``decision:`` are refused: name the pair).
        b: The arm compared with it (the candidate).
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).
        options: How to compare (see `CompareOptions`; default: its defaults).
        **settings: Any field of `CompareOptions` by name (``outcome``, ``cluster``, ``confidence``,
            ``alpha``, ``power``, ``iterations``, ``seed``, ``bootstrap``, ``details``, ``margin``,
            ``grader``), overriding `options`.

    Raises:
        NotFoundError: no such experiment or arm.
        PairNotNamed: three or more arms and no pair named (neither here nor in ``decision:``).
        UsageError: the same arm twice, an invalid or unknown option, or a ``grader`` the experiment
            lacks (the message lists its graders).
    """
    opts = CompareOptions.of(options, **settings)
    store = open_store(store)
    exp = store.experiments.get(experiment)
    if len(exp.arms) < 2:
        raise UsageError(
            f"experiment {exp.name!r} has a single arm ({exp.arms[0].name if exp.arms else 'none'}); "
            "compare it with another experiment: compare_experiments(exp_a, exp_b)"
        )
    if a is None and b is None:
        pair = resolve_pair(exp, what="the comparison")
        baseline = pair.baseline or next(x.name for x in exp.arms if x.name != pair.candidate)
        arm_a, arm_b = exp.arm(baseline), exp.arm(pair.candidate)
    elif len(exp.arms) > 2 and (a is None or b is None):
        raise UsageError(
            f"experiment {exp.name!r} has {len(exp.arms)} arms ({', '.join(x.name for x in exp.arms)}); name "
            "both arms to compare (a=..., b=...), or use compare_all() for all of them at once"
        )
    else:
        arm_a = exp.arm(a) if a is not None else next(x for x in exp.arms if x.name != b)
        arm_b = exp.arm(b) if b is not None else next(x for x in exp.arms if x.name != arm_a.name)
    if arm_a.id == arm_b.id:
        raise UsageError(f"arm {arm_a.name!r} compared with itself; choose two different arms")
    return _compare("arms", _Arms(store, exp, arm_a, exp, arm_b), opts)


def compare_experiments(
    exp_a: int | str | Experiment,
    exp_b: int | str | Experiment,
    *,
    arm_a: str | None = None,
    arm_b: str | None = None,
    store: str | os.PathLike[str] | Store | None = None,
    options: CompareOptions | None = None,
    **settings: Any,
) -> Comparison:
    """Compare an arm of experiment `exp_b` against an arm of `exp_a`, case by case (b − a).

    Both experiments must have run on the same dataset (the same fingerprint): a paired comparison
    is only meaningful on the same cases. Cases run in only one of them are left out and listed.

    Args:
        exp_a: The baseline experiment.
        exp_b: The experiment compared with it.
        arm_a: The arm of `exp_a` (default: its ``decision:`` candidate, else its only or its second arm;
            with three or more arms and no ``decision:``, a refusal).
        arm_b: The arm of `exp_b` (default: chosen the same way).
        store: The store.
        options: How to compare (see `CompareOptions`).
        **settings: Any field of `CompareOptions` by name, overriding `options` (as for `compare_arms`).

    Raises:
        ComparisonRefused: the experiments ran on different datasets, or share no case.
        NotFoundError: no such experiment or arm.
        PairNotNamed: an experiment has three or more arms and its arm is not named.
        UsageError: an invalid or unknown option.
    """
    opts = CompareOptions.of(options, **settings)
    store = open_store(store)
    ea, eb = store.experiments.get(exp_a), store.experiments.get(exp_b)
    if ea.dataset != eb.dataset:
        raise ComparisonRefused(
            f"experiment {ea.name!r} ran on dataset {ea.dataset} and {eb.name!r} on {eb.dataset}: a paired "
            "comparison needs both on the same cases (the same fingerprint). Run one of them again on the "
            "other's dataset: ",
            do.clone_on_dataset(eb.name, ea.dataset),
        )
    first, second = experiment_arm(ea, arm_a, "baseline"), experiment_arm(eb, arm_b, "candidate")
    if ea.id == eb.id and first.id == second.id:
        raise UsageError(f"arm {first.name!r} of {ea.name!r} compared with itself; choose two different arms")
    return _compare("experiments", _Arms(store, ea, first, eb, second), opts)


def _outcomes(arms: _Arms, scores: bool) -> tuple[CaseOutcomes, CaseOutcomes]:
    """Both sides' per-case sums (one aggregate query per experiment).

    Reading the two arms on two threads was measured slower, not faster: SQLite hands the GIL back at
    every result row, and two threads convoy on it.
    """
    store, ea, arm_a, eb, arm_b = arms
    if ea.id == eb.id:
        both = store.runs.case_outcomes(ea.id, [arm_a.id, arm_b.id], scores=scores)
        return both.for_arm(arm_a.id), both.for_arm(arm_b.id)
    return store.runs.case_outcomes(ea.id, [arm_a.id], scores=scores), store.runs.case_outcomes(
        eb.id, [arm_b.id], scores=scores
    )


def _score_lists(
    store: Store, exp_id: int, arm_id: int, cases: np.ndarray, sides: GraderSides | None, side: str
) -> list[np.ndarray]:
    """Each case's graded scores (the named grader's, with `sides`)."""
    grouped: dict[int, list[float]] = {}
    graded = (
        store.analysis.graded_scores(exp_id, arm_id)
        if sides is None
        else getattr(sides, side).graded_scores(arm_id)
    )
    for idx, score in graded:
        grouped.setdefault(idx, []).append(score)
    return [np.asarray(grouped[int(i)]) for i in cases]


@dataclass(frozen=True)
class _Paired:
    """The cases both sides ran, which of them pair up, and why the others were left out."""

    common: np.ndarray
    paired: np.ndarray
    ia: np.ndarray
    ib: np.ndarray
    ids: dict[int, str]
    excluded: dict[str, tuple[str, ...]]
    case_ids: list[str]
    domains: list[str]

    @property
    def n(self) -> int:
        return int(self.paired.size)


@dataclass(frozen=True)
class _PerCase:
    """Each paired case's outcomes on both sides: right counts ``k`` of ``n`` rounds (or scores)."""

    ka: np.ndarray
    na: np.ndarray
    kb: np.ndarray
    nb: np.ndarray
    lists_a: Any
    lists_b: Any
    va: np.ndarray
    vb: np.ndarray
    value_a: Any
    value_b: Any
    category: np.ndarray
    right: tuple[np.ndarray, np.ndarray] | None

    @property
    def delta(self) -> np.ndarray:
        delta: np.ndarray = self.vb - self.va
        return delta


@dataclass(frozen=True)
class _Tests:
    """The paired tests and the minimum detectable effect."""

    outcomes: Any = None
    mcnemar: Any = None
    midp: Any = None
    difference: Any = None
    clustered: Any = None
    inputs: Any = None
    mde: Any = None


@dataclass(frozen=True)
class _Main:
    """The test the verdict rests on, its interval and p-value, and the shape of the data behind it."""

    test: str
    main: Any
    interval: Interval | None
    interval_method: str
    p_value: float | None
    one_round: bool
    binary: bool


def _compare(kind: str, arms: _Arms, options: CompareOptions) -> Comparison:
    """Compare arm B of `eb` with arm A of `ea` in named steps: pair the cases, read each case's outcomes,
    test, pick the main test, then the usage, domain, text, pairwise and review figures, and the verdict."""
    store, ea, arm_a, eb, arm_b = arms
    options = options.checked()
    sides = grader_sides(store, ea, arm_a, eb, arm_b, options.grader)
    outcome = _outcome_kind(store, ea, eb, options.outcome, options.grader)
    oa, ob = _outcomes(arms, scores=outcome == "score")
    if sides is not None:  # each run's verdict and score the named grader's
        oa, ob = sides.outcomes(oa, ob)
    notes: list[str] = []
    pair = _pair_cases(arms, oa, ob, outcome)
    side_a, side_b = _sides(kind, ea, arm_a, eb, arm_b)
    if sides is not None:
        notes.append(grader_comparison_note(sides, side_a.name, side_b.name))
    per = _per_case(arms, oa, ob, pair, outcome, options.confidence, sides)
    tests = _tests(per, pair, outcome, options, notes)
    main = _main_test(per, pair.n, tests, outcome, options, notes)
    sequential = None
    if outcome == "passed" and pair.n and monitored(ea, arm_a, eb, arm_b):
        main, sequential = sequential_main(ea, pair.paired, pair.common, per.va, per.vb, main, notes)
    usage = _usage_differences(
        oa, ob, pair.common, outcome, per.lists_a, per.lists_b, options.confidence, options.iterations,
        options.seed, options.bootstrap, notes,
    )  # fmt: skip
    by_domain = _domains(
        pair.domains, per.lists_a, per.lists_b, per.va, per.vb, per.category, outcome, main.one_round,
        main.binary, options.confidence, options.alpha,
    )  # fmt: skip
    text = _text(arms, pair, options.details, notes)
    het = heterogeneity(per.delta, pair.domains, options.alpha) if pair.n else None
    if tests.clustered is not None:
        notes.append(what_it_answers(None, clustered=True).strip())
    pairwise: tuple[PairwiseSummary, ...] = ()
    if ea.id == eb.id and "pairwise" in grader_kinds(store, ea.id).values():
        pairwise = _pairwise(store, ea, arm_a, arm_b)
    agreement = _agreement(store, ea, arm_a, arm_b) if ea.id == eb.id else None
    corroboration = _corroboration(kind, arms, options, pairwise, notes)
    unit = "points" if outcome == "passed" else "score"
    return Comparison(
        kind=kind,
        a=side_a,
        b=side_b,
        dataset=ea.dataset,
        outcome=outcome,
        unit=unit,
        confidence=options.confidence,
        alpha=options.alpha,
        power=options.power,
        n_cases=pair.n,
        excluded=pair.excluded,
        value_a=per.value_a,
        value_b=per.value_b,
        case_table=_case_table(pair, per),
        outcomes=tests.outcomes,
        mcnemar=tests.mcnemar,
        mcnemar_midp=tests.midp,
        difference=tests.difference,
        clustered=tests.clustered,
        interval=main.interval,
        interval_method=main.interval_method,
        power_inputs=tests.inputs,
        mde=tests.mde,
        usage=usage,
        by_domain=by_domain,
        text=text,
        pairwise=pairwise,
        review_agreement=agreement,
        verdict=_verdict_of(side_a, side_b, pair.n, unit, per, tests, main, options, het),
        notes=tuple(notes),
        heterogeneity=het,
        sequential=sequential,
        trigger_help=_trigger_help(arms, pair, outcome, options.confidence),
        format_adherence=format_comparison(store, ea.id, arm_a, eb.id, arm_b, options.confidence),
        skill_following=following_comparison(store, ea, arm_a, eb, arm_b, options.confidence, options.grader),
        grader=options.grader,
        corroboration=corroboration,
    )


def _corroboration(
    kind: str, arms: _Arms, options: CompareOptions, pairwise: tuple[PairwiseSummary, ...], notes: list[str]
) -> Corroboration | None:
    """With ``judges: [primary, secondary]``: whether the second judge corroborates the first (noted)."""
    store, ea, arm_a, eb, arm_b = arms
    if ea.id != eb.id or options.grader is not None or judges_of(ea) is None:
        return None
    corroboration = corroborate(
        store, ea, arm_a, arm_b,
        lambda grader: _compare(kind, arms, replace(options, grader=grader)),
        pairwise or _pairwise(store, ea, arm_a, arm_b),
        alpha=options.alpha, confidence=options.confidence,
    )  # fmt: skip
    if corroboration is not None:
        notes.append(f"second judge: {corroboration.text}")
    return corroboration


def _trigger_help(arms: _Arms, pair: _Paired, outcome: str, confidence: float) -> TriggerHelp | None:
    """The trigger-vs-help split, when either arm offers its skills and runs are right or wrong."""
    store, ea, arm_a, eb, arm_b = arms
    if outcome != "passed" or not (arm_offers(arm_a) or arm_offers(arm_b)):
        return None
    runs_a = activation_runs(store, ea, [arm_a.name])
    runs_b = activation_runs(store, eb, [arm_b.name])
    return trigger_help(runs_a, runs_b, pair.paired.tolist(), confidence)


def _case_table(pair: _Paired, per: _PerCase) -> CaseTable:
    return CaseTable(
        np.asarray(pair.case_ids, dtype=object), np.asarray(pair.domains, dtype=object), per.category,
        per.ka, per.na, per.kb, per.nb, per.va, per.vb,
    )  # fmt: skip


def _outcome_kind(
    store: Store, ea: Experiment, eb: Experiment, outcome: str, grader: str | None = None
) -> str:
    """``passed`` or ``score``; two experiments compare scores when either side has only scores (of
    `grader` alone, when named)."""
    kind = resolve_outcome(store, ea.id, outcome, grader)
    if eb.id != ea.id and kind == "passed" and resolve_outcome(store, eb.id, "auto", grader) == "score":
        kind = "score"
    return kind


def _pair_cases(arms: _Arms, oa: CaseOutcomes, ob: CaseOutcomes, outcome: str) -> _Paired:
    """The cases graded on both sides, and the others by the reason they were left out."""
    store, ea, arm_a, eb, arm_b = arms
    excluded: dict[str, list[int]] = {}
    in_a, in_b = set(oa.case_idx.tolist()), set(ob.case_idx.tolist())
    if in_a and in_b and not in_a & in_b:
        raise ComparisonRefused(
            f"{ea.name}/{arm_a.name} and {eb.name}/{arm_b.name} share no case (different case selections of "
            f"{ea.dataset}); compare experiments that ran at least some of the same cases"
        )
    # Each side lists a case once (sums per arm and case): no np.unique pass over them (it hashes, slowly).
    common = np.intersect1d(oa.case_idx, ob.case_idx, assume_unique=True)
    excluded["only in A"] = sorted(in_a - in_b)
    excluded["only in B"] = sorted(in_b - in_a)
    ia = np.searchsorted(oa.case_idx, common)
    ib = np.searchsorted(ob.case_idx, common)
    if outcome == "score":
        has_a, has_b = oa.scored[ia] > 0, ob.scored[ib] > 0
    else:
        has_a, has_b = oa.graded[ia] > 0, ob.graded[ib] > 0
    excluded["no graded run in A"] = common[~has_a & has_b].tolist()
    excluded["no graded run in B"] = common[has_a & ~has_b].tolist()
    excluded["no graded run in either"] = common[~has_a & ~has_b].tolist()
    keep = has_a & has_b
    paired = common[keep]
    both = np.unique(np.concatenate([oa.case_idx, ob.case_idx]), return_index=True)[0]  # np.union1d, sorting
    fields_ = store.runs.case_fields(ea.id, both.tolist(), expected=False)
    ids = dict(zip(fields_.case_idx.tolist(), fields_.case_id.tolist(), strict=True))
    at = fields_.positions(paired)
    return _Paired(
        common=common,
        paired=paired,
        ia=ia[keep],
        ib=ib[keep],
        ids=ids,
        excluded={reason: tuple(ids[i] for i in idx) for reason, idx in excluded.items() if idx},
        case_ids=fields_.case_id[at].tolist(),
        domains=[NO_DOMAIN if d is None else str(d) for d in fields_.domain[at].tolist()],
    )


def _sides(kind: str, ea: Experiment, arm_a: Arm, eb: Experiment, arm_b: Arm) -> tuple[Side, Side]:
    """Both sides as shown: the arm's name, or ``experiment/arm`` when two experiments are compared."""
    if kind == "experiments":
        return (
            Side(ea.name, ea.id, f"{ea.name}/{arm_a.name}", arm_a.label, arm_a.snapshot, ea.rounds),
            Side(eb.name, eb.id, f"{eb.name}/{arm_b.name}", arm_b.label, arm_b.snapshot, eb.rounds),
        )
    return _side(ea, arm_a), _side(eb, arm_b)


def _per_case(
    arms: _Arms,
    oa: CaseOutcomes,
    ob: CaseOutcomes,
    pair: _Paired,
    outcome: str,
    confidence: float,
    sides: GraderSides | None = None,
) -> _PerCase:
    """Each paired case's rounds on both sides, its value (pass rate or mean score) and its category."""
    ia, ib = pair.ia, pair.ib
    if outcome == "passed":
        ka, na = oa.passed[ia], oa.graded[ia]
        kb, nb = ob.passed[ib], ob.graded[ib]
        lists_a, lists_b = round_lists(ka, na), round_lists(kb, nb)
        va, vb = ka / np.maximum(na, 1), kb / np.maximum(nb, 1)
        value_a, value_b = estimate_rate(ka, na, confidence), estimate_rate(kb, nb, confidence)
        right_a, right_b = 2 * ka > na, 2 * kb > nb  # in whole numbers: a majority is exact
        category = np.where(
            right_a,
            np.where(right_b, "unchanged_right", "regressed"),
            np.where(right_b, "fixed", "unchanged_wrong"),
        )
        return _PerCase(
            ka, na, kb, nb, lists_a, lists_b, va, vb, value_a, value_b, category, (right_a, right_b)
        )
    ka = np.zeros(pair.n, dtype=np.int64)
    kb = ka
    na, nb = oa.scored[ia], ob.scored[ib]
    store, ea, arm_a, eb, arm_b = arms
    lists_a = _score_lists(store, ea.id, arm_a.id, pair.paired, sides, "a")
    lists_b = _score_lists(store, eb.id, arm_b.id, pair.paired, sides, "b")
    # Each case's mean from its scores, exactly (not the store's float sums, whose last bit depends on
    # the order SQLite added them in): a case scored the same in both arms is a tie, never a win by 1e-16.
    va, vb = _exact_case_means(lists_a), _exact_case_means(lists_b)
    value_a = estimate_mean(lists_a, confidence, int(na.sum()))
    value_b = estimate_mean(lists_b, confidence, int(nb.sum()))
    delta = vb - va
    category = np.where(delta > 0, "fixed", np.where(delta < 0, "regressed", "unchanged"))
    return _PerCase(ka, na, kb, nb, lists_a, lists_b, va, vb, value_a, value_b, category, None)


def _exact_case_means(lists: list[np.ndarray]) -> np.ndarray:
    """Each case's mean score, exact then rounded once (`abbench.stats.exact_means`)."""
    if not lists:
        return np.zeros(0)
    return exact_means(np.concatenate(lists), [len(v) for v in lists])


def _tests(per: _PerCase, pair: _Paired, outcome: str, options: CompareOptions, notes: list[str]) -> _Tests:
    """McNemar's tests (pass/fail), the paired and clustered differences, and the minimum detectable effect."""
    n = pair.n
    outcomes = mcnemar = midp = None
    if outcome == "passed" and n and per.right is not None:
        outcomes = paired_outcomes(*per.right)
        mcnemar = mcnemar_exact(outcomes.b, outcomes.c)
        midp = mcnemar_midp(outcomes.b, outcomes.c)
    difference = clustered = inputs = mde = None
    lists_a, lists_b, confidence = per.lists_a, per.lists_b, options.confidence
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", StatsWarning)
        if n:
            difference = paired_difference(lists_a, lists_b, confidence=confidence, method="t")
        if options.cluster == "domain" and n:
            if len(set(pair.domains)) >= 2:
                clustered = paired_difference(
                    lists_a, lists_b, clusters=pair.domains, confidence=confidence, method="t"
                )
            else:
                notes.append(
                    "clustering asked for, but the paired cases lie in a single domain: not clustered"
                )
        if n >= 2:
            inputs = estimate_power_inputs(lists_a, lists_b)
            mde = inputs.min_detectable_effect(alpha=options.alpha, power=options.power)
    for w in caught:
        if issubclass(w.category, FewClustersWarning):
            notes.append(f"{w.message}")
    if mde is not None and n and not np.any(per.vb != per.va):
        # Nothing moved: a variance left would be round-to-round noise alone, which says nothing of how far
        # cases differ between the arms; an MDE from it would read as a power the data never showed.
        mde = None
        notes.append(NO_CASE_CHANGED)
    elif mde is not None and not mde.variance > 0:
        # Miller's formula fed a variance of 0 says "0 points": no spread to estimate it from, not perfect power.
        mde = None
        notes.append(
            f"{_no_spread(per, n)}: the smallest detectable difference cannot be estimated from these data"
        )
    return _Tests(outcomes, mcnemar, midp, difference, clustered, inputs, mde)


NO_CASE_CHANGED = (
    "no paired case changed between the arms (no discordant case): the smallest detectable difference is not "
    "informative — there is no spread of per-case differences to estimate it from"
)
"""The note (and `Comparison.mde` is None) when every paired case has the same outcome in both arms."""


def _no_spread(per: _PerCase, n: int) -> str:
    """Why the paired differences have no spread, in words."""
    if n and not np.any(per.vb != per.va):
        return "no paired case changed between the arms"
    return "every paired case differs by the same amount"


def _main_test(
    per: _PerCase, n: int, tests: _Tests, outcome: str, options: CompareOptions, notes: list[str]
) -> _Main:
    """The test the verdict rests on (clustered, McNemar's, or the paired difference) and its interval.

    Pass/fail cases with one outcome per arm (one round, or rounds that always agree) are a 2×2 table:
    McNemar's score test decides and Tango's score interval, its inversion, is the interval, so the two
    never disagree (below `MIN_CASES` paired cases the exact test decides instead). Otherwise the paired
    difference of per-case means decides with its own Student t interval (clustered when asked)."""
    na, nb, ka, kb = per.na, per.nb, per.ka, per.kb
    one_round = outcome == "passed" and n > 0 and bool(np.all(na == 1)) and bool(np.all(nb == 1))
    binary = (
        outcome == "passed"
        and n > 0
        and bool(np.all((ka == 0) | (ka == na)))
        and bool(np.all((kb == 0) | (kb == nb)))
    )
    if tests.clustered is not None:
        test, main = "clustered paired difference", tests.clustered
    elif binary:
        test, main = ("McNemar" if n >= MIN_CASES else "exact McNemar"), tests.difference
    else:
        test, main = "paired difference", tests.difference
    interval, interval_method = _main_interval(
        main, tests.clustered is not None, binary, tests.outcomes, options.confidence
    )
    if main is not None and interval is None and n >= 2:
        notes.append(f"{_no_spread(per, n)}: there is no spread to build an interval from")
    p_value = main.p_value if main else None
    if test == "exact McNemar" and tests.mcnemar is not None:
        p_value = tests.mcnemar.p_value
    elif test == "McNemar" and tests.outcomes is not None:
        p_value = mcnemar_score(tests.outcomes.b, tests.outcomes.c).p_value
    if binary and not one_round and tests.clustered is None:
        notes.append(
            "every case's rounds agree in both arms: each case is one pass/fail outcome per arm, so McNemar's "
            "test on the 2×2 table decides (the t test would treat identical rounds as independent evidence)"
        )
    elif outcome == "passed" and n > 0 and not one_round:
        notes.append(
            "several rounds: a case counts as right when it passed in more than half of its graded rounds "
            "(fixed/regressed and McNemar use that); the paired difference of per-case pass rates is the main test"
        )
    if tests.mde is not None:
        notes.append(
            f"the minimum detectable effect is for {options.power:.0%} power at the {options.alpha:g} level, "
            "ignoring clusters"
        )
    return _Main(test, main, interval, interval_method, p_value, one_round, binary)


def _text(arms: _Arms, pair: _Paired, details: bool | None, notes: list[str]) -> TextChanges | None:
    """The answers' words that changed, when asked for (or, by default, when the cases are few enough)."""
    store, ea, arm_a, eb, arm_b = arms
    common = pair.common
    if details is None:
        details = common.size <= DETAILS_MAX_CASES
        if not details:
            notes.append(
                f"{common.size:,} cases: reasons and evidence were not compared (details=True compares them)"
            )
    if not details:
        return None
    label_map = dataset_labels(store, ea.dataset_id)[1]
    return text_changes(
        store, ea.id, arm_a.id, eb.id, arm_b.id, {int(i): pair.ids[int(i)] for i in common}, label_map,
        ea.rounds == eb.rounds, (arm_a.snapshot is not None, arm_b.snapshot is not None),
    )  # fmt: skip


def _verdict_of(
    side_a: Side,
    side_b: Side,
    n: int,
    unit: str,
    per: _PerCase,
    tests: _Tests,
    main: _Main,
    options: CompareOptions,
    het: Any = None,
) -> Verdict:
    """The verdict in words, from the main test, its interval and the cases that moved (and, when the
    effect differs across domains or is clustered by them, what the interval is the effect on)."""
    outcomes, mcnemar, interval = tests.outcomes, tests.mcnemar, main.interval
    return verdict(
        name_a=side_a.name,
        name_b=side_b.name,
        n_cases=n,
        unit=unit,
        difference=main.main.difference if main.main is not None else None,
        low=interval.low if interval is not None else None,
        high=interval.high if interval is not None else None,
        confidence=options.confidence,
        test=main.test,
        p_value=main.p_value,
        alpha=options.alpha,
        mde=tests.mde.delta if tests.mde is not None else None,
        power=options.power,
        fixed=outcomes.fixed if outcomes else int(np.count_nonzero(per.delta > 0)),
        regressed=outcomes.regressed if outcomes else int(np.count_nonzero(per.delta < 0)),
        mcnemar_p=mcnemar.p_value if mcnemar and main.test != "exact McNemar" else None,
        min_cases=MIN_CASES,
        margin=options.margin,
        estimand=what_it_answers(het, clustered=tests.clustered is not None),
    )


def _main_interval(
    main: Any, clustered: bool, binary: bool, outcomes: Any, confidence: float
) -> tuple[Interval | None, str]:
    """The interval of the difference the verdict rests on, and how it was made.

    Pass/fail cases with one outcome per arm get Tango's score interval on the 2×2 table (unless
    clustering was asked for and has spread to work with): it is the inversion of McNemar's score test
    that decides there, and it never collapses to a point. Otherwise the paired difference's Student t
    interval. ``d̄ ± t·se`` with no spread between cases is a point, which would claim certainty the data
    do not have: with pass/fail outcomes the score interval stands in, otherwise there is none. A
    difference of pass rates lies in [−1, 1], and so does its interval (a t interval over a few cases
    can reach past it).
    """
    spread = main is not None and math.isfinite(main.se) and main.se > 0
    if clustered and spread:
        return _within_rates(main.interval, outcomes), "clustered t"
    if binary and outcomes is not None:
        o = outcomes
        return paired_proportion_interval(
            o.both_pass, o.fixed, o.regressed, o.both_fail, confidence, method="score"
        ), "score"
    if spread:
        return _within_rates(main.interval, outcomes), "t"
    return None, "none"


def _within_rates(interval: Interval, outcomes: Any) -> Interval:
    """A difference of pass rates' interval clipped to [−1, 1] (scores, `outcomes` None, are left as they are)."""
    if outcomes is None:
        return interval
    return Interval(max(-1.0, interval.low), min(1.0, interval.high), interval.confidence)


def _pairwise(store: Store, exp: Experiment, arm_a: Arm, arm_b: Arm) -> tuple[PairwiseSummary, ...]:
    rows = store.grades.pairwise_verdicts(exp.id)
    tallies: dict[str, list[int]] = {}
    for grader, verdict_, first, second in rows:
        if {first, second} != {arm_a.id, arm_b.id}:
            continue
        # The grade's "a" is its first run's arm: map it onto this comparison's A and B.
        t = tallies.setdefault(grader, [0, 0, 0])
        if verdict_ == "tie" or verdict_ is None:
            t[2] += 1
        elif (verdict_ == "a") == (first == arm_a.id):
            t[0] += 1
        else:
            t[1] += 1
    scores = _pair_scores(store, exp, arm_a, arm_b) if tallies else {}
    out = []
    for grader, (wins_a, wins_b, ties) in sorted(tallies.items()):
        decisive = wins_a + wins_b
        out.append(
            PairwiseSummary(
                grader, wins_a + wins_b + ties, wins_a, wins_b, ties,
                wins_b / decisive if decisive else None, mcnemar_exact(wins_a, wins_b).p_value,
                rubric_totals(scores.get(grader, ())),
            )
        )  # fmt: skip
    return tuple(out)


def _pair_scores(store: Store, exp: Experiment, arm_a: Arm, arm_b: Arm) -> dict[str, list[dict[str, float]]]:
    """Pairwise grader -> its latest pair grades' rubric scores, in this comparison's arm order."""
    out: dict[str, list[dict[str, float]]] = {}
    for g in store.grades.records(exp.id, kind="pairwise"):
        arms = list((g.details or {}).get("arms") or ())
        if g.status != "ok" or not g.dimensions or set(arms) != {arm_a.name, arm_b.name}:
            continue
        dims = g.dimensions if arms[0] == arm_a.name else swap_sides(g.dimensions)
        out.setdefault(g.grader, []).append(dims)
    return out


def _agreement(store: Store, exp: Experiment, arm_a: Arm, arm_b: Arm) -> JudgeAgreement | None:
    if not store.analysis.has_reviews(exp.id):
        return None

    return judge_agreement(exp, store=store, arms=[arm_a.name, arm_b.name])

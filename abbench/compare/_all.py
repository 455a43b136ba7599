"""Three or more arms on the same cases: Cochran's Q, and every arm against the baseline (Holm-adjusted)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from abbench._result import read_record
from abbench.compare._api import compare_arms
from abbench.compare._options import CompareOptions
from abbench.errors import UsageError
from abbench.metrics import Estimate, Result, check_grader, estimate_rate, resolve_outcome
from abbench.stats import CochransQ, Interval, cochrans_q, holm_correction
from abbench.store import Arm, Experiment, Store, open_store


@dataclass(frozen=True)
class ArmPair(Result):
    """One arm against the baseline, from `compare_arms`, with its p-value adjusted over all pairs.

    Attributes:
        a: The baseline arm.
        b: The arm compared with it.
        n_cases: Paired cases.
        difference: ``b − a`` (pass rate or mean score).
        interval: Its interval.
        test: The main test.
        p_value: The main test's p-value.
        p_adjusted: Holm-adjusted over the pairs.
        fixed: Cases fixed.
        regressed: Cases regressed.
        verdict: The pair's own verdict in words (before adjustment).
        significant: Whether the adjusted p-value is below alpha.
    """

    a: str
    b: str
    n_cases: int
    difference: float | None
    interval: Interval | None
    test: str
    p_value: float | None
    p_adjusted: float | None
    fixed: int
    regressed: int
    verdict: str
    significant: bool


@dataclass(frozen=True)
class MultiComparison(Result):
    """All arms of one experiment compared at once.

    Attributes:
        experiment: The experiment's name.
        experiment_id: Its id.
        dataset: Its dataset fingerprint.
        arms: The arms, baseline first.
        outcome: ``passed`` or ``score``.
        n_cases: Cases graded in every arm (what Cochran's Q uses).
        pass_rates: Each arm's pass rate on those cases (empty for scores).
        cochran: Cochran's Q over per-case majority outcomes; None for scores or fewer than 2 cases.
        pairs: Every arm against the baseline.
        notes: How it was computed.
        grader: The grader whose grades alone the arms were compared by; None: the runs' verdicts.
    """

    experiment: str
    experiment_id: int
    dataset: str
    arms: tuple[str, ...]
    outcome: str
    n_cases: int
    pass_rates: dict[str, Estimate]
    cochran: CochransQ | None
    pairs: tuple[ArmPair, ...]
    notes: tuple[str, ...]
    grader: str | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MultiComparison:
        """The comparison `as_dict` wrote (a server's answer), every field read back."""
        return read_record(cls, data)


def compare_all(
    experiment: int | str | Experiment,
    *,
    baseline: str | None = None,
    store: str | os.PathLike[str] | Store | None = None,
    options: CompareOptions | None = None,
    **settings: Any,
) -> MultiComparison:
    """Compare every arm of an experiment: Cochran's Q for "all arms pass equally often", then each arm
    against the baseline with `compare_arms`, p-values Holm-adjusted over the pairs.

    Args:
        experiment: The experiment.
        baseline: The arm the others are compared with (default: the first).
        store: The store.
        options: How to compare each pair (see `CompareOptions`); its ``alpha`` is the family-wise level.
            Reasons and evidence are compared only with ``details=True``; the usage figures use
            central-limit intervals.
        **settings: Any field of `CompareOptions` by name, overriding `options` (``outcome``,
            ``confidence``, ``alpha``, ``details``, ...).

    Raises:
        UsageError: the experiment has fewer than two arms, or an invalid or unknown option.
    """
    opts = CompareOptions.of(options, **settings)
    opts = replace(opts, details=bool(opts.details), bootstrap=False).checked()
    store = open_store(store)
    exp = store.experiments.get(experiment)
    if len(exp.arms) < 2:
        raise UsageError(
            f"experiment {exp.name!r} has {len(exp.arms):,} arm(s): comparing needs at least two"
        )
    base = exp.arm(baseline) if baseline else exp.arms[0]
    arms = [base, *[a for a in exp.arms if a.id != base.id]]
    if opts.grader is not None:
        check_grader(exp, opts.grader, store)
    kind = resolve_outcome(store, exp.id, opts.outcome, opts.grader)
    notes: list[str] = []
    common, pass_rates, cochran = _cochran(store, exp, arms, kind, opts, notes)
    pairs = _pairs(store, exp, arms, replace(opts, outcome=kind))
    notes.append(f"pairs are Holm-adjusted over {len(pairs):,} comparison(s) with the baseline {base.name}")
    return MultiComparison(
        experiment=exp.name,
        experiment_id=exp.id,
        dataset=exp.dataset,
        arms=tuple(a.name for a in arms),
        outcome=kind,
        n_cases=int(common.size),
        pass_rates=pass_rates,
        cochran=cochran,
        pairs=pairs,
        notes=tuple(notes),
        grader=opts.grader,
    )


def _cochran(
    store: Store, exp: Experiment, arms: list[Arm], kind: str, opts: CompareOptions, notes: list[str]
) -> tuple[np.ndarray, dict[str, Estimate], CochransQ | None]:
    """The cases graded in every arm (by ``opts.grader`` alone, when named), each arm's pass rate on them,
    and Cochran's Q over them."""
    confidence = opts.confidence
    outcomes = store.runs.case_outcomes(exp.id, [a.id for a in arms])
    if opts.grader is not None:
        outcomes = store.grades.verdicts(exp.id, opts.grader, [a.id for a in arms]).case_outcomes(outcomes)
        notes.append(f"figures from {opts.grader}'s grades alone (not the runs' verdicts)")
    per_arm = [outcomes.for_arm(a.id) for a in arms]
    counts = per_arm[0].scored if kind == "score" else per_arm[0].graded
    common = per_arm[0].case_idx[counts > 0]
    for o in per_arm[1:]:
        graded = o.scored if kind == "score" else o.graded
        common = np.intersect1d(common, o.case_idx[graded > 0])
    pass_rates: dict[str, Estimate] = {}
    cochran = None
    if kind == "passed" and common.size:
        columns = []
        for arm, o in zip(arms, per_arm, strict=True):
            at = np.searchsorted(o.case_idx, common)
            k, n = o.passed[at], o.graded[at]
            pass_rates[arm.name] = estimate_rate(k, n, confidence)
            columns.append(2 * k > n)  # right in more than half of its graded rounds, in whole numbers
        if common.size >= 2:
            cochran = cochrans_q(np.column_stack(columns))
        notes.append(
            "Cochran's Q uses per-case outcomes (right = passed in more than half of the graded rounds) "
            "over the cases graded in every arm"
        )
    elif kind == "score":
        notes.append("the graders give scores: Cochran's Q (pass/fail) does not apply; see the pairs")
    return common, pass_rates, cochran


def _pairs(store: Store, exp: Experiment, arms: list[Arm], opts: CompareOptions) -> tuple[ArmPair, ...]:
    """Every arm against the baseline (the first), p-values Holm-adjusted over the pairs at ``opts.alpha``."""
    base = arms[0]
    compared = [compare_arms(exp, base.name, arm.name, store=store, options=opts) for arm in arms[1:]]
    holm = holm_correction({c.b.name: c.verdict.p_value for c in compared}, alpha=opts.alpha)
    adjusted = holm.by_label()
    out = []
    for c in compared:
        main = c.main
        adj = adjusted[c.b.name]
        out.append(
            ArmPair(
                a=base.name,
                b=c.b.name,
                n_cases=c.n_cases,
                difference=main.difference if main else None,
                interval=c.interval,
                test=c.verdict.test,
                p_value=c.verdict.p_value,
                p_adjusted=adj,
                fixed=len(c.fixed),
                regressed=len(c.regressed),
                verdict=c.verdict.text,
                significant=bool(adj is not None and adj == adj and adj < opts.alpha),
            )
        )
    return tuple(out)

"""A second judge: a regression or a win counts only when the second judge corroborates it.

An experiment's ``judges: [primary, secondary]`` (`abbench.store.JudgesSpec`) names two judges of its
graders. `corroborate` compares the pair of arms as each judge alone saw them (pointwise judges: each
judge's pass/fail, through `compare_arms`' ``grader=``; pairwise judges: each judge's wins, by the
exact sign test), applies the rule (``both``, ``either``, ``advisory``), and measures how far the two
judges agree on the same runs (or pairs) — Cohen's kappa with its interval. A regression the second
judge does not find is *not corroborated*: `abbench.gate` then leaves capability inconclusive rather
than blocking on it (and does not pass on a win it does not find either).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from abbench.compare._corroboration import Corroboration, apply_rule
from abbench.compare._model import Comparison, PairwiseSummary
from abbench.compare._verdict import Outcome
from abbench.stats import cohen_kappa
from abbench.store import Arm, Experiment, Store
from abbench.types import GradeStatus


def judges_of(exp: Experiment) -> Mapping[str, Any] | None:
    """The experiment's ``judges:`` as stored (``primary``, ``secondary``, ``corroborate``), or None."""
    judges = (exp.definition or {}).get("judges")
    return judges if isinstance(judges, Mapping) and judges.get("primary") else None


def corroborate(
    store: Store,
    exp: Experiment,
    arm_a: Arm,
    arm_b: Arm,
    compare_with: Callable[[str], Comparison],
    pairwise: tuple[PairwiseSummary, ...],
    *,
    alpha: float,
    confidence: float,
) -> Corroboration | None:
    """How the experiment's second judge stands to its first on B against A (None without ``judges:``).

    Args:
        store: The store.
        exp: The experiment.
        arm_a: The baseline arm.
        arm_b: The candidate arm.
        compare_with: The comparison of the pair as one grader alone graded it (``grader=``).
        pairwise: The pairwise judges' tallies on this pair (for pairwise judges).
        alpha: Significance level of the pairwise judges' sign tests.
        confidence: Coverage of kappa's interval.
    """
    judges = judges_of(exp)
    if judges is None:
        return None
    primary, secondary = str(judges["primary"]), str(judges["secondary"])
    rule = str(judges.get("corroborate") or "both")
    kinds = {g.grader: g.kind for g in store.grades.records(exp.id) if g.grader in (primary, secondary)}
    kind = "pairwise" if "pairwise" in kinds.values() else "judge"
    cases: dict[str, tuple[str, ...]] = {}
    first: Mapping[Any, Any]
    second: Mapping[Any, Any]
    if kind == "pairwise":
        tallies = {p.grader: p for p in pairwise}
        outcomes = [_pairwise_outcome(tallies.get(name), alpha) for name in (primary, secondary)]
        first = _pair_verdicts(store, exp, primary, arm_a, arm_b)  # keyed by (run A, run B)
        second = _pair_verdicts(store, exp, secondary, arm_a, arm_b)
        categories: list[Any] = ["a", "b", "tie"]
    else:
        cp, cs = compare_with(primary), compare_with(secondary)
        outcomes = [str(c.verdict.outcome) if c.n_cases else str(Outcome.INCONCLUSIVE) for c in (cp, cs)]
        regressed_s = {c.case_id for c in cs.regressed}
        fixed_s = {c.case_id for c in cs.fixed}
        cases = {
            "regressed": tuple(c.case_id for c in cp.regressed),
            "regressed_corroborated": tuple(c.case_id for c in cp.regressed if c.case_id in regressed_s),
            "fixed": tuple(c.case_id for c in cp.fixed),
            "fixed_corroborated": tuple(c.case_id for c in cp.fixed if c.case_id in fixed_s),
        }
        ids = set(store.runs.select(exp.id, arms=[arm_a.name, arm_b.name]))
        first = _run_verdicts(store, exp, primary, ids)
        second = _run_verdicts(store, exp, secondary, ids)
        categories = [False, True]
    outcome, corroborated = apply_rule(rule, outcomes[0], outcomes[1])
    both: list[Any] = sorted(set(first) & set(second))
    kappa, reason, agree = None, None, None
    if both:
        a_labels, b_labels = [first[k] for k in both], [second[k] for k in both]
        agree = sum(x == y for x, y in zip(a_labels, b_labels, strict=True)) / len(both)
        kappa = cohen_kappa(a_labels, b_labels, labels=categories, confidence=confidence)
        if math.isnan(kappa.kappa):
            kappa, reason = None, "each judge gave one and the same verdict throughout: kappa is undefined"
    else:
        reason = f"no {'pair' if kind == 'pairwise' else 'run'} is judged by both yet"
    return Corroboration(
        primary, secondary, rule, kind, outcomes[0], outcomes[1], outcome, corroborated,
        len(both), agree, kappa, **cases, reason=reason,
    )  # fmt: skip


def _pairwise_outcome(summary: PairwiseSummary | None, alpha: float) -> str:
    if summary is None or summary.wins_a + summary.wins_b == 0 or summary.p_value >= alpha:
        return str(Outcome.INCONCLUSIVE)
    return str(Outcome.BETTER if summary.wins_b > summary.wins_a else Outcome.WORSE)


def _run_verdicts(store: Store, exp: Experiment, grader: str, run_ids: set[int]) -> dict[int, bool]:
    """Run id -> the judge's latest pass/fail on it (runs of the pair; failed or score-only grades left out)."""
    return {
        g.run_id: bool(g.passed)
        for g in store.grades.records(exp.id, grader=grader)
        if g.other_run_id is None
        and g.status == GradeStatus.OK
        and g.passed is not None
        and g.run_id in run_ids
    }


def _pair_verdicts(
    store: Store, exp: Experiment, grader: str, arm_a: Arm, arm_b: Arm
) -> dict[tuple[int, int], str]:
    """(A's run, B's run) -> the judge's latest verdict in this comparison's terms (``a``: A preferred)."""
    out: dict[tuple[int, int], str] = {}
    for g in store.grades.records(exp.id, grader=grader, kind="pairwise"):
        if g.status != GradeStatus.OK or g.other_run_id is None or g.verdict not in ("a", "b", "tie"):
            continue
        arms = list((g.details or {}).get("arms") or ())
        if arms == [arm_a.name, arm_b.name]:
            out[(g.run_id, g.other_run_id)] = g.verdict
        elif arms == [arm_b.name, arm_a.name]:
            out[(g.other_run_id, g.run_id)] = {"a": "b", "b": "a"}.get(g.verdict, "tie")
    return out

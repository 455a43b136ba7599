"""Skill instruction-following in a comparison: the paired difference in the share of sections followed."""

from __future__ import annotations

from abbench.metrics import FollowingDifference, experiment_graders, following_difference, following_grader
from abbench.store import Arm, Experiment, Store


def following_comparison(
    store: Store,
    ea: Experiment,
    arm_a: Arm,
    eb: Experiment,
    arm_b: Arm,
    confidence: float,
    grader: str | None,
) -> FollowingDifference | None:
    """B − A in the share of applicable skill sections followed, paired over the cases a skill-following
    judge judged in both arms (the comparison's grader when it is one, else the first such judge of A's
    experiment); None when no run of either arm was judged so."""
    rows_a = store.grades.section_verdicts(ea.id, [arm_a.id])
    rows_b = store.grades.section_verdicts(eb.id, [arm_b.id])
    order = list(experiment_graders(ea, store)) + list(
        experiment_graders(eb, store) if eb.id != ea.id else []
    )
    judge = following_grader([*rows_a, *rows_b], order, grader)
    if judge is None:
        return None
    return following_difference(
        judge,
        arm_a.name,
        [g for g in rows_a if g.grader == judge],
        arm_b.name,
        [g for g in rows_b if g.grader == judge],
        confidence,
    )

"""Judge scores by grader and rubric dimension, per arm, with per-case means and intervals."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from abbench._result import Result
from abbench.metrics._base import Estimate, estimate_mean

OVERALL = "score"
"""The dimension name under which a judge's overall score is reported."""


@dataclass(frozen=True)
class JudgeScore(Result):
    """One judge's mean score on one dimension for one arm.

    Attributes:
        arm: The arm.
        grader: The judge's name.
        dimension: The rubric dimension, or ``"score"`` for the overall score.
        estimate: Mean over cases of the per-case mean score, with its interval.
    """

    arm: str
    grader: str
    dimension: str
    estimate: Estimate


def judge_scores(
    grades: list[dict[str, Any]], arm_names: dict[int, str], case_index: dict[int, int], confidence: float
) -> tuple[JudgeScore, ...]:
    """Scores of pointwise judges (kind ``judge``) from the latest successful grade of each run.

    Args:
        grades: Rows of `store.grades.table`.
        arm_names: Arm id -> name, in the experiment's order.
        case_index: Case position in the dataset -> a dense case number.
        confidence: Coverage of the intervals.
    """
    values: dict[tuple[str, str, str], list[tuple[int, float]]] = {}
    for g in grades:
        if g["kind"] != "judge" or g["status"] != "ok" or g["other_run_id"] is not None:
            continue
        arm = arm_names.get(g["arm_id"])
        if arm is None:
            continue
        dims = dict(g["dimensions"] or {})
        if g["score"] is not None:
            dims = {OVERALL: g["score"], **dims}
        for dim, value in dims.items():
            try:
                x = float(value)
            except (TypeError, ValueError):
                continue
            if np.isfinite(x):
                values.setdefault((arm, g["grader"], str(dim)), []).append((case_index[g["case_idx"]], x))
    order = {name: i for i, name in enumerate(arm_names.values())}
    out = []
    for (arm, grader, dim), pairs in sorted(
        values.items(), key=lambda kv: (order[kv[0][0]], kv[0][1], kv[0][2])
    ):
        by_case: dict[int, list[float]] = {}
        for case, x in pairs:
            by_case.setdefault(case, []).append(x)
        lists = [by_case[c] for c in sorted(by_case)]
        out.append(JudgeScore(arm, grader, dim, estimate_mean(lists, confidence, len(pairs))))
    return tuple(out)

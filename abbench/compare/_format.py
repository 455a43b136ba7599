"""Format adherence in a comparison: the paired difference between two arms' shares of answers in format."""

from __future__ import annotations

from abbench.metrics import FormatDifference, format_difference
from abbench.store import Arm, Store


def format_comparison(
    store: Store, exp_a: int, arm_a: Arm, exp_b: int, arm_b: Arm, confidence: float
) -> FormatDifference | None:
    """B − A in format adherence over the cases both arms' replies were read on; None when neither
    arm's replies were read (agents that read no model reply: builtin, python)."""
    rows_a = store.grades.answer_readings(exp_a, [arm_a.id])
    rows_b = store.grades.answer_readings(exp_b, [arm_b.id])
    if not rows_a and not rows_b:
        return None
    return format_difference(arm_a.name, rows_a, arm_b.name, rows_b, confidence)

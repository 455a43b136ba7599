"""The ``recorded`` grader: the verdict an external tool reached on a run, kept in its transcript."""

from __future__ import annotations

from abbench.errors import GradingError
from abbench.graders._base import FunctionGrader, GradeContext, Grader, GradeResult, register_grader

VERDICT_ROLE = "verdict"
"""The transcript entries that hold an external tool's verdicts (read by the ``recorded`` grader)."""


@register_grader("recorded")
def recorded(name: str = "recorded", *, grader: str | None = None) -> Grader:
    """The verdict an external tool reached on the run (its scorer, assertion or expectation), as it
    was recorded with the outcome (`record_runs`'s ``grades``). A run recorded without one fails
    grading — not assessed, never passed.

    Args:
        name: The grader's name in the experiment (the key of the outcome's ``grades``).
        grader: The recorded verdict to read, when it differs from `name`.
    """
    wanted = grader or name

    def grade(ctx: GradeContext) -> GradeResult:
        for entry in reversed(ctx.transcript):
            if (
                isinstance(entry, dict)
                and entry.get("role") == VERDICT_ROLE
                and entry.get("grader") == wanted
            ):
                passed, score = entry.get("passed"), entry.get("score")
                if score is None and passed is not None:
                    score = float(passed)
                return GradeResult(passed=passed, score=score, comment=entry.get("comment"))
        raise GradingError(
            f"no verdict {wanted!r} was recorded for run {ctx.run_id} (case {ctx.case.case_id}, arm "
            f"{ctx.arm}); record it with the outcome's `grades`, or grade the run with another grader",
            retryable=False,
        )

    return FunctionGrader(name, grade, "rule")

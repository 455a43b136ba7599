"""The ``recorded`` grader: the verdict an external tool reached on a run, kept in its transcript."""

from __future__ import annotations

from abbench.errors import GradingError
from abbench.graders._base import FunctionGrader, GradeContext, Grader, GradeResult, register_grader
from abbench.transcript import (
    VERDICT_ROLE as VERDICT_ROLE,  # re-exported: graders name it too
    VerdictEvent,
)


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
        for event in reversed(ctx.events):
            if isinstance(event, VerdictEvent) and event.grader == wanted:
                score = event.score
                if score is None and event.passed is not None:
                    score = float(event.passed)
                return GradeResult(passed=event.passed, score=score, comment=event.comment)
        raise GradingError(
            f"no verdict {wanted!r} was recorded for run {ctx.run_id} (case {ctx.case.case_id}, arm "
            f"{ctx.arm}); record it with the outcome's `grades`, or grade the run with another grader",
            retryable=False,
        )

    return FunctionGrader(name, grade, "rule")

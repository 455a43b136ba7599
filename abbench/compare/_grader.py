"""A comparison as one named grader saw it: its verdicts on both sides' runs, in place of the runs' own."""

from __future__ import annotations

from dataclasses import dataclass

from abbench.metrics import check_grader
from abbench.store import GRADING_FAILED, Arm, CaseOutcomes, Experiment, GraderVerdicts, Store


@dataclass(frozen=True)
class GraderSides:
    """One grader's verdicts on the runs of both arms compared (`abbench.store.GraderVerdicts`).

    Attributes:
        grader: The grader's name.
        a: Its verdicts on arm A's runs.
        b: On arm B's.
    """

    grader: str
    a: GraderVerdicts
    b: GraderVerdicts

    def outcomes(self, oa: CaseOutcomes, ob: CaseOutcomes) -> tuple[CaseOutcomes, CaseOutcomes]:
        """Both sides' per-case sums with this grader's right, wrong, grading failed and scores."""
        return self.a.case_outcomes(oa), self.b.case_outcomes(ob)


def grader_sides(
    store: Store, ea: Experiment, arm_a: Arm, eb: Experiment, arm_b: Arm, grader: str | None
) -> GraderSides | None:
    """The named grader's verdicts on both arms (None when no grader is named).

    Raises:
        UsageError: `grader` grades no run of either experiment (the message lists its graders).
    """
    if grader is None:
        return None
    check_grader(ea, grader, store)
    if eb.id != ea.id:
        check_grader(eb, grader, store)
    return GraderSides(
        grader,
        store.grades.verdicts(ea.id, grader, [arm_a.id]),
        store.grades.verdicts(eb.id, grader, [arm_b.id]),
    )


def grader_comparison_note(sides: GraderSides, a: str, b: str) -> str:
    """What the comparison's figures are, and how many answered runs the grader left unassessed per side."""

    def left(v: GraderVerdicts, name: str) -> str:
        failed = int((v.outcome == GRADING_FAILED).sum())
        return f"{name} {int(v.not_graded.sum()):,} not graded, {failed:,} grading failed"

    return (
        f"figures from {sides.grader}'s grades alone (not the runs' verdicts, which combine every deciding "
        f"grader); not assessed: {left(sides.a, a)}; {left(sides.b, b)}"
    )

"""What skill-following judges said of each run, in SQL: the SKILL.md sections followed, skipped, not applicable.

A skill-following judge (`abbench.graders.skill_instruction_following`, or the demo's offline stand-in)
keeps the references of the sections it judged in its grade's ``details``: ``followed``, ``skipped``
and ``not_applicable``, each a list. Any pointwise grade whose details hold the first two as lists is
read here, whatever its grader is called, so a renamed judge is found too.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

from abbench.store._noun import Noun
from abbench.types import GradeStatus


@dataclass(frozen=True)
class SectionGrade:
    """One skill-following grade of a run's current execution.

    Attributes:
        arm_id: The run's arm.
        case_idx: Its case's position in the dataset.
        round: Its round.
        grader: The judge's name.
        score: The share of applicable sections followed (None when none applied).
        skill: The skill judged, as the grade names it.
        followed: References of the sections it followed.
        skipped: Of those it skipped (they applied, and it did not do them).
        not_applicable: Of those that did not bear on the case.
        judge_model: The model that judged, as the grade records it (an offline stand-in, a rule, names
            itself in ``details.judge``).
    """

    arm_id: int
    case_idx: int
    round: int
    grader: str
    score: float | None
    skill: str | None
    followed: tuple[str, ...]
    skipped: tuple[str, ...]
    not_applicable: tuple[str, ...]
    judge_model: str | None = None


def _refs(text: str | None) -> tuple[str, ...]:
    value = json.loads(text) if text else None
    return tuple(str(v) for v in value) if isinstance(value, list) else ()


class SectionVerdictReads(Noun):
    """The skill-following grades of an experiment's runs (part of ``store.grades``)."""

    def section_verdicts(self, exp_id: int, arm_ids: Sequence[int] | None = None) -> list[SectionGrade]:
        """The latest successful skill-following grade of each run's current execution, by arm, case
        and round (a grade of an execution since re-run is left out, as every view leaves it out)."""
        where = (
            "g.experiment_id = ? AND g.other_run_id IS NULL AND g.status = ? "
            "AND (g.run_attempt IS NULL OR g.run_attempt = r.attempts) "
            "AND json_type(g.details, '$.followed') = 'array' AND json_type(g.details, '$.skipped') = 'array'"
        )
        params: list[object] = [exp_id, GradeStatus.OK.value]
        if arm_ids is not None:
            where += f" AND r.arm_id IN ({', '.join('?' for _ in arm_ids) or 'NULL'})"
            params += list(arm_ids)
        rows = self._store.query(
            "SELECT r.arm_id, r.case_idx, r.round, g.grader, g.score, json_extract(g.details, '$.skill'), "
            "json_extract(g.details, '$.followed'), json_extract(g.details, '$.skipped'), "
            "json_extract(g.details, '$.not_applicable'), COALESCE(g.judge_model, json_extract(g.details, '$.judge')) "
            f"FROM latest_grades g JOIN runs r ON r.id = g.run_id WHERE {where} "
            "ORDER BY r.arm_id, r.case_idx, r.round, g.id",
            params,
        )
        return [
            SectionGrade(
                int(a), int(c), int(n), str(grader), None if score is None else float(score),
                None if skill is None else str(skill), _refs(f), _refs(s), _refs(na), model,
            )
            for a, c, n, grader, score, skill, f, s, na, model in rows
        ]  # fmt: skip

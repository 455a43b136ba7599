"""Skill instruction-following in the report: each arm's share of applicable skill sections followed, where
each skill was ignored (the sections skipped most), and the paired difference of the arms compared."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from abbench import formatting as fm
from abbench.report import _display as d
from abbench.report._sections._parts import Part, estimate_text

if TYPE_CHECKING:
    from abbench.compare import Comparison
    from abbench.metrics import ExperimentMetrics

NOT_JUDGED = (
    "No run was judged section by section against its skill: add a skill-following judge "
    "(skill_instruction_following) to the experiment's graders to see which parts of a skill the agent "
    "followed and which it skipped."
)
_NOTE = (
    "A skill-following judge read each run's trajectory and answer and said of each section of the skill's "
    "SKILL.md whether the run followed it, skipped it (it applied, and the run did not do it) or whether "
    "it did not apply. Share followed: followed ÷ (followed + skipped) per run, averaged over each case's "
    "rounds, then over cases, with Student's t interval over cases. A run that loaded no skill is not assessed."
)


def following_section(m: ExperimentMetrics, c: Comparison | None = None) -> list[Part]:
    """Per arm: the share of applicable sections followed and where the skill was ignored; the paired
    difference of the compared arms (when a comparison is given and either arm was judged)."""
    judged = [a for a in m.arms if a.skill_following is not None]
    if not judged:
        return [d.note_html(NOT_JUDGED)]
    rows: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    for a in m.arms:
        f = a.skill_following
        if f is None:
            rows.append({"arm": a.label, "skill": fm.MISSING, "share": "not assessed (no run judged)",
                         "runs": fm.MISSING, "none": fm.MISSING, "judge": fm.MISSING})  # fmt: skip
            continue
        rows.append(
            {
                "arm": a.label,
                "skill": ", ".join(f.skills) or fm.MISSING,
                "share": estimate_text(f.following),
                "runs": f"{f.runs:,} runs · {f.following.n_cases:,} cases",
                "none": f"{f.none_applicable:,}",
                "judge": f.judged_by,
            }
        )
        for s in f.most_skipped:
            skipped.append(
                {
                    "arm": a.arm,
                    "section": s.ref,
                    "skipped": f"{s.skipped:,} of {s.applicable:,}",
                    "share": fm.pct(s.skipped / s.applicable) if s.applicable else fm.MISSING,
                    "followed": f"{s.followed:,}",
                    "na": f"{s.not_applicable:,}",
                }
            )
    parts: list[Part] = [
        d.table_html(
            rows,
            [
                ("arm", "arm"),
                ("skill", "skill judged"),
                ("share", "share of applicable sections followed"),
                ("runs", "judged"),
                ("none", "runs no section applied to"),
                ("judge", "judge"),
            ],
            caption="Skill instruction-following",
        ),
        d.note_html(_NOTE),
    ]
    if skipped:
        parts.append(
            d.table_html(
                skipped,
                [
                    ("arm", "arm"),
                    ("section", "section"),
                    ("skipped", "skipped, of the runs it applied to"),
                    ("share", "skip rate"),
                    ("followed", "followed"),
                    ("na", "not applicable"),
                ],
                caption="Where each skill was ignored (the sections skipped most)",
            )
        )
    else:
        parts.append(d.note_html("No section was skipped in any judged run."))
    diff = c.skill_following if c is not None else None
    if c is not None and diff is not None:
        parts.append(d.kv_html([(f"share followed, {c.b.name} − {c.a.name}", diff.text)]))
    stand_ins = [a.arm for a in judged if any("stand-in" in j for j in a.skill_following.judge_models)]  # type: ignore[union-attr]
    if stand_ins:
        parts.append(
            d.note_html(
                f"{', '.join(stand_ins)}: judged by the offline stand-in judge (a deterministic rule over the "
                "trajectory, not a model): its verdicts show the workflow, not a judge's reading",
                "warn",
            )
        )
    return parts

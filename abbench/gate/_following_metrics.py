"""Gate metrics of skill instruction-following: the share of applicable skill sections a run followed, as
a skill-following judge saw it (see `abbench.metrics.SkillFollowing`), per arm and B − A."""

from __future__ import annotations

from abbench.gate._metric import MetricDef, Value, _none, estimate_part
from abbench.metrics import ArmMetrics

_NOT_JUDGED = (
    "no run of this arm was judged by a skill-following judge (skill_instruction_following; a run that "
    "loaded no skill is not assessed)"
)


def _following(arm: ArmMetrics, part: str) -> Value:
    f = arm.skill_following
    if f is None:
        return _none(_NOT_JUDGED)
    return estimate_part(f.following, part, missing="no run had an applicable section judged")


def _difference(c: object, part: str) -> Value:
    d = getattr(c, "skill_following", None)
    if d is None:
        return _none("no run of either arm was judged by a skill-following judge")
    if d.difference is None:
        return _none(d.reason or "no case judged in both arms")
    if part == "value":
        return d.difference, None
    if d.interval is None:
        return _none(d.reason or "too few shared cases for an interval")
    return (d.interval.low if part == "low" else d.interval.high), None


FOLLOWING_ARM_METRICS: list[MetricDef] = [
    MetricDef(
        "skill_following",
        "arm",
        "number",
        "share of applicable skill sections the runs followed, as a skill-following judge saw them (mean over cases)",
        lambda a, m, p: _following(a, "value"),
    ),
    MetricDef(
        "skill_following_ci_low",
        "arm",
        "number",
        "lower bound of the skill-following interval",
        lambda a, m, p: _following(a, "low"),
    ),
]
"""The arm metrics of skill instruction-following."""

FOLLOWING_COMPARISON_METRICS: list[MetricDef] = [
    MetricDef(
        "skill_following_diff",
        "comparison",
        "number",
        "B − A in the share of applicable skill sections followed, paired over the cases judged in both arms",
        lambda c, p: _difference(c, "value"),
    ),
    MetricDef(
        "skill_following_diff_ci_low",
        "comparison",
        "number",
        "lower bound of the skill-following difference's interval",
        lambda c, p: _difference(c, "low"),
    ),
]
"""The comparison metrics of skill instruction-following."""

"""An offline, deterministic stand-in for the skill-following judge: a rule over the trajectory, not a model.

``skill_following_stand_in`` exists for the same reason as the builtin agent: so the demo and a machine
with no keys can show skill instruction-following end to end — grades with the followed, skipped and
not-applicable section references, the per-arm share, the sections skipped most, the paired difference,
the gate — without a judge model. Its verdicts say nothing about how a real judge would read a run; every
view that shows them names the stand-in (the grade's ``details.judge`` is `STAND_IN`).

It judges the same sections as `skill_instruction_following` (each heading of SKILL.md with text under
it) and says of each, in this order:

1. **Applies** to the case when the section's text quotes a trigger phrase (``"…"``, ``“…”``, ``「…」``,
   at least two characters; ``如果……就……`` is its parts) found in the case's input; when it is a
   procedure (a numbered list) or an answer contract (a fenced code block), which apply to every case;
   or when the run's answer cites it. Otherwise it is **not applicable**.
2. **Followed** when it applies, the run read it (its file was read or injected, or the section was
   opened) and the answer reflects it: the answer's evidence or reason cites the section; for a
   procedure, the answer cites evidence the run read; for an answer contract, the answer was JSON.
3. **Skipped** otherwise: it applied and the answer does not show it was followed (reading a section is
   not following it).

The grade has no verdict (a score: the share of applicable sections followed) unless ``min_followed`` is
given; mark it ``advisory: true`` so it never decides a run.
"""

from __future__ import annotations

import json
import re
from typing import Any

from abbench.errors import UsageError
from abbench.graders._base import FunctionGrader, GradeContext, Grader, GradeResult, register_grader
from abbench.graders._skill_sections import skill_sections
from abbench.types import Section

STAND_IN = "stand-in (offline rule, not a model)"
"""What a stand-in grade names as its judge (``details.judge``), so every view can say it is one."""

_QUOTED = re.compile(r"\"([^\"\n]{1,40})\"|“([^”\n]{1,40})”|「([^」\n]{1,40})」")
_ELLIPSIS = re.compile(r"…+|\.{3,}")
_NUMBERED = re.compile(r"^\s*\d{1,2}[.)、]\s+\S", re.M)


def _triggers(text: str) -> list[list[str]]:
    """Each quoted phrase of a section as the parts that must all be in the input (``……`` splits one)."""
    out = []
    for m in _QUOTED.finditer(text):
        phrase = next(g for g in m.groups() if g is not None)
        parts = [p.strip() for p in _ELLIPSIS.split(phrase) if len(p.strip()) >= 2]
        if parts:
            out.append(parts)
    return out


def _cites(ref: str, heading: str, cited: list[str], reason: str) -> bool:
    return (
        any(c == ref or c.startswith(ref) for c in cited)
        or ref in reason
        or (bool(heading) and f"#{heading}" in reason)
    )


def _json_answer(raw: str | None) -> bool:
    text = (raw or "").strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        return isinstance(json.loads(text), dict)
    except ValueError:
        return False


def _verdict(s: Section, ctx: GradeContext, read: set[str], cited: list[str], reason: str) -> tuple[str, str]:
    """One section's verdict and why."""
    text = s.text
    procedure = len(_NUMBERED.findall(text)) >= 2
    contract = "```" in text
    found = [parts for parts in _triggers(text) if all(p in ctx.case.input for p in parts)]
    is_cited = _cites(s.ref, s.heading, cited, reason)
    if not (found or procedure or contract or is_cited):
        return "not_applicable", "no trigger phrase of it in the input"
    why = (
        f"the input has {'…'.join(found[0])!r}"
        if found
        else (
            "a procedure applies to every case" if procedure else "an answer contract applies to every case"
        )
        if procedure or contract
        else "the answer cites it"
    )
    if s.ref not in read and s.path not in read:
        return "skipped", f"{why}, and the run never read it"
    if is_cited:
        return "followed", f"{why}; the answer cites it"
    if procedure and cited and all(c in read or c.split("#", 1)[0] in read for c in cited):
        return "followed", f"{why}; the answer cites evidence the run read"
    if contract and not procedure and _json_answer(ctx.output.raw_output):
        return "followed", f"{why}; the answer is the JSON asked for"
    return "skipped", f"{why}; the answer does not rely on it"


@register_grader("skill_following_stand_in")
def skill_following_stand_in(
    *, min_followed: float | None = None, max_sections: int = 40, name: str = "skill_following_stand_in"
) -> Grader:
    """An offline stand-in for `skill_instruction_following`: a deterministic rule over the run's trajectory
    and answer, not a model (see the module docstring for what it counts as applying and followed).

    Its grades have the skill-following judge's shape — ``details.followed`` / ``skipped`` /
    ``not_applicable`` section references, ``sections`` with a note each, score = share of applicable
    sections followed — so every figure of skill-following (metrics, compare, the gate, the report, the
    results widget) works offline; ``details.judge`` names it a stand-in, and the views say so.

    Example (experiment YAML)::

        graders:
          - label_match
          - {type: skill_following_stand_in, name: skill_following, advisory: true}

    Args:
        min_followed: Share of applicable sections a run must follow to pass; without it, a score only.
        max_sections: Sections judged at most (the first ones of SKILL.md).
        name: The grader's name in the experiment.
    """
    if min_followed is not None and (
        isinstance(min_followed, bool)
        or not isinstance(min_followed, (int, float))
        or not 0 <= min_followed <= 1
    ):
        raise UsageError(f"{name}: min_followed must be a share between 0 and 1, not {min_followed!r}")

    def grade(ctx: GradeContext) -> GradeResult:
        loaded = list(ctx.output.skills_loaded or ())
        if ctx.skill is None:
            return GradeResult(
                comment="the run loaded no skill: its instruction-following is not assessed",
                details={"assessed": False, "skills_loaded": loaded, "judge": STAND_IN},
            )
        sections = skill_sections(ctx.skill, max_sections)
        traj = ctx.trajectory
        read = {*traj.files_read, *traj.sections_read}
        if ctx.output.skills_offered is None or ctx.skill.skill_name in loaded:
            read.add("SKILL.md")  # injected, or loaded: the agent was given SKILL.md whole
        cited = [str(c) for c in ctx.output.evidence_refs or ()]
        reason = ctx.output.reason or ""
        verdicts = {s.ref: _verdict(s, ctx, read, cited, reason) for s in sections}
        by_kind: dict[str, list[str]] = {"followed": [], "skipped": [], "not_applicable": []}
        for ref, (v, _) in verdicts.items():
            by_kind[v].append(ref)
        applicable = len(by_kind["followed"]) + len(by_kind["skipped"])
        score = round(len(by_kind["followed"]) / applicable, 6) if applicable else None
        passed = None if min_followed is None or score is None else score >= min_followed
        said = [f"followed {len(by_kind['followed'])} of {applicable} applicable sections"]
        if by_kind["skipped"]:
            said.append("skipped " + ", ".join(by_kind["skipped"]))
        details: dict[str, Any] = {
            "skill": ctx.skill.skill_name,
            "skills_loaded": loaded,
            "sections": {ref: {"verdict": v, "note": note} for ref, (v, note) in verdicts.items()},
            **by_kind,
            "not_judged": [],
            "judge": STAND_IN,
        }
        return GradeResult(
            passed=passed,
            score=score,
            comment="; ".join(said) + " (offline stand-in judge)",
            details=details,
        )

    return FunctionGrader(name, grade, "rule")

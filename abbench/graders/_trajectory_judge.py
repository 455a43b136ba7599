"""Judges of what a run did: task completion, trace quality, and skill instruction-following.

Each is shown the run's trajectory (`abbench.transcript.Trajectory`: its tool calls with arguments and
results, what it read and loaded, turns, tokens), cut to a stated budget and anonymised like the pairwise
judge's inputs — the skill's own references kept (`abbench.graders._trajectory_prompt`).

- ``task_completion``: did the run achieve what the case asked (`llm_judge` with a preset rubric);
- ``trace_quality``: wasted or failed steps, loops (a preset rubric; the counts of failed and repeated
  steps are kept beside the scores, as no judge is needed to count them);
- ``skill_instruction_following``: for the skill the run loaded (or had injected), each section of its
  SKILL.md, judged one by one: *followed*, *skipped* or *not applicable*; the grade keeps the references
  of each kind (``details.followed`` / ``skipped`` / ``not_applicable``), its comment names the skipped
  ones, and its score is the share of applicable sections followed.

Rules that need no judge stay rules: `read_skill`, `cited_evidence`, `max_tool_calls`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Unpack

from abbench._text import clip
from abbench.agents import json_readings, load_object, strip_thinking
from abbench.errors import GradingError, UsageError
from abbench.graders._anonymise import Anonymiser
from abbench.graders._base import GradeContext, GradeResult, register_grader
from abbench.graders._judge import LLMJudge
from abbench.graders._judge_prompt import answer_text, case_block, check_include
from abbench.graders._judge_settings import JudgeOptions, JudgeSettings, JudgeSpend
from abbench.graders._rubric import Rubric, judge_key
from abbench.graders._skill_sections import skill_sections
from abbench.graders._trajectory_prompt import check_budget, trajectory_block
from abbench.transcript import BUDGET
from abbench.types import Section

SECTION_VERDICTS = ("followed", "skipped", "not_applicable")
"""What a skill-following judge says of each section of the skill."""

_WORDS = {
    "followed": (
        "followed", "follow", "yes", "true", "done", "complied", "applied", "met", "ok", "pass",
        "passed", "遵循", "已遵循", "遵守", "是", "执行", "已执行", "符合",
    ),
    "skipped": (
        "skipped", "skip", "no", "false", "ignored", "violated", "notfollowed", "missed", "fail", "failed",
        "未遵循", "未遵守", "跳过", "忽略", "否", "违反", "未执行", "不符合",
    ),
    "not_applicable": (
        "notapplicable", "na", "n/a", "irrelevant", "notrelevant", "none", "null", "不适用", "无关",
    ),
}  # fmt: skip
_VERDICT_OF = {judge_key(w): v for v, words in _WORDS.items() for w in words}
_SECTIONS_KEYS = ("sections", "steps", "checks", "results", "verdicts", "items", "章节", "步骤")
_REF_KEYS = ("ref", "section", "reference", "id", "name", "step", "章节")
_VERDICT_KEYS = ("verdict", "status", "result", "followed", "judgement", "judgment", "结论", "判断")
_NOTE_KEYS = ("note", "why", "reason", "evidence", "comment", "说明", "理由")
_COMMENT_KEYS = ("comment", "summary", "explanation", "overall", "评语", "总结")
_TAG = re.compile(
    r"<section\b[^>]*?\bref\s*=\s*[\"']([^\"']+)[\"'][^>]*?\bverdict\s*=\s*[\"']([^\"']+)[\"'][^>]*>(.*?)</section\s*>",
    re.S | re.I,
)
_LINE = re.compile(r"^[ \t>*-]*\[?(\d{1,3})\]?[.):]?[ \t]+(.+)$", re.M)
_WORD = re.compile(r"[^\s\-—:：=|,;，；]+")


def _verdict(value: Any) -> str | None:
    if isinstance(value, bool):
        return "followed" if value else "skipped"
    if value is None:
        return "not_applicable"
    if isinstance(value, str):
        return _VERDICT_OF.get(judge_key(value.strip().strip("*`'\"")))
    return None


def _pick(obj: Mapping[str, Any], keys: Sequence[str]) -> Any:
    for k, v in obj.items():
        if judge_key(k) in keys:
            return v
    return None


@dataclass(frozen=True)
class SectionVerdicts:
    """A skill-following judge's reply, read.

    Attributes:
        verdicts: Section reference -> (``followed`` / ``skipped`` / ``not_applicable``, the judge's note).
        comment: The judge's overall comment, if any.
        method: How the reply was read: ``json``, ``fenced_json``, ``embedded_json``, ``tagged``, ``lines``.
    """

    verdicts: dict[str, tuple[str, str | None]]
    comment: str | None
    method: str


def _match_section(label: Any, sections: Sequence[Section]) -> str | None:
    """The reference a judge's label names: the reference, its number in the prompt, or its heading."""
    text = str(label).strip().strip("[]`*'\"")
    if text.isdigit() and 1 <= int(text) <= len(sections):
        return sections[int(text) - 1].ref
    folded = text.casefold()
    for s in sections:
        if folded in (s.ref.casefold(), s.heading.casefold()):
            return s.ref
    for s in sections:  # "SKILL.md#rules — Rules", "#rules"
        if folded.startswith(s.ref.casefold()) or folded == "#" + s.ref.split("#", 1)[-1].casefold():
            return s.ref
    return None


def _from_object(obj: Mapping[str, Any], sections: Sequence[Section]) -> dict[str, tuple[str, str | None]]:
    body: Any = _pick(obj, _SECTIONS_KEYS)
    if body is None:
        body = obj
    out: dict[str, tuple[str, str | None]] = {}
    entries: list[tuple[Any, Any]] = []
    if isinstance(body, Mapping):
        entries = list(body.items())
    elif isinstance(body, list):
        for e in body:
            if isinstance(e, Mapping):
                entries.append((_pick(e, _REF_KEYS), e))
    for label, value in entries:
        ref = _match_section(label, sections) if label is not None else None
        if ref is None:
            continue
        note = None
        if isinstance(value, Mapping):
            note_value = _pick(value, _NOTE_KEYS)
            note = str(note_value).strip() if note_value not in (None, "") else None
            value = _pick(value, _VERDICT_KEYS)
        verdict = _verdict(value)
        if verdict is not None:
            out.setdefault(ref, (verdict, note))
    return out


def parse_section_verdicts(text: str | None, sections: Sequence[Section]) -> SectionVerdicts:
    """Read a skill-following judge's reply: JSON first, then JSON in prose, ``<section>`` tags, numbered lines.

    Raises:
        GradingError: no verdict for any section can be read (the raw reply goes with the error).
    """
    raw = text or ""
    body = strip_thinking(raw)
    if not body:
        raise GradingError("the judge's reply is empty", raw_output=raw)
    readings: list[tuple[str, dict[str, tuple[str, str | None]], str | None]] = []
    objects: list[tuple[str, Any]] = []
    whole = load_object(body)
    if isinstance(whole, dict):
        objects.append(("json", whole))
    objects += json_readings(body)
    for method, obj in objects:
        comment = _pick(obj, _COMMENT_KEYS)
        readings.append((method, _from_object(obj, sections), comment if isinstance(comment, str) else None))
    tagged: dict[str, tuple[str, str | None]] = {}
    for m in _TAG.finditer(body):
        ref, verdict = _match_section(m.group(1), sections), _verdict(m.group(2))
        if ref is not None and verdict is not None:
            tagged.setdefault(ref, (verdict, m.group(3).strip() or None))
    readings.append(("tagged", tagged, None))
    lines: dict[str, tuple[str, str | None]] = {}
    for m in _LINE.finditer(body):
        ref = _match_section(m.group(1), sections)
        for word in list(_WORD.finditer(m.group(2)))[:4]:  # "1. SKILL.md#rules — followed: why"
            verdict = _verdict(word.group())
            if ref is not None and verdict is not None:
                note = m.group(2)[word.end() :].strip(" -—:：") or None
                lines.setdefault(ref, (verdict, note))
                break
    readings.append(("lines", lines, None))
    method, best, comment = max(readings, key=lambda r: len(r[1]))  # the first of the fullest
    if not best:
        raise GradingError(
            "no section verdicts (followed, skipped, not_applicable) in the judge's reply; "
            f"reply starts {clip(' '.join(body.split()), 160)!r}",
            raw_output=raw,
        )
    return SectionVerdicts(best, comment.strip() if comment and comment.strip() else None, method)


class SkillFollowingJudge:
    """Judges, section by section, whether a run followed the procedure of the skill it loaded.

    Build it with `skill_instruction_following`. Its grade's ``details`` hold the verdict per section
    (``sections``: ref -> ``{verdict, note}``) and the references ``followed``, ``skipped``,
    ``not_applicable`` and ``not_judged``; ``score`` is the share of applicable sections followed.
    """

    kind = "judge"

    def __init__(
        self,
        name: str,
        settings: JudgeSettings,
        *,
        min_followed: float | None = None,
        include: Sequence[str] = ("reason",),
        instructions: str | None = None,
        anonymiser: Anonymiser | None = None,
        trajectory_budget: int = BUDGET,
        section_chars: int = 600,
        max_sections: int = 40,
    ):
        self.name = name
        self.settings = settings
        self.min_followed = min_followed
        self.include = tuple(include)
        self.instructions = instructions
        self.anonymiser = anonymiser
        self.trajectory_budget = trajectory_budget
        self.section_chars = section_chars
        self.max_sections = max_sections

    def __repr__(self) -> str:
        return f"SkillFollowingJudge(name={self.name!r}, model={self.settings.model!r})"

    def system_prompt(self) -> str:
        """What the judge is told: its role, the verdicts, and the exact reply format."""
        example = json.dumps(
            {
                "sections": [
                    {"ref": "SKILL.md#<section>", "verdict": "followed | skipped | not_applicable", "note": "<the step that shows it>"}
                ],
                "comment": "<where the run departed from the skill, in one or two sentences>",
            },
            ensure_ascii=False,
        )  # fmt: skip
        parts = [
            "You judge whether an AI agent followed the procedure of a skill it loaded. You are given the "
            "case, the agent's answer, what the agent did (its trajectory: tool calls with arguments and "
            "results, files and sections read, in order) and the skill's sections. For EVERY section, "
            "decide from the trajectory and the answer, step by step: `followed` (the run did what the "
            "section asks, in the order it asks), `skipped` (the section applied to this case and the run "
            "did not do it, or did it wrongly) or `not_applicable` (the section does not bear on this "
            "case). Judge only from what is in front of you; reading a section is not following it.",
        ]
        if self.instructions:
            parts.append(self.instructions.strip())
        parts.append(
            f"Reply with one JSON object and nothing else, one entry per section, exactly like:\n{example}"
        )
        return "\n\n".join(parts)

    def messages(
        self, ctx: GradeContext, sections: Sequence[Section]
    ) -> tuple[list[dict[str, str]], dict[str, int], Any]:
        """The chat messages for one run, what was masked, and the trajectory block shown."""
        answer, masked = answer_text(ctx, self.include, self.anonymiser, ctx.case.input)
        block = trajectory_block(ctx, self.anonymiser, self.trajectory_budget)
        listed = "\n\n".join(
            f"[{n}] {s.ref} — {s.heading}\n{clip(s.text.strip(), self.section_chars)}"
            for n, s in enumerate(sections, start=1)
        )
        user = "\n".join(
            [
                *case_block(ctx.case, self.include),
                f"<answer>\n{answer}\n</answer>",
                block.text,
                f"<skill_sections>\n{listed}\n</skill_sections>",
            ]
        )
        masked = {k: masked.get(k, 0) + block.masked.get(k, 0) for k in {*masked, *block.masked}}
        return (
            [{"role": "system", "content": self.system_prompt()}, {"role": "user", "content": user}],
            masked,
            block,
        )

    async def __call__(self, ctx: GradeContext) -> GradeResult:
        loaded = list(ctx.output.skills_loaded or ())
        if ctx.skill is None:
            return GradeResult(
                comment="the run loaded no skill: its instruction-following is not assessed",
                details={"assessed": False, "skills_loaded": loaded},
            )
        sections = skill_sections(ctx.skill, self.max_sections)
        if not sections:
            return GradeResult(
                comment=f"skill {ctx.skill.skill_name!r} has no SKILL.md section to follow",
                details={"assessed": False, "skill": ctx.skill.skill_name},
            )
        messages, masked, block = self.messages(ctx, sections)
        reply = await self.settings.ask(self.name, messages, ctx.cache)
        cost = JudgeSpend.of([reply])
        try:
            read = parse_section_verdicts(reply.content, sections)
        except GradingError as exc:
            self.settings.forget(reply, ctx.cache)
            raise GradingError(
                f"{exc} (judge {reply.model})", raw_output=exc.raw_output, spent=cost.as_dict()
            ) from None
        by_kind: dict[str, list[str]] = {v: [] for v in SECTION_VERDICTS}
        for s in sections:
            if s.ref in read.verdicts:
                by_kind[read.verdicts[s.ref][0]].append(s.ref)
        not_judged = [s.ref for s in sections if s.ref not in read.verdicts]
        applicable = len(by_kind["followed"]) + len(by_kind["skipped"])
        score = round(len(by_kind["followed"]) / applicable, 6) if applicable else None
        passed = None
        if self.min_followed is not None and score is not None:
            passed = score >= self.min_followed
        said = [f"followed {len(by_kind['followed'])} of {applicable} applicable sections"]
        if by_kind["skipped"]:
            said.append("skipped " + ", ".join(by_kind["skipped"]))
        if not_judged:
            said.append(f"{len(not_judged)} not judged")
        comment = "; ".join(said) + (f" — {read.comment}" if read.comment else "")
        details: dict[str, Any] = {
            "skill": ctx.skill.skill_name,
            "skills_loaded": loaded,
            "sections": {ref: {"verdict": v, "note": note} for ref, (v, note) in read.verdicts.items()},
            **by_kind,
            "not_judged": not_judged,
            "parsed": read.method,
            "trajectory": block.details(),
            "cost_known": reply.cost is not None,
            "retries": len(reply.retries),
            **({"masked": masked} if masked else {}),
        }
        if len(loaded) > 1:
            details["not_assessed_skills"] = [s for s in loaded if s != ctx.skill.skill_name]
        return cost.result(
            passed=passed,
            score=score,
            dimensions={
                "followed": float(len(by_kind["followed"])),
                "skipped": float(len(by_kind["skipped"])),
            },
            comment=comment,
            raw_output=reply.content,
            details=details,
        )


def _share(grader: str, option: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise UsageError(f"{grader}: {option} must be a share between 0 and 1, not {value!r}")
    return float(value)


@register_grader("skill_instruction_following")
def skill_instruction_following(
    *,
    min_followed: float | None = None,
    include: Sequence[str] = ("reason",),
    instructions: str | None = None,
    anonymise: bool = True,
    trajectory_budget: int = BUDGET,
    section_chars: int = 600,
    max_sections: int = 40,
    name: str = "skill_instruction_following",
    **settings: Unpack[JudgeOptions],
) -> SkillFollowingJudge:
    """A judge of whether each run followed the procedure of the skill it loaded, section by section.

    The judge sees the case, the answer, the run's trajectory and each section of the skill's SKILL.md
    (its reference, heading and text, cut to `section_chars`), and says of each: followed, skipped or not
    applicable. A run that loaded no skill is not assessed (no verdict, no judge call). With several
    skills loaded, the one the run is graded against (the first loaded) is judged.

    Example (experiment YAML)::

        graders:
          - label_match
          - {type: skill_instruction_following, model: gpt-4o-mini, min_followed: 0.8, advisory: true}

    Args:
        min_followed: Share of applicable sections a run must follow to pass; without it the judge only
            scores (the share followed).
        include: What the judge sees besides input, answer and trajectory (as `llm_judge`).
        instructions: Extra guidance added to the judge's prompt.
        anonymise: Mask model, provider, arm and skill names, paths and hashes (default on; the
            skill's own references are kept).
        trajectory_budget: Characters of trajectory shown at most.
        section_chars: Characters of each section's text shown.
        max_sections: Sections judged at most (the first ones of SKILL.md).
        name: The grader's name in the experiment.
        **settings: How the judge model is called (as `llm_judge`).

    Raises:
        UsageError: an option is invalid.
    """
    return SkillFollowingJudge(
        name,
        JudgeSettings.build(name, **settings),
        min_followed=_share(name, "min_followed", min_followed),
        include=check_include(name, include),
        instructions=instructions,
        anonymiser=Anonymiser() if anonymise else None,
        trajectory_budget=check_budget(name, "trajectory_budget", trajectory_budget),
        section_chars=check_budget(name, "section_chars", section_chars),
        max_sections=max(1, int(max_sections)),
    )


TASK_COMPLETION_RUBRIC = {
    "completion": {
        "description": "Did the run achieve what the case asked? Judge the answer and the steps that "
        "reached it: 5 fully achieved, 3 partly (a needed step missing or a part of the answer wrong), "
        "1 not at all.",
        "scale": [1, 5],
    }
}
"""The `task_completion` judge's rubric."""

TRACE_QUALITY_RUBRIC = {
    "efficiency": {"description": "No wasted steps: every tool call served the task.", "scale": [1, 5]},
    "errors": {"description": "No failed steps, or each failure was noticed and recovered from.", "scale": [1, 5]},
    "loops": {"description": "No loops: no call repeated without new reason.", "scale": [1, 5]},
}  # fmt: skip
"""The `trace_quality` judge's rubric."""


class TrajectoryJudge(LLMJudge):
    """An `LLMJudge` shown the run's trajectory, whose grade also keeps the trajectory's mechanical
    counts (steps, failed and repeated steps) — what `task_completion` and `trace_quality` build."""

    async def __call__(self, ctx: GradeContext) -> GradeResult:
        result = await super().__call__(ctx)
        t = ctx.trajectory
        counts = {"steps": len(t.steps), "failed_steps": t.failed_steps, "repeated_steps": t.repeated_steps}
        return replace(result, details={**(result.details or {}), "trajectory": counts})


def _preset(
    name: str,
    rubric: Any,
    role: str,
    *,
    min_score: float | None,
    pass_threshold: float | None,
    include: Sequence[str],
    instructions: str | None,
    anonymise: bool,
    trajectory_budget: int,
    settings: JudgeOptions,
) -> TrajectoryJudge:
    parsed = Rubric.parse(rubric, pass_threshold=pass_threshold, where=f"{name}.rubric")
    if min_score is not None:
        parsed = Rubric.parse(
            {d.name: {"description": d.description, "scale": [d.low, d.high], "min": min_score} for d in parsed.dimensions},
            pass_threshold=pass_threshold,
            where=f"{name}.rubric",
        )  # fmt: skip
    items = check_include(name, include)
    if "trajectory" not in items:
        items = (*items, "trajectory")
    return TrajectoryJudge(
        name,
        parsed,
        JudgeSettings.build(name, **settings),
        include=items,
        instructions="\n\n".join(x for x in (role, instructions) if x),
        anonymiser=Anonymiser() if anonymise else None,
        trajectory_budget=check_budget(name, "trajectory_budget", trajectory_budget),
    )


@register_grader("task_completion")
def task_completion(
    *,
    min_score: float | None = 4,
    pass_threshold: float | None = None,
    include: Sequence[str] = ("reference", "reason", "trajectory"),
    instructions: str | None = None,
    anonymise: bool = True,
    trajectory_budget: int = BUDGET,
    name: str = "task_completion",
    **settings: Unpack[JudgeOptions],
) -> TrajectoryJudge:
    """A judge of whether the run achieved what the case asked, from its answer and its trajectory.

    One dimension, ``completion`` (1–5); a run passes with at least `min_score` (default 4; None: scores
    only). Other options as `llm_judge`; anonymised by default.

    Raises:
        UsageError: an option is invalid.
    """
    role = (
        "You are shown what the agent did (its trajectory) as well as its answer: judge whether the run "
        "achieved what the case asked, not how it sounds."
    )
    return _preset(
        name, TASK_COMPLETION_RUBRIC, role, min_score=min_score, pass_threshold=pass_threshold,
        include=include, instructions=instructions, anonymise=anonymise,
        trajectory_budget=trajectory_budget, settings=settings,
    )  # fmt: skip


@register_grader("trace_quality")
def trace_quality(
    *,
    min_score: float | None = None,
    pass_threshold: float | None = None,
    include: Sequence[str] = ("trajectory",),
    instructions: str | None = None,
    anonymise: bool = True,
    trajectory_budget: int = BUDGET,
    name: str = "trace_quality",
    **settings: Unpack[JudgeOptions],
) -> TrajectoryJudge:
    """A judge of how the run got there: ``efficiency`` (wasted steps), ``errors`` (failed steps) and
    ``loops`` (repeated calls), each 1–5; scores only unless `min_score` or `pass_threshold` is set.
    The grade's ``details.trajectory`` counts steps, failed and repeated steps without a judge.

    Raises:
        UsageError: an option is invalid.
    """
    role = (
        "Judge the agent's trajectory (its steps), not whether its answer is right: wasted steps, failed "
        "steps, and loops — a call repeated with the same arguments and no new reason."
    )
    return _preset(
        name, TRACE_QUALITY_RUBRIC, role, min_score=min_score, pass_threshold=pass_threshold,
        include=include, instructions=instructions, anonymise=anonymise,
        trajectory_budget=trajectory_budget, settings=settings,
    )  # fmt: skip

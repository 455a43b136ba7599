"""A run's trajectory as a judge reads it: `abbench.transcript.Trajectory`'s text, anonymised, within a budget.

Masked like the pairwise judge's inputs (`Anonymiser`: model, provider, arm and skill names, absolute
paths, hashes, self-references) — except the skill's own file paths and section references
(``SKILL.md#rules``), which are what a trajectory judge must see to say which sections were read.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass

from abbench.errors import UsageError
from abbench.graders._anonymise import Anonymiser, context_terms
from abbench.graders._base import GradeContext
from abbench.transcript import BUDGET, RESULT_BUDGET

_KEEP = "\x02REF{}\x02"
"""What a kept reference becomes while the rest is masked (no path or hash pattern matches it)."""


@dataclass(frozen=True)
class TrajectoryBlock:
    """The trajectory part of a judge's prompt.

    Attributes:
        text: The ``<trajectory>`` block.
        steps: The run's tool calls; `steps_shown` how many of them the block shows.
        cut: True when a step or result was cut to keep within `budget`.
        budget: Characters the trajectory was cut to.
        masked: What the anonymiser masked, by kind (empty when not anonymised).
    """

    text: str
    steps: int
    steps_shown: int
    cut: bool
    budget: int
    masked: dict[str, int]

    def details(self) -> dict[str, object]:
        """What a grade keeps about it: steps shown of all, the budget, and whether it was cut."""
        out: dict[str, object] = {"steps": self.steps, "steps_shown": self.steps_shown, "budget": self.budget}
        if self.cut:
            out["cut"] = True
        return out


def check_budget(grader: str, option: str, value: object) -> int:
    """`value` when it is a whole number of characters ≥ 100.

    Raises:
        UsageError: it is not (the message names the grader and the option).
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < 100:
        raise UsageError(f"{grader}: {option} must be a whole number of characters ≥ 100, not {value!r}")
    return value


def kept_references(ctx: GradeContext) -> tuple[str, ...]:
    """The skill's file paths and section references, longest first (what the anonymiser leaves)."""
    refs: set[str] = {"SKILL.md"}
    if ctx.skill is not None:
        refs.update(f.path for f in ctx.skill.files)
        with contextlib.suppress(OSError):  # the snapshot's files are gone: its paths are still known
            refs.update(ctx.skill.refs)
    return tuple(sorted(refs, key=len, reverse=True))


def anonymise_keeping(
    text: str, anonymiser: Anonymiser, keep_refs: tuple[str, ...], keep: str
) -> tuple[str, dict[str, int]]:
    """`text` anonymised, its `keep_refs` left as they are."""
    held: list[str] = []
    for ref in keep_refs:
        if ref in text:
            text = text.replace(ref, _KEEP.format(len(held)))
            held.append(ref)
    masked = anonymiser.anonymise(text, keep=keep)
    out = masked.text
    for n in range(len(held) - 1, -1, -1):  # later markers never contain earlier ones' text
        out = out.replace(_KEEP.format(n), held[n])
    return out, masked.masked


def run_anonymiser(ctx: GradeContext, anonymiser: Anonymiser) -> Anonymiser:
    """`anonymiser` also masking this run's arm, model and skill names (as the pairwise judge does)."""
    skill = ctx.skill
    terms = context_terms(arms=[ctx.arm], models=[ctx.model, ctx.output.model], skills=[skill])
    if skill is not None:  # its folders would mask its own references; its name and hash are masked
        terms = [t for t in terms if t not in (str(skill.root), skill.source_path)]
    return anonymiser.with_terms(terms)


def trajectory_block(
    ctx: GradeContext,
    anonymiser: Anonymiser | None,
    budget: int = BUDGET,
    result_budget: int = RESULT_BUDGET,
) -> TrajectoryBlock:
    """The run's trajectory (`GradeContext.trajectory`) as a ``<trajectory>`` block, cut to `budget`
    characters (each tool result to `result_budget`), anonymised when `anonymiser` is given."""
    trajectory = ctx.trajectory
    shown = trajectory.text(budget, result_budget)
    text, masked = shown.text, dict[str, int]()
    if anonymiser is not None:
        text, masked = anonymise_keeping(
            text, run_anonymiser(ctx, anonymiser), kept_references(ctx), ctx.case.input
        )
    cut = ' cut="true"' if shown.cut else ""
    return TrajectoryBlock(
        f'<trajectory budget="{budget}"{cut}>\n{text}\n</trajectory>',
        len(trajectory.steps),
        shown.steps_shown,
        shown.cut,
        budget,
        masked,
    )

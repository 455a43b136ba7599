"""What a skill costs in prompt tokens: each skilled arm's prompt tokens per run beside a no-skill arm's.

An injected skill is sent with every run (~3,700 prompt tokens a run against ~250 without, in one
experiment on a small local model: 30 minutes instead of a few); an offered arm loads skills on demand.
The note compares each arm that has skills with the experiment's first arm without one on the same agent
and model, from the mean prompt tokens of their attempts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from abbench.store import Arm, ArmSpend


def _has_skill(arm: Arm) -> bool:
    return arm.snapshot is not None or bool(arm.snapshots)


def _per_attempt(spend: ArmSpend | None) -> float | None:
    if spend is None or spend.input_tokens is None or not spend.attempts:
        return None
    return spend.input_tokens / spend.attempts


def skill_prompt_notes(arms: Sequence[Arm], spend: Mapping[int, ArmSpend]) -> list[str]:
    """One note per skilled arm: its mean prompt tokens per attempt against a no-skill arm's on the same
    agent and model, and the difference — what sending the skill costs every run. Attempts count (failed
    ones too: a weak model's failed answers paid for the same prompt); empty when no tokens were reported."""
    notes = []
    for arm in arms:
        mine = _per_attempt(spend.get(arm.id))
        if mine is None or not _has_skill(arm):
            continue
        base = next(
            (b for b in arms if not _has_skill(b) and b.agent == arm.agent and b.model == arm.model), None
        )
        theirs = None if base is None else _per_attempt(spend.get(base.id))
        if base is None or theirs is None:
            continue
        how = "offered" if arm.skill_mode == "offered" else "injected"
        notes.append(
            f"{arm.name}: its {how} skill costs {mine - theirs:+,.0f} prompt tokens per run "
            f"({mine:,.0f} against {theirs:,.0f} for {base.name}, mean over attempts)"
        )
    return notes

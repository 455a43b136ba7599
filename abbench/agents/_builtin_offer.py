"""The builtin agent's offered mode: a catalogue of skills, and a lexical choice of which one to load.

The catalogue shows each skill's name and its SKILL.md description, as a production agent sees them.
The builtin agent loads the skill whose catalogue entry holds the largest share of the query's terms
(the terms and weights of `abbench.agents._lexical`, so Chinese works as English does) when that share
reaches the arm's ``activation_threshold`` and no other entry holds as much (a tie is no clear choice);
otherwise it loads nothing and answers as a no-skill arm does. The share does not depend on how many
skills are offered, so one skill offered alone and the same skill among siblings are measured alike.
Like the rest of the builtin agent, a deterministic stand-in that shows the workflow, not a model's
judgement.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from abbench.agents._base import Task
from abbench.agents._lexical import query_terms, terms
from abbench.snapshot import Snapshot
from abbench.transcript import CatalogueEvent, ToolEvent

DEFAULT_ACTIVATION_THRESHOLD = 0.1
"""The share of the query's terms a catalogue entry must hold for builtin to load its skill."""


@dataclass(frozen=True)
class Choice:
    """What the builtin agent did with a catalogue.

    Attributes:
        skill: The skill it loaded, or None.
        coverage: Per offered skill (catalogue order), the share of the query's terms its entry holds.
        threshold: The share a skill needed.
    """

    skill: Snapshot | None
    coverage: tuple[float, ...]
    threshold: float


def catalogue_entry(skill: Snapshot) -> str:
    """One catalogue line: ``name: description`` (the name alone when SKILL.md gives no description)."""
    description = (skill.description or "").strip()
    return f"{skill.skill_name}: {description}" if description else skill.skill_name


def catalogue_text(skills: Sequence[Snapshot]) -> str:
    """The catalogue as an agent is shown it: one ``- name: description`` line per skill."""
    return "\n".join(f"- {catalogue_entry(s)}" for s in skills)


def choose(task: Task, skills: Sequence[Snapshot], threshold: float) -> Choice:
    """The skill whose catalogue entry holds the largest share of the case input's terms, if that
    share reaches `threshold` and leads every other entry (a tie loads nothing); the name counts like
    the description, with its hyphens read as spaces."""
    entries = [set(terms(f"{s.skill_name.replace('-', ' ')} {catalogue_entry(s)}")) for s in skills]
    query = query_terms([(task.case.input, 1.0)])
    total = sum(query.values())
    coverage = tuple(
        round(sum(w for t, w in query.items() if t in entry) / total, 6) if total > 0 else 0.0
        for entry in entries
    )
    ranked = sorted(range(len(skills)), key=lambda i: (-coverage[i], i))
    chosen = None
    if ranked and coverage[ranked[0]] >= threshold:
        clear = len(ranked) == 1 or coverage[ranked[0]] > coverage[ranked[1]]
        chosen = skills[ranked[0]] if clear else None
    return Choice(chosen, coverage, threshold)


def load_events(task: Task, choice: Choice) -> list[dict[str, Any]]:
    """The transcript of the catalogue step: the catalogue shown, and the ``load_skill`` call (turn 1)
    when a skill was loaded — the events the openai adapter records for the same step."""
    skills = task.offered
    catalogue = CatalogueEvent(
        skills=tuple(s.skill_name for s in skills),
        coverage=dict(zip((s.skill_name for s in skills), choice.coverage, strict=True)),
        threshold=choice.threshold,
        content=catalogue_text(skills),
    )
    events: list[dict[str, Any]] = [catalogue.to_dict()]
    if choice.skill is None:
        return events
    arguments = json.dumps({"name": choice.skill.skill_name}, ensure_ascii=False)
    load = ToolEvent(
        turn=1, id="call_load", name="load_skill", arguments=arguments, ok=True, skill=choice.skill.skill_name
    )
    events.append(load.to_dict())
    return events

"""The ``openai`` adapter's offered mode: a ``load_skill`` tool over the arm's catalogue, then the
skill tools (``list_files``, ``read_file``, ``read_section``) over the skill it loaded.

Every load is recorded (`abbench.agents.Spending.load`) with the model turn it came in; a call of
any other tool before a load — a tool the session does not have, or a skill tool with no skill
loaded — is answered with an error saying what to do, and the run goes on: a first non-skill tool
call never ends it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from abbench.agents._base import Spending
from abbench.agents._skill_tools import SKILL_TOOLS, SkillTools
from abbench.llm import tool_spec
from abbench.snapshot import Snapshot

LOAD_SKILL = "load_skill"
"""The tool an offered arm's model loads a skill with."""


def load_skill_spec(skills: Sequence[Snapshot]) -> dict[str, Any]:
    """The ``load_skill`` tool, its description holding the catalogue (name: description)."""
    listing = "; ".join(
        f"{s.skill_name}: {' '.join((s.description or '').split())}".rstrip(": ") for s in skills
    )
    return tool_spec(
        LOAD_SKILL,
        "Load one of the available skills by its name, when it fits the case; returns its SKILL.md. "
        f"The skills: {listing}",
        {
            "type": "object",
            "properties": {
                "name": {
                    "type": "string",
                    "enum": [s.skill_name for s in skills],
                    "description": "The skill's name, as listed",
                }
            },
            "required": ["name"],
        },
    )


@dataclass
class OfferedTools:
    """The tools of one offered session: ``load_skill``, then the skill tools over the loaded skill.

    Attributes:
        skills: The catalogue, in order.
        spent: Where loads are recorded (the attempt's `Spending`).
        turn: The model turn whose tool calls are being run (set by the adapter).
        files_read: Files read with ``read_file`` in any loaded skill, in first-read order.
        sections_read: Sections read with ``read_section``, likewise.
    """

    skills: tuple[Snapshot, ...]
    spent: Spending
    turn: int = 0
    files_read: list[str] = field(default_factory=list)
    sections_read: list[str] = field(default_factory=list)
    _loaded: Any = None  # the SkillTools of the skill loaded last

    def __post_init__(self) -> None:
        if self.spent.skills_offered is None:
            self.spent.offer([s.skill_name for s in self.skills])

    @property
    def skill(self) -> Snapshot | None:
        """The skill loaded last (None before any load)."""
        return None if self._loaded is None else self._loaded.skill

    def specs(self, skill_tools: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
        """The tools the model is offered: ``load_skill`` and the skill tools."""
        return [load_skill_spec(self.skills), *skill_tools]

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """Run one tool: ``(ok, text)``; a call that cannot be run says what to do instead."""
        if name == LOAD_SKILL:
            wanted = str(arguments.get("name") or arguments.get("skill") or "").strip()
            skill = next((s for s in self.skills if s.skill_name == wanted), None)
            if skill is None:
                names = ", ".join(s.skill_name for s in self.skills)
                return False, f"error: no skill {wanted!r} is available; the skills: {names}"
            self._loaded = SkillTools(skill, self.files_read, self.sections_read)
            self.spent.load(skill.skill_name, self.turn)
            if "SKILL.md" not in self.files_read and any(f.path == "SKILL.md" for f in skill.files):
                self.files_read.append("SKILL.md")
            text = skill.read_text("SKILL.md") if any(f.path == "SKILL.md" for f in skill.files) else ""
            return True, text or f"(skill {skill.skill_name} has no SKILL.md)"
        skill_tools = {t["function"]["name"] for t in SKILL_TOOLS}
        if name in skill_tools:
            if self._loaded is None:
                return False, "error: no skill is loaded; call load_skill with a skill's name first"
            ok, text = self._loaded.call(name, arguments)
            return ok, str(text)
        names = ", ".join([LOAD_SKILL, *sorted(skill_tools)])
        return False, f"error: unknown tool {name!r}; the tools are: {names}. Go on with the case."

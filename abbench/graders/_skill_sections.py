"""The sections of a skill a run is judged against: its SKILL.md's headings with text under them."""

from __future__ import annotations

from typing import Any

from abbench.types import Section


def skill_sections(skill: Any, max_sections: int) -> tuple[Section, ...]:
    """The sections of a skill's SKILL.md a run is judged against: every heading with text under it
    (the preamble before the first heading too when it says something), at most `max_sections`."""
    out = []
    for s in skill.sections:
        if s.path != "SKILL.md":
            continue
        body = "\n".join(line for line in s.text.splitlines()[1 if s.level else 0 :] if line.strip())
        if not body.strip() or (s.level == 0 and body.lstrip().startswith("---")):
            continue
        out.append(s)
    return tuple(out[:max_sections])

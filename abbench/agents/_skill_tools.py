"""The skill tools an ``openai`` agent's model reads a skill with (``list_files``, ``read_file``,
``read_section``), recording what it read; shared by the plain and the offered mode."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from abbench.llm import tool_spec
from abbench.snapshot import Snapshot, normalize_path

MAX_TOOL_CHARS = 50_000
"""A tool result longer than this is cut, with a note saying how much was left out."""

SKILL_TOOLS = (
    tool_spec(
        "list_files",
        "List the skill's files, with the section references (path#heading) of its Markdown files.",
    ),
    tool_spec(
        "read_file",
        "Read one file of the skill.",
        {
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Path in the skill, e.g. knowledge/rules.md"}
            },
            "required": ["path"],
        },
    ),
    tool_spec(
        "read_section",
        "Read one section of a skill file by its reference, path#heading (e.g. SKILL.md#Rules).",
        {
            "type": "object",
            "properties": {"ref": {"type": "string", "description": "A reference as listed: path#heading"}},
            "required": ["ref"],
        },
    ),
)
"""The tools an openai agent gets when its arm has a skill."""


def _clean_path(path: str) -> str:
    return normalize_path(path).lstrip("/")


@dataclass
class SkillTools:
    """The skill tools of one session, recording what was read.

    Attributes:
        skill: The snapshot the tools read from.
        files_read: Paths opened with ``read_file``, in first-read order.
        sections_read: Section references opened with ``read_section``, in first-read order.
    """

    skill: Snapshot
    files_read: list[str] = field(default_factory=list)
    sections_read: list[str] = field(default_factory=list)

    def call(self, name: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """Run one tool: ``(ok, text)``; a failed call returns a message that helps the model retry."""
        if name == "list_files":
            return True, self._list()
        if name == "read_file":
            return self._read_file(str(arguments.get("path") or arguments.get("file") or ""))
        if name == "read_section":
            return self._read_section(str(arguments.get("ref") or arguments.get("section") or ""))
        names = ", ".join(t["function"]["name"] for t in SKILL_TOOLS)
        return False, f"error: unknown tool {name!r}; the tools are: {names}"

    def _paths(self) -> str:
        return ", ".join(f.path for f in self.skill.files[:100])

    def _list(self) -> str:
        refs: dict[str, list[str]] = {}
        for s in self.skill.sections:
            if s.level:
                refs.setdefault(s.path, []).append(s.ref)
        lines = []
        for f in self.skill.files:
            kind = "binary, " if f.binary else ""
            line = f"{f.path} ({kind}{f.size} bytes)"
            if refs.get(f.path):
                line += "\n  sections: " + ", ".join(refs[f.path])
            lines.append(line)
        return "\n".join(lines) or "(the skill has no files)"

    def _read_file(self, path: str) -> tuple[bool, str]:
        path = _clean_path(path)
        entry = next((f for f in self.skill.files if f.path == path), None)
        if entry is None:
            if "#" in path:
                return self._read_section(path)
            return False, f"error: the skill has no file {path!r}; its files: {self._paths()}"
        if entry.binary:
            return False, f"error: {path} is a binary file ({entry.size} bytes) and cannot be read as text"
        text = self.skill.read_text(path)
        if path not in self.files_read:
            self.files_read.append(path)
        return True, _cut(text)

    def _read_section(self, ref: str) -> tuple[bool, str]:
        ref = ref.strip()
        if not ref:
            return False, "error: give a reference as path#heading, e.g. SKILL.md#Rules"
        section = self.skill.resolve(_clean_path(ref))
        if section is None:
            path = _clean_path(ref.partition("#")[0])
            in_file = [s.ref for s in self.skill.sections if s.path == path and s.level]
            if in_file:
                return False, f"error: no section {ref!r}; the sections of {path}: {', '.join(in_file)}"
            return False, f"error: no file {path!r} with sections; the skill's files: {self._paths()}"
        if section.ref not in self.sections_read:
            self.sections_read.append(section.ref)
        return True, _cut(section.text)


def _cut(text: str) -> str:
    if len(text) <= MAX_TOOL_CHARS:
        return text
    return (
        text[:MAX_TOOL_CHARS]
        + f"\n[… cut: {len(text) - MAX_TOOL_CHARS} more characters; read sections instead]"
    )

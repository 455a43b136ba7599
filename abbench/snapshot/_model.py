"""The Snapshot value: an immutable skill folder, its files, and its sections."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from abbench.errors import NotFoundError
from abbench.snapshot._sections import parse_sections, resolve_ref
from abbench.types import Section

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """One file of a snapshot: relative path (forward slashes), its sha256, size, and whether it is binary."""

    path: str
    sha256: str
    size: int
    binary: bool = False


@dataclass(frozen=True)
class Snapshot:
    """An immutable copy of a skill folder, identified by the hash of its content.

    Attributes:
        hash: sha256 (hex) over the sorted relative paths and bytes of every file.
        skill_name: From SKILL.md front matter ``name``, else the folder name.
        description: From SKILL.md front matter ``description``.
        root: The folder that holds the files (``<store>/snapshots/<skill>/<hash>`` once stored).
        files: Every file, sorted by path.
        draft: True when the content is not a clean git commit (not in git, or uncommitted changes).
        repo, commit, tag, git_ref, subdir, source_path: Where the content came from.
        front_matter: The SKILL.md YAML front matter.
        created_at: When it was first stored.
    """

    hash: str
    skill_name: str
    root: Path
    files: tuple[SnapshotFile, ...]
    description: str | None = None
    draft: bool = True
    repo: str | None = None
    commit: str | None = None
    tag: str | None = None
    git_ref: str | None = None
    subdir: str | None = None
    source_path: str | None = None
    front_matter: dict[str, Any] = field(default_factory=dict)
    created_at: str | None = None

    @property
    def short(self) -> str:
        """The first 12 hex digits of the hash."""
        return self.hash[:12]

    @property
    def label(self) -> str:
        """``name@hash12``, with ``(draft)`` when the content is not committed."""
        return f"{self.skill_name}@{self.short}" + (" (draft)" if self.draft else "")

    @property
    def source(self) -> str:
        """Where the content came from, in words: ``draft``, or ``repo@commit (tag)``."""
        if self.draft:
            return "draft"
        text = f"{self.repo or '?'}@{(self.commit or '?')[:12]}"
        return f"{text} ({self.tag})" if self.tag else text

    def read_text(self, path: str) -> str:
        """The text of one file of the snapshot (UTF-8).

        Raises:
            NotFoundError: no such file in this snapshot.
        """
        path = path.strip().lstrip("./")
        if not any(f.path == path for f in self.files):
            names = ", ".join(f.path for f in self.files[:20])
            raise NotFoundError(f"{self.label} has no file {path!r}; its files: {names}")
        return (self.root / path).read_text(encoding="utf-8", errors="replace")

    @cached_property
    def sections(self) -> tuple[Section, ...]:
        """Every heading section of every Markdown file, SKILL.md first, then by path."""
        md = [f for f in self.files if not f.binary and f.path.lower().endswith(MARKDOWN_SUFFIXES)]
        md.sort(key=lambda f: (f.path != "SKILL.md", f.path))
        out: list[Section] = []
        for f in md:
            out.extend(parse_sections(f.path, self.read_text(f.path)))
        return tuple(out)

    def resolve(self, ref: str) -> Section | None:
        """The section a reference (``path#heading``) points at, or None (see `resolve_ref`)."""
        return resolve_ref(self.sections, ref)

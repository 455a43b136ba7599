"""Comparing two snapshots: files and sections (by reference) added, removed and changed."""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from abbench._text import clip
from abbench.errors import NotFoundError
from abbench.snapshot._model import Snapshot
from abbench.types import Section


def _unified(old: str, new: str, old_name: str, new_name: str, context: int) -> str:
    lines = difflib.unified_diff(
        old.splitlines(), new.splitlines(), fromfile=old_name, tofile=new_name, n=context, lineterm=""
    )
    return "\n".join(lines)


def _counts(old: str, new: str) -> tuple[int, int]:
    # opcodes, not ndiff: ndiff compares changed lines character by character and is quadratic
    added = removed = 0
    matcher = difflib.SequenceMatcher(None, old.splitlines(), new.splitlines(), autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed += i2 - i1
            added += j2 - j1
    return added, removed


@dataclass(frozen=True)
class RenamedFile:
    """A file whose bytes are unchanged but whose path moved."""

    old_path: str
    new_path: str


@dataclass(frozen=True)
class SkillInfoChange:
    """One SKILL.md front matter field that differs (None: absent on that side)."""

    key: str
    old: Any
    new: Any


@dataclass(frozen=True)
class SectionChange:
    """A section present in both snapshots under the same reference, with different text.

    Attributes:
        ref: The reference (``path#heading``).
        old: The section in the first snapshot.
        new: The section in the second.
    """

    ref: str
    old: Section
    new: Section

    @property
    def lines_added(self) -> int:
        """Lines only in the new text."""
        return _counts(self.old.text, self.new.text)[0]

    @property
    def lines_removed(self) -> int:
        """Lines only in the old text."""
        return _counts(self.old.text, self.new.text)[1]

    def unified_diff(self, context: int = 3) -> str:
        """The change as a unified diff (``--- a/ref``, ``+++ b/ref``), `context` lines around each hunk."""
        return _unified(self.old.text, self.new.text, f"a/{self.ref}", f"b/{self.ref}", context)


@dataclass(frozen=True)
class SnapshotDiff:
    """What changed from snapshot `a` to snapshot `b` (see `diff_snapshots`).

    Attributes:
        a: The first (old) snapshot.
        b: The second (new) snapshot.
        files_added: Paths only in `b`.
        files_removed: Paths only in `a`.
        files_changed: Paths in both whose bytes differ.
        files_renamed: Files whose bytes moved to another path (listed neither as added nor removed).
        files_unchanged: How many paths hold the same bytes in both.
        sections_added: Sections whose reference is only in `b`.
        sections_removed: Sections whose reference is only in `a`.
        sections_changed: Sections under the same reference whose text differs.
        front_matter_changes: SKILL.md front matter fields that differ.
    """

    a: Snapshot = field(repr=False)
    b: Snapshot = field(repr=False)
    files_added: tuple[str, ...] = ()
    files_removed: tuple[str, ...] = ()
    files_changed: tuple[str, ...] = ()
    files_renamed: tuple[RenamedFile, ...] = ()
    files_unchanged: int = 0
    sections_added: tuple[Section, ...] = ()
    sections_removed: tuple[Section, ...] = ()
    sections_changed: tuple[SectionChange, ...] = ()
    front_matter_changes: tuple[SkillInfoChange, ...] = ()

    @property
    def identical(self) -> bool:
        """Whether both snapshots hold the same content."""
        return self.a.hash == self.b.hash

    def section_diff(self, ref: str, context: int = 3) -> str:
        """The unified diff of one changed section.

        Raises:
            NotFoundError: `ref` is not among the changed sections (the message lists them).
        """
        for change in self.sections_changed:
            if change.ref == ref:
                return change.unified_diff(context)
        changed = ", ".join(c.ref for c in self.sections_changed) or "none"
        raise NotFoundError(
            f"section {ref!r} did not change between {self.a.label} and {self.b.label}; changed: {changed}"
        )

    def file_diff(self, path: str, context: int = 3) -> str:
        """The unified diff of one changed (or added or removed) text file; empty when both are equal.

        Raises:
            NotFoundError: the path is in neither snapshot.
        """
        old = self._text(self.a, path)
        new = self._text(self.b, path)
        if old is None and new is None:
            raise NotFoundError(f"neither {self.a.label} nor {self.b.label} has a file {path!r}")
        return _unified(old or "", new or "", f"a/{path}", f"b/{path}", context)

    @staticmethod
    def _text(snapshot: Snapshot, path: str) -> str | None:
        for f in snapshot.files:
            if f.path == path:
                return "(binary file)" if f.binary else snapshot.read_text(path)
        return None

    def summary(self, max_items: int = 50) -> str:
        """A readable account of the changes: counts, then each file and section marked + - ~."""
        lines = [f"{self.a.label} -> {self.b.label}"]
        if self.identical:
            lines.append("identical content")
            return "\n".join(lines)
        for change in self.front_matter_changes:
            lines.append(f"front matter {change.key}: {_short(change.old)} -> {_short(change.new)}")
        lines.append(
            f"files: {len(self.files_added)} added, {len(self.files_removed)} removed, "
            f"{len(self.files_changed)} changed, {len(self.files_renamed)} renamed, "
            f"{self.files_unchanged} unchanged"
        )
        items = [f"  + {p}" for p in self.files_added]
        items += [f"  - {p}" for p in self.files_removed]
        items += [f"  ~ {p}" for p in self.files_changed]
        items += [f"  > {r.old_path} -> {r.new_path}" for r in self.files_renamed]
        lines += _capped(items, max_items)
        lines.append(
            f"sections: {len(self.sections_added)} added, {len(self.sections_removed)} removed, "
            f"{len(self.sections_changed)} changed"
        )
        items = [f"  + {s.ref}" for s in self.sections_added]
        items += [f"  - {s.ref}" for s in self.sections_removed]
        items += [f"  ~ {c.ref} (+{c.lines_added} -{c.lines_removed} lines)" for c in self.sections_changed]
        lines += _capped(items, max_items)
        return "\n".join(lines)

    def to_dict(self, *, text: bool = True) -> dict[str, Any]:
        """A JSON-ready account of the diff; with `text`, the added/removed section texts and each unified diff."""

        def section(s: Section) -> dict[str, Any]:
            data: dict[str, Any] = {"ref": s.ref, "heading": s.heading, "level": s.level}
            if text:
                data["text"] = s.text
            return data

        return {
            "a": {"hash": self.a.hash, "label": self.a.label},
            "b": {"hash": self.b.hash, "label": self.b.label},
            "identical": self.identical,
            "front_matter": [{"key": c.key, "old": c.old, "new": c.new} for c in self.front_matter_changes],
            "files": {
                "added": list(self.files_added),
                "removed": list(self.files_removed),
                "changed": list(self.files_changed),
                "renamed": [{"old": r.old_path, "new": r.new_path} for r in self.files_renamed],
                "unchanged": self.files_unchanged,
            },
            "sections": {
                "added": [section(s) for s in self.sections_added],
                "removed": [section(s) for s in self.sections_removed],
                "changed": [
                    {
                        "ref": c.ref,
                        "lines_added": c.lines_added,
                        "lines_removed": c.lines_removed,
                        **({"diff": c.unified_diff()} if text else {}),
                    }
                    for c in self.sections_changed
                ],
            },
        }


def _short(value: Any, width: int = 60) -> str:
    text = "(none)" if value is None else str(value).replace("\n", " ")
    return clip(text, width)


def _capped(items: list[str], limit: int) -> list[str]:
    if len(items) <= limit:
        return items
    return [*items[:limit], f"  ... and {len(items) - limit} more"]


def diff_snapshots(a: Snapshot, b: Snapshot) -> SnapshotDiff:
    """What changed from `a` (old) to `b` (new): files by path and bytes, sections by reference and text.

    A file whose exact bytes moved to a new path is reported as renamed; its sections still show as
    removed and added, because their references (which agents cite) changed. Sections are compared by
    text only, so a section that merely moved within its file is unchanged.
    """
    fa = {f.path: f for f in a.files}
    fb = {f.path: f for f in b.files}
    added = sorted(set(fb) - set(fa))
    removed = sorted(set(fa) - set(fb))
    renamed: list[RenamedFile] = []
    by_sha: dict[str, list[str]] = {}
    for path in added:
        by_sha.setdefault(fb[path].sha256, []).append(path)
    for path in list(removed):
        candidates = by_sha.get(fa[path].sha256)
        if candidates:
            new_path = candidates.pop(0)
            renamed.append(RenamedFile(path, new_path))
            removed.remove(path)
            added.remove(new_path)
    common = sorted(set(fa) & set(fb))
    changed = [p for p in common if fa[p].sha256 != fb[p].sha256]

    sa = {s.ref: s for s in a.sections}
    sb = {s.ref: s for s in b.sections}
    keys = set(a.front_matter) | set(b.front_matter)
    fm = [
        SkillInfoChange(k, a.front_matter.get(k), b.front_matter.get(k))
        for k in sorted(keys)
        if a.front_matter.get(k) != b.front_matter.get(k)
    ]
    return SnapshotDiff(
        a=a,
        b=b,
        files_added=tuple(added),
        files_removed=tuple(removed),
        files_changed=tuple(changed),
        files_renamed=tuple(renamed),
        files_unchanged=len(common) - len(changed),
        sections_added=tuple(s for r, s in sb.items() if r not in sa),
        sections_removed=tuple(s for r, s in sa.items() if r not in sb),
        sections_changed=tuple(
            SectionChange(r, sa[r], s) for r, s in sb.items() if r in sa and sa[r].text != s.text
        ),
        front_matter_changes=tuple(fm),
    )

"""The Snapshot value: an immutable skill folder, its files, its sections, and where it came from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import Any

from abbench.errors import NotFoundError
from abbench.snapshot._sections import normalize_path, parse_sections, resolve_ref
from abbench.types import Section

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdx")

DRAFT_MARK = " (draft)"
"""What follows a version's name when its content is not a clean git commit (``routing@1a2b3c4d5e6f (draft)``)."""


def version_label(skill_name: str, version: str, draft: bool | None) -> str:
    """A skill version as every view names it: ``name@hash12``, marked `DRAFT_MARK` when it is a draft.

    The one place a version's name is written (`Snapshot.label`, the experiments list, an arm's label,
    the widgets and the report), so a draft reads the same wherever it is named; ``store.snapshots.get``
    takes the label back.

    Args:
        skill_name: The skill's name.
        version: Its content hash (or the first 12 hex digits of it).
        draft: Whether the content is not a clean git commit (None: not known, left unmarked).
    """
    return f"{skill_name}@{version[:12]}" + (DRAFT_MARK if draft else "")


@dataclass(frozen=True, slots=True)
class SnapshotFile:
    """One file of a snapshot: relative path (forward slashes), its sha256, size, and whether it is binary."""

    path: str
    sha256: str
    size: int
    binary: bool = False


@dataclass(frozen=True, slots=True)
class SnapshotSource:
    """Where one taking of a snapshot's content came from.

    The same content can be taken several times (from a draft folder, then from the commit that
    recorded it, then from a tag); the store keeps one `SnapshotSource` per taking and shows the best
    one (a clean commit beats a draft; the first commit stays) on the `Snapshot` itself.

    Attributes:
        draft: True when the content is not exactly a clean git commit.
        draft_reason: Why it is a draft, in words (not in git, uncommitted changes, ...).
        repo: The top-level folder of the git repository, when there is one.
        remote: The repository's remote URL (``origin`` first), credentials removed.
        commit: The full commit id, for content that equals a commit (None for drafts).
        tag: A tag pointing at that commit, if any (the highest version when several do).
        git_ref: The reference asked for (``v1.2``, ``HEAD~3``), for snapshots taken from git.
        subdir: The skill folder inside the repository (forward slashes; None for its top).
        source_path: The folder on disk the content was read from.
        taken_at: When it was taken (ISO-8601, UTC); None outside a store.
        taken_by: Who took it; None outside a store.
    """

    draft: bool = True
    draft_reason: str | None = None
    repo: str | None = None
    remote: str | None = None
    commit: str | None = None
    tag: str | None = None
    git_ref: str | None = None
    subdir: str | None = None
    source_path: str | None = None
    taken_at: str | None = None
    taken_by: str | None = None


@dataclass(frozen=True)
class Snapshot:
    """An immutable copy of a skill folder, identified by the hash of its content.

    Attributes:
        hash: sha256 (hex) over the sorted relative paths and bytes of every file (see `content_hash`).
        skill_name: From SKILL.md front matter ``name``, else the folder name.
        root: The folder that holds the files (``<store>/snapshots/<skill>/<hash>`` once stored).
        files: Every file, sorted by path.
        description: From SKILL.md front matter ``description``.
        draft: True when the content is not a clean git commit (not in git, or uncommitted changes).
        repo, commit, tag, git_ref, subdir, source_path: Where the content came from (see `SnapshotSource`).
        front_matter: The SKILL.md YAML front matter (JSON-compatible values).
        created_at: When it was first stored (None outside a store).
        remote: The repository's remote URL, credentials removed.
        draft_reason: Why the content is a draft, in words.
        warnings: What looked wrong but did not stop the snapshot (no SKILL.md, bad front matter, ...).
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
    remote: str | None = None
    draft_reason: str | None = None
    warnings: tuple[str, ...] = ()

    @property
    def short(self) -> str:
        """The first 12 hex digits of the hash."""
        return self.hash[:12]

    @property
    def label(self) -> str:
        """``name@hash12``, with ``(draft)`` when the content is not committed."""
        return version_label(self.skill_name, self.hash, self.draft)

    @property
    def source(self) -> str:
        """Where the content came from, in words: ``draft``, or ``repo@commit (tag)``."""
        if self.draft:
            return "draft"
        text = f"{self.repo or '?'}@{(self.commit or '?')[:12]}"
        return f"{text} ({self.tag})" if self.tag else text

    @property
    def provenance(self) -> SnapshotSource:
        """The source shown on this snapshot, as a `SnapshotSource`: its fields of the same name, and
        `created_at` as ``taken_at`` (who took it is not kept on the snapshot)."""
        same = {f.name: getattr(self, f.name) for f in fields(SnapshotSource) if hasattr(self, f.name)}
        return SnapshotSource(**same, taken_at=self.created_at)

    @property
    def has_skill_md(self) -> bool:
        """Whether the folder has the SKILL.md entry point (a snapshot without one is flagged)."""
        return any(f.path == "SKILL.md" for f in self.files)

    @property
    def size(self) -> int:
        """Total bytes of every file."""
        return sum(f.size for f in self.files)

    def file(self, path: str) -> SnapshotFile:
        """The file at `path` (relative, forward slashes; a leading ``./`` is ignored).

        Raises:
            NotFoundError: no such file in this snapshot (the message lists its files).
        """
        wanted = normalize_path(path)
        for f in self.files:
            if f.path == wanted:
                return f
        names = ", ".join(f.path for f in self.files[:30])
        more = f" and {len(self.files) - 30} more" if len(self.files) > 30 else ""
        raise NotFoundError(
            f"{self.label} has no file {path!r}; its files: {names}{more}",
            kind="file",
            name=path,
            choices=[f.path for f in self.files],
        )

    def read_bytes(self, path: str) -> bytes:
        """The bytes of one file of the snapshot.

        Raises:
            NotFoundError: no such file in this snapshot.
        """
        return (self.root / self.file(path).path).read_bytes()

    def read_text(self, path: str) -> str:
        """The text of one file of the snapshot (UTF-8; a byte-order mark is dropped).

        Raises:
            NotFoundError: no such file in this snapshot.
        """
        return (self.root / self.file(path).path).read_text(encoding="utf-8-sig", errors="replace")

    @cached_property
    def sections(self) -> tuple[Section, ...]:
        """Every heading section of every Markdown file, SKILL.md first, then by path."""
        md = [f for f in self.files if not f.binary and f.path.lower().endswith(MARKDOWN_SUFFIXES)]
        md.sort(key=lambda f: (f.path != "SKILL.md", f.path))
        out: list[Section] = []
        for f in md:
            out.extend(parse_sections(f.path, self.read_text(f.path)))
        return tuple(out)

    @property
    def refs(self) -> tuple[str, ...]:
        """Every stable reference (``path#heading``) of this snapshot, in `sections` order."""
        return tuple(s.ref for s in self.sections)

    def resolve(self, ref: str) -> Section | None:
        """The section a reference (``path#heading``) points at, or None (see `resolve_ref`)."""
        if "sections" in self.__dict__:
            return resolve_ref(self.sections, ref)
        # Only the named file needs parsing: every reference starts with its file's path.
        wanted = normalize_path(ref)
        candidates = [
            f.path
            for f in self.files
            if not f.binary
            and f.path.lower().endswith(MARKDOWN_SUFFIXES)
            and (wanted == f.path or wanted.startswith(f.path + "#"))
        ]
        if not candidates:
            return None
        path = max(candidates, key=len)
        return resolve_ref(parse_sections(path, self.read_text(path)), ref)

    def to_dict(self, *, files: bool = True) -> dict[str, Any]:
        """A JSON-ready description of the snapshot (what ``--json`` prints)."""
        data: dict[str, Any] = {
            "hash": self.hash,
            "label": self.label,
            "skill_name": self.skill_name,
            "description": self.description,
            "draft": self.draft,
            "draft_reason": self.draft_reason,
            "repo": self.repo,
            "remote": self.remote,
            "commit": self.commit,
            "tag": self.tag,
            "git_ref": self.git_ref,
            "subdir": self.subdir,
            "source_path": self.source_path,
            "root": str(self.root),
            "created_at": self.created_at,
            "n_files": len(self.files),
            "size_bytes": self.size,
            "has_skill_md": self.has_skill_md,
            "warnings": list(self.warnings),
            "front_matter": self.front_matter,
        }
        if files:
            data["files"] = [
                {"path": f.path, "sha256": f.sha256, "size": f.size, "binary": f.binary} for f in self.files
            ]
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Snapshot:
        """The snapshot `to_dict` described (a server's answer, which names no folder of the server's:
        `root` is then the empty path and `source_path` None)."""
        names = {f.name for f in fields(cls)} - {"root", "files", "warnings", "front_matter"}
        return cls(
            root=Path(data.get("root") or ""),
            files=tuple(SnapshotFile(**f) for f in data.get("files") or ()),
            warnings=tuple(data.get("warnings") or ()),
            front_matter=dict(data.get("front_matter") or {}),
            **{k: data[k] for k in names if k in data},
        )


@dataclass(frozen=True)
class TakenSnapshot:
    """What taking a snapshot stored (`abbench.cli`'s ``snapshot``, locally or on a server).

    Attributes:
        snapshot: The stored snapshot.
        n_refs: Its indexed references (heading sections).
        times_taken: How many times its content was taken, this time included (1: stored now).
        first_taken_at: When its content was first taken (ISO-8601, UTC).
        folder: Where its files are on this machine (None on a server: its folders are its own).
    """

    snapshot: Snapshot
    n_refs: int
    times_taken: int
    first_taken_at: str | None
    folder: Path | None = None

    @property
    def new(self) -> bool:
        """Whether this taking stored the content (the first taking of it)."""
        return self.times_taken == 1

    def as_dict(self) -> dict[str, Any]:
        """The snapshot as `Snapshot.to_dict` (without files; a server's paths left out), with the
        references and the takings."""
        data = self.snapshot.to_dict(files=False)
        if self.folder is None:  # on a server: its folders are its own
            data = {k: v for k, v in data.items() if k not in ("root", "source_path")}
        return {
            **data,
            "n_refs": self.n_refs,
            "new": self.new,
            "times_taken": self.times_taken,
            "first_taken_at": self.first_taken_at,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TakenSnapshot:
        """What `as_dict` (or a server's answer: its files listed, no folder of its own) wrote."""
        root = data.get("root")
        return cls(
            Snapshot.from_dict(data),
            int(data["n_refs"]),
            int(data["times_taken"]),
            data.get("first_taken_at"),
            Path(root) if root else None,
        )

"""Building snapshots from a skill folder or a git ref: content, SKILL.md front matter and provenance."""

from __future__ import annotations

import json
import logging
import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from abbench._yaml import YamlRefused, error_at, load_yaml
from abbench.errors import SnapshotError, UsageError
from abbench.snapshot._content import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_TOTAL_BYTES,
    FolderContent,
    Limits,
    read_folder,
)
from abbench.snapshot._git import find_repo, folder_source, locate, normalize_subdir, read_git
from abbench.snapshot._model import MARKDOWN_SUFFIXES, Snapshot, SnapshotSource
from abbench.snapshot._sections import front_matter_end

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class SkillInfo:
    """What SKILL.md says about the skill.

    Attributes:
        name: The skill's name (front matter ``name``, else the fallback folder name).
        description: Front matter ``description``.
        front_matter: The whole front matter, with JSON-compatible values.
        warnings: What was missing or malformed.
    """

    name: str
    description: str | None
    front_matter: dict[str, Any]
    warnings: tuple[str, ...]


def read_skill_info(content: FolderContent, fallback_name: str) -> SkillInfo:
    """Read SKILL.md's YAML front matter; tolerate a missing or malformed one with warnings."""
    warnings: list[str] = []
    skill_md = next((e for e in content.entries if e.path == "SKILL.md"), None)
    if skill_md is None:
        variant = next((e.path for e in content.entries if e.path.lower() == "skill.md"), None)
        hint = f" ({variant} is there: rename it to SKILL.md)" if variant else ""
        warnings.append(
            f"no SKILL.md at the top of the folder{hint}: the skill has no entry point; "
            f"using the folder name {fallback_name!r}"
        )
        return SkillInfo(fallback_name, None, {}, tuple(warnings))
    try:
        text = skill_md.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        warnings.append(f"SKILL.md is not UTF-8 (byte {exc.start}); re-save it as UTF-8 so it can be indexed")
        return SkillInfo(fallback_name, None, {}, tuple(warnings))
    lines = text.splitlines()
    end = front_matter_end(lines)
    front: dict[str, Any] = {}
    if end == 0:
        warnings.append("SKILL.md has no YAML front matter (--- name: ... description: ... ---)")
    else:
        try:
            loaded = load_yaml("\n".join(lines[1 : end - 1])) if end > 1 else None
        except yaml.YAMLError as exc:
            where = error_at(exc, line_shift=1)  # the front matter starts on line 2
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            why = "is refused" if isinstance(exc, YamlRefused) else "is not valid YAML"
            warnings.append(f"SKILL.md front matter {why}{where}: {problem}")
            loaded = None
        if isinstance(loaded, dict):
            # dates and other YAML types become strings, so a stored snapshot reads back the same
            front = json.loads(json.dumps({str(k): v for k, v in loaded.items()}, default=str))
        elif loaded is not None:
            warnings.append(f"SKILL.md front matter is a {type(loaded).__name__}, not a mapping of fields")
    name = front.get("name")
    if isinstance(name, str) and name.strip():
        name = name.strip()
    else:
        if end:
            warnings.append(f"SKILL.md front matter has no name; using the folder name {fallback_name!r}")
        name = fallback_name
    description = front.get("description")
    if isinstance(description, str) and description.strip():
        description = description.strip()
    else:
        if end:
            warnings.append(
                "SKILL.md front matter has no description (agents use it to decide when to load the skill)"
            )
        description = None
    return SkillInfo(name, description, front, tuple(warnings))


def _content_warnings(content: FolderContent) -> list[str]:
    files = content.files
    return [
        f"{f.path}: not UTF-8 text, so its headings are not indexed; re-save it as UTF-8"
        for f in files
        if f.binary and f.path.lower().endswith(MARKDOWN_SUFFIXES)
    ]


@dataclass(frozen=True)
class PreparedSnapshot:
    """A skill's content read and checked, not yet placed anywhere: the building block of every snapshot.

    Attributes:
        content: The files and their hash.
        info: What SKILL.md says.
        source: Where the content came from.
        warnings: Every warning (SKILL.md, undecodable Markdown, git submodules).
    """

    content: FolderContent
    info: SkillInfo
    source: SnapshotSource
    warnings: tuple[str, ...]

    @property
    def hash(self) -> str:
        """The content hash."""
        return self.content.hash

    def write_to(self, dest: str | os.PathLike[str]) -> Path:
        """Write the files into `dest` (created) and return it."""
        dest = Path(dest)
        self.content.write_to(dest)
        return dest

    def to_snapshot(self, root: str | os.PathLike[str], *, created_at: str | None = None) -> Snapshot:
        """The `Snapshot` of this content with its files at `root`."""
        s = self.source
        return Snapshot(
            hash=self.hash,
            skill_name=self.info.name,
            root=Path(root),
            files=self.content.files,
            description=self.info.description,
            draft=s.draft,
            repo=s.repo,
            commit=s.commit,
            tag=s.tag,
            git_ref=s.git_ref,
            subdir=s.subdir,
            source_path=s.source_path,
            front_matter=self.info.front_matter,
            created_at=created_at,
            remote=s.remote,
            draft_reason=s.draft_reason,
            warnings=self.warnings,
        )


def _limits(max_file_bytes: int, max_total_bytes: int, max_files: int) -> Limits:
    return Limits(max_file_bytes=max_file_bytes, max_total_bytes=max_total_bytes, max_files=max_files)


def prepare_snapshot(
    folder: str | os.PathLike[str] | None = None,
    *,
    git_ref: str | None = None,
    repo: str | os.PathLike[str] | None = None,
    subdir: str | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
    exclude: str | os.PathLike[str] | None = None,
) -> PreparedSnapshot:
    """Read and check a skill's content from a folder or from git, without placing it anywhere.

    The arguments combine as follows:

    - ``folder`` alone: the folder as it is on disk now (a *draft* unless it is a clean git commit).
    - ``folder`` and ``git_ref``: that folder's content at `git_ref`, read with ``git archive`` from the
      repository the folder sits in (the folder need not exist in the work tree any more).
    - ``repo`` (with ``subdir`` or a relative ``folder``, and ``git_ref``, default ``HEAD``): the
      sub-folder of the repository at `git_ref`; `subdir` is relative to `repo`.

    Raises:
        UsageError: the arguments do not fit together.
        SnapshotError: the content breaks the snapshot rules, or git cannot provide it.
    """
    limits = _limits(max_file_bytes, max_total_bytes, max_files)
    extra: list[str] = []
    if repo is None and git_ref is None:
        if subdir is not None:
            raise UsageError("subdir= needs repo= (the repository it is relative to)")
        if folder is None:
            raise UsageError("give a skill folder, or a git repository (repo=) and a ref (git_ref=)")
        content = read_folder(folder, limits, exclude=exclude)
        path = Path(folder).expanduser().resolve()
        source = folder_source(path, content)
        fallback = path.name
    else:
        if repo is None:
            if folder is None:
                raise UsageError("git_ref= needs the skill folder, or repo= and subdir=")
            if subdir is not None:
                raise UsageError(
                    "subdir= goes with repo=; with a folder, the folder itself names the sub-folder"
                )
            near, rest = locate(Path(folder))
            found = find_repo(near)
            if isinstance(found, str):
                raise SnapshotError(f"cannot read {folder} at {git_ref}: {near} is {found}")
            wanted = normalize_subdir(rest, found.prefix)
        else:
            if folder is not None and subdir is not None:
                raise UsageError("give the sub-folder once: as subdir= or as folder, not both")
            repo_path = Path(repo).expanduser()
            if not repo_path.is_dir():
                raise SnapshotError(f"no folder at {repo}; give the path of a git repository (repo=, --repo)")
            found = find_repo(repo_path)
            if isinstance(found, str):
                raise SnapshotError(f"{repo} is {found}; give the path of a git repository")
            inner = subdir if subdir is not None else folder
            if inner is not None and Path(inner).is_absolute():
                try:
                    inner = Path(inner).resolve().relative_to(found.top.resolve()).as_posix()
                except ValueError:
                    raise SnapshotError(f"{inner} is not inside the repository {found.top}") from None
                wanted = normalize_subdir(inner)
            else:
                wanted = normalize_subdir(str(inner) if inner is not None else None, found.prefix)
        content, source, extra = read_git(found.top, git_ref or "HEAD", wanted, limits)
        fallback = wanted.rsplit("/", 1)[-1] if wanted else found.top.name
    info = read_skill_info(content, fallback)
    warnings = (*info.warnings, *_content_warnings(content), *extra)
    for w in warnings:
        log.warning("%s: %s", info.name, w)
    return PreparedSnapshot(content, info, source, warnings)


def build_snapshot(
    folder: str | os.PathLike[str],
    *,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
) -> Snapshot:
    """The snapshot of a skill folder as it is on disk now, in memory (nothing is copied or stored).

    The returned snapshot's `root` is the folder itself, so `Snapshot.sections` and
    `Snapshot.read_text` read the live files: use `snapshot_skill` for an immutable stored copy.

    Args:
        folder: The skill folder (the one holding SKILL.md).
        max_file_bytes: Largest single file accepted (default 5 MB).
        max_total_bytes: Largest total accepted (default 50 MB).
        max_files: Most files accepted (default 5,000).

    Raises:
        SnapshotError: symlinks leaving the folder, files over the limits, a missing or empty folder.
    """
    prepared = prepare_snapshot(
        folder, max_file_bytes=max_file_bytes, max_total_bytes=max_total_bytes, max_files=max_files
    )
    return prepared.to_snapshot(Path(folder).expanduser().resolve())


def snapshot_from_git(
    repo: str | os.PathLike[str],
    ref: str = "HEAD",
    subdir: str | None = None,
    *,
    dest: str | os.PathLike[str] | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
) -> Snapshot:
    """The snapshot of a skill folder at a past git commit, read with ``git archive``.

    The repository's work tree, index and current branch are never touched.

    Args:
        repo: A folder inside the git repository.
        ref: A commit, branch or tag (anything ``git rev-parse`` understands).
        subdir: The skill folder, relative to `repo` (None: `repo` itself).
        dest: Where to write the files (created); default a new temporary folder, which the caller
            owns and removes. The returned snapshot's `root` is this folder.
        max_file_bytes: Largest single file accepted (default 5 MB).
        max_total_bytes: Largest total accepted (default 50 MB).
        max_files: Most files accepted (default 5,000).

    Raises:
        SnapshotError: unknown ref or folder (the message lists what exists), or content that breaks
            the snapshot rules.
    """
    prepared = prepare_snapshot(
        git_ref=ref,
        repo=repo,
        subdir=subdir,
        max_file_bytes=max_file_bytes,
        max_total_bytes=max_total_bytes,
        max_files=max_files,
    )
    if dest is None:
        dest = tempfile.mkdtemp(prefix=f"abbench-{safe_folder_name(prepared.info.name)}-")
    elif Path(dest).exists() and any(Path(dest).iterdir()):
        raise SnapshotError(f"{dest} is not empty; give a new or empty folder for the snapshot's files")
    return prepared.to_snapshot(prepared.write_to(dest).resolve())


def safe_folder_name(name: str) -> str:
    """A skill name made safe as one folder name: letters (any script), digits, ``-``, ``_`` and ``.``."""
    cleaned = re.sub(r"[^\w.\-]+", "-", name.strip(), flags=re.UNICODE).strip("-.")
    return cleaned[:100] or "skill"

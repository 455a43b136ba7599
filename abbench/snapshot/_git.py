"""What git says about a skill folder (draft or clean commit), and reading a past version with git archive.

Nothing here writes to a repository: status runs without optional locks (so not even the index is
refreshed), and past versions are streamed out of ``git archive`` into a temporary folder, never
checked out.
"""

from __future__ import annotations

import logging
import os
import posixpath
import subprocess
import tarfile
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from abbench.errors import SnapshotError
from abbench.snapshot._content import (
    FolderContent,
    Limits,
    human_size,
    is_ignored_path,
    read_folder,
)
from abbench.snapshot._model import SnapshotSource

log = logging.getLogger(__name__)

_DUBIOUS = "dubious ownership"


def _env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    # A GIT_DIR inherited from a hook or a parent git command would point every call at the wrong repository.
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_CEILING_DIRECTORIES"):
        env.pop(name, None)
    env.update(GIT_TERMINAL_PROMPT="0", GIT_OPTIONAL_LOCKS="0", LC_ALL="C", LANGUAGE="C")
    return env


def _git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    """Run git in `cwd`; raises SnapshotError only when git itself is missing."""
    try:
        return subprocess.run(
            ["git", *args], cwd=cwd, env=_env(), capture_output=True, check=False, timeout=120
        )
    except FileNotFoundError as exc:
        raise SnapshotError(
            "git is not installed (or not on PATH); install git to snapshot from git"
        ) from exc


def _out(proc: subprocess.CompletedProcess[bytes]) -> str:
    out: bytes = proc.stdout
    return out.decode("utf-8", "surrogateescape").strip()


def _err(proc: subprocess.CompletedProcess[bytes]) -> str:
    """The last line git wrote to stderr (its actual complaint)."""
    lines = proc.stderr.decode("utf-8", "replace").strip().splitlines()
    return lines[-1] if lines else f"exit status {proc.returncode}"


def clean_remote_url(url: str) -> str:
    """A remote URL safe to store: user names and tokens removed from ``https://user:token@host/...``."""
    parts = urlsplit(url)
    if parts.scheme and parts.netloc and "@" in parts.netloc:
        host = parts.netloc.rpartition("@")[2]
        if parts.scheme in ("ssh", "git+ssh") and parts.password is None:
            return url  # ssh://git@host/... names an account, not a secret
        return urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))
    return url


@dataclass(frozen=True)
class Repo:
    """A git repository seen from a folder inside it.

    Attributes:
        top: The top-level folder of the working tree.
        prefix: The folder's path relative to `top` (forward slashes, ``""`` at the top).
    """

    top: Path
    prefix: str
    bare: bool = False


def find_repo(path: Path) -> Repo | str:
    """The repository holding `path`, or a sentence saying why there is none."""
    proc = _git(path, "rev-parse", "--show-toplevel", "--show-prefix")
    if proc.returncode != 0:
        err = _err(proc)
        if _DUBIOUS in proc.stderr.decode("utf-8", "replace"):
            return (
                f"git refuses the repository at {path} (dubious ownership); trust it with "
                f"'git config --global --add safe.directory <repo>'"
            )
        if "must be run in a work tree" in err:  # a bare repository (a CI mirror): git archive reads it
            bare = _git(path, "rev-parse", "--absolute-git-dir")
            if bare.returncode == 0 and _out(bare):
                return Repo(Path(_out(bare)), "", bare=True)
        return "not in a git repository" if "not a git repository" in err else f"git failed: {err}"
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    top = Path(lines[0])
    prefix = lines[1].strip().rstrip("/") if len(lines) > 1 else ""
    return Repo(top, prefix)


def remote_of(top: Path) -> str | None:
    """The URL of the repository's ``origin`` remote (else its first remote), credentials removed."""
    names = _out(_git(top, "remote")).split()
    if not names:
        return None
    name = "origin" if "origin" in names else names[0]
    proc = _git(top, "remote", "get-url", name)
    return clean_remote_url(_out(proc)) if proc.returncode == 0 and _out(proc) else None


def tag_of(top: Path, commit: str) -> str | None:
    """A tag pointing at `commit` (the highest version when several do), or None."""
    proc = _git(top, "tag", "--points-at", commit, "--sort=-v:refname")
    tags = _out(proc).splitlines() if proc.returncode == 0 else []
    return tags[0] if tags else None


def _status_entries(folder: Path) -> list[tuple[str, str]] | None:
    """(code, path relative to the top) for every change, untracked and ignored path under `folder`."""
    proc = _git(
        folder,
        "--no-optional-locks",
        "status",
        "--porcelain=v1",
        "-z",
        "--untracked-files=all",
        "--ignored=matching",
        "--",
        ".",
    )
    if proc.returncode != 0:
        return None
    tokens = proc.stdout.decode("utf-8", "surrogateescape").split("\0")
    out: list[tuple[str, str]] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if len(token) < 4:
            continue
        code, path = token[:2], token[3:]
        out.append((code, path))
        if code[0] in "RC" and i < len(tokens):  # a rename or copy is followed by its original path
            out.append((code, tokens[i]))
            i += 1
    return out


def folder_source(folder: Path, content: FolderContent) -> SnapshotSource:
    """Whether a folder's content is exactly a clean git commit, and which.

    A folder is a *draft* when it is outside git, in a repository with no commits, has tracked
    changes, untracked or git-ignored files that the snapshot holds, or holds a nested repository
    (whose files a commit of the outer one does not record). Otherwise the source names the
    repository, its remote, the commit, a tag pointing at it, and the sub-folder.
    """
    folder = folder.resolve()
    found = find_repo(folder)
    if isinstance(found, str):
        return SnapshotSource(draft=True, draft_reason=found, source_path=str(folder))
    if found.bare:  # a folder inside a bare repository's own files, not a skill in a commit
        return SnapshotSource(
            draft=True, draft_reason=f"inside the bare repository {found.top}", source_path=str(folder)
        )
    top, subdir = found.top, found.prefix or None
    remote = remote_of(top)
    base = {"repo": str(top), "remote": remote, "subdir": subdir, "source_path": str(folder)}
    proc = _git(folder, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    if proc.returncode != 0:
        return SnapshotSource(draft=True, draft_reason="the repository has no commits yet", **base)
    commit = _out(proc)
    entries = _status_entries(folder)
    if entries is None:
        return SnapshotSource(draft=True, draft_reason="git status failed", **base)
    prefix = f"{subdir}/" if subdir else ""
    paths = content.paths
    dirty: list[str] = []
    for code, path in entries:
        if prefix and not path.startswith(prefix):
            if path.endswith("/") and prefix.startswith(path):  # the whole folder sits in an ignored one
                dirty.append(
                    f"the whole folder ({'ignored by git' if code == '!!' else 'untracked'}: {path})"
                )
            continue
        rel = path[len(prefix) :]
        if code in ("??", "!!"):
            # Untracked and git-ignored paths matter only when the snapshot holds them.
            held = rel in paths or (rel.endswith("/") and any(p.startswith(rel) for p in paths))
            if held:
                dirty.append(rel + (" (untracked)" if code == "??" else " (ignored by git)"))
        elif not is_ignored_path(rel.rstrip("/")):
            dirty.append(rel)
    if dirty:
        listed = ", ".join(dirty[:5]) + (f" and {len(dirty) - 5} more" if len(dirty) > 5 else "")
        reason = f"{len(dirty)} uncommitted change(s) on top of {commit[:12]}: {listed}"
        return SnapshotSource(draft=True, draft_reason=reason, **base)
    if content.nested_git:
        reason = f"holds a nested git repository ({', '.join(content.nested_git)}) that {commit[:12]} does not record"
        return SnapshotSource(draft=True, draft_reason=reason, **base)
    return SnapshotSource(draft=False, commit=commit, tag=tag_of(top, commit), **base)


def _ref_choices(top: Path) -> str:
    tags = _out(_git(top, "tag", "--sort=-v:refname")).splitlines()
    branches = _out(_git(top, "branch", "--format=%(refname:short)")).splitlines()
    return ref_choices(branches, tags) or "the repository has no branches or tags"


def ref_choices(branches: Sequence[str], tags: Sequence[str]) -> str:
    """``branches: a, b; tags: v1, v2`` (the first ten of each), for a message naming an unknown ref;
    empty when there are neither."""

    def listed(kind: str, names: Sequence[str]) -> str:
        return f"{kind}: " + ", ".join(names[:10]) + (" ..." if len(names) > 10 else "")

    return "; ".join(listed(k, names) for k, names in (("branches", branches), ("tags", tags)) if names)


def normalize_subdir(subdir: str | None, prefix: str = "") -> str | None:
    """A sub-folder of a repository as a clean relative path (None for the top).

    Raises:
        SnapshotError: the path is absolute or climbs out of the repository with ``..``.
    """
    raw = (subdir or "").replace("\\", "/").strip()
    if raw.startswith("/") or (len(raw) > 1 and raw[1] == ":"):
        raise SnapshotError(f"subdir {subdir!r} is absolute; give it relative to the repository")
    joined = posixpath.normpath(posixpath.join(prefix, raw)) if (prefix or raw) else "."
    if joined == ".." or joined.startswith("../"):
        raise SnapshotError(f"subdir {subdir!r} leaves the repository; give a folder inside it")
    return None if joined == "." else joined


def read_git(
    top: Path, ref: str, subdir: str | None, limits: Limits
) -> tuple[FolderContent, SnapshotSource, list[str]]:
    """Read the skill folder `subdir` of commit `ref` with ``git archive`` (the work tree is never touched).

    Returns:
        The content, its source (not a draft), and warnings (submodules left out).

    Raises:
        SnapshotError: unknown ref (the message lists branches and tags), no such folder at that
            commit (lists the folders there), or content that breaks the snapshot rules.
    """
    if not ref or ref.startswith("-"):
        raise SnapshotError(f"git ref {ref!r} is not valid; give a commit, branch or tag (e.g. HEAD, v1.0)")
    proc = _git(top, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    if proc.returncode != 0:
        raise SnapshotError(f"git ref {ref!r} is not a commit in {top}; {_ref_choices(top)}")
    commit = _out(proc)
    treeish = f"{commit}:{subdir}" if subdir else commit
    if subdir:
        kind = _out(_git(top, "cat-file", "-t", treeish))
        if kind != "tree":
            parent = posixpath.dirname(subdir)
            listing = _out(
                _git(top, "ls-tree", "-d", "--name-only", f"{commit}:{parent}" if parent else commit)
            )
            what = "is a file, not a folder" if kind == "blob" else "does not exist"
            raise SnapshotError(
                f"{subdir!r} {what} at {ref} ({commit[:12]}) in {top}; folders in "
                f"{parent or 'the top'} there: {', '.join(listing.splitlines()[:30]) or '(none)'}"
            )
    warnings = _precheck(top, treeish, f"{ref}:{subdir or '.'}", limits)
    shown = f"{top.name}@{ref}" + (f":{subdir}" if subdir else "")
    with tempfile.TemporaryDirectory(prefix="abbench-git-") as tmp:
        raw = Path(tmp) / "tree"
        raw.mkdir()
        _extract(top, treeish, raw, shown)
        content = read_folder(raw, limits, shown_as=shown)
    source = SnapshotSource(
        draft=False,
        repo=str(top),
        remote=remote_of(top),
        commit=commit,
        tag=tag_of(top, commit),
        git_ref=ref,
        subdir=subdir,
        source_path=str(top / subdir) if subdir else str(top),
    )
    return content, source, warnings


def _precheck(top: Path, treeish: str, shown: str, limits: Limits) -> list[str]:
    """Check sizes from ``git ls-tree`` before anything is extracted; warn about submodules."""
    proc = _git(top, "ls-tree", "-r", "-l", "-z", treeish)
    if proc.returncode != 0:
        raise SnapshotError(f"cannot list {shown} in {top}: {_err(proc)}")
    warnings: list[str] = []
    total = count = 0
    problems: list[str] = []
    for record in proc.stdout.decode("utf-8", "surrogateescape").split("\0"):
        if not record:
            continue
        meta, _, path = record.partition("\t")
        _mode, kind, _sha, size = meta.split()
        if is_ignored_path(path):
            continue
        if kind == "commit":
            warnings.append(f"{path}: a git submodule; its files are not part of a snapshot taken from git")
            continue
        if kind != "blob" or size == "-":
            continue
        count += 1
        total += int(size)
        if int(size) > limits.max_file_bytes:
            problems.append(
                f"{path}: {human_size(int(size))}, over the {human_size(limits.max_file_bytes)} per-file "
                f"limit; raise the limit (max_file_bytes=, CLI --max-file-size)"
            )
    if count > limits.max_files:
        problems.append(f"{count} files, over the limit of {limits.max_files} (max_files=)")
    if total > limits.max_total_bytes:
        problems.append(
            f"the files add up to {human_size(total)}, over the {human_size(limits.max_total_bytes)} total "
            f"limit (max_total_bytes=, CLI --max-total-size)"
        )
    if problems:
        raise SnapshotError(f"cannot snapshot {shown} of {top}:\n  " + "\n  ".join(problems[:20]))
    return warnings


def _extract(top: Path, treeish: str, dest: Path, shown: str) -> None:
    """Stream ``git archive`` into `dest`, refusing members that would land outside it."""
    with subprocess.Popen(
        ["git", "archive", "--format=tar", treeish],
        cwd=top,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        try:
            with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
                # The "data" filter refuses absolute paths, '..' and links that leave `dest`.
                tar.extractall(dest, filter="data")
        except tarfile.FilterError as exc:
            proc.kill()
            member = getattr(exc, "tarinfo", None)
            name = member.name if member is not None else "?"
            raise SnapshotError(
                f"cannot snapshot {shown}: {name} would land outside the skill folder ({exc}); "
                f"symlinks and paths must stay inside it"
            ) from exc
        except tarfile.TarError as exc:
            proc.kill()
            raise SnapshotError(f"cannot read git archive of {shown}: {exc}") from exc
        finally:
            stderr = proc.stderr.read() if proc.stderr else b""
        if proc.wait() != 0:
            raise SnapshotError(
                f"git archive failed for {shown}: {stderr.decode('utf-8', 'replace').strip()}"
            )


def locate(path: Path) -> tuple[Path, str]:
    """The nearest existing folder at or above `path`, and the rest of `path` below it (forward slashes).

    A skill folder asked for at an old ref may no longer exist in the work tree; its repository is
    found from the closest folder that does.
    """
    path = Path(os.path.abspath(path.expanduser()))
    rest: list[str] = []
    while not path.is_dir():
        if path.parent == path:
            break
        rest.append(path.name)
        path = path.parent
    return path, "/".join(reversed(rest))

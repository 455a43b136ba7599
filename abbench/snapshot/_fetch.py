"""A skill folder from a git URL and ref: a shallow clone with the ``git`` CLI, then the usual snapshot checks.

The URL is checked before git sees it: only the allowed schemes (``https`` and ``ssh`` unless the
caller allows more), never a ``transport::address`` form (``ext::`` runs a command, ``fd::`` reads a
file descriptor) nor anything starting with ``-`` (an option). Git is told the same: every protocol
is refused (``protocol.allow=never``) except the allowed ones, prompts are off, no credential helper
runs or stores anything, and the URL follows ``--``. Every git call shares one deadline, and the
clone is stopped once its folder holds more than `max_fetch_bytes`.

The clone is read like any repository (`read_git`: sizes checked from ``git ls-tree`` before anything
is extracted) and removed; the snapshot records the URL (credentials removed), the commit and the ref.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from abbench.errors import SnapshotError
from abbench.snapshot._build import PreparedSnapshot, prepare_snapshot
from abbench.snapshot._content import DEFAULT_MAX_FILE_BYTES, DEFAULT_MAX_FILES, DEFAULT_MAX_TOTAL_BYTES
from abbench.snapshot._git import _env, clean_remote_url, normalize_subdir, ref_choices

DEFAULT_SCHEMES = frozenset({"https", "ssh"})
"""URL schemes a server accepts unless its settings allow more (``file``, ``http``, ``git``)."""
KNOWN_SCHEMES = frozenset({"https", "http", "ssh", "git", "file"})
_SCP = re.compile(r"^([\w.-]+@)?[\w.-]+:(?!//)")
_HEXREF = re.compile(r"^[0-9a-fA-F]{4,40}$")


class GitFetchError(SnapshotError):
    """A git URL that cannot give a snapshot; `kind` says why.

    ``refused`` (the URL or path is not allowed), ``unknown-ref``, ``unreachable`` (git could not read
    the repository), ``timeout``, ``too-large`` (the clone passed `max_fetch_bytes`).
    """

    kind: str

    def __init__(self, kind: str, message: str):
        super().__init__(message, kind=kind)


def url_scheme(url: str) -> str:
    """The scheme git would use for `url` (``ssh`` for ``user@host:path``, ``file`` for a bare path).

    Raises:
        GitFetchError: an option (``-...``), a ``transport::address`` URL, or a scheme git does not know.
    """
    if not url or url.startswith("-"):
        raise GitFetchError("refused", f"git URL {url!r} is not valid; give an https:// or ssh:// URL")
    if "::" in url.split("/", 1)[0] or re.match(r"^[A-Za-z][\w+.-]*::", url):
        raise GitFetchError(
            "refused", f"git URL {url!r} uses a transport:: form (ext::, fd::), which is never allowed"
        )
    if "://" in url:
        scheme = urlsplit(url).scheme.lower()
        scheme = "ssh" if scheme in ("git+ssh", "ssh+git") else scheme
        if scheme not in KNOWN_SCHEMES:
            raise GitFetchError("refused", f"git URL scheme {scheme!r} is not supported; use https or ssh")
        return scheme
    return "ssh" if _SCP.match(url) else "file"


def _git_args(schemes: frozenset[str]) -> list[str]:
    args = ["git", "-c", "protocol.allow=never"]
    for scheme in sorted(KNOWN_SCHEMES | {"ext", "fd"}):  # each named: a config file cannot turn one on
        args += ["-c", f"protocol.{scheme}.allow={'always' if scheme in schemes else 'never'}"]
    # no helper reads or stores a credential; no hooks or templates from the machine's config
    return [*args, "-c", "credential.helper=", "-c", "core.hooksPath=/dev/null", "-c", "init.templateDir="]


_CREDENTIAL_ENV = ("SSH_AUTH_SOCK", "GIT_SSH", "GIT_SSH_VARIANT", "GIT_ASKPASS", "SSH_ASKPASS", "NETRC")


def anonymous_env(home: Path) -> dict[str, str]:
    """What git runs with when it may use none of this machine's credentials: a `home` of its own (no
    ``~/.netrc`` for https, no ``~/.ssh`` config), no SSH agent, and ssh told to offer no key.

    ssh reads its keys from the account's home whatever ``$HOME`` says, so it is told explicitly:
    no config file, no identity file, no agent; an unknown host key is accepted into a known-hosts
    file of the clone's own (no credential goes to it either way).
    """
    home.mkdir(parents=True, exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in _CREDENTIAL_ENV}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"))
    env["GIT_SSH_COMMAND"] = (
        "ssh -F /dev/null -o BatchMode=yes -o IdentitiesOnly=yes -o IdentityFile=none -o IdentityAgent=none "
        f"-o GlobalKnownHostsFile=/dev/null -o UserKnownHostsFile={home / 'known_hosts'} "
        "-o StrictHostKeyChecking=accept-new"
    )
    return env


class _Fetch:
    """One clone: its folder, the allowed schemes, the deadline, the byte budget and whose credentials."""

    def __init__(
        self,
        url: str,
        dest: Path,
        schemes: frozenset[str],
        timeout: float,
        max_bytes: int,
        anonymous: bool = False,
    ):
        self.url, self.dest, self.schemes = url, dest, schemes
        self.shown = clean_remote_url(url)  # in messages: never a token a URL carried
        self.timeout, self.deadline, self.max_bytes = timeout, time.monotonic() + timeout, max_bytes
        base = anonymous_env(dest.parent / "home") if anonymous else os.environ
        # neither the machine's nor the user's git config (url.*.insteadOf, helpers) takes part
        self.env = {**_env(base), "GIT_ASKPASS": "true", "SSH_ASKPASS": "true", "GIT_CONFIG_NOSYSTEM": "1"}
        self.env["GIT_CONFIG_GLOBAL"] = os.devnull
        self.env.setdefault("GIT_SSH_COMMAND", "ssh -o BatchMode=yes")

    def run(self, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
        """Run git; the clone's folder is watched so a repository over the budget is stopped early."""
        try:
            proc = subprocess.Popen(
                [*_git_args(self.schemes), *args],
                cwd=cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        except FileNotFoundError as exc:
            raise SnapshotError("git is not installed on this machine (or not on PATH)") from exc
        try:  # communicate() drains the pipes; between its waits the deadline and the folder are checked
            while True:
                try:
                    stdout, stderr = proc.communicate(timeout=min(0.2, self._left()))
                    break
                except subprocess.TimeoutExpired:
                    self._check(proc)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self._check(proc)
        return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)

    def _left(self) -> float:
        return max(self.deadline - time.monotonic(), 0.01)

    def _check(self, proc: subprocess.Popen[bytes]) -> None:
        if time.monotonic() >= self.deadline:
            proc.kill()
            raise GitFetchError(
                "timeout",
                f"reading {self.shown} took longer than {self.timeout:g} s; try a smaller repository, "
                "or ask whoever runs the server to raise the git timeout",
            )
        size = _folder_bytes(self.dest)
        if size > self.max_bytes:
            proc.kill()
            raise GitFetchError(
                "too-large",
                f"the repository at {self.shown} is over this server's limit of {self.max_bytes:,} bytes "
                f"(the upload limit); snapshot a smaller repository, or upload the skill folder alone",
            )


def _folder_bytes(folder: Path) -> int:
    total = 0
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def _last(proc: subprocess.CompletedProcess[bytes]) -> str:
    """Git's complaint: its first ``fatal:`` line (what follows is advice), else its last line."""
    lines = [ln.strip() for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    fatal = [ln.removeprefix("fatal: ") for ln in lines if ln.startswith("fatal:")]
    return fatal[0] if fatal else (lines[-1] if lines else f"exit status {proc.returncode}")


def _remote_refs(fetch: _Fetch) -> dict[str, str]:
    """refname -> sha of what the URL offers (``git ls-remote``); unreachable raises."""
    proc = fetch.run("ls-remote", "--", fetch.url)
    if proc.returncode != 0:
        raise GitFetchError(
            "unreachable",
            f"cannot read the git repository at {fetch.shown}: {_last(proc)}; check the URL and that "
            "this server can reach it (no password prompt is possible: use a public URL or a deploy key)",
        )
    refs: dict[str, str] = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        sha, _, name = line.partition("\t")
        refs[name.strip()] = sha.strip()
    return refs


def _choices(refs: dict[str, str]) -> str:
    branches = sorted(n[len("refs/heads/") :] for n in refs if n.startswith("refs/heads/"))
    tags = {n[len("refs/tags/") :].removesuffix("^{}") for n in refs if n.startswith("refs/tags/")}
    return ref_choices(branches, sorted(tags)) or "it has no branches or tags"


def _unknown(url: str, ref: str, refs: dict[str, str]) -> GitFetchError:
    return GitFetchError(
        "unknown-ref",
        f"git ref {ref!r} is not a branch, tag or commit of {url}; {_choices(refs)}",
    )


def clone_ref(fetch: _Fetch, ref: str) -> str:
    """Clone `ref` of the URL into ``fetch.dest`` (shallow where git allows it); the commit's full sha."""
    if ref.startswith("-") or not ref.strip():
        raise GitFetchError("refused", f"git ref {ref!r} is not valid; give a branch, tag or commit")
    refs = _remote_refs(fetch)
    dest = str(fetch.dest)
    named = ref in ("HEAD",) or any(n in refs for n in (f"refs/heads/{ref}", f"refs/tags/{ref}", ref))
    if named:
        branch = (
            [] if ref == "HEAD" else ["--branch", ref.removeprefix("refs/heads/").removeprefix("refs/tags/")]
        )
        proc = fetch.run("clone", "--no-checkout", "--depth", "1", *branch, "--", fetch.url, dest)
        if proc.returncode != 0:
            raise GitFetchError("unreachable", f"cannot clone {fetch.shown} at {ref}: {_last(proc)}")
        return _commit(fetch, "HEAD", ref, refs)
    if not _HEXREF.match(ref):
        raise _unknown(fetch.shown, ref, refs)
    init = fetch.run("init", "--quiet", "--", dest)
    if init.returncode != 0:
        raise SnapshotError(f"git init failed in the server's work folder: {_last(init)}")
    fetch.run("remote", "add", "origin", "--", fetch.url, cwd=fetch.dest)
    shallow = (
        len(ref) == 40 and fetch.run("fetch", "--depth", "1", "origin", ref, cwd=fetch.dest).returncode == 0
    )
    if not shallow:  # an abbreviated sha (or a server refusing a sha): every branch and tag, then look
        proc = fetch.run("fetch", "--tags", "origin", "+refs/heads/*:refs/remotes/origin/*", cwd=fetch.dest)
        if proc.returncode != 0:
            raise GitFetchError("unreachable", f"cannot fetch {fetch.shown}: {_last(proc)}")
    return _commit(fetch, "FETCH_HEAD" if shallow else ref, ref, refs)


def _commit(fetch: _Fetch, rev: str, ref: str, refs: dict[str, str]) -> str:
    proc = fetch.run("rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}", cwd=fetch.dest)
    if proc.returncode != 0:
        raise _unknown(fetch.shown, ref, refs)
    return proc.stdout.decode().strip()


def prepare_from_url(
    url: str,
    ref: str = "HEAD",
    path: str | None = None,
    *,
    workdir: str | os.PathLike[str] | None = None,
    schemes: frozenset[str] = DEFAULT_SCHEMES,
    timeout: float = 120.0,
    max_fetch_bytes: int = 200 * 1024 * 1024,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
    anonymous: bool = False,
) -> PreparedSnapshot:
    """Clone `ref` of the git repository at `url` and read its folder `path` as a snapshot's content.

    Args:
        url: The repository (``https://...``, ``ssh://...``, ``git@host:path``; ``file://`` when allowed).
        ref: A branch, a tag or a commit sha (abbreviated ones need a full fetch).
        path: The skill folder inside the repository (None: its top).
        workdir: Where the temporary clone goes (removed before returning).
        schemes: The URL schemes allowed.
        timeout: Seconds all git calls may take together.
        max_fetch_bytes: The clone is stopped once its folder holds more.
        anonymous: Clone without this machine's credentials (its SSH keys and agent, ``~/.netrc``):
            what a server does for a URL a caller chose (`anonymous_env`).

    Raises:
        GitFetchError: a refused URL or path, an unknown ref, an unreachable repository, a timeout or
            a repository over `max_fetch_bytes`.
        SnapshotError: the folder breaks the snapshot rules (as a folder on disk would).
    """
    scheme = url_scheme(url)
    if scheme not in schemes:
        allowed = ", ".join(sorted(schemes))
        raise GitFetchError(
            "refused", f"git URL scheme {scheme!r} is not allowed here (allowed: {allowed}); use one of those"
        )
    try:
        subdir = normalize_subdir(path)
    except SnapshotError as exc:
        raise GitFetchError("refused", f"path: {exc}") from None
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix="git-", dir=workdir))
    try:
        fetch = _Fetch(url, tmp / "repo", schemes, timeout, max_fetch_bytes, anonymous)
        commit = clone_ref(fetch, ref)
        try:
            prepared = prepare_snapshot(
                repo=fetch.dest,
                git_ref=commit,
                subdir=subdir,
                max_file_bytes=max_file_bytes,
                max_total_bytes=max_total_bytes,
                max_files=max_files,
            )
        except GitFetchError:
            raise
        except SnapshotError as exc:  # name the URL and the ref asked for, not the temporary clone
            text = str(exc).replace(str(fetch.dest), fetch.shown).replace(f"at {commit}", f"at {ref}")
            raise SnapshotError(text) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    shown = clean_remote_url(url)
    source = dataclasses.replace(prepared.source, repo=shown, remote=shown, git_ref=ref, source_path=shown)
    return dataclasses.replace(prepared, source=source)

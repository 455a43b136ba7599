"""Commands for skill snapshots: snapshot, snapshots, show-ref, diff-skill."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from abbench._text import clip
from abbench.cli._app import Context, cli, emit, json_option, no_color, pass_ctx
from abbench.snapshot import build_snapshot, diff_snapshots, human_size

if TYPE_CHECKING:
    from abbench.snapshot import Snapshot, TakenSnapshot

MAX_FILES = 5000
"""``--max-files``'s default: `abbench.snapshot.DEFAULT_MAX_FILES` (a test checks they agree), written out
so that loading the CLI does not load the snapshot package (a sixth of `abbench --help`'s start-up)."""

_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "m": 1024**2, "mb": 1024**2, "g": 1024**3, "gb": 1024**3}


class ByteSize(click.ParamType[int, Any]):
    """A size in bytes, written ``5MB``, ``500k``, ``1.5 MB`` or ``1048576`` (binary units)."""

    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(value))
        unit = m.group(2).lower() if m else ""
        if not m or unit not in _UNITS:
            self.fail(f"{value!r} is not a size; write e.g. 5MB, 500KB, 1GB or a number of bytes", param, ctx)
        size = int(float(m.group(1)) * _UNITS[unit])
        if size <= 0:
            self.fail(f"{value!r} must be more than zero", param, ctx)
        return size


def _style(text: str, **kw: Any) -> str:
    return text if no_color() else click.style(text, **kw)


def _human_size(n: int) -> str:
    return human_size(n)


def _print_snapshot(taken: TakenSnapshot) -> None:
    snap = taken.snapshot
    status = "  stored (new)" if taken.new else f"  already stored (first taken {taken.first_taken_at})"
    click.echo(_style(snap.label, bold=True) + status)
    if snap.draft:
        source = "draft" + (f": {snap.draft_reason}" if snap.draft_reason else "")
    else:
        source = f"commit {snap.commit}" + (f" (tag {snap.tag})" if snap.tag else "")
    rows = [
        ("hash", snap.hash),
        ("source", source),
    ]
    if snap.repo:
        where = snap.repo + (f" ({snap.remote})" if snap.remote else "")
        rows.append(("repo", where + (f", folder {snap.subdir}" if snap.subdir else "")))
    if snap.git_ref:
        rows.append(("git ref", snap.git_ref))
    binary = sum(f.binary for f in snap.files)
    rows.append(
        (
            "files",
            f"{len(snap.files)} ({_human_size(snap.size)})"
            + (f", {binary} binary (not indexed)" if binary else ""),
        )
    )
    rows.append(("refs", f"{taken.n_refs} sections"))
    if snap.description:
        desc = clip(snap.description, 90)
        rows.append(("about", desc))
    if taken.folder is not None:  # a server's folders are its own
        rows.append(("folder", str(taken.folder)))
    for key, value in rows:
        click.echo(f"  {key:<8} {value}")
    for warning in snap.warnings:
        click.echo(_style(f"  warning  {warning}", fg="yellow"))


@cli.command("snapshot")
@click.argument("folder", metavar="[DIR]", required=False)
@click.option(
    "--git",
    "git_url",
    metavar="URL",
    help="Clone this git repository (shallow, into a temporary folder) and snapshot a folder of it.",
)
@click.option("--ref", metavar="REF", help="With --git: a branch, tag or commit (default HEAD).")
@click.option("--path", "sub", metavar="SUB", help="With --git: the skill folder inside the repository.")
@click.option(
    "--git-ref", metavar="REF", help="Take the folder's content at this commit, branch or tag (git archive)."
)
@click.option(
    "--repo",
    metavar="PATH",
    type=click.Path(file_okay=False),
    help="Read from this git repository (a bare one too); DIR is then the skill folder relative to it "
    "(default ref HEAD).",
)
@click.option(
    "--max-file-size",
    type=ByteSize(),
    default="5MB",
    show_default=True,
    help="Refuse files larger than this.",
)
@click.option(
    "--max-total-size",
    type=ByteSize(),
    default="50MB",
    show_default=True,
    help="Refuse skills whose files add up to more.",
)
@click.option(
    "--max-files",
    type=click.IntRange(min=1),
    default=MAX_FILES,
    show_default=True,
    help="Refuse more files.",
)
@click.option("-q", "--quiet", is_flag=True, help="Print the hash alone (for V=$(abbench snapshot -q DIR)).")
@json_option
@pass_ctx
def snapshot_cmd(
    ctx: Context,
    folder: str | None,
    git_url: str | None,
    ref: str | None,
    sub: str | None,
    git_ref: str | None,
    repo: str | None,
    max_file_size: int,
    max_total_size: int,
    max_files: int,
    quiet: bool,
    as_json: bool,
) -> None:
    """Snapshot a skill folder (or a git ref of it) into the store.

    Copies every file of DIR (the folder holding SKILL.md) into the store under its content hash and
    indexes every Markdown heading as a reference PATH#HEADING. A folder outside git or with
    uncommitted changes is a draft; a clean commit records repository, commit and tag. Taking the
    same content again stores nothing new.

    \b
    Examples:
      abbench snapshot skills/fast-slow-routing
      abbench snapshot skills/fast-slow-routing --git-ref v1      # the folder as committed at tag v1
      abbench snapshot skills/routing --repo ~/src/agent-skills --git-ref main~3
      abbench snapshot skills/big-skill --max-file-size 20MB --json
      abbench snapshot --git https://github.com/org/skills --ref v1 --path skills/routing
      V2=$(abbench snapshot -q skills/fast-slow-routing)      # the hash alone, for a definition
    """
    backend = ctx.backend
    limits = {"max_file_bytes": max_file_size, "max_total_bytes": max_total_size, "max_files": max_files}
    if ctx.server is not None:
        _on_a_server(git_ref, repo)
        limits = {}  # the server's own
    if git_url is not None:
        if folder is not None or git_ref is not None or repo is not None:
            raise click.UsageError("--git URL takes --ref and --path, not DIR, --git-ref or --repo")
        taken = backend.snapshot_git(git_url, ref or "HEAD", sub, **limits)
    else:
        if folder is None:
            raise click.UsageError("give the skill folder DIR, or --git URL [--ref REF] [--path SUB]")
        if ref or sub:
            raise click.UsageError("--ref and --path go with --git URL (for a local repository: --git-ref)")
        taken = backend.snapshot_skill(folder, git_ref=git_ref, repo=repo, **limits)
    emit(as_json, taken.as_dict(), taken.snapshot.hash if quiet else lambda: _print_snapshot(taken))


def _on_a_server(git_ref: str | None, repo: str | None) -> None:
    """With ``--server``: a folder's files are sent (as they are now) or the server clones a URL; the
    limits are the server's."""
    if git_ref is not None or repo is not None:
        raise click.UsageError(
            "--git-ref and --repo read a repository of this machine: with --server, name the repository "
            "the server clones (--git URL --ref REF --path SUB), or drop --server"
        )
    given = click.get_current_context()
    for name in ("max_file_size", "max_total_size", "max_files"):
        if given.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE:
            raise click.UsageError(
                f"--{name.replace('_', '-')} is the local store's limit: a server applies its own "
                "(`abbench serve --max-request-mb`); drop it with --server"
            )


@cli.command("snapshots")
@click.option("--skill", metavar="NAME", help="Only the snapshots of this skill.")
@json_option
@pass_ctx
def snapshots_cmd(ctx: Context, skill: str | None, as_json: bool) -> None:
    """List the stored skill snapshots.

    \b
    Examples:
      abbench snapshots
      abbench snapshots --skill fast-slow-routing --json
    """
    store = ctx.store
    snaps = store.snapshots.all(skill)
    refs = {s.hash: len(store.snapshots.references(s)) for s in snaps}
    data = [{**s.to_dict(files=False), "n_refs": refs[s.hash]} for s in snaps]

    def human() -> None:
        if not snaps:
            which = f" of {skill}" if skill else ""
            click.echo(f"no snapshots{which} yet; take one with: abbench snapshot DIR")
            return
        header = f"{'SKILL':<24} {'HASH':<12}  {'SOURCE':<32} {'FILES':>5} {'REFS':>5}  CREATED"
        click.echo(_style(header, bold=True))
        for s in snaps:
            if s.draft:
                source = "draft"
            else:
                source = (s.tag or (s.commit or "?")[:12]) + (
                    f" @ {s.git_ref}" if s.git_ref and s.git_ref != s.tag else ""
                )
            click.echo(
                f"{s.skill_name:<24} {s.short:<12}  {source[:32]:<32} {len(s.files):>5} {refs[s.hash]:>5}  "
                f"{s.created_at or ''}"
            )

    emit(as_json, data, human)


@cli.command("show-ref")
@click.argument("snapshot", metavar="SNAPSHOT")
@click.argument("ref", metavar="PATH#HEADING", required=False)
@json_option
@pass_ctx
def show_ref_cmd(ctx: Context, snapshot: str, ref: str | None, as_json: bool) -> None:
    """Print a section of a snapshot, or list its references.

    SNAPSHOT is a hash prefix (6+ hex digits), NAME@PREFIX, or a skill name (its latest snapshot).
    PATH#HEADING is a reference as agents cite it; case and punctuation are forgiven
    (SKILL.md#fast-system finds "SKILL.md#Fast system"). Without it, every reference is listed.

    \b
    Examples:
      abbench show-ref fast-slow-routing "SKILL.md#Rules"
      abbench show-ref fast-slow-routing@1a2b3c "knowledge/车控.md#空调"
      abbench show-ref 1a2b3c4d                       # list the references
    """
    store = ctx.store
    snap = store.snapshots.get(snapshot)
    if ref is None:
        refs = store.snapshots.references(snap)
        emit(as_json, {"snapshot": snap.label, "hash": snap.hash, "refs": refs}, "\n".join(refs))
        return
    section = store.snapshots.resolve_reference(snap, ref)
    data = {
        "snapshot": snap.label,
        "hash": snap.hash,
        "ref": section.ref,
        "path": section.path,
        "heading": section.heading,
        "level": section.level,
        "parents": list(section.parents),
        "start_line": section.start_line,
        "end_line": section.end_line,
        "text": section.text,
    }
    emit(as_json, data, section.text)


def _side(ctx: Context, arg: str) -> Snapshot:
    # An existing folder is read from disk as it is now; anything else names a stored snapshot.
    if Path(arg).expanduser().is_dir():
        return build_snapshot(arg)
    stored: Snapshot = ctx.store.snapshots.get(arg)
    return stored


def _print_diff_line(line: str) -> None:
    if line.startswith(("+++", "---")):
        click.echo(_style(line, bold=True))
    elif line.startswith("@@"):
        click.echo(_style(line, fg="cyan"))
    elif line.startswith("+"):
        click.echo(_style(line, fg="green"))
    elif line.startswith("-"):
        click.echo(_style(line, fg="red"))
    else:
        click.echo(line)


@cli.command("diff-skill")
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@click.option("--stat", is_flag=True, help="Only the summary, without the text of changed sections.")
@click.option(
    "-U",
    "--context",
    "context",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Lines of context around each change.",
)
@json_option
@pass_ctx
def diff_skill_cmd(ctx: Context, a: str, b: str, stat: bool, context: int, as_json: bool) -> None:
    """Compare two skill versions: files and sections that changed.

    Lists files and sections (by reference) added, removed and changed.

    A and B are stored snapshots (hash prefix, NAME@PREFIX, or skill name) or skill folders on disk
    (an existing folder is read as it is now). Changed sections are shown as unified diffs.

    \b
    Examples:
      abbench diff-skill fast-slow-routing@1a2b3c fast-slow-routing@9f8e7d
      abbench diff-skill fast-slow-routing@1a2b3c skills/fast-slow-routing   # stored v1 vs the folder now
      abbench diff-skill data/demo/skill-v1 data/demo/skill-v2 --stat
    """
    diff = diff_snapshots(_side(ctx, a), _side(ctx, b))
    if as_json:
        emit(True, diff.to_dict(text=not stat))
        return
    click.echo(diff.summary())
    if stat:
        return
    for change in diff.sections_changed:
        click.echo()
        for line in change.unified_diff(context).splitlines():
            _print_diff_line(line)

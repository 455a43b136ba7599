"""Store methods for snapshots: copy a skill into the store once per content hash, find it again by ref.

Identity and provenance: a snapshot *is* its content hash. Taking the same content again (from the
same folder, a commit that recorded it, a tag) stores nothing new; every taking is appended to
``snapshot_sources``, and the ``snapshots`` row shows the best one: a clean commit replaces a draft,
the first commit recorded stays (a later commit with identical content is only listed as a source),
and a tag added later to that same commit is filled in. Skill name, folder and warnings come from
the first taking.

Atomicity: files are written into a temporary folder inside the store, then the rows are inserted
and the folder renamed into place within one transaction; any failure leaves neither rows nor folder.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

from abbench import _actions as do
from abbench.errors import Action, NotFoundError, StoreError, UsageError
from abbench.snapshot import (
    Snapshot,
    SnapshotFile,
    SnapshotSource,
    TakenSnapshot,
    version_label,
)
from abbench.store._base import current_user, dumps, loads, now_iso
from abbench.store._noun import Noun
from abbench.types import Section

if TYPE_CHECKING:
    from abbench.snapshot import PreparedSnapshot

log = logging.getLogger(__name__)

_HEX = re.compile(r"[0-9a-f]+")
_TMP_PREFIX = ".tmp-"
_STALE_TMP_SECONDS = 24 * 3600
MIN_PREFIX = 6
"""Fewest hex digits a bare hash prefix may have (``name@prefix`` accepts 4)."""


def _move_into_place(src: Path, dst: Path) -> None:
    # Same filesystem (both inside the store), so this is an atomic rename.
    os.replace(src, dst)


def _provenance_from_row(row: sqlite3.Row) -> dict[str, Any]:
    """The provenance fields `Snapshot` and `SnapshotSource` share, from a ``snapshots`` or
    ``snapshot_sources`` row (both tables name these columns alike)."""
    return {
        "draft": bool(row["draft"]),
        "draft_reason": row["draft_reason"],
        "repo": row["repo"],
        "remote": row["remote"],
        "commit": row["commit_sha"],
        "tag": row["tag"],
        "git_ref": row["git_ref"],
        "subdir": row["subdir"],
        "source_path": row["source_path"],
    }


def _source_from_row(row: sqlite3.Row) -> SnapshotSource:
    return SnapshotSource(**_provenance_from_row(row), taken_at=row["taken_at"], taken_by=row["taken_by"])


def _where_from(source: SnapshotSource) -> tuple[str | None, ...]:
    """The source's repo, remote, commit_sha, tag, git_ref, subdir and source_path columns, in that order."""
    return (
        source.repo,
        source.remote,
        source.commit,
        source.tag,
        source.git_ref,
        source.subdir,
        source.source_path,
    )


def _insert_source(
    conn: sqlite3.Connection, snapshot: str, source: SnapshotSource, taken_at: str, taken_by: str
) -> None:
    """Record one taking of a snapshot's content (every taking is kept, the best shown)."""
    conn.execute(
        "INSERT INTO snapshot_sources (snapshot, draft, draft_reason, repo, remote, commit_sha, tag,"
        " git_ref, subdir, source_path, taken_at, taken_by) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
        (snapshot, int(source.draft), source.draft_reason, *_where_from(source), taken_at, taken_by),
    )


class SnapshotOptions(TypedDict, total=False):
    """What `Snapshots.freeze` hands on to `abbench.snapshot.prepare_snapshot` beside the folder (its
    defaults are that function's)."""

    git_ref: str | None
    repo: str | os.PathLike[str] | None
    subdir: str | None
    max_file_bytes: int
    max_total_bytes: int
    max_files: int


class Snapshots(Noun):
    """Reading and writing snapshots (part of ``store.snapshots``)."""

    # -- writing -----------------------------------------------------------------------------------

    def freeze(
        self, folder: str | os.PathLike[str] | None = None, **options: Unpack[SnapshotOptions]
    ) -> Snapshot:
        """Copy a skill into the store (once per content) and return the stored snapshot.

        The files land in ``snapshots/<skill-name>/<content-hash>/``; the returned snapshot's `root`
        is that folder. Taking identical content again returns the stored snapshot and only records
        the new source (see the module docstring for how provenance is kept).

        Args:
            folder: The skill folder. With `git_ref`, the folder's content at that ref; with
                `repo`, a path relative to the repository (like `subdir`).
            git_ref: A commit, branch or tag to read with ``git archive`` (the work tree is never touched).
            repo: A git repository to read from (default ref ``HEAD``).
            subdir: The skill folder inside `repo`.
            max_file_bytes: Largest single file accepted (default 5 MB).
            max_total_bytes: Largest total accepted (default 50 MB).
            max_files: Most files accepted (default 5,000).

        Raises:
            SnapshotError: the content breaks the snapshot rules, or git cannot provide it.
            UsageError: the arguments do not fit together.
        """
        from abbench.snapshot import prepare_snapshot  # here: reading snapshots needs no builder (nor yaml)

        return self.add_prepared(prepare_snapshot(folder, **options, exclude=self._store.path))

    def add_prepared(self, prepared: PreparedSnapshot) -> Snapshot:
        """Store content already read and checked (`abbench.snapshot.prepare_snapshot`); as `snapshot_skill`.

        The way in for content whose provenance the caller sets itself: a clone of a git URL
        (`abbench.snapshot.prepare_from_url`) records the URL, not the temporary clone.
        """
        if self._store.read_only:
            raise self._store.refuse_write(
                f"a snapshot of {prepared.source.source_path or prepared.info.name}"
            )
        snapshots_dir = self._store.path / "snapshots"
        snapshots_dir.mkdir(exist_ok=True)
        self._sweep_stale_tmp(snapshots_dir)
        source = prepared.source
        taken_at, taken_by = now_iso(), current_user()
        tmp = Path(tempfile.mkdtemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-", dir=snapshots_dir))
        placed: Path | None = None  # a folder this call moved into place, removed again if the rows fail
        try:
            content = prepared.write_to(tmp / "content")
            built = prepared.to_snapshot(content)
            with self._store.transaction() as conn:
                row = conn.execute("SELECT * FROM snapshots WHERE hash = ?", (built.hash,)).fetchone()
                if row is None:
                    placed = self._store_new_snapshot(conn, built, content, taken_at, taken_by)
                else:
                    self._update_provenance(conn, row, source)
                    self._restore_files(row, content)
                    log.info("snapshot %s@%s was already stored", row["skill_name"], row["hash"][:12])
                _insert_source(conn, built.hash, source, taken_at, taken_by)
        except BaseException:
            if placed is not None:
                shutil.rmtree(placed, ignore_errors=True)
            raise
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return self.get(built.hash)

    def _store_new_snapshot(
        self, conn: sqlite3.Connection, built: Snapshot, content: Path, taken_at: str, taken_by: str
    ) -> Path:
        """Insert a new snapshot's rows and move its files into place; the folder it placed."""
        from abbench.snapshot import safe_folder_name

        relative = f"snapshots/{safe_folder_name(built.skill_name)}/{built.hash}"
        final = self._store.path / relative
        self._insert_snapshot(conn, built, relative, taken_at, taken_by)
        if final.exists():  # left by a crash between rename and commit: no row points at it
            shutil.rmtree(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        _move_into_place(content, final)
        # inside a caller's transaction (a try) that may still roll back: the files go too
        self._store.on_rollback(lambda: shutil.rmtree(final, ignore_errors=True))
        log.info("stored snapshot %s in %s", built.label, relative)
        return final

    def _restore_files(self, row: sqlite3.Row, content: Path) -> None:
        """Put a stored snapshot's files back when someone deleted them: the same bytes restore them."""
        stored = self._store.path / row["path"]
        if not stored.is_dir():
            stored.parent.mkdir(parents=True, exist_ok=True)
            _move_into_place(content, stored)
            log.warning("restored the missing files of snapshot %s", row["hash"][:12])

    def _insert_snapshot(
        self, conn: sqlite3.Connection, snap: Snapshot, relative: str, taken_at: str, taken_by: str
    ) -> None:
        conn.execute(
            "INSERT INTO snapshots (hash, skill_name, description, front_matter, path, n_files, size_bytes,"
            " files, draft, repo, commit_sha, tag, git_ref, subdir, source_path, created_at, created_by,"
            " remote, draft_reason, warnings) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                snap.hash,
                snap.skill_name,
                snap.description,
                dumps(snap.front_matter),
                relative,
                len(snap.files),
                snap.size,
                dumps([[f.path, f.sha256, f.size, f.binary] for f in snap.files]),
                int(snap.draft),
                snap.repo,
                snap.commit,
                snap.tag,
                snap.git_ref,
                snap.subdir,
                snap.source_path,
                taken_at,
                taken_by,
                snap.remote,
                snap.draft_reason,
                dumps(list(snap.warnings)),
            ),
        )
        conn.executemany(
            "INSERT INTO snapshot_refs (snapshot, ref, path, heading, level, start_line, end_line)"
            " VALUES (?,?,?,?,?,?,?)",
            [(snap.hash, s.ref, s.path, s.heading, s.level, s.start_line, s.end_line) for s in snap.sections],
        )

    @staticmethod
    def _update_provenance(conn: sqlite3.Connection, row: sqlite3.Row, source: SnapshotSource) -> None:
        if source.draft:
            return
        if row["draft"]:
            conn.execute(
                "UPDATE snapshots SET draft = 0, draft_reason = NULL, repo = ?, remote = ?, commit_sha = ?,"
                " tag = ?, git_ref = ?, subdir = ?, source_path = ? WHERE hash = ?",
                (*_where_from(source), row["hash"]),
            )
        elif row["commit_sha"] == source.commit and not row["tag"] and source.tag:
            conn.execute("UPDATE snapshots SET tag = ? WHERE hash = ?", (source.tag, row["hash"]))

    @staticmethod
    def _sweep_stale_tmp(snapshots_dir: Path) -> None:
        # Temporary folders of a process that died half way; young ones may belong to a live process.
        cutoff = time.time() - _STALE_TMP_SECONDS
        for child in snapshots_dir.glob(f"{_TMP_PREFIX}*"):
            with contextlib.suppress(OSError):
                if child.stat().st_mtime < cutoff:
                    shutil.rmtree(child, ignore_errors=True)

    # -- reading -----------------------------------------------------------------------------------

    def _snapshot_from_row(self, row: sqlite3.Row) -> Snapshot:
        files = tuple(
            SnapshotFile(p, sha, size, bool(binary)) for p, sha, size, binary in loads(row["files"])
        )
        return Snapshot(
            hash=row["hash"],
            skill_name=row["skill_name"],
            root=self._store.path / row["path"],
            files=files,
            description=row["description"],
            **_provenance_from_row(row),
            front_matter=loads(row["front_matter"]) or {},
            created_at=row["created_at"],
            warnings=tuple(loads(row["warnings"]) or ()),
        )

    def _skill_names(self) -> list[str]:
        return [
            r[0] for r in self._store.query("SELECT DISTINCT skill_name FROM snapshots ORDER BY skill_name")
        ]

    def _labels(self, rows: Sequence[sqlite3.Row], limit: int = 20) -> str:
        labels = [version_label(r["skill_name"], r["hash"], bool(r["draft"])) for r in rows]
        more = f" and {len(labels) - limit} more" if len(labels) > limit else ""
        return ", ".join(labels[:limit]) + more

    def get(self, ref: str | Snapshot) -> Snapshot:
        """A stored snapshot, by reference.

        `ref` may be the full hash, a hash prefix of at least 6 hex digits, ``name@prefix`` (at
        least 4 digits; a trailing ``(draft)`` as in `Snapshot.label` is ignored), or a skill name,
        which means its most recently taken snapshot.

        Raises:
            NotFoundError: nothing matches (the message lists what is stored).
            UsageError: a prefix matches several snapshots (the message lists them).
        """
        if isinstance(ref, Snapshot):
            ref = ref.hash
        text = re.sub(r"\s*\(draft\)\s*$", "", str(ref).strip())
        if not text:
            raise UsageError("give a snapshot: a hash (prefix), name@prefix, or a skill name")
        latest = "(SELECT MAX(id) FROM snapshot_sources WHERE snapshot = snapshots.hash) DESC, snapshots.rowid DESC"
        name, at, prefix = text.rpartition("@")
        if at:
            prefix = prefix.lower()
            if not _HEX.fullmatch(prefix) or len(prefix) < 4:
                raise UsageError(
                    f"{text!r}: after '@' give at least 4 hex digits of the hash (as in {name}@1a2b3c)"
                )
            rows = self._store.query(
                "SELECT * FROM snapshots WHERE skill_name = ? AND hash LIKE ? ORDER BY created_at",
                (name, prefix + "%"),
            )
            if not rows:
                same = self._store.query(
                    "SELECT * FROM snapshots WHERE skill_name = ? ORDER BY created_at", (name,)
                )
                if same:
                    raise NotFoundError(f"no snapshot {text!r}; snapshots of {name}: {self._labels(same)}")
                raise NotFoundError(
                    f"no skill named {name!r} in the store; skills: ", *self._known(), kind="skill", name=name
                )
        else:
            rows = []
            lowered = text.lower()
            if _HEX.fullmatch(lowered) and len(lowered) >= MIN_PREFIX:
                rows = self._store.query(
                    "SELECT * FROM snapshots WHERE hash LIKE ? ORDER BY created_at", (lowered + "%",)
                )
            if not rows:
                rows = self._store.query(
                    f"SELECT * FROM snapshots WHERE skill_name = ? ORDER BY {latest} LIMIT 1", (text,)
                )
            if not rows:
                short = " (a hash prefix needs at least 6 hex digits)" if _HEX.fullmatch(lowered) else ""
                hint = (
                    (" (to snapshot a folder: ", do.snapshot_skill(text), ")") if Path(text).is_dir() else ()
                )
                raise NotFoundError(
                    f"no snapshot {text!r}{short}",
                    *hint,
                    "; skills in the store: ",
                    *self._known(),
                    kind="snapshot",
                    name=text,
                )
        if len(rows) > 1:
            raise UsageError(
                f"{text!r} matches {len(rows)} snapshots: {self._labels(rows)}; give more hex digits"
            )
        return self._snapshot_from_row(rows[0])

    def _known(self) -> tuple[str | Action, ...]:
        names = self._skill_names()
        if not names:
            return ("none yet (take one with: ", do.snapshot_skill(), ")")
        return (", ".join(names[:30]) + (f" and {len(names) - 30} more" if len(names) > 30 else ""),)

    def all(self, skill: str | None = None) -> list[Snapshot]:
        """Every stored snapshot (of one skill, if given), by skill name, oldest first within a skill."""
        if skill is None:
            rows = self._store.query("SELECT * FROM snapshots ORDER BY skill_name, created_at, rowid")
        else:
            rows = self._store.query(
                "SELECT * FROM snapshots WHERE skill_name = ? ORDER BY created_at, rowid", (skill,)
            )
        return [self._snapshot_from_row(r) for r in rows]

    def sources(self, ref: str | Snapshot) -> list[SnapshotSource]:
        """Every taking of a snapshot's content, oldest first (where the same bytes came from)."""
        snap = self.get(ref)
        rows = self._store.query(
            "SELECT * FROM snapshot_sources WHERE snapshot = ? ORDER BY id", (snap.hash,)
        )
        return [_source_from_row(r) for r in rows]

    def taken(self, ref: str | Snapshot) -> TakenSnapshot:
        """A snapshot with its references counted and its takings (how many, the first when)."""
        snap = self.get(ref)
        sources = self.sources(snap)
        first = sources[0].taken_at if sources else None
        return TakenSnapshot(snap, len(self.references(snap)), len(sources), first, snap.root)

    def references(self, ref: str | Snapshot) -> list[str]:
        """Every stable reference (``path#heading``) of a snapshot, from the reference index."""
        snap = self.get(ref)
        rows = self._store.query(
            "SELECT ref FROM snapshot_refs WHERE snapshot = ? ORDER BY path != 'SKILL.md', path, start_line",
            (snap.hash,),
        )
        return [r[0] for r in rows]

    def resolve_reference(self, snapshot_ref: str | Snapshot, ref: str) -> Section:
        """The section a reference (``path#heading``) points at in a stored snapshot, with its text.

        Matching is exact first, then forgiving within the file (case, slug form: see `resolve_ref`).

        Raises:
            NotFoundError: no such snapshot, file or heading (the message lists what exists).
            StoreError: the snapshot's files are missing from the store folder.
        """
        snap = self.get(snapshot_ref)
        if not snap.root.is_dir():
            raise StoreError(
                f"the files of {snap.label} are missing from {snap.root}; take the snapshot again to restore them"
            )
        section = snap.resolve(ref)
        if section is not None:
            return section
        refs = self.references(snap)
        path = ref.strip().partition("#")[0]
        in_file = [r for r in refs if r == path or r.startswith(path + "#")]
        if in_file:
            listed = ", ".join(in_file[:30]) + (" ..." if len(in_file) > 30 else "")
            raise NotFoundError(f"no section {ref!r} in {snap.label}; references in {path}: {listed}")
        files = sorted({r.partition("#")[0] for r in refs})
        raise NotFoundError(
            f"no file {path!r} with sections in {snap.label}; Markdown files: {', '.join(files) or '(none)'}"
        )

"""The module-level snapshot functions of the public API: freeze a skill folder, load a stored snapshot."""

from __future__ import annotations

import os
from typing import Any

from abbench.snapshot import (
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_TOTAL_BYTES,
    Snapshot,
)
from abbench.store._datasets import using_store


def snapshot_skill(
    folder: str | os.PathLike[str] | None = None,
    *,
    store: Any = None,
    git_ref: str | None = None,
    repo: str | os.PathLike[str] | None = None,
    subdir: str | None = None,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    max_total_bytes: int = DEFAULT_MAX_TOTAL_BYTES,
    max_files: int = DEFAULT_MAX_FILES,
) -> Snapshot:
    """Snapshot a skill folder (or a git ref of it) into a store and return the stored snapshot.

    The same content always gives the same snapshot and is stored once. A folder outside git, or
    with uncommitted changes, is marked as a draft; a clean commit records repository, commit and tag.

    Args:
        folder: The skill folder (the one holding SKILL.md).
        store: A `Store`, a store folder, or None for $ABBENCH_STORE / ./.abbench.
        git_ref: Read the folder's content at this commit, branch or tag with ``git archive``.
        repo: Read from this git repository (default ref ``HEAD``); `subdir` or `folder` is relative to it.
        subdir: The skill folder inside `repo`.
        max_file_bytes: Largest single file accepted (default 5 MB).
        max_total_bytes: Largest total accepted (default 50 MB).
        max_files: Most files accepted (default 5,000).

    Example:
        >>> snap = snapshot_skill("skills/fast-slow-routing")            # doctest: +SKIP
        >>> snap.label, snap.source, len(snap.sections)                  # doctest: +SKIP
        ('fast-slow-routing@1a2b3c4d5e6f (draft)', 'draft', 14)

    Raises:
        SnapshotError: symlinks leaving the folder, files over the limits, unknown git ref or folder.
        UsageError: the arguments do not fit together.
    """
    with using_store(store) as s:
        return s.snapshots.freeze(
            folder,
            git_ref=git_ref,
            repo=repo,
            subdir=subdir,
            max_file_bytes=max_file_bytes,
            max_total_bytes=max_total_bytes,
            max_files=max_files,
        )


def load_snapshot(ref: str | Snapshot, store: Any = None) -> Snapshot:
    """A stored snapshot by hash, hash prefix (6+ hex), ``name@prefix``, or skill name (its latest).

    Args:
        ref: Which snapshot (see `store.snapshots.get`).
        store: A `Store`, a store folder, or None for $ABBENCH_STORE / ./.abbench.

    Raises:
        NotFoundError: nothing matches (the message lists the stored skills).
        UsageError: an ambiguous prefix (the message lists the candidates).
        StoreError: there is no store there.
    """
    with using_store(store, create=False) as s:
        return s.snapshots.get(ref)

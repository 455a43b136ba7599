"""Skill snapshots: immutable, content-hashed copies of skill folders with stable heading references."""

from __future__ import annotations

import typing

from abbench import _lazy

if typing.TYPE_CHECKING:
    from abbench.snapshot._build import (
        PreparedSnapshot as PreparedSnapshot,
        SkillInfo,
        build_snapshot,
        prepare_snapshot as prepare_snapshot,
        safe_folder_name as safe_folder_name,
        snapshot_from_git,
    )
    from abbench.snapshot._content import (
        DEFAULT_MAX_FILE_BYTES,
        DEFAULT_MAX_FILES,
        DEFAULT_MAX_TOTAL_BYTES,
        IGNORED_NAMES,
        IGNORED_PATTERNS,
        content_hash,
        human_size as human_size,
        is_ignored,
    )
    from abbench.snapshot._diff import (
        RenamedFile,
        SectionChange,
        SkillInfoChange,
        SnapshotDiff,
        diff_snapshots,
    )
    from abbench.snapshot._fetch import (
        DEFAULT_SCHEMES,
        KNOWN_SCHEMES,
        GitFetchError,
        prepare_from_url,
        url_scheme as url_scheme,
    )
    from abbench.snapshot._model import (
        DRAFT_MARK as DRAFT_MARK,
        MARKDOWN_SUFFIXES as MARKDOWN_SUFFIXES,
        Snapshot,
        SnapshotFile,
        SnapshotSource,
        TakenSnapshot,
        version_label as version_label,
    )
    from abbench.snapshot._sections import (
        front_matter_end as front_matter_end,
        normalize_path as normalize_path,
        parse_sections,
        resolve_ref,
        slug as slug,
    )

__all__ = [
    "DEFAULT_MAX_FILES",
    "DEFAULT_MAX_FILE_BYTES",
    "DEFAULT_MAX_TOTAL_BYTES",
    "DEFAULT_SCHEMES",
    "IGNORED_NAMES",
    "IGNORED_PATTERNS",
    "KNOWN_SCHEMES",
    "GitFetchError",
    "RenamedFile",
    "SectionChange",
    "SkillInfo",
    "SkillInfoChange",
    "Snapshot",
    "SnapshotDiff",
    "SnapshotFile",
    "SnapshotSource",
    "TakenSnapshot",
    "build_snapshot",
    "content_hash",
    "diff_snapshots",
    "is_ignored",
    "parse_sections",
    "prepare_from_url",
    "resolve_ref",
    "snapshot_from_git",
]

__getattr__, __dir__ = _lazy.exports(
    __name__,
    {
        "abbench.snapshot._build": (
            "PreparedSnapshot",
            "SkillInfo",
            "build_snapshot",
            "prepare_snapshot",
            "safe_folder_name",
            "snapshot_from_git",
        ),
        "abbench.snapshot._content": (
            "DEFAULT_MAX_FILE_BYTES",
            "DEFAULT_MAX_FILES",
            "DEFAULT_MAX_TOTAL_BYTES",
            "IGNORED_NAMES",
            "IGNORED_PATTERNS",
            "content_hash",
            "human_size",
            "is_ignored",
        ),
        "abbench.snapshot._diff": (
            "RenamedFile",
            "SectionChange",
            "SkillInfoChange",
            "SnapshotDiff",
            "diff_snapshots",
        ),
        "abbench.snapshot._fetch": (
            "DEFAULT_SCHEMES",
            "GitFetchError",
            "KNOWN_SCHEMES",
            "prepare_from_url",
            "url_scheme",
        ),
        "abbench.snapshot._model": (
            "DRAFT_MARK",
            "MARKDOWN_SUFFIXES",
            "Snapshot",
            "SnapshotFile",
            "SnapshotSource",
            "version_label",
            "TakenSnapshot",
        ),
        "abbench.snapshot._sections": (
            "front_matter_end",
            "normalize_path",
            "parse_sections",
            "resolve_ref",
            "slug",
        ),
    },
    public=__all__,
)

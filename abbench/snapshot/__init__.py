"""Skill snapshots: immutable, content-hashed copies of skill folders with stable heading references."""

from __future__ import annotations

from abbench.snapshot._model import MARKDOWN_SUFFIXES, Snapshot, SnapshotFile
from abbench.snapshot._sections import front_matter_end, parse_sections, resolve_ref, slug

__all__ = [
    "MARKDOWN_SUFFIXES",
    "Snapshot",
    "SnapshotFile",
    "front_matter_end",
    "parse_sections",
    "resolve_ref",
    "slug",
]

"""Store methods for snapshots."""

from __future__ import annotations


class SnapshotsMixin:
    """Reading and writing snapshots; mixed into `Store`."""

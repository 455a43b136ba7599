"""Store methods for datasets."""

from __future__ import annotations


class DatasetsMixin:
    """Reading and writing datasets; mixed into `Store`."""

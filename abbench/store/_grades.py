"""Store methods for grades."""

from __future__ import annotations


class GradesMixin:
    """Reading and writing grades; mixed into `Store`."""

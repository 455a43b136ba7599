"""Store methods for reviews."""

from __future__ import annotations


class ReviewsMixin:
    """Reading and writing reviews; mixed into `Store`."""

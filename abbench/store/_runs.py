"""Store methods for runs."""

from __future__ import annotations


class RunsMixin:
    """Reading and writing runs; mixed into `Store`."""

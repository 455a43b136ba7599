"""Store methods for experiments."""

from __future__ import annotations


class ExperimentsMixin:
    """Reading and writing experiments; mixed into `Store`."""

"""The Store class: the base connection handling plus one mixin per concept."""

from __future__ import annotations

import os

from abbench.store._analysis import AnalysisMixin
from abbench.store._attempts import AttemptsMixin
from abbench.store._base import StoreBase
from abbench.store._cache import CacheMixin
from abbench.store._datasets import DatasetsMixin
from abbench.store._experiments import ExperimentsMixin
from abbench.store._failures import FailuresMixin
from abbench.store._formats import FormatsMixin
from abbench.store._grader_view import GraderViewMixin
from abbench.store._grades import GradesMixin
from abbench.store._imports import ImportsMixin
from abbench.store._json_lines import JsonLinesMixin
from abbench.store._json_rows import JsonRowsMixin
from abbench.store._light import LightMixin
from abbench.store._lines import LinesMixin
from abbench.store._owners import OwnersMixin
from abbench.store._pages import PagesMixin
from abbench.store._profiles import ProfilesMixin
from abbench.store._results import ResultsMixin
from abbench.store._reviews import ReviewsMixin
from abbench.store._runs import RunsMixin
from abbench.store._sheet_rows import SheetRowsMixin
from abbench.store._snapshots import SnapshotsMixin
from abbench.store._writes import WritesMixin


class Store(
    ProfilesMixin,
    DatasetsMixin,
    ImportsMixin,
    SnapshotsMixin,
    ExperimentsMixin,
    RunsMixin,
    FailuresMixin,
    FormatsMixin,
    AttemptsMixin,
    GradesMixin,
    GraderViewMixin,
    ReviewsMixin,
    ResultsMixin,
    LightMixin,
    CacheMixin,
    AnalysisMixin,
    PagesMixin,
    LinesMixin,
    SheetRowsMixin,
    JsonRowsMixin,
    JsonLinesMixin,
    WritesMixin,
    OwnersMixin,
    StoreBase,
):
    """An open abbench store. Use `open_store()` to get one; close it (or use ``with``) when done."""


def open_store(path: str | os.PathLike[str] | Store | None = None, *, create: bool = True) -> Store:
    """Open (and create or migrate) the store at `path`, $ABBENCH_STORE, or ./.abbench.

    A `Store` passed in is returned as is, so every API function can take either.
    """
    if isinstance(path, Store):
        return path
    return Store(path, create=create)

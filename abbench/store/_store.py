"""The Store: the core (connections, transactions, read snapshots, migrations) and the nouns it hands out."""

from __future__ import annotations

import os

from abbench.store._analysis import Analysis
from abbench.store._attempts import Attempts
from abbench.store._base import StoreBase
from abbench.store._cache import Cache
from abbench.store._case_list import CaseLists
from abbench.store._datasets import DatasetReads
from abbench.store._experiments import Experiments
from abbench.store._failures import RunFailures
from abbench.store._formats import AnswerFormats
from abbench.store._grader_view import GraderVerdictReads
from abbench.store._grades import GradeRecords
from abbench.store._imports import DatasetImports
from abbench.store._light import RunFlags
from abbench.store._owners import Keys
from abbench.store._pages import RunPages
from abbench.store._profiles import Profiles
from abbench.store._results import RunResults
from abbench.store._reviews import Reviews
from abbench.store._runs import RunRecords
from abbench.store._sections import SectionVerdictReads
from abbench.store._snapshots import Snapshots
from abbench.store._writes import RunWrites


class Datasets(DatasetReads, DatasetImports):
    """``store.datasets``: the imported datasets and their cases; importing and saving new ones."""


class Runs(RunRecords, RunResults, RunFlags, RunPages, CaseLists, RunFailures, RunWrites):
    """``store.runs``: the runs of experiments — the runner's queue, their records, tables and pages."""


class Grades(GradeRecords, GraderVerdictReads, AnswerFormats, SectionVerdictReads):
    """``store.grades``: the graders' verdicts (appended, never overwritten) and what is read from them."""


class Store(StoreBase):
    """An open abbench store. Use `open_store()` to get one; close it (or use ``with``) when done.

    The core holds the connections, transactions, read snapshots and migrations; everything else is
    a noun it hands out, each with its SQL and its records: `datasets`, `profiles`, `snapshots`,
    `experiments`, `runs`, `attempts`, `grades`, `reviews`, `analysis` (the queries behind metrics,
    comparisons and reports), `cache` and `keys` (API keys and grants). The bulk export engines are functions of
    the store in `abbench.store.bulk`.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None, *, create: bool = True):
        super().__init__(path, create=create)
        self.datasets = Datasets(self)
        self.profiles = Profiles(self)
        self.snapshots = Snapshots(self)
        self.experiments = Experiments(self)
        self.runs = Runs(self)
        self.attempts = Attempts(self)
        self.grades = Grades(self)
        self.reviews = Reviews(self)
        self.analysis = Analysis(self)
        self.cache = Cache(self)
        self.keys = Keys(self)


StoreLike = str | os.PathLike[str] | Store | None
"""What an API function's ``store=`` takes: a `Store`, a store folder, or None for $ABBENCH_STORE or
./.abbench (`open_store` opens it)."""


def open_store(path: StoreLike = None, *, create: bool = True) -> Store:
    """Open (and create or migrate) the store at `path`, $ABBENCH_STORE, or ./.abbench.

    A `Store` passed in is returned as is, so every API function can take either.
    """
    if isinstance(path, Store):
        return path
    return Store(path, create=create)

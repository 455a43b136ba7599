"""The store: one folder holding the SQLite database, skill snapshots, transcripts and uploaded files.

The database, ``<store>/abbench.db``, is plain SQLite: query it from a shell with the ``sqlite3``
command, read-only (``-readonly``) so that a running experiment is never in its way::

    sqlite3 -readonly -header -column .abbench/abbench.db \
        "SELECT a.name AS arm, r.state, COUNT(*) AS runs FROM runs r JOIN arms a ON a.id = r.arm_id GROUP BY 1, 2"
    sqlite3 -readonly .abbench/abbench.db ".schema grades"

The tables are defined by the numbered migrations in ``abbench/store/_migrations.py``. Grades are
appended, never overwritten: ``latest_grades`` (a view) holds the current one of each (run, other
run, grader), as every abbench view shows them; ``grades`` keeps the history.
"""

from __future__ import annotations

from abbench.store._analysis import RunsProvenance
from abbench.store._attempts import ArmSpend, RunSpend
from abbench.store._base import (
    DEFAULT_STORE,
    STORE_ENV,
    current_user,
    dumps,
    loads,
    now_iso,
    resolve_store_path,
)
from abbench.store._cache import CacheEntry, CacheModelStats, CacheStats
from abbench.store._datasets import TRY_DATASET, import_dataset, list_datasets, load_cases, load_dataset
from abbench.store._experiments import TRY_TAG, Arm, Experiment
from abbench.store._grades import GRADE_COLUMNS, Grade
from abbench.store._migrations import SCHEMA_VERSION
from abbench.store._results import (
    CANCELLED,
    EXECUTION_FAILED,
    FAILED,
    GRADING_FAILED,
    OUTCOMES,
    PASSED,
    STATES,
    UNFINISHED,
    CaseFields,
    CaseOutcomes,
    RunTable,
)
from abbench.store._reviews import Review, ReviewSample
from abbench.store._runs import INTERRUPTED, RunRecord, WorkItem
from abbench.store._snapshots import load_snapshot, snapshot_skill
from abbench.store._spec import (
    DEFAULT_CONCURRENCY,
    DEFAULT_GRADERS,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
    ArmSpec,
    BudgetSpec,
    CaseSelection,
    DatasetSource,
    DecisionSpec,
    ExperimentSpec,
    StoppingSpec,
    StoredArmSpec,
    StoredExperimentSpec,
)
from abbench.store._store import Store, open_store
from abbench.store._writes import ATTEMPT_COLUMNS, GradeWrite, WriteBatch

__all__ = [
    "ATTEMPT_COLUMNS",
    "CANCELLED",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_GRADERS",
    "DEFAULT_RETRIES",
    "DEFAULT_STORE",
    "DEFAULT_TIMEOUT_S",
    "EXECUTION_FAILED",
    "FAILED",
    "GRADE_COLUMNS",
    "GRADING_FAILED",
    "INTERRUPTED",
    "OUTCOMES",
    "PASSED",
    "SCHEMA_VERSION",
    "STATES",
    "STORE_ENV",
    "TRY_DATASET",
    "TRY_TAG",
    "UNFINISHED",
    "Arm",
    "ArmSpec",
    "ArmSpend",
    "BudgetSpec",
    "CacheEntry",
    "CacheModelStats",
    "CacheStats",
    "CaseFields",
    "CaseOutcomes",
    "CaseSelection",
    "DatasetSource",
    "DecisionSpec",
    "Experiment",
    "ExperimentSpec",
    "Grade",
    "GradeWrite",
    "Review",
    "ReviewSample",
    "RunRecord",
    "RunSpend",
    "RunTable",
    "RunsProvenance",
    "StoppingSpec",
    "Store",
    "StoredArmSpec",
    "StoredExperimentSpec",
    "WorkItem",
    "WriteBatch",
    "current_user",
    "dumps",
    "import_dataset",
    "list_datasets",
    "load_cases",
    "load_dataset",
    "load_snapshot",
    "loads",
    "now_iso",
    "open_store",
    "resolve_store_path",
    "snapshot_skill",
]

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

import typing

from abbench import _lazy

if typing.TYPE_CHECKING:
    from abbench.store._analysis import RunsProvenance
    from abbench.store._attempts import ArmSpend, RunSpend
    from abbench.store._base import (
        DEFAULT_STORE,
        STORE_ENV,
        StoreState,
        current_user,
        dumps,
        loads,
        now_iso,
        resolve_store_path,
    )
    from abbench.store._cache import CacheEntry, CacheModelStats, CacheStats
    from abbench.store._datasets import TRY_DATASET, import_dataset, list_datasets, load_cases, load_dataset
    from abbench.store._experiment import TRY_TAG, Arm, Experiment
    from abbench.store._failures import FailureKind, Failures
    from abbench.store._formats import AnswerReading
    from abbench.store._grader_view import GraderVerdicts
    from abbench.store._grades import GRADE_COLUMNS, Grade
    from abbench.store._migrations import SCHEMA_VERSION
    from abbench.store._owners import (
        SCOPES,
        ApiKey,
        acting_as,
        check_owner,
        parse_expiry,
        parse_scopes,
        pepper_path,
    )
    from abbench.store._pages import RunPage
    from abbench.store._report_queries import (
        FailedRun,
        RunFailures,
        WrongAnswer,
        run_failures,
        runs_facts,
        wrong_answers,
    )
    from abbench.store._reviews import Review, ReviewSample
    from abbench.store._run_columns import (
        CANCELLED,
        EXECUTION_FAILED,
        FAILED,
        GRADING_FAILED,
        OUTCOMES,
        PASSED,
        SCORED,
        STATES,
        UNFINISHED,
    )
    from abbench.store._run_record import INTERRUPTED, RunRecord, WorkItem
    from abbench.store._run_table import CaseFields, RunTable
    from abbench.store._settings import (
        DEFAULT_CONCURRENCY,
        DEFAULT_GRADERS,
        DEFAULT_RETRIES,
        DEFAULT_TIMEOUT_S,
        ArmSettings,
        RunSettings,
    )
    from abbench.store._snapshots import load_snapshot, snapshot_skill
    from abbench.store._spec import (
        ArmSpec,
        BudgetSpec,
        CaseSelection,
        DaskSpec,
        DatasetSource,
        DecisionSpec,
        ExperimentSpec,
        StoppingSpec,
        StoredArmSpec,
        StoredExperimentSpec,
    )
    from abbench.store._store import Store, open_store
    from abbench.store._writes import ATTEMPT_COLUMNS, GradeWrite, WriteBatch
    from abbench.store.bulk._case_outcomes import CaseOutcomes
    from abbench.store.bulk._csv import mark_line
    from abbench.store.bulk._sheet import SheetCell, SheetCells
    from abbench.store.bulk._utf8 import check_utf8

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
    "SCOPES",
    "SCORED",
    "STATES",
    "STORE_ENV",
    "TRY_DATASET",
    "TRY_TAG",
    "UNFINISHED",
    "AnswerReading",
    "ApiKey",
    "Arm",
    "ArmSettings",
    "ArmSpec",
    "ArmSpend",
    "BudgetSpec",
    "CacheEntry",
    "CacheModelStats",
    "CacheStats",
    "CaseFields",
    "CaseOutcomes",
    "CaseSelection",
    "DaskSpec",
    "DatasetSource",
    "DecisionSpec",
    "Experiment",
    "ExperimentSpec",
    "FailedRun",
    "FailureKind",
    "Failures",
    "Grade",
    "GradeWrite",
    "GraderVerdicts",
    "Review",
    "ReviewSample",
    "RunFailures",
    "RunPage",
    "RunRecord",
    "RunSettings",
    "RunSpend",
    "RunTable",
    "RunsProvenance",
    "SheetCell",
    "SheetCells",
    "StoppingSpec",
    "Store",
    "StoreState",
    "StoredArmSpec",
    "StoredExperimentSpec",
    "WorkItem",
    "WriteBatch",
    "WrongAnswer",
    "acting_as",
    "check_owner",
    "check_utf8",
    "current_user",
    "dumps",
    "import_dataset",
    "list_datasets",
    "load_cases",
    "load_dataset",
    "load_snapshot",
    "loads",
    "mark_line",
    "now_iso",
    "open_store",
    "parse_expiry",
    "parse_scopes",
    "pepper_path",
    "resolve_store_path",
    "run_failures",
    "runs_facts",
    "snapshot_skill",
    "wrong_answers",
]

__getattr__, __dir__ = _lazy.exports(
    __name__,
    {
        "abbench.store._analysis": ("RunsProvenance",),
        "abbench.store._attempts": (
            "ArmSpend",
            "RunSpend",
        ),
        "abbench.store._base": (
            "DEFAULT_STORE",
            "STORE_ENV",
            "StoreState",
            "current_user",
            "dumps",
            "loads",
            "now_iso",
            "resolve_store_path",
        ),
        "abbench.store._cache": (
            "CacheEntry",
            "CacheModelStats",
            "CacheStats",
        ),
        "abbench.store._datasets": (
            "TRY_DATASET",
            "import_dataset",
            "list_datasets",
            "load_cases",
            "load_dataset",
        ),
        "abbench.store._experiment": (
            "TRY_TAG",
            "Arm",
            "Experiment",
        ),
        "abbench.store._failures": (
            "FailureKind",
            "Failures",
        ),
        "abbench.store._formats": ("AnswerReading",),
        "abbench.store._grader_view": ("GraderVerdicts",),
        "abbench.store._grades": (
            "GRADE_COLUMNS",
            "Grade",
        ),
        "abbench.store.bulk._csv": ("mark_line",),
        "abbench.store._migrations": ("SCHEMA_VERSION",),
        "abbench.store._owners": (
            "SCOPES",
            "ApiKey",
            "acting_as",
            "check_owner",
            "parse_expiry",
            "parse_scopes",
            "pepper_path",
        ),
        "abbench.store.bulk._outcomes": ("CaseOutcomes",),
        "abbench.store._pages": ("RunPage",),
        "abbench.store._report_queries": (
            "FailedRun",
            "RunFailures",
            "WrongAnswer",
            "run_failures",
            "runs_facts",
            "wrong_answers",
        ),
        "abbench.store._run_columns": (
            "CANCELLED",
            "EXECUTION_FAILED",
            "FAILED",
            "GRADING_FAILED",
            "OUTCOMES",
            "PASSED",
            "SCORED",
            "STATES",
            "UNFINISHED",
        ),
        "abbench.store._run_table": (
            "CaseFields",
            "RunTable",
        ),
        "abbench.store._reviews": (
            "Review",
            "ReviewSample",
        ),
        "abbench.store._run_record": (
            "INTERRUPTED",
            "RunRecord",
            "WorkItem",
        ),
        "abbench.store.bulk._sheet": (
            "SheetCell",
            "SheetCells",
        ),
        "abbench.store._snapshots": (
            "load_snapshot",
            "snapshot_skill",
        ),
        "abbench.store.bulk._utf8": ("check_utf8",),
        "abbench.store._settings": (
            "DEFAULT_CONCURRENCY",
            "DEFAULT_GRADERS",
            "DEFAULT_RETRIES",
            "DEFAULT_TIMEOUT_S",
            "ArmSettings",
            "RunSettings",
        ),
        "abbench.store._spec": (
            "ArmSpec",
            "BudgetSpec",
            "CaseSelection",
            "DaskSpec",
            "DatasetSource",
            "DecisionSpec",
            "ExperimentSpec",
            "StoppingSpec",
            "StoredArmSpec",
            "StoredExperimentSpec",
        ),
        "abbench.store._store": (
            "Store",
            "open_store",
        ),
        "abbench.store._writes": (
            "ATTEMPT_COLUMNS",
            "GradeWrite",
            "WriteBatch",
        ),
    },
)

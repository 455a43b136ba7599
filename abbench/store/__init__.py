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
    from abbench.store._attempts import ArmSpend as ArmSpend, RunSpend
    from abbench.store._base import (
        DEFAULT_STORE as DEFAULT_STORE,
        STORE_ENV as STORE_ENV,
        StoreState as StoreState,
        current_user as current_user,
        dumps as dumps,
        loads as loads,
        now_iso as now_iso,
        resolve_store_path as resolve_store_path,
    )
    from abbench.store._cache import (
        CacheEntry as CacheEntry,
        CacheModelStats as CacheModelStats,
        CacheStats as CacheStats,
    )
    from abbench.store._case_list import (
        CASE_SORTS as CASE_SORTS,
        CasePositions as CasePositions,
        CaseQuery as CaseQuery,
    )
    from abbench.store._datasets import (
        TRY_DATASET as TRY_DATASET,
        import_dataset,
        list_datasets,
        load_cases,
        load_dataset as load_dataset,
    )
    from abbench.store._experiment import TRY_TAG as TRY_TAG, Arm, Experiment
    from abbench.store._failures import FailureKind as FailureKind, Failures
    from abbench.store._formats import AnswerReading as AnswerReading
    from abbench.store._grader_view import GraderVerdicts as GraderVerdicts
    from abbench.store._grades import GRADE_COLUMNS as GRADE_COLUMNS, Grade
    from abbench.store._migrations import SCHEMA_VERSION as SCHEMA_VERSION
    from abbench.store._owners import (
        SCOPES as SCOPES,
        ApiKey as ApiKey,
        acting_as,
        check_owner as check_owner,
        parse_expiry as parse_expiry,
        parse_scopes as parse_scopes,
        pepper_path as pepper_path,
    )
    from abbench.store._pages import RunPage
    from abbench.store._report_queries import (
        FailedRun,
        RunFailures,
        WrongAnswer as WrongAnswer,
        run_failures as run_failures,
        runs_facts as runs_facts,
        wrong_answers as wrong_answers,
    )
    from abbench.store._reviews import (
        Review,
        ReviewAssignment as ReviewAssignment,
        ReviewSample as ReviewSample,
    )
    from abbench.store._run_columns import (
        CANCELLED as CANCELLED,
        EXECUTION_FAILED as EXECUTION_FAILED,
        FAILED as FAILED,
        GRADING_FAILED as GRADING_FAILED,
        OUTCOMES as OUTCOMES,
        PASSED as PASSED,
        SCORED as SCORED,
        STATES as STATES,
        UNFINISHED as UNFINISHED,
    )
    from abbench.store._run_record import (
        INTERRUPTED as INTERRUPTED,
        CachedCalls as CachedCalls,
        RunRecord,
        WorkItem,
    )
    from abbench.store._run_table import CaseFields as CaseFields, RunTable
    from abbench.store._sections import SectionGrade as SectionGrade
    from abbench.store._settings import (
        DEFAULT_CONCURRENCY as DEFAULT_CONCURRENCY,
        DEFAULT_GRADERS as DEFAULT_GRADERS,
        DEFAULT_RETRIES as DEFAULT_RETRIES,
        DEFAULT_TIMEOUT_S as DEFAULT_TIMEOUT_S,
        ArmSettings as ArmSettings,
        RunSettings,
    )
    from abbench.store._snapshot_api import load_snapshot, snapshot_skill
    from abbench.store._spec import (
        ArmSpec as ArmSpec,
        BudgetSpec as BudgetSpec,
        CaseSelection as CaseSelection,
        DaskSpec as DaskSpec,
        DatasetSource as DatasetSource,
        DecisionSpec as DecisionSpec,
        ExperimentSpec as ExperimentSpec,
        JudgesSpec as JudgesSpec,
        StoppingSpec as StoppingSpec,
        StoredArmSpec as StoredArmSpec,
        StoredExperimentSpec as StoredExperimentSpec,
    )
    from abbench.store._store import Store, StoreLike as StoreLike, open_store as open_store
    from abbench.store._writes import (
        ATTEMPT_COLUMNS as ATTEMPT_COLUMNS,
        AttemptWrite as AttemptWrite,
        GradeWrite as GradeWrite,
        RunChange as RunChange,
        WriteBatch as WriteBatch,
    )
    from abbench.store.bulk._case_outcomes import CaseOutcomes as CaseOutcomes
    from abbench.store.bulk._csv import mark_line as mark_line
    from abbench.store.bulk._sheet import SheetCell as SheetCell, SheetCells as SheetCells
    from abbench.store.bulk._utf8 import check_utf8 as check_utf8

__all__ = [
    "Arm",
    "Experiment",
    "FailedRun",
    "Failures",
    "Grade",
    "Review",
    "RunFailures",
    "RunPage",
    "RunRecord",
    "RunSettings",
    "RunSpend",
    "RunTable",
    "RunsProvenance",
    "Store",
    "WorkItem",
    "acting_as",
    "import_dataset",
    "list_datasets",
    "load_cases",
    "load_snapshot",
    "snapshot_skill",
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
        "abbench.store._sections": ("SectionGrade",),
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
        "abbench.store.bulk._case_outcomes": ("CaseOutcomes",),
        "abbench.store._case_list": (
            "CASE_SORTS",
            "CasePositions",
            "CaseQuery",
        ),
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
            "ReviewAssignment",
            "ReviewSample",
        ),
        "abbench.store._run_record": (
            "CachedCalls",
            "INTERRUPTED",
            "RunRecord",
            "WorkItem",
        ),
        "abbench.store.bulk._sheet": (
            "SheetCell",
            "SheetCells",
        ),
        "abbench.store._snapshot_api": (
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
            "JudgesSpec",
            "StoppingSpec",
            "StoredArmSpec",
            "StoredExperimentSpec",
        ),
        "abbench.store._store": (
            "Store",
            "StoreLike",
            "open_store",
        ),
        "abbench.store._writes": (
            "ATTEMPT_COLUMNS",
            "AttemptWrite",
            "GradeWrite",
            "RunChange",
            "WriteBatch",
        ),
    },
    public=__all__,
)

"""Experiments and their execution: definitions, the scheduler, run control, re-runs and re-grades."""

from __future__ import annotations

import typing

from abbench import _lazy

if typing.TYPE_CHECKING:
    from abbench.runner._api import (
        RunHandle,
        add_graders,
        arun_experiment,
        cancel_experiment,
        experiment_status,
        grade_experiment,
        pause_experiment,
        regrade_experiment,
        resume_experiment,
        retry_runs,
        run_experiment,
        set_budget,
        start_experiment,
    )
    from abbench.runner._cache import cache_stats, clear_cache
    from abbench.runner._estimate import ArmEstimate, Estimate, Projection, estimate_experiment
    from abbench.runner._experiment import (
        clone_experiment,
        clone_spec,
        create_experiment,
        list_experiments,
        load_experiment,
        select_cases as select_cases,
    )
    from abbench.runner._grading import combine_verdicts as combine_verdicts
    from abbench.runner._halt import (
        HaltReason,
        Terminated,
        halt_of,
        set_origin as set_origin,
        stop_for_signal as stop_for_signal,
        stop_on_signals,
    )
    from abbench.runner._pause import PauseReason
    from abbench.runner._preview import PromptPreview, preview_prompt
    from abbench.runner._progress import ArmProgress, Observer, Progress
    from abbench.runner._queued import QueuedWork
    from abbench.runner._record import RecordError, RecordSummary, record_runs
    from abbench.runner._retry import RetrySelection, select_retry
    from abbench.runner._scheduler import ExperimentRunner as ExperimentRunner, RunSummary
    from abbench.runner._spec import load_spec
    from abbench.runner._stopping import STOPPED_BY_RULE as STOPPED_BY_RULE, StopReason
    from abbench.runner._try import TryResult, try_input
    from abbench.runner._writer import StoreWriter
    from abbench.store import (
        ArmSpec,
        BudgetSpec,
        CaseSelection,
        DatasetSource,
        ExperimentSpec,
        StoppingSpec,
    )

__all__ = [
    "ArmEstimate",
    "ArmProgress",
    "ArmSpec",
    "BudgetSpec",
    "CaseSelection",
    "DatasetSource",
    "Estimate",
    "ExperimentSpec",
    "HaltReason",
    "Observer",
    "PauseReason",
    "Progress",
    "Projection",
    "PromptPreview",
    "QueuedWork",
    "RecordError",
    "RecordSummary",
    "RetrySelection",
    "RunHandle",
    "RunSummary",
    "StopReason",
    "StoppingSpec",
    "StoreWriter",
    "Terminated",
    "TryResult",
    "add_graders",
    "arun_experiment",
    "cache_stats",
    "cancel_experiment",
    "clear_cache",
    "clone_experiment",
    "clone_spec",
    "create_experiment",
    "estimate_experiment",
    "experiment_status",
    "grade_experiment",
    "halt_of",
    "list_experiments",
    "load_experiment",
    "load_spec",
    "pause_experiment",
    "preview_prompt",
    "record_runs",
    "regrade_experiment",
    "resume_experiment",
    "retry_runs",
    "run_experiment",
    "select_retry",
    "set_budget",
    "start_experiment",
    "stop_on_signals",
    "try_input",
]

__getattr__, __dir__ = _lazy.exports(
    __name__,
    {
        "abbench.runner._api": (
            "RunHandle",
            "add_graders",
            "arun_experiment",
            "cancel_experiment",
            "experiment_status",
            "grade_experiment",
            "pause_experiment",
            "regrade_experiment",
            "resume_experiment",
            "retry_runs",
            "run_experiment",
            "set_budget",
            "start_experiment",
        ),
        "abbench.runner._pause": ("PauseReason",),
        "abbench.runner._preview": ("PromptPreview", "preview_prompt"),
        "abbench.runner._queued": ("QueuedWork",),
        "abbench.runner._record": ("RecordError", "RecordSummary", "record_runs"),
        "abbench.runner._retry": ("RetrySelection", "select_retry"),
        "abbench.runner._cache": (
            "cache_stats",
            "clear_cache",
        ),
        "abbench.runner._estimate": (
            "ArmEstimate",
            "Estimate",
            "Projection",
            "estimate_experiment",
        ),
        "abbench.runner._experiment": (
            "clone_experiment",
            "clone_spec",
            "create_experiment",
            "list_experiments",
            "load_experiment",
            "select_cases",
        ),
        "abbench.runner._grading": ("combine_verdicts",),
        "abbench.runner._halt": (
            "HaltReason",
            "Terminated",
            "halt_of",
            "set_origin",
            "stop_for_signal",
            "stop_on_signals",
        ),
        "abbench.runner._progress": (
            "ArmProgress",
            "Observer",
            "Progress",
        ),
        "abbench.runner._scheduler": (
            "ExperimentRunner",
            "RunSummary",
        ),
        "abbench.runner._spec": ("load_spec",),
        "abbench.store": (  # the definition's models live with the stored definitions they read
            "ArmSpec",
            "BudgetSpec",
            "CaseSelection",
            "DatasetSource",
            "ExperimentSpec",
            "StoppingSpec",
        ),
        "abbench.runner._stopping": (
            "STOPPED_BY_RULE",
            "StopReason",
        ),
        "abbench.runner._try": (
            "TryResult",
            "try_input",
        ),
        "abbench.runner._writer": ("StoreWriter",),
    },
    public=__all__,
)

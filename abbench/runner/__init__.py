"""Experiments and their execution: definitions, the scheduler, run control, re-runs and re-grades."""

from __future__ import annotations

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
from abbench.runner._budget import PauseReason
from abbench.runner._cache import cache_stats, clear_cache
from abbench.runner._estimate import ArmEstimate, Estimate, Projection, estimate_experiment
from abbench.runner._experiment import (
    clone_experiment,
    create_experiment,
    list_experiments,
    load_experiment,
    select_cases,
)
from abbench.runner._grading import combine_verdicts
from abbench.runner._progress import ArmProgress, Observer, Progress
from abbench.runner._scheduler import ExperimentRunner, RunSummary
from abbench.runner._spec import (
    ArmSpec,
    BudgetSpec,
    CaseSelection,
    DatasetSource,
    ExperimentSpec,
    StoppingSpec,
    load_spec,
)
from abbench.runner._stopping import STOPPED_BY_RULE, StopReason
from abbench.runner._try import TryResult, try_input
from abbench.runner._writer import StoreWriter

__all__ = [
    "STOPPED_BY_RULE",
    "ArmEstimate",
    "ArmProgress",
    "ArmSpec",
    "BudgetSpec",
    "CaseSelection",
    "DatasetSource",
    "Estimate",
    "ExperimentRunner",
    "ExperimentSpec",
    "Observer",
    "PauseReason",
    "Progress",
    "Projection",
    "RunHandle",
    "RunSummary",
    "StopReason",
    "StoppingSpec",
    "StoreWriter",
    "TryResult",
    "add_graders",
    "arun_experiment",
    "cache_stats",
    "cancel_experiment",
    "clear_cache",
    "clone_experiment",
    "combine_verdicts",
    "create_experiment",
    "estimate_experiment",
    "experiment_status",
    "grade_experiment",
    "list_experiments",
    "load_experiment",
    "load_spec",
    "pause_experiment",
    "regrade_experiment",
    "resume_experiment",
    "retry_runs",
    "run_experiment",
    "select_cases",
    "set_budget",
    "start_experiment",
    "try_input",
]

"""abbench: A/B testing for agent skills, with statistics a sceptic accepts.

The public API is re-exported here and loaded lazily, so ``import abbench`` (and the CLI's ``--help``)
stays fast: pandas, scipy and friends load only when a function that needs them is first used.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "AbbenchError": "abbench.errors",
    "AgentOutput": "abbench.types",
    "Case": "abbench.types",
    "Dataset": "abbench.dataset",
    "DatasetInfo": "abbench.dataset",
    "MappingProfile": "abbench.dataset",
    "ValidationReport": "abbench.dataset",
    "convert_file": "abbench.dataset",
    "import_dataset": "abbench.store",
    "list_datasets": "abbench.store",
    "load_cases": "abbench.store",
    "load_dataset": "abbench.store",
    "preview_import": "abbench.dataset",
    "read_table": "abbench.dataset",
    "suggest_mapping": "abbench.dataset",
    "ChatClient": "abbench.llm",
    "ExperimentStatus": "abbench.types",
    "FailureType": "abbench.types",
    "RunState": "abbench.types",
    "Section": "abbench.types",
    "Snapshot": "abbench.snapshot",
    "SnapshotDiff": "abbench.snapshot",
    "Store": "abbench.store",
    "Task": "abbench.agents",
    "build_snapshot": "abbench.snapshot",
    "diff_snapshots": "abbench.snapshot",
    "extract_rules": "abbench.agents",
    "grade_experiment": "abbench.runner",
    # experiments: define, run, control, re-run, try (the README's workflow table names them so)
    "cancel_experiment": "abbench.runner",
    "clone_experiment": "abbench.runner",
    "create_experiment": "abbench.runner",
    "estimate_experiment": "abbench.runner",
    "experiment_status": "abbench.runner",
    "list_experiments": "abbench.runner",
    "load_experiment": "abbench.runner",
    "pause_experiment": "abbench.runner",
    "record_runs": "abbench.runner",
    "regrade_experiment": "abbench.runner",
    "resume_experiment": "abbench.runner",
    "retry_runs": "abbench.runner",
    "run_experiment": "abbench.runner",
    "set_budget": "abbench.runner",
    "start_experiment": "abbench.runner",
    "try_input": "abbench.runner",
    "preview_prompt": "abbench.runner",
    "judge_report": "abbench.metrics",
    "llm_judge": "abbench.graders",
    "load_snapshot": "abbench.store",
    "make_agent": "abbench.agents",
    "make_grader": "abbench.graders",
    "open_store": "abbench.store",
    "pairwise_judge": "abbench.graders",
    "position_bias": "abbench.metrics",
    "snapshot_skill": "abbench.store",
    # the glossary's nouns (docs/ARCHITECTURE.md, "Words"), under the names the words give them
    "ApiKey": "abbench.store",
    "Arm": "abbench.store",
    "AttemptOutcome": "abbench.types",
    "Control": "abbench.types",
    "Experiment": "abbench.store",
    "FormatAdherence": "abbench.metrics",
    "Grade": "abbench.store",
    "GradeStatus": "abbench.types",
    "Halt": "abbench.types",
    "HaltReason": "abbench.runner",
    "PauseReason": "abbench.runner",
    "Phase": "abbench.types",
    "QueuedWork": "abbench.runner",
    "ReadSpec": "abbench.dataset",
    "Review": "abbench.store",
    "ReviewSample": "abbench.store",
    "RunOutcome": "abbench.types",
    "RunRecord": "abbench.store",
    "StopReason": "abbench.runner",
    "Trajectory": "abbench.transcript",
    "Usage": "abbench.types",
    "Verdict": "abbench.compare",
    "WorkItem": "abbench.store",
    # analysis: metrics, comparisons, reviews, the gate and online assignment
    "Comparison": "abbench.compare",
    "ExperimentMetrics": "abbench.metrics",
    "GateResult": "abbench.gate",
    "add_review": "abbench.review",
    "undo_review": "abbench.review",
    "assign": "abbench.assign",
    "case_detail": "abbench.review",
    "compare_all": "abbench.compare",
    "compare_arms": "abbench.compare",
    "compare_experiments": "abbench.compare",
    "disagreement_page": "abbench.review",
    "disagreements": "abbench.review",
    "evaluate_gate": "abbench.gate",
    "experiment_activation": "abbench.metrics",
    "experiment_metrics": "abbench.metrics",
    "judge_agreement": "abbench.review",
    "reviews": "abbench.review",
    # exports and reports
    "ExportResult": "abbench.export",
    "ReportResult": "abbench.report",
    "export": "abbench.export",
    "export_table": "abbench.export",
    "render_report": "abbench.report",
    "render_reports": "abbench.report",
    # statistics: the main functions; result types and descriptive helpers stay in abbench.stats
    "clustered_se": "abbench.stats",
    "cochrans_q": "abbench.stats",
    "cohen_kappa": "abbench.stats",
    "estimate_power_inputs": "abbench.stats",
    "holm_correction": "abbench.stats",
    "mcnemar_exact": "abbench.stats",
    "mcnemar_midp": "abbench.stats",
    "mean_se": "abbench.stats",
    "min_detectable_effect": "abbench.stats",
    "min_detectable_effect_two_proportions": "abbench.stats",
    "paired_bootstrap": "abbench.stats",
    "paired_difference": "abbench.stats",
    "paired_outcomes": "abbench.stats",
    "paired_proportion_interval": "abbench.stats",
    "pass_at_k": "abbench.stats",
    "pass_at_k_curve": "abbench.stats",
    "plan_experiment": "abbench.stats",
    "plan_from_experiment": "abbench.compare",
    "power_paired": "abbench.stats",
    "repeated_se": "abbench.stats",
    "sample_size_paired": "abbench.stats",
    "sample_size_two_proportions": "abbench.stats",
    "two_proportion_test": "abbench.stats",
    "wilson_interval": "abbench.stats",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'abbench' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__

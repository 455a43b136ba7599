"""The notes on how an experiment's figures were read (`abbench.metrics.experiment_metrics`' first notes)."""

from __future__ import annotations

from typing import Any

from abbench.metrics._grader import grader_note
from abbench.store import GRADING_FAILED, UNFINISHED, Experiment


def first_notes(exp: Experiment, table: Any, kind: str, grader: str | None) -> list[str]:
    """The notes on how the figures were read: a sequential stop, one grader's verdicts, scores."""
    notes = [stopping_note(exp)] if exp.spec.stopping is not None else []
    if grader is not None:
        unassessed = table.executed & (table.outcome == UNFINISHED)
        notes.append(grader_note(grader, int(unassessed.sum()), int((table.outcome == GRADING_FAILED).sum())))
    if kind == "score":
        notes.append("the graders give scores, not right/wrong verdicts: the mean score is the main figure")
    return notes


def stopping_note(exp: Experiment) -> str:
    """What a sequentially monitored experiment's per-arm figures are, and where its decision's are."""
    stop = exp.stop_reason or {}
    where = (
        f"stopped by its rule: {stop['text']}"
        if stop.get("text") and stop.get("cases", 0) < stop.get("total", 0)
        else "monitored by a stopping rule"
    )
    return (
        f"{where}; the per-arm accuracies and intervals here are fixed-n descriptions of the cases run, while "
        "the decision's interval and p-value (compare, gate) are the anytime-valid ones of the confidence sequence"
    )

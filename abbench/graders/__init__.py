"""Graders: rule graders, LLM judges and blind pairwise judges, behind one small interface."""

from __future__ import annotations

from abbench.graders._base import (
    KINDS,
    FunctionGrader,
    GradeContext,
    Grader,
    GradeResult,
    PairContext,
    as_result,
    grader_names,
    label_match,
    make_grader,
    normalise_label,
    register_grader,
)

__all__ = [
    "KINDS",
    "FunctionGrader",
    "GradeContext",
    "GradeResult",
    "Grader",
    "PairContext",
    "as_result",
    "grader_names",
    "label_match",
    "make_grader",
    "normalise_label",
    "register_grader",
]

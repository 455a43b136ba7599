"""Figures as one named grader saw them: which graders an experiment has, and checking the one asked for."""

from __future__ import annotations

from typing import Any

from abbench.errors import UsageError
from abbench.store import Experiment, Store

MAX_GRADER_NAME = 200
"""The longest grader name asked for (a longer one is no grader of any experiment)."""


def experiment_graders(exp: Experiment, store: Store) -> dict[str, str]:
    """The graders of an experiment and their kinds (``rule``, ``judge``, ``pairwise``): those its
    definition names (also when they have graded nothing yet), then any other that graded its runs (a
    grader added by `abbench grade --add-grader`, a function's own name)."""
    graded = store.analysis.grader_kinds(exp.id)
    found: dict[str, str] = {}
    for spec in exp.settings.graders:  # the definition as stored: no grader is built to name it
        name, kind = _named(spec)
        if name is not None and name not in found:
            found[name] = graded.get(name, kind)
    for name, kind in graded.items():
        found.setdefault(name, kind)
    return found


def _named(spec: Any) -> tuple[str | None, str]:
    """A grader definition's name and kind (None for a ``module:function`` named only by its code)."""
    if isinstance(spec, dict):
        kind = spec.get("type") or spec.get("grader")
        name = spec.get("name") or kind
    else:
        kind = name = spec
    if not isinstance(name, str) or (name == kind and ":" in name):
        return None, "rule"
    return name, "pairwise" if kind == "pairwise_judge" else ("judge" if kind == "llm_judge" else "rule")


def check_grader(exp: Experiment, grader: Any, store: Store) -> str:
    """`grader` when it names a pointwise grader of `exp`, else an error saying which it has.

    Raises:
        UsageError: not a name, no grader of the experiment (the message lists its graders), or a
            pairwise judge (it compares two arms' answers and gives no run a verdict of its own).
    """
    if not isinstance(grader, str) or not grader.strip() or len(grader) > MAX_GRADER_NAME:
        raise UsageError(f"a grader is named by a non-empty name of at most {MAX_GRADER_NAME} characters")
    graders = experiment_graders(exp, store)
    pointwise = [name for name, kind in graders.items() if kind != "pairwise"]
    if grader not in graders:
        raise UsageError(
            f"experiment {exp.name!r} has no grader {grader!r}; its graders: "
            f"{', '.join(pointwise) or '(none that grade runs)'}"
            + (
                f" (pairwise judges, which grade no run alone: {_pairwise(graders)})"
                if _pairwise(graders)
                else ""
            )
        )
    if graders[grader] == "pairwise":
        raise UsageError(
            f"{grader} is a pairwise judge of experiment {exp.name!r}: it compares two arms' answers and gives "
            "no run a verdict of its own (compare shows its wins); name one of "
            f"{', '.join(pointwise) or '(none)'}"
        )
    return grader


def _pairwise(graders: dict[str, str]) -> str:
    return ", ".join(name for name, kind in graders.items() if kind == "pairwise")


def grader_note(grader: str, not_graded: int, failed: int) -> str:
    """What figures from one grader's grades are, and how many runs it left unassessed."""
    left = []
    if not_graded:
        left.append(f"{not_graded:,} answered run(s) it has not graded")
    if failed:
        left.append(f"{failed:,} it failed to grade (grading failed)")
    return (
        f"figures from {grader}'s grades alone (not the runs' verdicts, which combine every deciding grader)"
        + (f"; not assessed: {' and '.join(left)}" if left else "; it graded every answered run")
    )

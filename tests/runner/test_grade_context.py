"""What a grader is handed in a pass equals the context made from the run itself, field by field."""

from __future__ import annotations

import dataclasses

from abbench.graders import GradeContext, GradeResult
from abbench.runner import create_experiment, run_experiment

SEEN: dict[int, GradeContext] = {}
"""Run id -> the context the grader below was handed."""


def record(ctx: GradeContext) -> GradeResult:
    """A grader that keeps what it was handed."""
    SEEN[ctx.run_id] = ctx
    return GradeResult(passed=True, score=1.0)


def test_each_run_is_graded_on_its_own_context(store, definition):
    SEEN.clear()
    spec = definition(rounds=3, graders=["label_match", "tests.runner.test_grade_context:record"])
    exp = create_experiment(spec, store=store)
    run_experiment(exp.id, store=store)
    arms = {a.name: a for a in exp.arms}
    cases = {c.case_id: c for c in store.datasets.load_cases(store.datasets.get(exp.dataset_id))}
    label_map = dict(store.datasets.get(exp.dataset_id).label_map or {})
    runs = store.runs.records(exp.id)
    assert sorted(SEEN) == sorted(r.id for r in runs)
    for r in runs:
        arm = arms[r.arm]
        seen = SEEN[r.id]
        expected = {
            "case": cases[r.case_id],
            "output": seen.output,  # the agent's own answer: its fields are checked below
            "skill": store.snapshots.get(arm.snapshot) if arm.snapshot else None,
            "label_map": label_map,
            "label_set": seen.label_set,
            "arm": r.arm,
            "round": r.round,
            "run_id": r.id,
            "transcript_path": None,
            "tool_calls": 0,
            "agent": arm.agent,
            "model": arm.model,
        }
        assert {f: getattr(seen, f) for f in expected} == expected, r.id
        assert (seen.output.prediction, seen.output.session_id) == (r.output.prediction, r.output.session_id)
        assert seen.cache is not None and (seen.cache.round, seen.cache.scope) == (r.round, f"arm {r.arm}")
        assert set(expected) | {"cache"} == {f.name for f in dataclasses.fields(GradeContext)}

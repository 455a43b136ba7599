"""The provenance aggregated in SQL says what the runs and grades say when they are loaded and counted."""

from __future__ import annotations

from abbench.metrics import position_bias
from abbench.report import experiment_provenance
from abbench.review import disagreements


def _from_records(store, exp):
    """The provenance figures the way the report computed them before: every run and grade loaded."""
    runs = store.runs.records(exp.id)
    started = [r.started_at for r in runs if r.started_at]
    finished = [t for r in runs if (t := r.finished_at or r.executed_at)]
    models: dict[str, set[str]] = {}
    for r in runs:
        if r.output is not None and r.output.model:
            models.setdefault(r.arm, set()).add(r.output.model)
    kinds: dict[str, str] = {}
    judges: set[str] = set()
    for g in store.grades.records(exp.id, latest=True):
        kinds.setdefault(g.grader, g.kind)
        if g.judge_model:
            judges.add(g.judge_model)
    return {
        "n_cases": len({r.case_idx for r in runs}),
        "first_started": min(started) if started else None,
        "last_finished": max(finished) if finished else None,
        "run_by": tuple(sorted({r.started_by for r in runs if r.started_by})),
        "graders": tuple(f"{n} ({k})" for n, k in kinds.items()),
        "judge_models": tuple(sorted(judges)),
        "models_seen": {a.name: tuple(sorted(models.get(a.name, ()))) for a in exp.arms},
    }


def test_provenance_matches_the_runs_and_grades(report_store):
    store, ids, _ = report_store
    for shape, exp_id in ids.items():
        exp = store.experiments.get(exp_id)
        prov = experiment_provenance(exp, store=store)
        expected = _from_records(store, exp)
        got = {k: getattr(prov, k) for k in expected if k != "models_seen"}
        got["models_seen"] = {a.name: a.models_seen for a in prov.arms}
        assert got == expected, shape
        assert prov.n_cases > 0 and prov.first_started and prov.graders, shape


def test_position_bias_reads_only_the_pairwise_grades(report_store):
    store, ids, _ = report_store
    exp = store.experiments.get(ids["judges"])
    pairwise = [g for g in store.grades.records(exp.id) if g.kind == "pairwise"]
    assert pairwise and store.grades.records(exp.id, kind="pairwise") == pairwise
    assert [b.grader for b in position_bias(exp, store=store)] == list(
        dict.fromkeys(g.grader for g in pairwise)
    )


def test_disagreements_leave_the_excluded_cases_out_and_fill_the_limit(report_store):
    store, ids, _ = report_store
    for exp_id in ids.values():
        every = disagreements(exp_id, "all", store=store)
        if len(every) < 4:
            continue
        skip = {d.case.case_id for d in every[:2]}
        got = disagreements(exp_id, "all", store=store, exclude=skip, limit=2)
        assert [d.case.case_id for d in got] == [d.case.case_id for d in every[2:4]]

"""The options the run widget relies on: a clone with fields changed, a re-run of execution failures only."""

from __future__ import annotations

from abbench.runner import clone_experiment, clone_spec, create_experiment, retry_runs, run_experiment
from abbench.types import RunState


def test_a_clone_takes_changed_fields_and_a_whole_new_set_of_arms(store, definition):
    exp = create_experiment(definition(cases={"domains": ["nav"]}), store=store)
    clone = clone_experiment(
        exp.id,
        name="exp-changed",
        rounds=1,
        changes={"arms": {"only": {"agent": "scripted"}}, "concurrency": 2, "cases": None},
        store=store,
    )
    assert clone.parent_id == exp.id and [a.name for a in clone.arms] == ["only"]
    assert clone.spec.concurrency == 2 and clone.spec.retries == 2  # the rest is kept
    assert "cases" not in clone.spec and len(store.runs.records(clone.id)) == 6  # every case, one round


def test_a_retry_of_execution_failures_leaves_wrong_answers_alone(store, definition):
    arms = {"a": {"agent": "scripted", "fail": ["c000"], "wrong": ["c001"]}}
    exp = create_experiment(definition(arms=arms, rounds=1), store=store)
    run_experiment(exp.id, store=store)
    assert retry_runs(exp.id, store=store, execution_failed=True, run=False) == 1
    states = {r.case_id: r.state for r in store.runs.records(exp.id)}
    assert states["c000"] == RunState.PENDING and states["c001"] == RunState.FAIL


def test_the_clone_definition_is_what_clone_experiment_creates_from(store, definition):
    exp = create_experiment(definition(cases={"domains": ["nav"]}), store=store)
    spec = clone_spec(store.experiments.get(exp.id))
    assert not {"owner", "dataset_profile", "dataset_profile_version"} & set(spec)
    assert all(
        not {"snapshot", "snapshots", "skill_source", "skill_label"} & set(a) for a in spec["arms"].values()
    )
    clone = clone_experiment(exp.id, name="exp-same", store=store)
    assert clone.spec.as_json() == create_experiment(
        {**spec, "name": "exp-same-2"}, store=store
    ).spec.as_json() | {"name": "exp-same"}

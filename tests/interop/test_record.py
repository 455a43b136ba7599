"""record_runs: outcomes run elsewhere, stored through the runner's write path, graded, analysed."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest

from abbench.compare import compare_arms
from abbench.metrics import experiment_metrics
from abbench.runner import RecordError, create_experiment, record_runs, run_experiment
from abbench.types import RunState

from ..conftest import DEMO

ARMS = {"ci-old": {"agent": "external", "model": "m-old"}, "ci-new": {"agent": "external", "model": "m-new"}}


@pytest.fixture
def demo(store):
    info = store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
    return store, info, store.datasets.load_cases(info)[:30]


def _experiment(store, info, cases, rounds=1, graders=None, arms=None, name="ci"):
    return create_experiment(
        {
            "name": name,
            "dataset": info.fingerprint,
            "rounds": rounds,
            "cases": {"ids": [c.case_id for c in cases]},
            "arms": arms or ARMS,
            "graders": graders or ["label_match", {"type": "recorded", "name": "ci_check"}],
        },
        store=store,
    )


def _outcomes(cases, rounds=1):
    """ci-old right on every third case, ci-new right except every seventh; ci_check agrees."""
    out = []
    for k, c in enumerate(cases):
        other = "slow" if c.expected == "fast" else "fast"
        for arm, right in (("ci-old", k % 3 == 0), ("ci-new", k % 7 != 0)):
            for r in range(1, rounds + 1):
                out.append(
                    {
                        "case_id": c.case_id,
                        "arm": arm,
                        "round": r,
                        "prediction": c.expected if right else other,
                        "reason": "because",
                        "usage": {"input_tokens": 100 + k, "output_tokens": 7},
                        "cost": 0.002,
                        "latency_ms": 800.0 + k,
                        "transcript": [
                            {"role": "user", "content": c.input},
                            {"role": "assistant", "content": "x"},
                        ],
                        "grades": {"ci_check": {"passed": right, "score": float(right)}},
                    }
                )
    return out


def test_recorded_runs_end_graded_and_compare_like_agent_runs(demo):
    store, info, cases = demo
    exp = _experiment(store, info, cases)
    outcomes = _outcomes(cases)
    summary = record_runs(store, exp, outcomes)
    assert (summary.recorded, summary.unchanged) == (60, 0)
    assert summary.grading is not None and summary.grading.status == "finished"
    runs = store.runs.records(exp.id)
    assert {r.state for r in runs} <= {RunState.PASS, RunState.FAIL}
    # the state machine: every transition of a run kept, as for an agent's run
    run = runs[0]
    events = [(e["from"], e["to"]) for e in store.runs.events(run.id)]
    assert events == [
        ("pending", "running"),
        ("running", "executed"),
        ("executed", "evaluating"),
        ("evaluating", run.state),
    ]
    attempts = store.attempts.of_run([run.id])[run.id]
    assert [(a.attempt, a.outcome, a.usage.input_tokens) for a in attempts] == [(1, "executed", 100)]
    # the figures from the outcomes themselves, independently of abbench
    right = {
        a: [
            o["prediction"] == c.expected
            for o in outcomes
            if o["arm"] == a
            for c in [next(x for x in cases if x.case_id == o["case_id"])]
        ]
        for a in ARMS
    }
    metrics = experiment_metrics(exp.name, store=store)
    for arm, flags in right.items():
        assert metrics.arm(arm).accuracy.value == pytest.approx(sum(flags) / len(flags))
    comparison = compare_arms(exp.name, a="ci-old", b="ci-new", store=store)
    fixed = sum(1 for o, n in zip(right["ci-old"], right["ci-new"], strict=True) if n and not o)
    regressed = sum(1 for o, n in zip(right["ci-old"], right["ci-new"], strict=True) if o and not n)
    assert (comparison.outcomes.fixed, comparison.outcomes.regressed) == (fixed, regressed)
    assert comparison.mcnemar.p_value == pytest.approx(
        binomtest(min(fixed, regressed), fixed + regressed).pvalue
    )


def test_submitting_the_same_outcomes_again_is_a_no_op(demo):
    store, info, cases = demo
    exp = _experiment(store, info, cases[:5], rounds=2)
    outcomes = _outcomes(cases[:5], rounds=2)
    record_runs(store, exp, outcomes)
    before = [(r.id, r.state, r.attempts) for r in store.runs.records(exp.id)]
    events = sum(len(store.runs.events(r.id)) for r in store.runs.records(exp.id))
    again = record_runs(store, exp, list(reversed(outcomes)))
    assert (again.recorded, again.unchanged, again.grading) == (0, 20, None)
    assert [(r.id, r.state, r.attempts) for r in store.runs.records(exp.id)] == before
    assert sum(len(store.runs.events(r.id)) for r in store.runs.records(exp.id)) == events


def test_a_different_outcome_for_a_recorded_key_is_refused_and_nothing_is_stored(demo):
    store, info, cases = demo
    exp = _experiment(store, info, cases[:4])
    outcomes = _outcomes(cases[:4])
    record_runs(store, exp, outcomes[:4])
    changed = dict(outcomes[0], prediction="slow" if outcomes[0]["prediction"] == "fast" else "fast")
    with pytest.raises(RecordError) as caught:
        record_runs(store, exp, [changed, *outcomes[4:]])
    c0 = cases[0].case_id
    assert f"case {c0}, arm ci-old, round 1, attempt 1: already recorded with different content" in str(
        caught.value
    )
    assert "attempt 2" in str(caught.value)  # what to do: submit it as a new attempt
    assert {
        r.state for r in store.runs.records(exp.id) if r.case_id not in {c.case_id for c in cases[:2]}
    } == {"pending"}
    # as a new attempt it is recorded, and the run's current execution is the new one
    record_runs(store, exp, [dict(changed, attempt=2)])
    run = next(r for r in store.runs.records(exp.id) if (r.case_id, r.arm) == (c0, "ci-old"))
    assert (run.attempts, run.output.prediction) == (2, changed["prediction"])
    assert [a.attempt for a in store.attempts.of_run([run.id])[run.id]] == [1, 2]


def test_invalid_outcomes_are_refused_together_naming_case_arm_round_and_field(demo):
    store, info, cases = demo
    exp = _experiment(store, info, cases[:3])
    c0, c1 = cases[0].case_id, cases[1].case_id
    bad = [
        {"case_id": c0, "arm": "ci-old", "round": 1, "prediction": "fast", "confidence": "high"},
        {"case_id": c1, "arm": "ci-new", "round": 3, "prediction": "fast"},
        {"case_id": c1, "arm": "nope", "prediction": "fast"},
        {
            "case_id": c0,
            "arm": "ci-new",
            "usage": {"input_tokens": -5, "output_tokens": 1},
            "prediction": "x",
        },
        {
            "case_id": c0,
            "arm": "ci-new",
            "round": 1,
            "attempt": 1,
            "prediction": "fast",
            "grades": {"judge": True},
        },
        {"case_id": c1, "arm": "ci-old", "reason": "no answer"},
        {"case_id": c1, "arm": "ci-old", "round": 1, "prediction": "fast", "colour": "red"},
        {"case_id": "missing-case", "arm": "ci-old", "prediction": "fast"},
    ]
    with pytest.raises(RecordError) as caught:
        record_runs(store, exp, bad)
    text = str(caught.value)
    assert "nothing was recorded" in text
    assert f"case {c0}, arm ci-old, round 1: confidence must be a number from 0 to 1" in text
    assert f"case {c1}, arm ci-new, round 3: round: 3 is past the experiment's 1 rounds" in text
    assert "arm: 'nope' is not an arm of the experiment; its arms: ci-old, ci-new" in text
    assert "usage.input_tokens must be a non-negative number" in text
    assert (
        "grades.judge: the experiment has no `recorded` grader of that name (its recorded graders: ci_check)"
        in text
    )
    assert f"case {c1}, arm ci-old: prediction: missing" in text
    assert "unknown field 'colour'" in text
    assert (
        "case missing-case, arm ci-old, round 1, attempt 1: the experiment has no run for this case" in text
    )
    assert len(caught.value.problems) == 8
    assert {r.state for r in store.runs.records(exp.id)} == {"pending"}


def test_a_failed_attempt_is_an_execution_failure_and_a_retry_replaces_it(demo):
    store, info, cases = demo
    exp = _experiment(store, info, cases[:2])
    c0 = cases[0].case_id
    failed = {"case_id": c0, "arm": "ci-new", "error": "the sandbox ran out of memory", "failure_type": "oom"}
    record_runs(store, exp, [failed])
    run = next(r for r in store.runs.records(exp.id) if (r.case_id, r.arm) == (c0, "ci-new"))
    assert (run.state, run.failure_type, run.execution_failed) == ("fail", "oom", True)
    retried = {
        "case_id": c0,
        "arm": "ci-new",
        "attempt": 2,
        "prediction": cases[0].expected,
        "grades": {"ci_check": True},
    }
    record_runs(store, exp, [failed, retried])  # the first is already there: a no-op
    run = store.runs.get(run.id)
    assert (run.state, run.attempts, run.failure_type) == ("pass", 2, None)
    assert [a.outcome for a in store.attempts.of_run([run.id])[run.id]] == ["failed", "executed"]


def test_a_recorded_grader_without_a_verdict_fails_grading_never_passes(demo):
    store, info, cases = demo
    exp = _experiment(store, info, cases[:1], graders=[{"type": "recorded", "name": "ci_check"}])
    record_runs(store, exp, [{"case_id": cases[0].case_id, "arm": "ci-old", "prediction": cases[0].expected}])
    run = next(r for r in store.runs.records(exp.id) if r.arm == "ci-old")
    assert run.state == "fail" and not run.execution_failed
    assert "no verdict 'ci_check' was recorded" in run.error


def test_running_an_external_arm_fails_its_runs_until_they_are_recorded(demo):
    store, info, cases = demo
    exp = _experiment(store, info, cases[:2])
    summary = run_experiment(exp.id, store=store)
    assert summary.execution_failed == 4
    assert {r.failure_type for r in store.runs.records(exp.id)} == {"not_recorded"}
    assert "record its outcomes with abbench.record_runs" in store.runs.records(exp.id)[0].error
    recorded = record_runs(store, exp, _outcomes(cases[:2]))
    assert recorded.recorded == 4
    assert {r.state for r in store.runs.records(exp.id)} <= {"pass", "fail"}
    assert not any(r.execution_failed for r in store.runs.records(exp.id))


def test_a_run_its_own_agent_executed_is_not_overwritten(demo):
    store, info, cases = demo
    arms = {"local": {"agent": "builtin"}, "ci-new": {"agent": "external"}}
    exp = _experiment(store, info, cases[:1], arms=arms, graders=["label_match"])
    run_experiment(exp.id, store=store)
    with pytest.raises(RecordError, match="was executed here by its agent"):
        record_runs(store, exp, [{"case_id": cases[0].case_id, "arm": "local", "prediction": "fast"}])

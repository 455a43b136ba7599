"""`abbench retry` re-runs what failed to execute and re-grades what failed to grade — a grader's failure
is never repaired by paying for another agent run (attempts 1 stays 1)."""

from __future__ import annotations

import json

import pytest

from abbench.errors import ExperimentError, GradingError
from abbench.graders import FunctionGrader, register_grader
from abbench.runner import create_experiment, retry_runs, run_experiment, select_retry, start_experiment
from abbench.store import open_store

from .conftest import log_call


@register_grader("grader_failing_on")
def grader_failing_on(*, fail=(), name="grader_failing_on") -> FunctionGrader:
    """Label match that fails to grade (no verdict, not retryable) the cases in `fail`."""

    def grade(ctx):
        log_call("grader", ("retry", ctx.case.case_id, ctx.round, ctx.arm))
        if ctx.case.case_id in fail:
            raise GradingError(f"no verdict on {ctx.case.case_id}", retryable=False)
        return ctx.output.prediction == ctx.case.expected

    return FunctionGrader(name, grade, "rule")


def _failed_both_ways(store, definition):
    """c000's execution fails, c001's grading fails; the four others pass."""
    exp = create_experiment(
        definition(
            rounds=1,
            retries=0,
            arms={"a": {"agent": "scripted", "tag": "retry", "fail": ["c000"]}},
            graders=[{"type": "grader_failing_on", "fail": ["c001"]}],
        ),
        store=store,
    )
    run_experiment(exp.id, store=store)
    runs = {r.case_id: r for r in store.runs.records(exp.id)}
    assert runs["c000"].execution_failed and runs["c001"].grading_failed
    assert runs["c000"].attempts == runs["c001"].attempts == 1
    return exp


def _attempts(store, exp_id):
    return {r.case_id: r.attempts for r in store.runs.records(exp_id)}


def test_retry_failed_regrades_grading_failures_and_reruns_execution_failures(store, definition, calls):
    exp = _failed_both_ways(store, definition)
    chosen = select_retry(exp.id, store=store, failed=True)
    assert len(chosen.rerun) == len(chosen.regrade) == 1
    summary = retry_runs(exp.id, store=store, failed=True)
    assert summary.retried == chosen
    attempts = _attempts(store, exp.id)
    assert attempts["c001"] == 1  # re-graded from its stored answer: no second agent run
    assert attempts["c000"] == 2  # executed again
    assert calls.agent[("retry", "c001", 0, "a")] == 1 and calls.agent[("retry", "c000", 0, "a")] == 2
    assert calls.grader[("retry", "c001", 0, "a")] == 2  # graded again
    assert summary.retried.done_text == (
        "re-graded 1 grading failure from the stored answers (no agent run), re-ran 1 run"
    )


def test_retry_flags_choose_one_kind(store, definition, calls):
    exp = _failed_both_ways(store, definition)
    retry_runs(exp.id, store=store, grading_failed=True)
    assert _attempts(store, exp.id) == {f"c00{i}": 1 for i in range(6)}
    assert calls.grader[("retry", "c001", 0, "a")] == 2 and calls.agent[("retry", "c000", 0, "a")] == 1
    retry_runs(exp.id, store=store, execution_failed=True)
    assert _attempts(store, exp.id)["c000"] == 2 and _attempts(store, exp.id)["c001"] == 1


def test_a_retry_started_in_the_background_does_what_retry_runs_does(store, definition, calls):
    exp = _failed_both_ways(store, definition)
    chosen = select_retry(exp.id, store=store, failed=True)
    handle = start_experiment(exp.id, store=store, retry=chosen)
    handle.wait(60)
    assert handle.done() and store.experiments.get(exp.id).status == "finished"
    attempts = _attempts(store, exp.id)
    assert attempts["c001"] == 1 and attempts["c000"] == 2  # re-graded from its answer; executed again
    assert calls.grader[("retry", "c001", 0, "a")] == 2
    assert all(n == 1 for case, n in attempts.items() if case not in ("c000", "c001"))  # nothing else ran


def test_a_retry_started_while_another_process_runs_it_resets_nothing(store, definition):
    exp = _failed_both_ways(store, definition)
    chosen = select_retry(exp.id, store=store, execution_failed=True)
    store.experiments.claim_runner(exp.id, origin="python")  # this live process holds it
    with pytest.raises(ExperimentError, match="being run by"):
        start_experiment(exp.id, store=store, retry=chosen)
    assert {r.case_id: r.state for r in store.runs.records(exp.id)}["c000"] == "fail"


def test_the_cli_says_what_it_retried(cli, store, definition, calls):
    exp = _failed_both_ways(store, definition)
    result = cli("retry", exp.id, "--failed", "-q")
    assert result.exit_code == 0, result.output
    assert (
        "retried: re-graded 1 grading failure from the stored answers (no agent run), re-ran 1 run"
        in result.output
    )
    assert _attempts(store, exp.id)["c001"] == 1
    as_json = json.loads(cli("retry", exp.id, "--grading-failed", "--json").output)
    assert as_json["retried"] == {"rerun": 0, "regraded": 1} and as_json["executed"] == 0
    again = json.loads(cli("retry", exp.id, "--execution-failed", "--json").output)
    assert again["retried"] == {"rerun": 1, "regraded": 0}  # c000 fails again: ran once more
    assert _attempts(store, exp.id) == {"c000": 3, "c001": 1, **{f"c00{i}": 1 for i in range(2, 6)}}


@pytest.mark.parametrize("flag", ["--failed", "--grading-failed"])
def test_a_wrong_answer_is_not_a_failure_to_retry(cli, store, definition, flag):
    exp = create_experiment(
        definition(rounds=1, retries=0, arms={"a": {"agent": "scripted", "wrong": ["c002"]}}), store=store
    )
    run_experiment(exp.id, store=store)
    result = cli("retry", exp.id, flag)
    assert result.exit_code == 2 and "nothing to retry" in result.output
    with open_store(store.path) as s:
        assert {r.attempts for r in s.runs.records(exp.id)} == {1}

"""Running experiments: states, grades, retries, timeouts, pause/resume/cancel, crash reconciliation."""

from __future__ import annotations

import itertools
import json
import threading

import pytest

from abbench.errors import ExperimentError
from abbench.runner import (
    cancel_experiment,
    create_experiment,
    experiment_status,
    pause_experiment,
    regrade_experiment,
    resume_experiment,
    retry_runs,
    run_experiment,
    start_experiment,
)
from abbench.store import open_store
from tests.blocking import SAFETY_NET_S, Gate, wait_for


def _states(store, exp_id):
    return {(r.case_id, r.round, r.arm): r.state for r in store.runs.records(exp_id)}


def test_run_grades_every_run_into_one_batch(store, definition):
    exp = create_experiment(definition(), store=store)
    summary = run_experiment(exp.id, store=store)
    assert summary.status == "finished"
    runs = store.runs.records(exp.id)
    assert len(runs) == 24
    wrong = {("control", "c001"), ("control", "c002"), ("treatment", "c002")}
    for r in runs:
        assert r.state == ("fail" if (r.arm, r.case_id) in wrong else "pass"), r
        assert r.failure_type is None
        assert r.output.prediction in ("fast", "slow", "wrong")
        assert r.started_by and r.attempts == 1
    assert summary.executed == 24 and summary.graded == 24
    assert store.grades.batches(exp.id) == [store.experiments.get(exp.id).batch_id]
    assert len(store.grades.records(exp.id)) == 24
    # every state transition is kept, in order
    events = store.runs.events(runs[0].id)
    assert [(e["from"], e["to"]) for e in events] == [
        ("pending", "running"),
        ("running", "executed"),
        ("executed", "evaluating"),
        ("evaluating", "pass"),
    ]
    # transcripts go to files; the database keeps the path and a summary
    r = runs[0]
    lines = r.transcript_path.read_text(encoding="utf-8").splitlines()
    assert [json.loads(x)["role"] for x in lines] == ["user", "assistant"]
    assert r.transcript_summary["messages"] == 2
    assert store.experiments.get(exp.id).status == "finished"


def test_retryable_failures_are_retried_and_others_fail_once(store, definition):
    exp = create_experiment(
        definition(
            rounds=1,
            arms={"a": {"agent": "scripted", "flaky": 1, "fail": ["c003"], "tag": "retry"}},
            retries=2,
        ),
        store=store,
    )
    run_experiment(exp.id, store=store)
    runs = {r.case_id: r for r in store.runs.records(exp.id)}
    assert runs["c000"].state == "pass" and runs["c000"].attempts == 2
    failed = runs["c003"]
    assert failed.state == "fail" and failed.failure_type == "agent_error" and failed.retryable is False
    assert "cannot answer c003" in failed.error and failed.attempts == 1  # not retryable: one attempt
    assert failed.output is None and failed.execution_failed and not failed.grading_failed


def test_exhausted_retries_fail_as_retryable(store, definition):
    exp = create_experiment(
        definition(
            rounds=1, arms={"a": {"agent": "scripted", "flaky": 99}}, retries=1, cases={"ids": ["c000"]}
        ),
        store=store,
    )
    run_experiment(exp.id, store=store)
    (run,) = store.runs.records(exp.id)
    assert run.state == "fail" and run.failure_type == "rate_limited" and run.retryable and run.attempts == 2


def test_timeout_is_an_execution_failure(store, definition):
    exp = create_experiment(
        definition(rounds=1, arms={"a": {"agent": "scripted", "hang": ["c001"]}}, timeout_s=0.2, retries=0),
        store=store,
    )
    # the agent hangs for an hour on c001: only the timeout can end the run (the wait is a safety net)
    assert start_experiment(exp.id, store=store).wait(SAFETY_NET_S).status == "finished"
    runs = {r.case_id: r for r in store.runs.records(exp.id)}
    assert runs["c001"].failure_type == "timeout" and runs["c001"].state == "fail"
    assert runs["c000"].state == "pass"


def test_pause_resume_through_a_handle(store, definition, tmp_path):
    gate = Gate(tmp_path / "gate")
    exp = create_experiment(
        definition(rounds=4, concurrency=2, arms={"a": {"agent": "scripted", **gate.params}}), store=store
    )
    handle = start_experiment(exp.id, store=store)
    gate.wait_arrived(2)  # both workers hold a run
    handle.pause()
    wait_for(lambda: handle.progress.status == "paused", "the pause")
    gate.allow(2)  # the runs in flight finish; a runner that ignored the pause would start two more
    wait_for(lambda: experiment_status(exp.id, store=store).done == 2, "the runs in flight to finish")
    assert gate.arrived() == 2 and not handle.done()
    handle.resume()
    gate.open()
    summary = handle.wait(SAFETY_NET_S)
    assert summary.status == "finished" and summary.progress.done == 24 and gate.arrived() == 24


def test_pause_and_cancel_from_another_store_connection(store, definition, tmp_path):
    gate = Gate(tmp_path / "gate")
    exp = create_experiment(
        definition(rounds=5, concurrency=2, arms={"a": {"agent": "scripted", **gate.params}}), store=store
    )
    handle = start_experiment(exp.id, store=store)
    other = open_store(store.path)  # what another process sees and writes
    gate.wait_arrived(2)
    assert pause_experiment(exp.id, store=other) is True
    wait_for(lambda: handle.progress.status == "paused", "the pause asked from another connection")
    gate.allow(2)
    wait_for(lambda: experiment_status(exp.id, store=other).done == 2, "the runs in flight to finish")
    assert gate.arrived() == 2
    assert resume_experiment(exp.id, store=other) is True
    gate.wait_arrived(4)  # two new runs in flight, held at the gate
    assert cancel_experiment(exp.id, store=other) is None
    summary = handle.wait(SAFETY_NET_S)
    assert summary.status == "cancelled"
    counts = experiment_status(exp.id, store=other).counts()
    # two answered before the pause; the two held when cancel came and the 26 never started: cancelled
    assert counts["pass"] + counts["fail"] == 2 and counts["cancelled"] == 28, counts
    assert counts["pending"] == 0 and counts["running"] == 0
    other.close()


def test_cancel_without_a_runner_cancels_pending(store, definition):
    exp = create_experiment(definition(), store=store)
    assert cancel_experiment(exp.id, store=store) == 24
    assert set(_states(store, exp.id).values()) == {"cancelled"}
    assert experiment_status(exp.id, store=store).status == "cancelled"


def test_second_runner_is_refused(store, definition, tmp_path):
    gate = Gate(tmp_path / "gate")
    exp = create_experiment(
        definition(rounds=3, concurrency=1, arms={"a": {"agent": "scripted", **gate.params}}), store=store
    )
    handle = start_experiment(exp.id, store=store)
    gate.wait_arrived(1)  # the first runner is mid-run, held at the gate
    with pytest.raises(ExperimentError, match="is being run by process"):
        run_experiment(exp.id, store=open_store(store.path))
    handle.cancel()
    assert handle.wait(SAFETY_NET_S).status == "cancelled"


def test_reconciliation_after_a_crash(store, definition, calls):
    """running → interrupted execution failure, re-executed; evaluating → executed, graded without re-running."""
    exp = create_experiment(
        definition(rounds=1, arms={"a": {"agent": "scripted", "tag": "crash"}}), store=store
    )
    run_experiment(exp.id, store=store)
    runs = {r.case_id: r for r in store.runs.records(exp.id)}
    with store.transaction() as conn:
        # what a SIGKILL leaves: one run mid-execution, one mid-grading, one never started
        conn.execute("UPDATE runs SET state='running', executed_at=NULL WHERE id=?", (runs["c000"].id,))
        conn.execute("UPDATE runs SET state='evaluating' WHERE id=?", (runs["c001"].id,))
        conn.execute("UPDATE runs SET state='pending', executed_at=NULL WHERE id=?", (runs["c002"].id,))
    before = {c: calls.agent[("crash", c, 0, "a")] for c in ("c000", "c001", "c002")}
    # reading never reconciles or starts work
    assert experiment_status(exp.id, store=store).counts()["running"] == 1
    summary = run_experiment(exp.id, store=store)
    assert summary.status == "finished"
    after = {r.case_id: r for r in store.runs.records(exp.id)}
    assert {r.state for r in after.values()} <= {"pass", "fail"}
    assert before == {"c000": 1, "c001": 1, "c002": 1}
    after_calls = calls.agent
    assert after_calls[("crash", "c000", 0, "a")] == 2  # re-executed
    assert after_calls[("crash", "c001", 0, "a")] == 1  # graded from its stored execution
    assert after_calls[("crash", "c002", 0, "a")] == 2
    assert [e["to"] for e in store.runs.events(runs["c000"].id)][-5:] == [
        "fail",
        "running",
        "executed",
        "evaluating",
        "pass",
    ]
    assert [e["detail"] for e in store.runs.events(runs["c001"].id)][-3] == "reconciled: waiting for grading"


def test_regrade_reuses_executions_and_appends_to_the_batch(store, definition, calls):
    exp = create_experiment(
        definition(rounds=1, arms={"a": {"agent": "scripted", "tag": "regrade"}}), store=store
    )
    run_experiment(exp.id, store=store)
    assert calls.agent_total("regrade") == 6
    batch = store.experiments.get(exp.id).batch_id
    summary = regrade_experiment(exp.id, store=store)
    assert summary.graded == 6 and summary.executed == 0
    assert calls.agent_total("regrade") == 6
    assert store.grades.batches(exp.id) == [batch]
    run = store.runs.records(exp.id)[0]
    assert len(store.grades.history(run.id, "label_match")) == 2
    assert len(store.grades.records(exp.id)) == 6


def test_retry_failed_reexecutes_only_those(store, definition, calls):
    exp = create_experiment(
        definition(rounds=1, arms={"a": {"agent": "scripted", "fail": ["c004"], "tag": "retryfailed"}}),
        store=store,
    )
    run_experiment(exp.id, store=store)
    before = calls.agent
    assert sum(before.values()) == 6
    summary = retry_runs(exp.id, store=store, failed=True)
    changed = {k for k, n in calls.agent.items() if n != before.get(k, 0)}
    assert changed == {("retryfailed", "c004", 0, "a")}
    assert summary.failed == 1


def test_many_concurrent_graders_make_one_batch(store, definition):
    exp = create_experiment(
        definition(
            rounds=20, concurrency=64, graders=["label_match", {"type": "label_match", "name": "second"}]
        ),
        store=store,
    )
    run_experiment(exp.id, store=store)
    assert len(store.grades.batches(exp.id)) == 1
    assert len(store.grades.records(exp.id)) == 6 * 20 * 2 * 2


def test_observer_sees_progress_to_the_end(store, definition):
    seen = []

    class Obs:
        def on_progress(self, p):
            seen.append((p.done, p.total, p.status))

    exp = create_experiment(definition(), store=store)
    run_experiment(exp.id, store=store, observers=[Obs()])
    assert seen[0][0] == 0 and seen[-1] == (24, 24, "finished")
    assert all(a[0] <= b[0] for a, b in itertools.pairwise(seen))


def test_runs_from_threads_do_not_share_connections(store, definition):
    exp = create_experiment(definition(rounds=3), store=store)
    errors = []

    def read():
        try:
            for _ in range(20):
                experiment_status(exp.id, store=store)
        except Exception as exc:  # pragma: no cover - asserted below
            errors.append(exc)

    t = threading.Thread(target=read)
    t.start()
    run_experiment(exp.id, store=store)
    t.join()
    assert errors == []


def test_an_adapter_that_swallows_its_timeout_keeps_its_answer_and_its_worker_clean(store, definition):
    exp = create_experiment(
        definition(
            rounds=1,
            concurrency=1,
            timeout_s=0.05,
            retries=0,
            arms={"a": {"agent": "scripted", "stubborn_ms": 100}},
        ),
        store=store,
    )
    summary = run_experiment(exp.id, store=store)
    runs = store.runs.records(exp.id)
    # every run answered (late); one worker did them all in turn without a stray cancellation
    assert summary.status == "finished" and [r.output is not None for r in runs] == [True] * 6
    assert {r.state for r in runs} <= {"pass", "fail"} and all(r.failure_type is None for r in runs)

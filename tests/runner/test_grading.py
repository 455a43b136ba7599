"""The grading rules of the pipeline: one batch, history, ordinary grading vs re-grading, failures, no flicker."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import threading

import pytest

from abbench.errors import ExperimentError, GradingError, UsageError
from abbench.graders import FunctionGrader, GradeResult, register_grader
from abbench.runner import (
    StoreWriter,
    add_graders,
    create_experiment,
    grade_experiment,
    regrade_experiment,
    retry_runs,
    run_experiment,
)
from abbench.store import GradeWrite, open_store
from tests.blocking import SAFETY_NET_S, Gate
from tests.conftest import subprocess_env

from .conftest import log_call

VERDICT: dict[str, bool] = {}
"""tag -> the verdict scripted graders with that tag give now (default pass)."""


@register_grader("scripted_grader")
def scripted_grader(
    *, tag="", fail=(), retryable=False, flaky=0, sleep_ms=0, name="scripted_grader"
) -> FunctionGrader:
    """A grader that counts its calls (in the test's `calls` log); fails on `fail` cases; fails
    retryably `flaky` times per run."""

    async def grade(ctx):
        key = (tag, ctx.case.case_id, ctx.round, ctx.arm)
        n = log_call("grader", key)
        if sleep_ms:
            await asyncio.sleep(random.uniform(0, sleep_ms) / 1000)
        if ctx.case.case_id in fail:
            raise GradingError(
                f"scripted failure on {ctx.case.case_id}", raw_output="raw!", retryable=retryable
            )
        if n <= flaky:
            raise GradingError("flaky", retryable=True)
        ok = VERDICT.get(tag, True)
        return GradeResult(passed=ok, score=float(ok), comment=f"call {n}")

    return FunctionGrader(name, grade, "rule")


def events(store, exp_id):
    return sum(len(store.runs.events(r.id)) for r in store.runs.records(exp_id))


def states(store, exp_id):
    return {(r.case_id, r.round, r.arm): r.state for r in store.runs.records(exp_id)}


def one_arm(definition, tag, graders, **overrides):
    return definition(
        rounds=1, arms={"a": {"agent": "scripted", "tag": tag}}, graders=graders, retries=1, **overrides
    )


# -- one batch ---------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_one_batch_under_many_graders_runs_and_concurrency_then_regrade_restart_and_new_grader(
    store, definition, skill_dir
):
    graders = [
        "label_match",
        "read_skill",
        {"type": "max_tokens", "n": 100},
        {"type": "scripted_grader", "tag": "batch1", "sleep_ms": 5, "name": "g1"},
        {"type": "scripted_grader", "tag": "batch2", "sleep_ms": 5, "name": "g2"},
    ]
    exp = create_experiment(
        definition(
            rounds=10,
            concurrency=64,
            graders=graders,
            arms={
                "control": {"agent": "scripted", "tag": "batch"},
                "v1": {"agent": "scripted", "skill": str(skill_dir), "tag": "batch"},
                "v2": {"agent": "scripted", "skill": str(skill_dir), "tag": "batch"},
            },
        ),
        store=store,
    )
    assert store.experiments.get(exp.id).batch_id is None and store.grades.batches(exp.id) == []
    run_experiment(exp.id, store=store)
    runs = store.runs.records(exp.id)
    assert len(runs) == 6 * 10 * 3
    batch = store.experiments.get(exp.id).batch_id
    assert batch and store.grades.batches(exp.id) == [batch]
    assert len(store.grades.records(exp.id)) == 180 * 5

    regrade_experiment(exp.id, store=store, graders=["g1"])
    assert store.grades.batches(exp.id) == [batch]
    # a restart: a crash left some runs mid-grading
    with store.transaction() as conn:
        conn.execute(
            "UPDATE runs SET state='evaluating' WHERE id IN (SELECT id FROM runs WHERE experiment_id=? LIMIT 7)",
            (exp.id,),
        )
    run_experiment(exp.id, store=store)
    grade_experiment(
        exp.id, store=store, graders=[{"type": "scripted_grader", "tag": "batch3", "name": "g3"}]
    )
    assert store.grades.batches(exp.id) == [batch] == [store.experiments.get(exp.id).batch_id]
    assert len(store.grades.records(exp.id)) == 180 * 6
    assert len(store.grades.records(exp.id, latest=False)) == 180 * 5 + 180 + 180  # + g1 again + g3


def test_concurrent_writers_on_a_fresh_experiment_agree_on_one_batch(store, definition):
    """Writers with their own connections (as separate processes have) race to write the first grade."""
    exp = create_experiment(definition(rounds=5), store=store)
    run_ids = [r.id for r in store.runs.records(exp.id)]
    writers = [StoreWriter(open_store(store.path), interval=0.001) for _ in range(6)]
    start = threading.Barrier(len(writers))

    def write(w, i):
        start.wait()
        for rid in run_ids:
            w.grade(GradeWrite(exp.id, rid, f"grader{i}", "rule", "ok", passed=True, score=1.0))
        w.flush()

    threads = [threading.Thread(target=write, args=(w, i)) for i, w in enumerate(writers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for w in writers:
        w.close()
    assert len(store.grades.batches(exp.id)) == 1
    assert len(store.grades.records(exp.id)) == len(run_ids) * 6


@pytest.mark.slow
def test_processes_racing_for_the_batch_get_the_same_id(store, definition, tmp_path):
    exp = create_experiment(definition(rounds=1), store=store)
    gate = Gate(tmp_path / "gate")  # every process opens its store, then waits here for the others
    code = (
        "from abbench.store import open_store; from tests.blocking import pass_gate_sync\n"
        f"s = open_store({str(store.path)!r}); pass_gate_sync({gate.params!r})\n"
        f"print(s.experiments.ensure_batch({exp.id}))"
    )
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, env=subprocess_env()
        )
        for _ in range(5)
    ]
    gate.wait_arrived(5)
    gate.open()  # all five race for the first batch at once
    ids = {p.communicate(timeout=SAFETY_NET_S)[0].strip() for p in procs}
    assert len(ids) == 1 and ids == {store.experiments.get(exp.id).batch_id}


# -- history, ordinary grading, re-grading ---------------------------------------------------------------


def test_latest_grade_is_shown_and_older_ones_stay_readable(store, definition):
    exp = create_experiment(
        one_arm(definition, "hist", [{"type": "scripted_grader", "tag": "hist"}]), store=store
    )
    run_experiment(exp.id, store=store)
    VERDICT["hist"] = False
    try:
        regrade_experiment(exp.id, store=store)
    finally:
        VERDICT.pop("hist")
    run = store.runs.records(exp.id)[0]
    assert run.state == "fail" and run.passed is False
    history = store.grades.history(run.id, "scripted_grader")
    assert [(g.passed, g.comment) for g in history] == [(True, "call 1"), (False, "call 2")]
    assert store.grades.latest(run.id)["scripted_grader"].comment == "call 2"
    assert [g.comment for g in store.grades.records(exp.id) if g.run_id == run.id] == ["call 2"]
    assert len(store.grades.records(exp.id, latest=False)) == 12


def test_ordinary_grading_skips_what_is_graded_and_moves_nothing(store, definition, calls):
    exp = create_experiment(
        one_arm(definition, "skip", [{"type": "scripted_grader", "tag": "skip"}]), store=store
    )
    run_experiment(exp.id, store=store)
    before = (
        calls.grader_total("skip"),
        events(store, exp.id),
        len(store.grades.records(exp.id, latest=False)),
        states(store, exp.id),
    )
    summary = grade_experiment(exp.id, store=store)
    assert summary.graded == summary.failed == summary.executed == 0
    assert summary.up_to_date == 6
    assert (
        calls.grader_total("skip"),
        events(store, exp.id),
        len(store.grades.records(exp.id, latest=False)),
        states(store, exp.id),
    ) == before
    assert store.experiments.get(exp.id).status == "finished"


def test_explicit_regrade_always_grades_again_and_never_runs_the_agent(store, definition, calls):
    exp = create_experiment(
        one_arm(definition, "rg", [{"type": "scripted_grader", "tag": "rg"}]), store=store
    )
    run_experiment(exp.id, store=store)
    assert calls.agent_total("rg") == 6
    for n in (2, 3):
        summary = regrade_experiment(exp.id, store=store)
        assert summary.graded == 6 and summary.executed == 0
        assert calls.grader_total("rg") == 6 * n
    assert calls.agent_total("rg") == 6
    run = store.runs.records(exp.id)[0]
    assert [e["to"] for e in store.runs.events(run.id)][-2:] == ["evaluating", "pass"]


def test_adding_a_grader_grades_only_with_it(store, definition, calls):
    exp = create_experiment(
        one_arm(definition, "add", [{"type": "scripted_grader", "tag": "add"}]), store=store
    )
    run_experiment(exp.id, store=store)
    VERDICT["added"] = False
    try:
        summary = grade_experiment(
            exp.id, store=store, graders=[{"type": "scripted_grader", "tag": "added", "name": "strict"}]
        )
    finally:
        VERDICT.pop("added")
    assert summary.graded == 6 and calls.grader_total("add") == 6 and calls.grader_total("added") == 6
    assert [
        g if isinstance(g, str) else g.get("name") for g in store.experiments.get(exp.id).spec.graders
    ] == [
        None,
        "strict",
    ]
    # the verdict combines both graders: the new one fails every run
    assert set(states(store, exp.id).values()) == {"fail"}
    # adding the same definition again is harmless; nothing new to grade
    again = grade_experiment(
        exp.id, store=store, graders=[{"type": "scripted_grader", "tag": "added", "name": "strict"}]
    )
    assert again.graded == 0 and again.up_to_date == 6 and calls.grader_total("added") == 6
    with pytest.raises(ExperimentError, match="already has a grader named 'strict'"):
        add_graders(exp.id, [{"type": "scripted_grader", "tag": "other", "name": "strict"}], store=store)
    with pytest.raises(UsageError, match="unknown grader 'nonsense'"):
        add_graders(exp.id, ["nonsense"], store=store)


def test_regrading_one_grader_keeps_the_others_in_the_verdict(store, definition, calls):
    graders = [
        {"type": "scripted_grader", "tag": "keep1", "name": "g1"},
        {"type": "scripted_grader", "tag": "keep2", "name": "g2"},
    ]
    VERDICT["keep1"] = False
    try:
        exp = create_experiment(one_arm(definition, "keep", graders), store=store)
        run_experiment(exp.id, store=store)
        assert set(states(store, exp.id).values()) == {"fail"}
        regrade_experiment(exp.id, store=store, graders=["g2"])  # g2 passes; g1's latest still fails
    finally:
        VERDICT.pop("keep1")
    assert set(states(store, exp.id).values()) == {"fail"}
    assert calls.grader_total("keep1") == 6 and calls.grader_total("keep2") == 12


def test_nothing_new_to_grade_is_not_a_failure(store, definition, calls):
    """A crash after the grades were written but before the run moved: the run takes its latest grades."""
    exp = create_experiment(
        one_arm(definition, "nn", [{"type": "scripted_grader", "tag": "nn"}]), store=store
    )
    run_experiment(exp.id, store=store)
    run = store.runs.records(exp.id)[0]
    with store.transaction() as conn:
        conn.execute("UPDATE runs SET state='evaluating' WHERE id=?", (run.id,))
    summary = run_experiment(exp.id, store=store)
    assert summary.graded == 1 and summary.failed == 0 and calls.grader_total("nn") == 6
    assert store.runs.get(run.id).state == "pass"
    assert len(store.grades.history(run.id)) == 1


def test_a_new_execution_is_never_judged_by_an_old_grade(store, definition):
    exp = create_experiment(one_arm(definition, "stale", ["label_match"]), store=store)
    run_experiment(exp.id, store=store)
    run = store.runs.records(exp.id)[0]
    assert run.state == "pass"
    # a re-execution stored its (now wrong) answer, then the process died before grading it
    with store.transaction() as conn:
        conn.execute(
            "UPDATE runs SET state='executed', attempts=attempts+1, prediction='wrong' WHERE id=?", (run.id,)
        )
    run_experiment(exp.id, store=store)
    after = store.runs.get(run.id)
    assert after.state == "fail" and after.passed is False
    assert [g.run_attempt for g in store.grades.history(run.id)] == [1, 2]


def test_status_after_grading_only_says_finished_when_nothing_is_left(store, definition):
    exp = create_experiment(one_arm(definition, "status", ["label_match"]), store=store)
    summary = grade_experiment(exp.id, store=store)  # nothing executed yet
    assert summary.graded == 0 and store.experiments.get(exp.id).status == "created"
    assert set(states(store, exp.id).values()) == {"pending"}


# -- grading failures -------------------------------------------------------------------------------------


def test_a_final_grading_failure_stays_failed_until_someone_regrades(store, definition, calls):
    graders = [{"type": "scripted_grader", "tag": "final", "fail": ["c001"], "retryable": False}]
    exp = create_experiment(one_arm(definition, "final", graders), store=store)
    summary = run_experiment(exp.id, store=store)
    assert summary.failed == 1 and summary.graded == 5
    run = next(r for r in store.runs.records(exp.id) if r.case_id == "c001")
    assert (
        run.state == "fail" and run.failure_type is None and run.grading_failed and not run.execution_failed
    )
    assert "scripted failure on c001" in run.error
    (grade,) = store.grades.history(run.id)
    assert grade.status == "error" and grade.raw_output == "raw!" and grade.retryable is False
    assert calls.grader[("final", "c001", 0, "a")] == 1  # not retried
    before = events(store, exp.id)
    grade_experiment(exp.id, store=store)
    assert calls.grader[("final", "c001", 0, "a")] == 1 and events(store, exp.id) == before
    regrade_experiment(exp.id, store=store, failed=True)
    assert calls.grader[("final", "c001", 0, "a")] == 2
    assert calls.agent_total("final") == 6


def test_a_retryable_failure_is_retried_in_place_without_flicker(store, definition, calls):
    graders = [{"type": "scripted_grader", "tag": "flaky", "flaky": 1}]
    exp = create_experiment(one_arm(definition, "flaky", graders), store=store)
    run_experiment(exp.id, store=store)
    run = store.runs.records(exp.id)[0]
    assert run.state == "pass" and calls.grader[("flaky", run.case_id, 0, "a")] == 2
    assert [(e["from"], e["to"]) for e in store.runs.events(run.id)] == [
        ("pending", "running"),
        ("running", "executed"),
        ("executed", "evaluating"),
        ("evaluating", "pass"),
    ]
    assert [g.status for g in store.grades.history(run.id)] == ["ok"]


def test_retryable_failures_come_back_only_while_retries_remain(store, definition, calls):
    graders = [{"type": "scripted_grader", "tag": "budget", "fail": ["c000"], "retryable": True}]
    exp = create_experiment(one_arm(definition, "budget", graders), store=store)  # retries: 1
    run_experiment(exp.id, store=store)
    key = ("budget", "c000", 0, "a")
    run = next(r for r in store.runs.records(exp.id) if r.case_id == "c000")
    assert calls.grader[key] == 2  # one try and one retry, in place
    assert run.state == "fail" and run.grading_failed and run.grade_attempts == 1
    assert store.grades.latest(run.id)["scripted_grader"].retryable is True
    grade_experiment(exp.id, store=store)  # retries remain (1 pass ≤ retries 1): grade again
    assert calls.grader[key] == 4 and store.runs.get(run.id).grade_attempts == 2
    before = events(store, exp.id)
    summary = grade_experiment(exp.id, store=store)  # out of retries: stays failed, untouched
    assert calls.grader[key] == 4 and events(store, exp.id) == before and summary.up_to_date == 6
    assert store.runs.get(run.id).state == "fail"


def test_graders_are_checked_when_the_experiment_is_defined(store, definition):
    with pytest.raises(ExperimentError, match="several graders named label_match"):
        create_experiment(definition(graders=["label_match", "label_match"]), store=store)
    with pytest.raises(UsageError, match="grader 'regex' has no option 'patern'"):
        create_experiment(definition(graders=[{"type": "regex", "patern": "x"}]), store=store)
    with pytest.raises(ExperimentError, match="pairwise grader pj needs two arms"):
        create_experiment(
            definition(
                graders=[
                    {
                        "type": "pairwise_judge",
                        "model": "m",
                        "base_url": "http://127.0.0.1:9",
                        "arms": ["control", "v9"],
                        "name": "pj",
                    }
                ]
            ),
            store=store,
        )
    assert store.experiments.all() == []


def test_retry_then_grade_regrades_the_new_execution(store, definition, calls):
    exp = create_experiment(
        one_arm(definition, "rerun", [{"type": "scripted_grader", "tag": "rerun"}]), store=store
    )
    run_experiment(exp.id, store=store)
    retry_runs(exp.id, store=store, cases=["c000"])
    run = next(r for r in store.runs.records(exp.id) if r.case_id == "c000")
    assert [g.run_attempt for g in store.grades.history(run.id)] == [1, 2]
    assert calls.grader[("rerun", "c000", 0, "a")] == 2 and calls.agent_total("rerun") == 7


@pytest.mark.parametrize("passed", [True, False, None, 1, 0])
@pytest.mark.parametrize("score", [None, 0.0, 0.5])
@pytest.mark.parametrize("error", [None, "boom"])
@pytest.mark.parametrize("no_result", [False, True])
def test_one_graders_verdict_is_the_same_as_beside_a_grader_with_no_say(passed, score, error, no_result):
    """One grader's verdict takes a shortcut; a second grader that reached nothing and said nothing
    (no result, no error) changes no verdict, so the general path must agree with the shortcut."""
    from abbench.runner import combine_verdicts

    result = None if no_result else GradeResult(passed=passed, score=score)
    alone = combine_verdicts([("g", result, error)])
    beside = combine_verdicts([("g", result, error), ("silent", None, None)])
    assert alone == beside
    assert type(alone[0]) is type(beside[0])

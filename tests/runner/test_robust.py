"""The runner under stress: blocking graders, cancels during grading, SIGTERM, a store that refuses writes."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections import Counter

import pytest

from abbench.runner import create_experiment, experiment_status, run_experiment, start_experiment
from abbench.store import open_store
from tests.blocking import SAFETY_NET_S, Gate, wait_for
from tests.conftest import REPO, subprocess_env
from tests.permissions import without_write_permission
from tests.runner.conftest import gated_experiment

from . import robust_helpers
from .conftest import make_cases


def _wait(predicate, timeout=SAFETY_NET_S):
    return wait_for(predicate, "the experiment to get there", timeout)


def _experiment(store, name, n=8, graders=("label_match",), **arm):
    ds = store.datasets.save(name, make_cases(n), label_set=["fast", "slow"])
    arm = arm or {"agent": "scripted"}
    return create_experiment(
        {
            "name": name,
            "dataset": ds.fingerprint,
            "concurrency": 4,
            "retries": 0,
            "graders": list(graders),
            "arms": {"a": dict(arm)},
        },
        store=store,
    )


def _states(store, exp_id) -> Counter:
    return Counter(r[0] for r in store.query("SELECT state FROM runs WHERE experiment_id=?", (exp_id,)))


def test_synchronous_function_graders_run_side_by_side_in_threads(store):
    # `meet` passes only when two graders are inside it at once; on the event loop they ran one by
    # one, every call timed out at the barrier and each run was a grading failure.
    robust_helpers.BARRIER.reset()
    exp = _experiment(store, "threads", n=4, graders=["tests.runner.robust_helpers:meet"])
    summary = run_experiment(exp.id, store=store)
    assert summary.failed == 0, store.query("SELECT error FROM runs")[0][0]
    assert _states(store, exp.id) == {"pass": 4}


def test_cancel_stops_grading_in_flight_and_keeps_the_executions(store, monkeypatch, tmp_path):
    judges = Gate(tmp_path / "judges")  # never opened: only the cancel can end these gradings
    monkeypatch.setenv("JUDGE_GATE", str(judges.folder))
    exp = _experiment(store, "slowjudge", n=6, graders=["tests.runner.robust_helpers:slow_judge"])
    handle = start_experiment(exp.id, store=store)
    judges.wait_arrived(4)  # every worker (concurrency 4) waits on its judge
    _wait(lambda: _states(store, exp.id)["evaluating"] == 4)
    handle.cancel()
    summary = handle.wait(timeout=SAFETY_NET_S)
    assert summary.status == "cancelled"
    states = _states(store, exp.id)
    # runs being graded stay executed (waiting for grading), never cancelled: their execution is kept;
    # the two that never started are cancelled
    assert states == {"executed": 4, "cancelled": 2}, states
    events = store.query(
        "SELECT COUNT(*) FROM run_events WHERE from_state='evaluating' AND to_state='executed' "
        "AND detail LIKE 'cancelled while grading%'"
    )[0][0]
    assert events == states["executed"]


def test_cancel_stops_pairwise_judging_in_flight(store, monkeypatch, tmp_path):
    judges = Gate(tmp_path / "judges")  # never opened: only the cancel can end the judging
    monkeypatch.setenv("JUDGE_GATE", str(judges.folder))
    ds = store.datasets.save("pairs", make_cases(4), label_set=["fast", "slow"])
    exp = create_experiment(
        {
            "name": "pairs",
            "dataset": ds.fingerprint,
            "graders": ["label_match", {"type": "tests.runner.robust_helpers:slow_pair", "kind": "pairwise"}],
            "arms": {"a": {"agent": "scripted"}, "b": {"agent": "scripted"}},
        },
        store=store,
    )
    handle = start_experiment(exp.id, store=store)
    assert _wait(lambda: _states(store, exp.id)["pass"] == 8)  # pairs are judged after the runs
    judges.wait_arrived(1)
    handle.cancel()
    summary = handle.wait(timeout=SAFETY_NET_S)
    assert summary.status == "cancelled" and summary.pairs_judged == 0


@pytest.mark.slow
def test_a_runner_that_blocks_its_loop_keeps_its_claim(tmp_path):
    # A grader that blocks the event loop used to stop the heartbeat: after HEARTBEAT_STALE_S another
    # process took the experiment over and executed its runs a second time.
    block = Gate(tmp_path / "block")
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    exp = _experiment(
        store,
        "blocked",
        n=2,
        graders=["tests.runner.robust_helpers:block_loop"],
        agent="python",
        function="tests.runner.crash_agent:slow_echo",
        sees_gold=True,
    )
    cmd = [sys.executable, "-m", "abbench", "--store", str(store_dir), "run", str(exp.id), "-q"]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=subprocess_env(TQDM_DISABLE="1", BLOCK_GATE=str(block.folder)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        block.wait_arrived(1)  # the child's event loop is blocked inside the grader from now on
        beat = lambda: store.experiments.get(exp.id).heartbeat_at  # noqa: E731
        first = _wait(beat)
        second = _wait(lambda: (beat() or 0) > first and beat())
        _wait(lambda: (beat() or 0) > second)  # two fresh beats while the loop cannot run anything
        assert block.arrived() == 1 and proc.poll() is None
        assert store.experiments.get(exp.id).runner_alive
        assert experiment_status(exp.id, store=store).status == "running"
        assert store.experiments.claim_runner(exp.id) is False
        block.open()
        _out, err = proc.communicate(timeout=SAFETY_NET_S)
        assert proc.returncode == 0, err
    finally:
        if proc.poll() is None:
            proc.kill()
    assert _states(store, exp.id) == {"pass": 2}
    assert store.experiments.get(exp.id).runner_pid is None


def _start_run(store_dir, exp_id, log, **env):
    cmd = [sys.executable, "-m", "abbench", "--store", str(store_dir), "run", str(exp_id), "-q"]
    return subprocess.Popen(
        cmd,
        cwd=REPO,
        env=subprocess_env(CRASH_LOG=str(log), TQDM_DISABLE="1", **env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # a child of a non-interactive shell inherits SIGINT ignored; a terminal's Ctrl-C is not
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_sigterm_and_ctrl_c_stop_cleanly_and_a_new_run_finishes_the_rest(tmp_path, sig, code):
    store_dir = tmp_path / "store"
    log = tmp_path / "executions.log"
    store = open_store(store_dir)
    ds = store.datasets.save("sig", make_cases(30), label_set=["fast", "slow"])
    gate = Gate(tmp_path / "gate", allowed=12)  # twelve runs answer, then four wait in flight
    exp = gated_experiment(store, "sig", ds.fingerprint, gate, rounds=2, concurrency=4)
    proc = _start_run(store_dir, exp.id, log)
    try:
        assert _wait(lambda: _states(store, exp.id)["pass"] + _states(store, exp.id)["fail"] == 12)
        gate.wait_arrived(16)
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=SAFETY_NET_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert ("terminated" if sig == signal.SIGTERM else "interrupted") in err
    stopped = store.experiments.get(exp.id)
    assert stopped.status == "interrupted" and stopped.runner_pid is None
    states = _states(store, exp.id)
    assert states["running"] == 0 and states["evaluating"] == 0, states  # nothing left half-way
    # the four in flight are interrupted (an execution failure, run again next time); 44 never started
    assert states["pending"] == 44 and states["pass"] + states["fail"] == 12 + 4, states
    gate.open()

    again = subprocess.run(
        [sys.executable, "-m", "abbench", "--store", str(store_dir), "run", str(exp.id), "-q"],
        cwd=REPO,
        env=subprocess_env(CRASH_LOG=str(log), TQDM_DISABLE="1"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 0, again.stderr
    assert set(_states(store, exp.id)) <= {"pass", "fail"}
    executed = Counter(
        r[0]
        for r in store.query(
            "SELECT run_id FROM run_events WHERE to_state='executed' AND from_state='running'"
        )
    )
    assert len(executed) == 60 and set(executed.values()) == {1}  # nothing recorded twice, nothing lost


@pytest.mark.slow
def test_a_transcripts_folder_that_refuses_writes_stops_the_run_with_a_message(tmp_path):
    prefix = without_write_permission()
    if prefix is None:
        pytest.skip("running as root without setpriv: permissions cannot be enforced")
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    exp = _experiment(
        store, "rofs", n=12, agent="builtin", skill=str(REPO / "data/demo/skills/fast-slow-routing-v2")
    )
    transcripts = store_dir / "transcripts"
    transcripts.chmod(0o555)
    try:
        run = subprocess.run(
            [*prefix, sys.executable, "-m", "abbench", "--store", str(store_dir), "run", str(exp.id), "-q"],
            cwd=REPO,
            env=subprocess_env(TQDM_DISABLE="1"),
            capture_output=True,
            text=True,
            timeout=600,
        )
    finally:
        transcripts.chmod(0o755)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert str(transcripts) in run.stderr and "ermission denied" in run.stderr
    assert "run the experiment again" in run.stderr
    stopped = store.experiments.get(exp.id)
    assert stopped.runner_pid is None and stopped.status == "interrupted"

    again = subprocess.run(
        [sys.executable, "-m", "abbench", "--store", str(store_dir), "run", str(exp.id), "-q"],
        cwd=REPO,
        env=subprocess_env(TQDM_DISABLE="1"),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert again.returncode == 0, again.stderr
    assert set(_states(store, exp.id)) <= {"pass", "fail"}
    for run_id, path in store.query("SELECT id, transcript_path FROM runs WHERE experiment_id=?", (exp.id,)):
        assert path and (store_dir / path).is_file(), run_id


def _careless_experiment(store, kinds):
    ds = store.datasets.save("careless", make_cases(3), label_set=["fast", "slow"])
    return create_experiment(
        {
            "name": "careless",
            "dataset": ds.fingerprint,
            "retries": 0,
            "arms": {
                kind: {"agent": "python", "function": "tests.runner.robust_helpers:careless", "kind": kind}
                for kind in kinds
            },
        },
        store=store,
    )


def test_an_answer_that_cannot_be_stored_is_a_bad_output_and_the_analysis_still_works(store):
    from abbench.metrics import experiment_metrics
    from abbench.review import case_detail, disagreements

    kinds = sorted(robust_helpers.GARBAGE)
    exp = _careless_experiment(store, kinds)
    run_experiment(exp.id, store=store)
    rows = store.query(
        "SELECT a.name, r.state, r.failure_type, r.retryable, r.error, r.attempts FROM runs r "
        "JOIN arms a ON a.id = r.arm_id WHERE r.experiment_id=?",
        (exp.id,),
    )
    assert len(rows) == 3 * len(kinds)
    field = {
        "confidence_word": "confidence",
        "cost_word": "cost",
        "negative_cost": "cost",
        "usage_word": "many",
        "refs_not_a_list": "evidence_refs",
    }
    for arm, state, failure_type, retryable, error, attempts in rows:
        assert (state, failure_type, retryable, attempts) == ("fail", "bad_output", 0, 1), (arm, error)
        assert field[arm] in error and "case c00" in error
    # nothing unreadable reached the store: every view of the experiment still works
    assert experiment_metrics(exp.id, store=store).arm(kinds[0]).counts.execution_failed == 3
    disagreements(exp.id, store=store)
    assert case_detail(exp.id, "c000", store=store).case.case_id == "c000"


def test_readable_answers_are_stored_in_the_types_the_analysis_reads(store):
    kinds = sorted(robust_helpers.READABLE)
    exp = _careless_experiment(store, kinds)
    run_experiment(exp.id, store=store)
    for kind in kinds:
        expected = robust_helpers.READABLE[kind][1]
        columns = ", ".join(expected)
        rows = store.query(
            f"SELECT r.state, {columns} FROM runs r JOIN arms a ON a.id = r.arm_id "
            "WHERE r.experiment_id=? AND a.name=?",
            (exp.id, kind),
        )
        for row in rows:
            assert row[0] in ("pass", "fail"), kind
            assert dict(zip(expected, tuple(row)[1:], strict=True)) == expected, kind


def test_an_experiment_paused_in_another_runner_says_so_to_retry_regrade_and_run(store, definition, tmp_path):
    from abbench.errors import ExperimentError
    from abbench.runner import pause_experiment, regrade_experiment, resume_experiment, retry_runs

    gate = Gate(tmp_path / "gate", allowed=3)
    exp = create_experiment(
        definition(
            rounds=4, concurrency=1, arms={"a": {"agent": "scripted", "fail": ["c001"], **gate.params}}
        ),
        store=store,
    )
    handle = start_experiment(exp.id, store=store)
    other = open_store(store.path)  # what another process sees
    gate.wait_arrived(4)  # three runs answered, the fourth waits in flight
    assert pause_experiment(exp.id, store=other) is True
    assert _wait(lambda: handle.progress.status == "paused")
    for attempt in (
        lambda: retry_runs(exp.id, store=other, failed=True),
        lambda: regrade_experiment(exp.id, store=other),
        lambda: run_experiment(exp.id, store=other),
    ):
        with pytest.raises(ExperimentError) as err:
            attempt()
        message = str(err.value)  # the notebook's words: the calls, not the commands
        assert "is paused in process" in message and f"abbench.resume_experiment({exp.id})" in message
        assert [a.cli for a in err.value.actions] == [f"abbench resume {exp.id}", f"abbench cancel {exp.id}"]
        assert "pause" not in message.split("is paused")[1].replace("resume", "")  # never "pause it first"
    resume_experiment(exp.id, store=other)
    gate.open()
    assert handle.wait(SAFETY_NET_S).status == "finished"
    other.close()


def test_pausing_a_finished_experiment_leaves_it_finished(store, definition):
    from abbench.runner import pause_experiment

    exp = create_experiment(definition(), store=store)
    run_experiment(exp.id, store=store)
    assert pause_experiment(exp.id, store=store) is False
    assert experiment_status(exp.id, store=store).status == "finished"


def test_a_pause_holds_pairwise_judging_until_resumed(store, monkeypatch, tmp_path):
    judges = Gate(tmp_path / "judges")
    monkeypatch.setenv("JUDGE_GATE", str(judges.folder))
    ds = store.datasets.save("pairs-pause", make_cases(6), label_set=["fast", "slow"])
    exp = create_experiment(
        {
            "name": "pairs-pause",
            "dataset": ds.fingerprint,
            "concurrency": 1,
            "graders": ["label_match", {"type": "tests.runner.robust_helpers:slow_pair", "kind": "pairwise"}],
            "arms": {"a": {"agent": "scripted"}, "b": {"agent": "scripted"}},
        },
        store=store,
    )
    pairs = lambda: store.query_one(  # noqa: E731
        "SELECT COUNT(*) FROM grades WHERE experiment_id=? AND other_run_id IS NOT NULL", (exp.id,)
    )[0]
    handle = start_experiment(exp.id, store=store)
    assert _wait(lambda: _states(store, exp.id)["pass"] == 12)  # pairs are judged after the runs
    judges.wait_arrived(1)  # the first pair is being judged (concurrency 1: one at a time)
    handle.pause()
    assert _wait(lambda: handle.progress.status == "paused")
    judges.allow(1)  # the pair in flight finishes; a judging that ignored the pause would start the next
    _wait(lambda: pairs() == 1)
    _wait(lambda: handle.progress.pairs_done == 1)
    assert judges.arrived() == 1 and handle.progress.pairs_total == 6  # shown while paused
    handle.resume()
    judges.open()
    summary = handle.wait(timeout=SAFETY_NET_S)
    assert summary.status == "finished" and pairs() == 6 and summary.pairs_judged == 6
    assert summary.progress.as_dict()["pairs_done"] == 6

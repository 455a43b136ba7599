"""The Dask executor on real LocalClusters of worker processes: same results as local, control, faults.

No test sleeps or bounds a duration: agents wait at a `tests.blocking.Gate` the test opens, and the
test waits on conditions it controls (arrivals, stored states), with a safety net that fails it.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections import Counter

import pytest

from abbench.errors import ExperimentError
from abbench.metrics import experiment_metrics
from abbench.runner import create_experiment, run_experiment, start_experiment
from abbench.store import open_store
from tests.blocking import SAFETY_NET_S, Gate, wait_for

from ..conftest import DEMO, REPO, subprocess_env
from .conftest import gated_experiment, make_cases

distributed = pytest.importorskip("distributed")

SKILL = DEMO / "skills" / "fast-slow-routing-v2"


@pytest.fixture(scope="module")
def cluster():
    """One LocalCluster of two single-threaded worker processes, shared by this module's tests that
    connect to an existing scheduler (``scheduler=``)."""
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=":0"
        ) as made,
        distributed.Client(made) as client,
    ):
        yield made, client


def _executions(store, exp_id) -> Counter:
    """Run id -> how many of its attempts were recorded as executed."""
    return Counter(
        r[0]
        for r in store.query(
            "SELECT a.run_id FROM run_attempts a JOIN runs r ON r.id = a.run_id "
            "WHERE r.experiment_id=? AND a.outcome='executed'",
            (exp_id,),
        )
    )


def _scrub(value):
    """A figure tree without what depends on the machine (latencies, times)."""
    if isinstance(value, dict):
        return {
            k: _scrub(v) for k, v in value.items() if "latency" not in k and not k.endswith(("_at", "_s"))
        }
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def _stored(tmp_path, name: str, n: int):
    """A store at ``tmp_path/store`` and its dataset `name` of `n` cases (`make_cases`)."""
    store = open_store(tmp_path / "store")
    return store, store.datasets.save(name, make_cases(n), label_set=["fast", "slow"])


@pytest.mark.slow
def test_400_runs_on_dask_local_2_equal_the_local_executor(tmp_path):
    store, ds = _stored(tmp_path, "equal", 100)

    def make(name, **extra):
        definition = {
            "name": name,
            "dataset": ds.fingerprint,
            "rounds": 2,
            "concurrency": 8,
            "arms": {"control": {"agent": "builtin"}, "treatment": {"agent": "builtin", "skill": str(SKILL)}},
            **extra,
        }
        return create_experiment(definition, store=store)

    local, farmed = make("local"), make("farmed", executor="dask", dask={"local": 2})
    ran_local = run_experiment(local.id, store=store)
    ran_farmed = run_experiment(farmed.id, store=store)  # the definition's executor: dask, local: 2
    assert (ran_local.status, ran_farmed.status) == ("finished", "finished")
    assert ran_local.executed == ran_farmed.executed == 400

    def outcomes(exp_id):
        return {
            (r.case_id, r.round, r.arm): (
                r.state,
                r.output.prediction,
                r.passed,
                tuple(r.output.evidence_refs),
            )
            for r in store.runs.records(exp_id)
        }

    assert outcomes(local.id) == outcomes(farmed.id)
    assert len(outcomes(farmed.id)) == 400
    assert _scrub(experiment_metrics(local.id, store=store).as_dict()["arms"]) == _scrub(
        experiment_metrics(farmed.id, store=store).as_dict()["arms"]
    )
    where = store.experiments.get(farmed.id).executor
    assert where["executor"] == "dask" and where["local"] == 2 and where["workers"] == 2
    assert store.experiments.get(local.id).executor is None
    assert all(n == 1 for n in _executions(store, farmed.id).values())


@pytest.mark.slow
def test_pause_resume_and_cancel_on_an_existing_scheduler(tmp_path, cluster):
    made, client = cluster
    store, ds = _stored(tmp_path, "control", 12)
    gate = Gate(tmp_path / "gate")
    exp = gated_experiment(store, "control", ds.fingerprint, gate, concurrency=2)
    handle = start_experiment(exp.id, store=store, scheduler=made.scheduler_address)
    gate.wait_arrived(2)  # two runs in flight on the workers, held at the gate
    assert handle.where["scheduler"] == made.scheduler_address and handle.where["workers"] == 2
    assert handle.where["dashboard"] == made.dashboard_link

    handle.pause()
    wait_for(lambda: store.experiments.get(exp.id).status == "paused", "the pause")
    gate.allow(2)  # the two in flight finish; nothing new is submitted while paused
    wait_for(lambda: _done(store, exp.id) == 2, "the runs in flight to finish")
    assert gate.arrived() == 2

    handle.resume()
    gate.wait_arrived(4)  # two more in flight, held
    handle.cancel()
    summary = handle.wait(SAFETY_NET_S)
    assert summary.status == "cancelled"
    states = Counter(r.state for r in store.runs.records(exp.id))
    assert states == {"pass": 2, "cancelled": 10} or states == {"pass": 1, "fail": 1, "cancelled": 10}
    assert gate.arrived() == 4  # the cancel stopped the submitting too
    cancelled_running = store.query(
        "SELECT COUNT(*) FROM run_attempts a JOIN runs r ON r.id = a.run_id "
        "WHERE r.experiment_id=? AND a.outcome='cancelled'",
        (exp.id,),
    )[0][0]
    assert cancelled_running == 2
    # the workers were asked to stop the two held agent calls: nothing of this experiment runs there now
    from tests.runner.dask_agents import running_keys

    wait_for(lambda: not any(client.run(running_keys).values()), "the workers to stop the cancelled calls")


def _done(store, exp_id) -> int:
    return sum(1 for r in store.runs.records(exp_id) if r.state in ("pass", "fail", "cancelled"))


@pytest.mark.slow
def test_a_worker_killed_mid_run_loses_nothing_and_executes_nothing_twice(tmp_path):
    store, ds = _stored(tmp_path, "kill", 10)
    gate = Gate(tmp_path / "gate")
    exp = create_experiment(
        {
            "name": "kill",
            "dataset": ds.fingerprint,
            "concurrency": 4,
            "retries": 1,
            "arms": {
                "a": {
                    "agent": "python",
                    "function": "tests.runner.dask_agents:pid_gated",
                    "sees_gold": True,
                    **gate.params,
                }
            },
        },
        store=store,
    )
    handle = start_experiment(exp.id, store=store, dask_local=2)
    gate.wait_arrived(2)  # each worker process holds one run
    pids = [int(p.name) for p in (gate.folder / "pids").iterdir()]
    assert len(set(pids)) == 2 and os.getpid() not in pids
    os.kill(pids[0], signal.SIGKILL)
    gate.open()
    summary = handle.wait(SAFETY_NET_S)

    assert summary.status == "finished"
    runs = store.runs.records(exp.id)
    assert len(runs) == 10 and {r.state for r in runs} == {"pass"}  # 0 lost: every run terminal and right
    executed = _executions(store, exp.id)
    assert set(executed) == {r.id for r in runs} and set(executed.values()) == {1}  # 0 duplicated
    lost = store.query(
        "SELECT a.run_id, a.attempt FROM run_attempts a JOIN runs r ON r.id = a.run_id "
        "WHERE r.experiment_id=? AND a.failure_type='worker_lost'",
        (exp.id,),
    )
    # the runs the dead worker held (the one it ran, and the one it may have had ready next): each
    # counts one more attempt, recorded with its event, then executes once elsewhere
    assert 1 <= len(lost) <= 2, [tuple(r) for r in lost]
    for run_id, attempt in lost:
        assert attempt == 1 and next(r for r in runs if r.id == run_id).attempts == 2
        events = [r[0] or "" for r in store.query("SELECT detail FROM run_events WHERE run_id=?", (run_id,))]
        assert any("worker_lost" in e and "retry in" in e for e in events), events


@pytest.mark.slow
def test_coordinator_sigkilled_and_restarted_records_no_duplicate_execution(tmp_path, cluster):
    made, _ = cluster
    store_dir = tmp_path / "store"
    store, ds = _stored(tmp_path, "crash", 12)
    gate = Gate(tmp_path / "gate", allowed=6)  # six runs finish; then two wait on the workers
    exp = create_experiment(
        {
            "name": "crash",
            "dataset": ds.fingerprint,
            "concurrency": 2,
            "arms": {
                "a": {
                    "agent": "python",
                    "function": "tests.runner.crash_agent:slow_echo",
                    "sees_gold": True,
                    **gate.params,
                }
            },
        },
        store=store,
    )
    log = tmp_path / "executions.log"
    env = subprocess_env(CRASH_LOG=str(log), TQDM_DISABLE="1")
    cmd = [sys.executable, "-m", "abbench", "--store", str(store_dir), "run", str(exp.id), "-q"]
    cmd += ["--scheduler", made.scheduler_address]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    gate.wait_arrived(8)
    wait_for(
        lambda: _done(store, exp.id) >= 6 or proc.poll() is not None, "the six let through to be recorded"
    )
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    held = {r.id for r in store.runs.records(exp.id) if r.state == "running"}
    assert len(held) == 2
    gate.open()  # the two orphaned calls now finish on the workers, with no coordinator to take them

    restart = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert restart.returncode == 0, restart.stderr
    runs = store.runs.records(exp.id)
    assert {r.state for r in runs} <= {"pass", "fail"} and len(runs) == 12
    executed = _executions(store, exp.id)
    assert set(executed) == {r.id for r in runs} and set(executed.values()) == {1}
    for run_id in held:  # interrupted by the kill, run again once: the orphaned result was discarded
        attempts = store.query(
            "SELECT attempt, outcome FROM run_attempts WHERE run_id=? ORDER BY attempt", (run_id,)
        )
        # attempt 1 died with its coordinator: kept (stored when it started), recorded as interrupted
        assert [tuple(a) for a in attempts] == [(1, "failed"), (2, "executed")], [tuple(a) for a in attempts]
        details = [r[0] for r in store.query("SELECT detail FROM run_events WHERE run_id=?", (run_id,))]
        assert "reconciled: interrupted" in details, details


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_is_refused_before_any_run(tmp_path):
    store, ds = _stored(tmp_path, "nowhere", 3)
    exp = create_experiment(
        {
            "name": "nowhere",
            "dataset": ds.fingerprint,
            "executor": "dask",
            "dask": {"scheduler": f"tcp://127.0.0.1:{_closed_port()}", "connect_timeout_s": 1},
            "arms": {"a": {"agent": "builtin"}},
        },
        store=store,
    )
    with pytest.raises(ExperimentError, match=r"cannot reach the Dask scheduler at tcp://127\.0\.0\.1:\d+"):
        run_experiment(exp.id, store=store)
    assert {r.state for r in store.runs.records(exp.id)} == {"pending"}
    after = store.experiments.get(exp.id)
    assert (after.status, after.runner_pid, after.executor) == ("created", None, None)


def test_the_executor_options_are_checked(tmp_path):
    store, ds = _stored(tmp_path, "opts", 2)
    exp = create_experiment(
        {"name": "opts", "dataset": ds.fingerprint, "arms": {"a": {"agent": "builtin"}}}, store=store
    )
    from abbench.errors import UsageError

    with pytest.raises(UsageError, match="not both"):
        run_experiment(exp.id, store=store, scheduler="tcp://127.0.0.1:1", dask_local=2)
    with pytest.raises(UsageError, match="need --executor dask"):
        run_experiment(exp.id, store=store, executor="local", dask_local=2)
    with pytest.raises(ExperimentError, match=r"dask: give scheduler .* or local .*, not both"):
        create_experiment(
            {
                "name": "x",
                "dataset": ds.fingerprint,
                "dask": {"local": 2, "scheduler": "tcp://h:1"},
                "arms": {"a": {"agent": "builtin"}},
            },
            store=store,
        )
    with pytest.raises(ExperimentError, match=r"unknown key 'schedular' \(did you mean 'scheduler'\?\)"):
        create_experiment(
            {
                "name": "y",
                "dataset": ds.fingerprint,
                "dask": {"schedular": "tcp://h:1"},
                "arms": {"a": {"agent": "builtin"}},
            },
            store=store,
        )
    assert {r.state for r in store.runs.records(exp.id)} == {"pending"}


@pytest.mark.slow
def test_a_worker_with_another_abbench_is_refused_before_any_run(tmp_path):
    store, ds = _stored(tmp_path, "versions", 3)
    exp = create_experiment(
        {"name": "versions", "dataset": ds.fingerprint, "arms": {"a": {"agent": "builtin"}}}, store=store
    )
    other = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=":0",
        preload=["tests.runner.dask_other_version"],
    )  # fmt: skip
    with (
        other,
        pytest.raises(
            ExperimentError, match=r"1 of 1 Dask workers run a different version .* abbench 0\.0\.1-other"
        ),
    ):
        run_experiment(exp.id, store=store, scheduler=other.scheduler_address)
    assert {r.state for r in store.runs.records(exp.id)} == {"pending"}
    assert store.experiments.get(exp.id).status == "created"


@pytest.mark.slow
def test_cli_runs_on_a_scheduler_and_status_says_where(tmp_path, cluster):
    made, _ = cluster
    store_dir = tmp_path / "store"
    store, ds = _stored(tmp_path, "cli", 4)
    exp = create_experiment(
        {"name": "cli", "dataset": ds.fingerprint, "arms": {"a": {"agent": "builtin", "skill": str(SKILL)}}},
        store=store,
    )
    env = subprocess_env(TQDM_DISABLE="1")
    base = [sys.executable, "-m", "abbench", "--store", str(store_dir)]
    before = subprocess.run([*base, "status", str(exp.id)], cwd=REPO, env=env, capture_output=True, text=True)
    assert "executes locally when run (not started)" in before.stdout, before.stdout
    ran = subprocess.run(
        [*base, "run", str(exp.id), "-q", "--executor", "dask", "--scheduler", made.scheduler_address],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=SAFETY_NET_S,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr
    status = subprocess.run([*base, "status", str(exp.id)], cwd=REPO, env=env, capture_output=True, text=True)
    assert f"last executed on Dask: {made.scheduler_address}, 2 workers" in status.stdout, status.stdout
    bad = subprocess.run(
        [*base, "run", str(exp.id), "--dask-local", "0"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert bad.returncode == 2 and "--dask-local" in bad.stderr


def test_answers_are_fetched_from_the_workers_only_when_the_scheduler_is_on_this_machine():
    from abbench.runner._dask import _on_this_machine

    assert all(map(_on_this_machine, ["tcp://127.0.0.1:8786", "tcp://localhost:1", "tcp://[::1]:8786"]))
    assert not any(map(_on_this_machine, ["tcp://10.0.0.5:8786", "tls://dask.example.org:8786", None]))


def test_the_extra_is_declared_and_installed_by_make():
    text = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert 'dask = [\n    "dask[distributed]' in text
    extras = re.search(r'"\.\[([a-z,]+)\]"', (REPO / "Makefile").read_text(encoding="utf-8"))
    assert extras is not None and "dask" in extras.group(1).split(",")

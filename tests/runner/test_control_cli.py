"""Pause, resume and cancel from another process while `abbench run` runs elsewhere."""

from __future__ import annotations

import subprocess
import sys

import pytest

from abbench import create_experiment
from abbench.runner import experiment_status
from abbench.store import open_store
from tests.blocking import Gate, wait_for
from tests.conftest import REPO, run_abbench, subprocess_env
from tests.runner.conftest import gated_experiment

from .conftest import make_cases


@pytest.mark.slow
def test_pause_resume_cancel_from_another_process(tmp_path):
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    ds = store.datasets.save("ctl", make_cases(30), label_set=["fast", "slow"])
    gate = Gate(tmp_path / "gate")  # closed: the runs in flight wait here until the test lets them go
    exp = gated_experiment(store, "ctl", ds.fingerprint, gate, rounds=4, concurrency=3)
    cmd = [sys.executable, "-m", "abbench", "--store", str(store_dir), "run", str(exp.id), "-q"]
    proc = subprocess.Popen(
        cmd,
        cwd=REPO,
        env=subprocess_env(TQDM_DISABLE="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        done = lambda: store.query_one("SELECT COUNT(*) FROM runs WHERE state IN ('pass','fail')")[0]  # noqa: E731
        gate.wait_arrived(3)  # three runs in flight, held

        paused = run_abbench("--store", store_dir, "pause", exp.id)
        assert paused.returncode == 0 and "pause asked" in paused.stdout and "no process" not in paused.stdout
        wait_for(lambda: store.experiments.get(exp.id).status == "paused", "the runner to pause")
        gate.allow(3)  # the runs in flight finish ...
        wait_for(lambda: done() == 3, "the three runs in flight to finish")
        # ... and no new one starts: a runner that ignored the pause would have started the next
        # run in the worker that just finished, before its grade reached the store
        assert gate.arrived() == 3 and proc.poll() is None

        assert run_abbench("--store", store_dir, "resume", exp.id).returncode == 0
        gate.wait_arrived(6)  # three new runs in flight, held (the gate lets three through in all)
        assert done() == 3
        cancelled = run_abbench("--store", store_dir, "cancel", exp.id)
        assert cancelled.returncode == 0
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, err
        assert "cancelled" in out
    finally:
        if proc.poll() is None:
            proc.kill()
    counts = dict(store.query("SELECT state, COUNT(*) FROM runs GROUP BY state"))
    # the three let through answered; the three held when cancel came and the 114 pending are cancelled
    assert counts.get("pass", 0) + counts.get("fail", 0) == 3 and counts["cancelled"] == 117, counts
    assert gate.arrived() == 6
    assert store.experiments.get(exp.id).status == "cancelled"
    store.close()


def test_a_pause_before_any_process_ran_it_stays_paused_and_run_goes_on(tmp_path):
    """Pausing an experiment nobody started is not a process that died: it is paused, says how to go
    on, and `run` does the work."""
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    ds = store.datasets.save("idle", make_cases(4), label_set=["fast", "slow"])
    exp = create_experiment(
        {"name": "idle", "dataset": ds.fingerprint, "arms": {"A": {"agent": "builtin"}}}, store=store
    )
    paused = run_abbench("--store", store_dir, "pause", exp.id)
    assert paused.returncode == 0 and "no process is running it now" in paused.stdout

    p = experiment_status(exp.id, store=store)
    assert (p.status, p.status_text, p.halt_reason) == ("paused", "paused", None)
    status = run_abbench("--store", store_dir, "status", exp.id)
    assert status.returncode == 0, status.stderr
    assert "interrupted" not in status.stdout and "died" not in status.stdout
    assert "paused while no process ran it; run the rest: abbench run" in status.stdout

    ran = run_abbench("--store", store_dir, "run", exp.id, "-q")
    assert ran.returncode == 0, ran.stderr
    assert store.experiments.get(exp.id).status == "finished"

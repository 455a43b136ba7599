"""A server's runner child (`python -m abbench.server._child JOB`) ends cleanly: 0 when its experiment is
done, 130 when its server stops it (the halt `server stopped`), 75 when its server is gone."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from abbench.runner import create_experiment
from abbench.store import open_store
from tests.blocking import SAFETY_NET_S, Gate
from tests.conftest import REPO, subprocess_env
from tests.runner.conftest import make_cases


def _child(store_dir, exp_id: int) -> subprocess.Popen[str]:
    """The child as the pool starts it: its standard input a pipe the test keeps open (the lifeline)."""
    job = json.dumps({"exp_id": exp_id, "store": str(store_dir), "owner": "alice"})
    return subprocess.Popen(
        [sys.executable, "-m", "abbench.server._child", job],
        cwd=REPO,
        env=subprocess_env(),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _experiment(tmp_path, arm: dict, n: int = 6):
    store = open_store(tmp_path / "store")
    ds = store.datasets.save("child", make_cases(n), label_set=["fast", "slow"])
    exp = create_experiment(
        {"name": "child", "dataset": ds.fingerprint, "concurrency": 2, "arms": {"a": arm}}, store=store
    )
    return store, exp


@pytest.mark.slow
def test_a_child_whose_experiment_finished_exits_0_not_sigabrt(tmp_path):
    store, exp = _experiment(tmp_path, {"agent": "builtin", "labels": ["fast", "slow"]})
    proc = _child(store.path, exp.id)
    try:
        err = proc.stderr.read()  # to its end: the child has exited (its stdin, the lifeline, stays open)
        proc.wait(timeout=SAFETY_NET_S)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
    assert "Fatal Python error" not in err
    assert proc.returncode == 0, err[-2000:]
    done = store.experiments.get(exp.id)
    assert done.status == "finished" and done.runner_origin == "server" and done.halt is None
    store.close()


@pytest.mark.slow
def test_a_child_stopped_by_its_server_records_server_stopped_and_exits_130(tmp_path):
    gate = Gate(tmp_path / "gate", allowed=1)
    store, exp = _experiment(tmp_path, {"agent": "python", "function": "tests.blocking:gated", **gate.params})
    proc = _child(store.path, exp.id)
    try:
        gate.wait_arrived(1 + 2)  # one answered, two held in flight
        proc.send_signal(signal.SIGTERM)  # what the pool sends when its server shuts down
        proc.wait(timeout=SAFETY_NET_S)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.stdin.close()
    err = proc.stderr.read()
    assert proc.returncode == 130, err[-2000:]
    stopped = store.experiments.get(exp.id)
    assert stopped.status == "interrupted" and stopped.runner_origin == "server"
    assert stopped.halt["why"] == "server stopped" and stopped.halt["signal"] == "SIGTERM"
    store.close()


@pytest.mark.slow
def test_a_child_whose_server_is_gone_exits_at_once(tmp_path):
    gate = Gate(tmp_path / "gate")
    store, exp = _experiment(tmp_path, {"agent": "python", "function": "tests.blocking:gated", **gate.params})
    proc = _child(store.path, exp.id)
    try:
        gate.wait_arrived(2)
        proc.stdin.close()  # the server's end of the lifeline: as when it dies
        proc.wait(timeout=SAFETY_NET_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 75
    left = store.experiments.get(exp.id)
    assert left.status == "running" and left.halt is None  # as after a power loss: the next server resumes it
    store.close()

"""Pause, resume and cancel from another process while `abbench run` runs elsewhere."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from abbench.runner import create_experiment
from abbench.store import open_store
from tests.conftest import REPO, run_abbench, subprocess_env

from .conftest import make_cases


def _wait(predicate, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    return None


@pytest.mark.slow
def test_pause_resume_cancel_from_another_process(tmp_path):
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    ds = store.save_dataset("ctl", make_cases(30), label_set=["fast", "slow"])
    exp = create_experiment(
        {
            "name": "ctl",
            "dataset": ds.fingerprint,
            "rounds": 4,
            "concurrency": 3,
            "arms": {
                "a": {
                    "agent": "python",
                    "function": "tests.runner.crash_agent:slow_echo",
                    "sleep_ms": 100,
                    "sees_gold": True,
                }
            },
        },
        store=store,
    )
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
        assert _wait(lambda: done() >= 10)

        asked = time.monotonic()
        paused = run_abbench("--store", store_dir, "pause", exp.id)
        assert paused.returncode == 0 and "pause asked" in paused.stdout and "no process" not in paused.stdout
        assert _wait(lambda: store.get_experiment(exp.id).status == "paused", timeout=5)
        assert time.monotonic() - asked < 1.0 + 0.8  # noticed within a second (plus the CLI's own start-up)
        time.sleep(0.3)  # runs in flight finish
        frozen = done()
        time.sleep(1.0)
        assert done() == frozen < 120 and proc.poll() is None  # no new run starts; the process waits

        assert run_abbench("--store", store_dir, "resume", exp.id).returncode == 0
        assert _wait(lambda: done() > frozen + 5)
        cancelled = run_abbench("--store", store_dir, "cancel", exp.id)
        assert cancelled.returncode == 0
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "cancelled" in out
    finally:
        if proc.poll() is None:
            proc.kill()
    counts = dict(store.query("SELECT state, COUNT(*) FROM runs GROUP BY state"))
    assert counts.get("cancelled", 0) > 0 and set(counts) <= {"pass", "fail", "cancelled"}
    assert store.get_experiment(exp.id).status == "cancelled"
    store.close()

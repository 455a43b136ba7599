"""SIGKILL a running `abbench run` mid-way, restart it, and check nothing was lost or executed twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter

import pytest

from abbench.runner import create_experiment
from abbench.store import open_store
from tests.blocking import SAFETY_NET_S, Gate

from ..conftest import REPO, subprocess_env
from .conftest import make_cases


@pytest.mark.slow
def test_sigkill_then_restart_loses_nothing_and_executes_nothing_twice(tmp_path):
    store_dir = tmp_path / "store"
    log = tmp_path / "executions.log"
    store = open_store(store_dir)
    ds = store.datasets.save("crash", make_cases(40), label_set=["fast", "slow"])
    total = 40 * 2 * 2
    gate = Gate(tmp_path / "gate", allowed=total * 0.4)  # 64 runs go through; then six wait in flight
    slow_echo = {
        "agent": "python",
        "function": "tests.runner.crash_agent:slow_echo",
        "sees_gold": True,
        **gate.params,
    }
    exp = create_experiment(
        {
            "name": "crash",
            "dataset": ds.fingerprint,
            "rounds": 2,
            "concurrency": 6,
            "arms": {
                "a": {**slow_echo, "sleep_ms": 40},
                "b": {**slow_echo, "sleep_ms": 25},
            },
            "graders": ["tests.runner.crash_agent:slow_grade"],
        },
        store=store,
    )
    env = subprocess_env(CRASH_LOG=str(log), TQDM_DISABLE="1")
    cmd = [sys.executable, "-m", "abbench", "--store", str(store_dir), "run", str(exp.id), "-q"]
    proc = subprocess.Popen(cmd, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    gate.wait_arrived(64 + 6)  # every worker holds a run; the last ones let through may still be grading
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL

    at_kill = {r.id: r for r in store.runs.records(exp.id)}
    states_at_kill = Counter(r.state for r in at_kill.values())
    assert states_at_kill["pass"] + states_at_kill["fail"] <= 64, states_at_kill
    gate.open()
    in_flight = {rid for rid, r in at_kill.items() if r.state == "running"}
    grading = {rid for rid, r in at_kill.items() if r.state == "evaluating"}
    finished = {
        rid: (r.state, r.output.prediction) for rid, r in at_kill.items() if r.state in ("pass", "fail")
    }

    restart = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True, timeout=SAFETY_NET_S)
    assert restart.returncode == 0, restart.stderr

    after = {r.id: r for r in store.runs.records(exp.id)}
    # every run ends in a terminal state
    assert {r.state for r in after.values()} <= {"pass", "fail"}
    # nothing finished was lost
    for rid, (state, prediction) in finished.items():
        assert (after[rid].state, after[rid].output.prediction) == (state, prediction)
    # no run was executed again once its execution had been recorded
    executed = Counter(
        r[0]
        for r in store.query(
            "SELECT run_id FROM run_events WHERE to_state='executed' AND from_state='running'"
        )
    )
    assert set(executed) == set(after) and set(executed.values()) == {1}
    # reconciliation gave the states docs/ARCHITECTURE.md names
    for rid in in_flight:
        details = [e["detail"] for e in store.runs.events(rid)]
        assert "reconciled: interrupted" in details
    for rid in grading:
        events = store.runs.events(rid)
        assert "reconciled: waiting for grading" in [e["detail"] for e in events]
        assert [e["to"] for e in events].count("running") == 1  # graded again, never re-executed
    # the agent really ran each (case, round, arm) at least once, and at most twice (only if killed mid-run)
    lines = Counter(log.read_text(encoding="utf-8").splitlines())
    assert len(lines) == total and max(lines.values()) <= 2
    assert sum(v - 1 for v in lines.values()) <= len(in_flight) + 6
    store.close()

"""SIGKILL a run while its store writer is behind: what is lost is bounded, and a re-run completes it.

The writer's queue is bounded (`StoreWriter.max_pending`): when it is behind, the workers wait before
starting more runs. So a crash loses at most the bound's worth of changes (plus those of the runs in
flight), never the backlog of a run whose agents outran the store.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections import Counter

import pytest

from abbench.runner import create_experiment
from abbench.store import open_store
from tests.blocking import SAFETY_NET_S, wait_for

from ..conftest import REPO, subprocess_env
from .conftest import make_cases

MAX_PENDING = 300
CONCURRENCY = 8
OPS_PER_RUN = 6
"""Changes one run submits: four transitions (running, executed, evaluating, pass), an attempt, a grade."""


def _executed_events(store, exp_id):
    return Counter(
        r[0]
        for r in store.query(
            "SELECT e.run_id FROM run_events e JOIN runs r ON r.id = e.run_id "
            "WHERE r.experiment_id=? AND e.to_state='executed' AND e.from_state='running'",
            (exp_id,),
        )
    )


def _grades(store, exp_id):
    return store.query_one("SELECT COUNT(*) FROM grades WHERE experiment_id=?", (exp_id,))[0]


@pytest.mark.slow
def test_sigkill_while_the_writer_is_behind_loses_at_most_its_bound(tmp_path):
    store_dir, log, marker = tmp_path / "store", tmp_path / "executions.log", tmp_path / "behind"
    store = open_store(store_dir)
    ds = store.datasets.save("writer-crash", make_cases(600), label_set=["fast", "slow"])
    arm = {"agent": "python", "function": "tests.runner.writer_child:instant", "sees_gold": True}
    exp = create_experiment(
        {
            "name": "writer-crash",
            "dataset": ds.fingerprint,
            "rounds": 2,
            "concurrency": CONCURRENCY,
            "arms": {"a": arm, "b": arm},
        },
        store=store,
    )
    total = 600 * 2 * 2
    env = subprocess_env(CRASH_LOG=str(log), TQDM_DISABLE="1")
    child = [sys.executable, "-m", "tests.runner.writer_child", str(store_dir), str(exp.id)]
    proc = subprocess.Popen([*child, str(MAX_PENDING), str(marker)], cwd=REPO, env=env)
    # loaded: the writer has held the workers back, and a good part of the work is committed
    wait_for(lambda: marker.exists() and _grades(store, exp.id) >= total // 4, "a loaded writer")
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL

    executions = log.read_text(encoding="utf-8").splitlines()
    committed = _executed_events(store, exp.id)
    assert _grades(store, exp.id) < total, "the run finished before the kill: nothing was tested"
    # runs the agent answered whose execution the store never heard of: each is at least one lost change
    lost = len(set(executions)) - len(committed)
    assert 0 <= lost <= MAX_PENDING + OPS_PER_RUN * CONCURRENCY, (lost, len(executions), len(committed))

    restart = subprocess.run(
        [sys.executable, "-m", "abbench", "--store", str(store_dir), "run", str(exp.id), "-q"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=SAFETY_NET_S,
    )
    assert restart.returncode == 0, restart.stderr
    runs = store.runs.records(exp.id)
    assert len(runs) == total and {r.state for r in runs} == {"pass"}
    # no duplicates: one recorded execution per run, one grade per run and grader
    after = _executed_events(store, exp.id)
    assert set(after) == {r.id for r in runs} and set(after.values()) == {1}
    per_grade = Counter(store.query("SELECT run_id, grader FROM grades WHERE experiment_id=?", (exp.id,)))
    assert len(per_grade) == total and set(per_grade.values()) == {1}
    # what the store had committed before the kill stayed; only the lost runs were executed twice
    lines = Counter(log.read_text(encoding="utf-8").splitlines())
    assert len(lines) == total
    assert sum(v - 1 for v in lines.values()) <= lost + CONCURRENCY
    store.close()

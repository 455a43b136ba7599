"""An agent's fault is its run's failure, never the end of `abbench run` (real `abbench run` processes).

Each experiment's agent misbehaves on case c000 only (tests/runner/fault_agents.py): the run of c000
fails with a message that says why, the other runs are answered and graded, and the process exits 0
— also when the agent never returns, or leaves processes behind that hold its output.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from abbench.runner import create_experiment
from abbench.store import open_store
from tests.blocking import SAFETY_NET_S, process_running, wait_for
from tests.conftest import start_run

from .conftest import make_cases


def _run(tmp_path: Path, arm: dict, *, timeout_s: float = 600, **env: str) -> tuple:
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    ds = store.datasets.save("faults", make_cases(4), label_set=["fast", "slow"])
    exp = create_experiment(
        {
            "name": "faults",
            "dataset": ds.fingerprint,
            "retries": 0,
            "timeout_s": timeout_s,
            "arms": {"a": arm},
        },
        store=store,
    )
    proc = start_run(store_dir, exp.id, **env)
    try:
        out, err = proc.communicate(timeout=SAFETY_NET_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    runs = {r.case_id: r for r in store.runs.records(exp.id)}
    status = store.experiments.get(exp.id).status
    store.close()
    return proc.returncode, out, err, runs, status


@pytest.mark.slow
@pytest.mark.parametrize(
    ("function", "failure", "said"),
    [
        ("huge_confidence", "bad_output", "cannot be stored (OverflowError"),
        ("huge_tokens", "bad_output", "is not a count of tokens"),
        ("exits", "agent_error", "raised SystemExit: 3"),
        ("exits_async", "agent_error", "raised SystemExit: 3"),
        ("interrupts", "agent_error", "raised KeyboardInterrupt"),
    ],
)
def test_an_agent_fault_fails_its_run_and_the_experiment_finishes(tmp_path, function, failure, said):
    arm = {"agent": "python", "function": f"tests.runner.fault_agents:{function}", "sees_gold": True}
    code, _out, err, runs, status = _run(tmp_path, arm)
    assert code == 0, err
    assert status == "finished"
    assert runs["c000"].state == "fail" and runs["c000"].failure_type == failure
    assert said in runs["c000"].error
    assert {runs[c].state for c in ("c001", "c002", "c003")} == {"pass"}


@pytest.mark.slow
def test_text_that_is_not_unicode_is_stored_escaped_and_the_experiment_finishes(tmp_path):
    arm = {"agent": "python", "function": "tests.runner.fault_agents:lone_surrogate", "sees_gold": True}
    code, _out, err, runs, status = _run(tmp_path, arm)
    assert code == 0, err
    assert status == "finished" and {r.state for r in runs.values()} == {"pass"}
    assert runs["c000"].output.reason == "bad \\udcff byte"  # escaped, readable, nothing lost


@pytest.mark.slow
def test_a_sync_agent_that_never_returns_times_out_and_the_process_still_exits(tmp_path):
    arm = {"agent": "python", "function": "tests.runner.fault_agents:never_returns", "sees_gold": True}
    code, _out, err, runs, status = _run(tmp_path, arm, timeout_s=2, FAULT_DIR=str(tmp_path))
    assert (tmp_path / "stuck").exists()  # it did start, and never returned
    assert code == 0, err
    assert status == "finished"
    assert runs["c000"].failure_type == "timeout"
    assert {runs[c].state for c in ("c001", "c002", "c003")} == {"pass"}


LEAVES_CHILDREN = """
echo "$$" >> "$PIDS/shells"
sh -c 'echo $$ >> "$PIDS/grouped"; exec sleep 100000' &
setsid sh -c 'echo $$ >> "$PIDS/escaped"; exec sleep 100000' &
while [ ! -s "$PIDS/escaped" ] || [ ! -s "$PIDS/grouped" ]; do sleep 0.01; done
echo fast
exit 0
"""


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="finds the escaped children through /proc")
def test_a_command_that_answers_and_exits_is_recorded_and_what_it_left_is_ended(tmp_path):
    """Its children (one in its process group, one escaped with setsid) hold its stdout open: the
    answer it printed before exiting is its answer, and both children are ended with it."""
    pids = tmp_path / "pids"
    pids.mkdir()
    arm = {"agent": "command", "argv": ["sh", "-c", LEAVES_CHILDREN], "env": {"PIDS": str(pids)}}
    try:
        code, _out, err, runs, status = _run(tmp_path, arm, timeout_s=120)
        assert code == 0, err
        assert status == "finished"
        # every run answered (right or wrong), none recorded as a timeout
        assert all(r.failure_type is None for r in runs.values()), {c: r.error for c, r in runs.items()}
        assert {r.output.prediction for r in runs.values()} == {"fast"}
        left = [int(p) for name in ("grouped", "escaped") for p in (pids / name).read_text().split()]
        assert len(left) == 8
        wait_for(
            lambda: not any(process_running(p) for p in left), "the children the command left to be ended"
        )
    finally:
        for name in ("grouped", "escaped"):
            for p in (pids / name).read_text().split() if (pids / name).exists() else ():
                if process_running(int(p)):
                    os.kill(int(p), 9)

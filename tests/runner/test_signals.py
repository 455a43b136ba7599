"""`abbench run` stops on SIGTERM, SIGHUP and Ctrl-C however it was started, keeps what was done, and
records why it stopped (the experiment's halt), which `abbench status` says.

The runs wait at a gate the test never opens (tests/blocking.py): the process cannot finish on its
own, so its exit proves the signal stopped it, on any machine.
"""

from __future__ import annotations

import signal

import pytest

from abbench.runner import experiment_status
from abbench.store import open_store
from tests.blocking import SAFETY_NET_S, Gate, wait_for
from tests.conftest import run_abbench, start_run

from .conftest import gated_experiment, make_cases


def _background_job() -> None:
    """What a non-interactive shell does to a job it starts with ``&``: SIGINT (and SIGQUIT) ignored."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGQUIT, signal.SIG_IGN)


def _done(store, exp_id: int) -> int:
    counts = store.runs.counts(exp_id)["a"]
    return counts.get("pass", 0) + counts.get("fail", 0)


def _held_run(tmp_path, *, background: bool):
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    ds = store.datasets.save("sig", make_cases(20), label_set=["fast", "slow"])
    gate = Gate(tmp_path / "gate", allowed=2)  # two answer; the next runs wait, held in flight
    exp = gated_experiment(store, "sig", ds.fingerprint, gate, concurrency=3)
    proc = start_run(store_dir, exp.id, preexec_fn=_background_job if background else None)
    gate.wait_arrived(2 + 3)  # two answered, three held in flight
    wait_for(lambda: _done(store, exp.id) == 2, "the two answers to be recorded")
    return store, exp, gate, proc


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_a_background_run_stops_on_sigterm_with_sigint_ignored(tmp_path, sig):
    store, exp, gate, proc = _held_run(tmp_path, background=True)
    try:
        proc.send_signal(sig)
        _out, err = proc.communicate(timeout=SAFETY_NET_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, (proc.returncode, err)
    assert f"terminated ({sig.name}); what was done is kept" in err
    # what was done is kept; the three in flight are recorded as interrupted; the rest wait
    assert store.runs.counts(exp.id)["a"].get("pending") == 15
    ended = store.query(
        "SELECT r.state, r.failure_type, a.outcome, a.failure_type FROM run_attempts a "
        "JOIN runs r ON r.id = a.run_id WHERE r.experiment_id=? ORDER BY r.id",
        (exp.id,),
    )
    outcomes = sorted(tuple(str(v) for v in row) for row in ended)
    assert outcomes.count(("fail", "interrupted", "failed", "interrupted")) == 3, outcomes
    assert sorted(o[2] for o in outcomes) == ["executed", "executed", "failed", "failed", "failed"], outcomes
    stopped = store.experiments.get(exp.id)
    assert stopped.status == "interrupted" and stopped.runner_pid is None
    assert stopped.halt["why"] == "stopped" and stopped.halt["signal"] == sig.name
    assert stopped.halt["origin"] == "cli" and stopped.halt["pid"] == proc.pid
    progress = experiment_status(exp.id, store=store)
    assert progress.status_text.startswith(f"interrupted: stopped on purpose ({sig.name} to abbench, pid ")
    status = run_abbench("--store", store.path, "status", exp.id)
    assert f"interrupted: stopped on purpose ({sig.name} to abbench" in status.stdout
    assert f"run the rest: abbench run {exp.name}" in status.stdout
    assert gate.arrived() == 5  # nothing started after the signal
    store.close()


@pytest.mark.slow
def test_ctrl_c_of_a_run_in_a_terminal_stops_it_as_before(tmp_path):
    store, exp, _gate, proc = _held_run(tmp_path, background=False)
    try:
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=SAFETY_NET_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted; what was done is kept" in err
    stopped = store.experiments.get(exp.id)
    assert stopped.status == "interrupted"
    assert stopped.halt["why"] == "stopped" and stopped.halt["signal"] == "SIGINT"
    interrupted = store.query("SELECT COUNT(*) FROM runs WHERE failure_type='interrupted'")[0][0]
    assert _done(store, exp.id) == 5 and interrupted == 3
    store.close()


@pytest.mark.slow
def test_a_run_killed_with_sigkill_says_so_and_a_person_continues_it(tmp_path):
    store, exp, gate, proc = _held_run(tmp_path, background=True)
    proc.kill()
    proc.wait(timeout=SAFETY_NET_S)
    killed = store.experiments.get(exp.id)
    assert killed.status == "running" and killed.halt is None  # a killed process says nothing
    progress = experiment_status(exp.id, store=store)
    assert progress.status == "interrupted"
    assert progress.status_text.startswith(
        f"interrupted: its process died without a word (killed, out of memory, or a lost machine) "
        f"(abbench, pid {proc.pid}"
    )
    gate.open()
    rerun = run_abbench("--store", store.path, "run", exp.id, "-q", TQDM_DISABLE="1")
    assert rerun.returncode == 0, rerun.stderr
    done = store.experiments.get(exp.id)
    assert done.status == "finished" and done.halt is None
    store.close()

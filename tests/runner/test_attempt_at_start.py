"""Every attempt counts, killed ones too, and nothing is paid for that the store cannot record.

An attempt is stored when it starts (with the batch that moves its run to running), so a SIGKILL under
it leaves it, and reconciliation records it interrupted: the spend "over every attempt" counts it. A
store that cannot take more (a full disk) is refused before any agent is called; one that fills up
during a pass starts no new run, records those in flight, and ends the pass with the error.
"""

from __future__ import annotations

import resource
import signal
import subprocess
import sys
import threading

import pytest

from abbench.errors import StoreError
from abbench.runner import create_experiment, start_experiment
from abbench.store import Store, open_store
from tests.blocking import SAFETY_NET_S, Gate, wait_for
from tests.conftest import REPO, run_abbench, subprocess_env

from .conftest import gated_experiment, make_cases


def _gated(store, tmp_path, n: int = 20, allowed: int = 0):
    gate = Gate(tmp_path / "gate", allowed=allowed)
    ds = store.datasets.save("attempts", make_cases(n), label_set=["fast", "slow"])
    exp = gated_experiment(store, "attempts", ds.fingerprint, gate, concurrency=3)
    return exp, gate


def _attempts(store, exp_id: int) -> list[tuple]:
    return [
        tuple(r)
        for r in store.query(
            "SELECT a.run_id, a.attempt, a.outcome, a.failure_type, a.started_at IS NOT NULL "
            "FROM run_attempts a JOIN runs r ON r.id = a.run_id WHERE r.experiment_id=? ORDER BY a.id",
            (exp_id,),
        )
    ]


@pytest.mark.slow
def test_an_attempt_killed_in_flight_is_kept_and_counted(tmp_path):
    store = open_store(tmp_path / "store")
    exp, gate = _gated(store, tmp_path, allowed=2)
    proc = subprocess.Popen(
        [sys.executable, "-m", "abbench", "--store", str(store.path), "run", str(exp.id), "-q"],
        cwd=REPO,
        env=subprocess_env(TQDM_DISABLE="1"),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        gate.wait_arrived(2 + 3)  # two answered, three held in flight

        def running() -> list[tuple] | None:
            found = [a for a in _attempts(store, exp.id) if a[2] == "running"]
            return found if len(found) == 3 else None

        in_flight = wait_for(running, "the three attempts in flight to be stored as running")
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=SAFETY_NET_S)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert all(a[1] == 1 and a[4] for a in in_flight)  # the first attempt, with when it started
    before = store.attempts.spend_by_run(exp.id)[exp.arms[0].id]
    assert before.attempts == 5  # two answered, three under way when it died: all counted
    gate.open()
    rerun = run_abbench("--store", store.path, "run", exp.id, "-q", TQDM_DISABLE="1")
    assert rerun.returncode == 0, rerun.stderr
    after = _attempts(store, exp.id)
    killed = {a[0] for a in in_flight}
    for run_id in killed:  # the killed attempt is interrupted, and the run ran once more
        mine = [a for a in after if a[0] == run_id]
        assert [(a[1], a[2], a[3]) for a in mine] == [(1, "failed", "interrupted"), (2, "executed", None)]
    assert "running" not in {a[2] for a in after}
    spend = store.attempts.spend_by_run(exp.id)[exp.arms[0].id]
    assert spend.attempts == 20 + 3 and spend.failed_attempts == 3
    store.close()


def _limited_files(limit: int):
    def limit_files() -> None:  # every file this process writes stops at `limit` bytes, as on a full disk
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limit_files


@pytest.mark.slow
def test_a_store_that_cannot_take_more_is_refused_before_any_agent_call(tmp_path):
    store = open_store(tmp_path / "store")
    ds = store.datasets.save("full", make_cases(30), label_set=["fast", "slow"])
    calls = tmp_path / "calls.log"
    exp = create_experiment(
        {
            "name": "full",
            "dataset": ds.fingerprint,
            "concurrency": 8,
            "arms": {
                "a": {"agent": "python", "function": "tests.runner.fault_agents:counted", "sees_gold": True}
            },
        },
        store=store,
    )
    store.close()
    biggest = max(p.stat().st_size for p in (tmp_path / "store").iterdir() if p.is_file())
    ran = subprocess.run(
        [sys.executable, "-m", "abbench", "--store", str(tmp_path / "store"), "run", str(exp.id), "-q"],
        cwd=REPO,
        env=subprocess_env(TQDM_DISABLE="1", CALLS=str(calls)),
        capture_output=True,
        text=True,
        timeout=SAFETY_NET_S,
        preexec_fn=_limited_files(biggest + 2**20),  # room for the store as it is, not for 16 MB more
    )
    assert ran.returncode == 2, ran.stderr
    assert "cannot take 16 MB more" in ran.stderr and "free disk space" in ran.stderr
    assert not calls.exists()  # no agent was called: nothing was paid that could not be recorded
    with open_store(tmp_path / "store") as s:
        left = s.experiments.get(exp.id)
        assert s.runs.counts(exp.id)["a"]["pending"] == 30
        assert left.halt is not None and left.halt["why"] == "error"


@pytest.mark.slow
def test_a_store_that_fills_up_during_a_pass_records_the_runs_in_flight_and_starts_no_more(
    tmp_path, monkeypatch
):
    store = open_store(tmp_path / "store")
    exp, gate = _gated(store, tmp_path, allowed=2)
    full = threading.Event()
    real = Store.check_room

    def check_room(self, nbytes=16 * 2**20):
        if full.is_set():  # what a disk that filled up answers (nothing here can fill a real one)
            raise StoreError(f"the store {self.path} cannot take 16 MB more (No space left on device)")
        return real(self, nbytes)

    monkeypatch.setattr(Store, "check_room", check_room)
    monkeypatch.setattr("abbench.runner._writer.ROOM_EVERY_S", 0.01)
    handle = start_experiment(exp.id, store=store)
    gate.wait_arrived(2 + 3)  # two answered, three held in flight
    full.set()
    wait_for(lambda: handle._runner.writer.room_error is not None, "the writer to see the store is full")
    gate.open()  # the three in flight answer; nothing new may start
    with pytest.raises(StoreError, match="cannot take 16 MB more"):
        handle.wait(SAFETY_NET_S)
    counts = store.runs.counts(exp.id)["a"]
    assert counts.get("pass", 0) + counts.get("fail", 0) == 5 and counts["pending"] == 15, counts
    assert gate.arrived() == 5
    stopped = store.experiments.get(exp.id)
    assert stopped.status == "interrupted" and stopped.halt["why"] == "error"
    assert "cannot take 16 MB more" in stopped.halt["error"]
    store.close()

"""What a caller asked a server to start and its pool had not started yet survives the server's death:
the next server starts it (once), and leaves, with why in the status, what a person stopped meanwhile
or it may not run. A real server on 127.0.0.1 killed with SIGKILL while one experiment runs (held at a
gate the test opens, tests/blocking.py) and others wait in its queue (one worker).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from abbench.client import Client
from abbench.store import current_user, open_store
from tests.blocking import SAFETY_NET_S, Gate, process_running, wait_for
from tests.runner.conftest import make_cases
from tests.server.live import LiveServer

BUILTIN = {"agent": "builtin", "labels": ["fast", "slow"]}


def _executions(store_dir: Path, exp_id: int) -> dict[int, int]:
    """Run id -> how many times it was executed (its run events into `executed`)."""
    with open_store(store_dir) as s:
        rows = s.query(
            "SELECT r.id, COUNT(e.run_id) FROM runs r LEFT JOIN run_events e "
            "ON e.run_id = r.id AND e.to_state = 'executed' WHERE r.experiment_id = ? GROUP BY r.id",
            (exp_id,),
        )
    return {run_id: n for run_id, n in rows}


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc to see the runner exit")
def test_work_queued_when_the_server_was_killed_starts_once_at_restart_and_nothing_else(tmp_path):
    store_dir = tmp_path / "store"
    with open_store(store_dir) as s:
        key = s.keys.create(current_user())[1]  # the local user's dataset is this key's
        ds = s.datasets.save("queued", make_cases(6), label_set=["fast", "slow"])
    held, never = Gate(tmp_path / "held"), Gate(tmp_path / "never")
    first = LiveServer(
        store_dir, "--workers", "1", "--agent", "builtin", "--agent", "python", log=tmp_path / "s1.log"
    ).start()
    with Client(first.url, key, actor="ci/job-9") as c:

        def create(name: str, arm: dict) -> int:
            spec = {"name": name, "dataset": ds.fingerprint, "concurrency": 1, "arms": {"a": arm}}
            return c.create_experiment(spec).id

        gated = {"agent": "python", "function": "tests.blocking:gated"}
        running = create("running", {**gated, **held.params})
        queued = create("queued", BUILTIN)
        paused = create("paused", BUILTIN)
        refused = create("refused", {**gated, **never.params})  # python: the next server will not run it
        c.start(running)
        held.wait_arrived(1)  # the one worker runs it, held at the gate
        for exp_id in (queued, paused, refused):
            assert c.start(exp_id) is True  # 202: accepted, behind it in the queue
        c.pause_experiment(paused)  # a person stopped it before it started
        waiting = c.experiment_status(queued)
        assert (
            waiting.status == "created" and waiting.queued is not None and waiting.queued.actor == "ci/job-9"
        )
        assert "queued on a server (asked by ci/job-9" in waiting.status_text
        assert "waiting for a free runner" in waiting.status_text
    with open_store(store_dir) as s:
        runner = s.experiments.get(running).runner_pid
    first.kill()
    wait_for(lambda: not process_running(runner), "the orphaned runner to exit")

    second = LiveServer(store_dir, "--workers", "1", log=tmp_path / "s2.log").start()  # builtin only
    try:
        log = (tmp_path / "s2.log").read_text()  # what it leaves is decided before it answers
        assert f"experiment #{refused} refused is not started" in log, log
        assert f"experiment #{running} running is left as it is" in log, log
        with Client(second.url, key) as c:
            done = c.wait(queued, timeout=SAFETY_NET_S, poll=0.1)
            left = c.wait(refused, timeout=SAFETY_NET_S, poll=0.1)  # told it ends: it was not started
            stopped = c.experiment_status(paused)
    finally:
        second.stop()
    assert done.status == "finished" and done.done == 6
    assert done.queued is None  # its runner took it
    assert set(_executions(store_dir, queued).values()) == {1}  # each run executed exactly once
    for exp_id in (paused, refused):
        assert set(_executions(store_dir, exp_id).values()) == {0}  # nothing of theirs ran
    assert never.arrived() == 0 and held.arrived() == 1
    text = left.status_text
    assert left.status == "created" and "not started: the server restarted and left it" in text
    assert "arm 'a' runs the 'python' agent" in text and left.queued is not None and left.queued.not_started
    assert "not started: paused before it started" in stopped.status_text
    with open_store(store_dir) as s:  # the experiment it ran when killed: its python agent not allowed
        assert s.experiments.get(running).runner_origin == "server"
        assert s.experiments.get(running).status == "running"  # left as the dead server had it

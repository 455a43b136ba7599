"""A server SIGKILLed mid-experiment, then restarted: it resumes, and nothing is lost or duplicated."""

from __future__ import annotations

import time

import pytest

from abbench.client import Client
from abbench.store import open_store
from tests.blocking import Gate, process_running
from tests.conftest import DEMO
from tests.server.live import LiveServer


def _done(line: str) -> int:
    return int(line.split('"done": ')[1].split(",")[0])


@pytest.mark.slow
def test_sigkill_mid_experiment_then_restart_loses_and_duplicates_nothing(tmp_path):
    store_dir = tmp_path / "store"
    with open_store(store_dir) as s:
        key = s.keys.create("alice")[1]
    # The runs wait at a gate the test opens (tests/blocking.py): some are done and some held in flight
    # when the server is killed, however fast the machine.
    gate = Gate(tmp_path / "gate", allowed=20)
    agents = ("--agent", "builtin", "--agent", "python")
    server = LiveServer(store_dir, "--workers", "1", *agents, log=tmp_path / "server.log").start()
    with Client(server.url, key, actor="nightly") as c:
        ds = c.import_dataset(
            DEMO / "cases.csv", mapping=(DEMO / "mapping-csv.yaml").read_text(encoding="utf-8")
        )
        v2 = c.snapshot_skill(DEMO / "skills" / "fast-slow-routing-v2")
        gated = {"agent": "python", "function": "tests.blocking:gated", **gate.params}
        exp = c.create_experiment(
            {
                "name": "long",
                "dataset": ds.fingerprint,
                "rounds": 2,
                "concurrency": 4,
                "graders": ["label_match"],
                "arms": {"none": gated, "v2": {**gated, "skill": v2.snapshot.hash}},
            }
        )
        total = c.results(exp.id, limit=1)["total"]
        c.start(exp.id)
        with c.http.stream("GET", f"/api/experiments/{exp.id}/events", params={"every": 0.1}) as events:
            for line in events.iter_lines():  # the condition: the runs let through are done
                if line.startswith("data:") and '"done"' in line and _done(line) >= 20:
                    break
        gate.wait_arrived(20 + 4)  # and four more are held in flight
    with open_store(store_dir) as s:
        runner = s.experiments.get(exp.id).runner_pid
    assert runner is not None and runner != server.proc.pid  # its own child process runs it
    server.kill()
    with open_store(store_dir) as s:
        assert s.experiments.get(exp.id).status == "running"  # left as the dead process had it
    while process_running(runner):  # the condition: the orphaned runner exits once its server's pipe ends
        time.sleep(0.05)
    gate.open()
    restarted = LiveServer(store_dir, *agents, log=tmp_path / "server2.log").start()
    try:
        with Client(restarted.url, key) as c:
            final = c.wait(exp.id)
            runs = c.results(exp.id, limit=1000, offset=0)
            every = []
            for offset in range(0, runs["total"], 1000):
                every.extend(c.results(exp.id, limit=1000, offset=offset)["runs"])
    finally:
        restarted.stop()
    assert final.status == "finished"
    assert len(every) == total == 2 * 2 * ds.n_cases
    keys = {(r["arm"], r["case_id"], r["round"]) for r in every}
    assert len(keys) == total  # each planned run once
    assert {r["state"] for r in every} <= {"pass", "fail"}
    assert final.done == total

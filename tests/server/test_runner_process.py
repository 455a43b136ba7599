"""Experiments started over HTTP run in a child process of the server, which obeys pause, resume and cancel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from abbench.client import Client
from abbench.store import open_store
from tests.blocking import Gate
from tests.conftest import DEMO
from tests.server.live import LiveServer


def _parent_of(pid: int) -> int:
    stat = Path(f"/proc/{pid}/stat").read_text()
    return int(stat[stat.rfind(")") + 2 :].split()[1])


def _follow(c: Client, exp_id: int, until) -> dict:
    """The first progress event for which `until(progress)` holds (the server's own stream)."""
    with c.http.stream("GET", f"/api/experiments/{exp_id}/events", params={"every": 0.1}) as events:
        for line in events.iter_lines():
            if line.startswith("data:"):
                data = json.loads(line[5:])
                if "done" in data and until(data):
                    return data
    raise AssertionError("the event stream ended first")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc to find the runner's parent")
def test_a_running_experiment_is_a_child_process_that_obeys_pause_resume_and_cancel(tmp_path):
    """The runs wait at gates the test opens (tests/blocking.py): what is in flight when the test pauses
    or cancels is known, however fast the machine (a builtin experiment once finished before its pause)."""
    store_dir = tmp_path / "store"
    with open_store(store_dir) as s:
        key = s.keys.create("alice")[1]
    server = LiveServer(store_dir, "--agent", "builtin", "--agent", "python", log=tmp_path / "server.log")
    server.start()
    try:
        with Client(server.url, key, actor="nightly/7") as c:
            ds = c.import_dataset(DEMO / "cases.csv", (DEMO / "mapping-csv.yaml").read_text(encoding="utf-8"))
            total = ds.n_cases

            def spec(name: str, gate: Gate) -> dict:
                arm = {"agent": "python", "function": "tests.blocking:gated", **gate.params}
                return {"name": name, "dataset": ds.fingerprint, "concurrency": 4,
                        "graders": ["label_match"], "arms": {"none": arm}}  # fmt: skip

            gate = Gate(tmp_path / "gate", allowed=3)
            exp = c.create_experiment(spec("long", gate))
            c.start(exp.id)
            _follow(c, exp.id, lambda p: p["done"] >= 3)
            gate.wait_arrived(3 + 4)  # three answered, four held at the gate
            with open_store(store_dir) as s:
                held = s.experiments.get(exp.id)
            assert held.runner_pid != server.proc.pid and _parent_of(held.runner_pid) == server.proc.pid
            c.pause_experiment(exp.id)
            _follow(c, exp.id, lambda p: p["status"] == "paused")  # the child saw the pause
            gate.open()  # the four in flight finish; no new run starts while paused
            paused = _follow(c, exp.id, lambda p: p["done"] >= 7)
            assert paused["status"] == "paused" and paused["done"] == 7 and gate.arrived() == 7
            c.resume_experiment(exp.id)
            final = c.wait(exp.id, poll=0.1)
            assert final.status == "finished" and final.done == total
            every = [r for o in range(0, total, 100) for r in c.results(exp.id, offset=o, limit=100)["runs"]]
            assert len(every) == total and {r["started_by"] for r in every} == {"nightly/7"}

            second = Gate(tmp_path / "gate2", allowed=5)
            other = c.create_experiment(spec("cancelled", second))
            c.start(other.id)
            _follow(c, other.id, lambda p: p["done"] >= 5)
            second.wait_arrived(5 + 4)
            c.cancel_experiment(other.id)  # the four held are cancelled in flight, the rest never start
            ended = c.wait(other.id, poll=0.1)
            assert ended.status == "cancelled"
            assert ended.done == 5 and ended.cancelled == total - 5
    finally:
        server.stop()

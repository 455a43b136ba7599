"""A starting server resumes what its own pool was running when the last server stopped, and nothing else:
not what `abbench run` left (killed or stopped on purpose), not a runner killed while its server lived,
not an experiment using an agent it does not allow. Real servers, real `abbench run` processes, real
signals; the runs wait at gates the test opens (tests/blocking.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

from abbench.client import Client, ServerError
from abbench.runner import create_experiment
from abbench.store import current_user, open_store
from tests.blocking import SAFETY_NET_S, Gate, process_running, wait_for
from tests.conftest import DEMO, start_run
from tests.runner.conftest import make_cases
from tests.server.live import LiveServer


def _cli_run(store_dir: Path, exp_id: int) -> subprocess.Popen[str]:
    """`abbench run` as a script's background job starts it (SIGINT ignored)."""
    return start_run(
        store_dir,
        exp_id,
        stdout=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )


@pytest.mark.slow
def test_a_server_does_not_resume_what_abbench_run_left_nor_run_agents_it_does_not_allow(tmp_path):
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    key = store.keys.create(current_user())[1]  # the local user's experiments are this key's
    ds = store.datasets.save("cli", make_cases(12), label_set=["fast", "slow"])
    left = {}
    for how in ("killed", "stopped"):
        gate = Gate(tmp_path / how)
        arm = {"agent": "python", "function": "tests.blocking:gated", **gate.params}
        exp = create_experiment(
            {"name": how, "dataset": ds.fingerprint, "concurrency": 2, "arms": {"a": arm}}, store=store
        )
        proc = _cli_run(store_dir, exp.id)
        gate.wait_arrived(2)  # two runs in flight, held
        proc.send_signal(signal.SIGKILL if how == "killed" else signal.SIGTERM)
        proc.wait(timeout=SAFETY_NET_S)
        left[how] = (exp, gate, proc.pid)
    assert store.experiments.get(left["stopped"][0].id).halt["why"] == "stopped"
    graded_here = create_experiment(  # builtin, but graded by a function on the server's path
        {
            "name": "own-grader",
            "dataset": ds.fingerprint,
            "graders": ["tests.runner.crash_agent:slow_grade"],
            "arms": {"a": {"agent": "builtin", "labels": ["fast", "slow"]}},
        },
        store=store,
    )

    server = LiveServer(store_dir, log=tmp_path / "server.log").start()  # builtin agents only
    try:
        log = (tmp_path / "server.log").read_text()  # written before it answered: it resumes at start
        for how, words in (("killed", "its process died without a word"), ("stopped", "stopped on purpose")):
            exp = left[how][0]
            assert f"experiment {exp.ref} is left as it is: {words}" in log, log
        assert "resuming experiment" not in log
        with Client(server.url, key) as c:
            for how in ("killed", "stopped"):
                with pytest.raises(ServerError) as refused:  # a person's start: still not with python
                    c.start(left[how][0].id)
                assert refused.value.status == 422
                assert "arm 'a' runs the 'python' agent" in refused.value.problem["detail"]
            for attempt in (
                lambda: c.regrade(graded_here.id),
                lambda: c.record_runs(
                    graded_here.id, [{"case_id": "c000", "arm": "a", "prediction": "fast"}]
                ),
            ):
                with pytest.raises(ServerError) as refused:  # its grader would run code on the server
                    attempt()
                assert refused.value.status == 422
                assert "is a function on the server's path" in refused.value.problem["detail"]
            view = c.experiment_status(left["stopped"][0].id)
            assert view.status_text.startswith("interrupted: stopped on purpose (SIGTERM")
    finally:
        server.stop()
    for how, (exp, gate, _pid) in left.items():
        after = store.experiments.get(exp.id)
        assert after.runner_origin == "cli" and gate.arrived() == 2, how  # nothing ran it
    assert store.experiments.get(left["killed"][0].id).halt is None
    store.close()


def _follow_until(c: Client, exp_id: int, done: int) -> None:
    with c.http.stream("GET", f"/api/experiments/{exp_id}/events", params={"every": 0.1}) as events:
        for line in events.iter_lines():
            if (
                line.startswith("data:")
                and '"done"' in line
                and int(line.split('"done": ')[1].split(",")[0]) >= done
            ):
                return
    raise AssertionError("the event stream ended first")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc to see the runner exit")
def test_a_server_resumes_its_own_pools_experiments_only_and_only_with_agents_it_allows(tmp_path):
    store_dir = tmp_path / "store"
    with open_store(store_dir) as s:
        key = s.keys.create("alice")[1]
    python = ("--agent", "builtin", "--agent", "python")
    gate = Gate(tmp_path / "gate", allowed=4)
    lost = Gate(tmp_path / "lost")  # the experiment whose runner a person kills while the server lives
    server = LiveServer(store_dir, "--workers", "2", *python, log=tmp_path / "s1.log").start()
    with Client(server.url, key) as c:
        ds = c.import_dataset(DEMO / "cases.csv", (DEMO / "mapping-csv.yaml").read_text(encoding="utf-8"))

        def create(name: str, at: Gate) -> int:
            arm = {"agent": "python", "function": "tests.blocking:gated", **at.params}
            spec = {"name": name, "dataset": ds.fingerprint, "concurrency": 2, "arms": {"a": arm}}
            return c.create_experiment(spec).id

        own, other = create("own", gate), create("lost", lost)
        c.start(own)
        c.start(other)
        _follow_until(c, own, 4)
        gate.wait_arrived(4 + 2)  # four answered, two held in flight
        lost.wait_arrived(2)
    with open_store(store_dir) as s:
        runner = s.experiments.get(other).runner_pid
    os.kill(runner, signal.SIGKILL)  # a person's kill (or the OOM killer) while its server lives
    with open_store(store_dir) as s:
        wait_for(lambda: s.experiments.get(other).halt is not None, "the server to note how its runner ended")
        assert s.experiments.get(other).halt["while_server_ran"] is True
        own_runner = s.experiments.get(own).runner_pid
    server.kill()  # the server dies: its runner of `own` follows it (its lifeline ends)
    wait_for(lambda: not process_running(own_runner), "the orphaned runner to exit")

    # A server that does not allow python agents leaves `own` for a server that does.
    builtin_only = LiveServer(store_dir, log=tmp_path / "s2.log").start()
    builtin_only.stop()
    log2 = (tmp_path / "s2.log").read_text()
    assert "is left as it is" in log2 and "runs the agents builtin, external only" in log2
    assert f"experiment #{other} lost is left as it is" in log2 and "while its server ran" in log2

    # One that does resumes `own` (not `lost`), and stopping it is a server's stop: resumed again after.
    again = LiveServer(store_dir, *python, log=tmp_path / "s3.log").start()
    try:
        gate.wait_arrived(4 + 2 + 2)  # the resumed runner holds two more in flight
    finally:
        again.stop()  # SIGTERM: its pool stops the runner as Ctrl-C would
    with open_store(store_dir) as s:
        held = s.experiments.get(own)
        assert held.status == "interrupted" and held.halt["why"] == "server stopped"
        assert s.experiments.get(other).halt["while_server_ran"] is True
    assert lost.arrived() == 2
    gate.open()
    last = LiveServer(store_dir, *python, log=tmp_path / "s4.log").start()
    try:
        with Client(last.url, key) as c:
            final = c.wait(own, poll=0.1)
            lost_view = c.experiment_status(other)
    finally:
        last.stop()
    assert final.status == "finished" and final.done == final.total
    assert lost_view.status == "interrupted" and lost.arrived() == 2
    assert "while its server ran" in lost_view.status_text
    with open_store(store_dir) as s:
        executed = s.query(
            "SELECT e.run_id, COUNT(*) FROM run_events e JOIN runs r ON r.id = e.run_id "
            "WHERE r.experiment_id=? AND e.to_state='executed' GROUP BY e.run_id",
            (own,),
        )
        assert {n for _, n in executed} == {1}  # no run executed twice across the four servers

"""`abbench run` on the real model, as a person runs it: a budget that pauses (its own exit code), a
resume, a SIGKILL mid-run and a second `abbench run`, a re-grade from the response cache — every model
request counted at the server, none asked twice but what the kill caught."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from abbench.store import open_store
from tests.realmodel.conftest import MODEL, routing_experiment

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("realmodel")]

QUERIES = [
    ("Turn on the air conditioning.", "fast"),
    ("Plan a route to the airport.", "slow"),
    ("Close the window.", "fast"),
    ("Will my battery last until Berlin?", "slow"),
]
PRICES = {MODEL: {"input": 1.0, "output": 2.0}}


def make(store_dir, server, name, **spec):
    with open_store(store_dir) as store:
        arm = {"agent": "openai", "model": MODEL, "base_url": server.base_url, "temperature": 0,
               "max_tokens": 12, "timeout_s": 300, "prices": PRICES}  # fmt: skip
        definition = {"retries": 0, "concurrency": 1, **spec}
        return routing_experiment(store, QUERIES, name, {"a": arm}, **definition).name


def abbench(store_dir, *args, **kw):
    return subprocess.run(
        [sys.executable, "-m", "abbench", "--store", str(store_dir), *args],
        capture_output=True, text=True, timeout=900, **kw,
    )  # fmt: skip


def runs(store_dir, name):
    with open_store(store_dir) as store:
        exp = store.experiments.get(name)
        return exp, store.runs.records(exp.id)


def test_a_budget_pauses_with_its_own_exit_code_and_resume_asks_nothing_twice(local_model, tmp_path):
    store_dir = tmp_path / "store"
    name = make(store_dir, local_model, "budgeted", budget={"max_tokens": 300})
    mark = local_model.requests
    done = abbench(store_dir, "run", name, "-q")
    assert done.returncode == 3, done.stdout + done.stderr
    exp, rs = runs(store_dir, name)
    assert exp.status == "paused" and exp.pause_reason
    asked = local_model.requests - mark
    ran = [r for r in rs if r.state != "pending"]
    assert 0 < asked == len(ran) < len(QUERIES)
    resumed = abbench(store_dir, "resume", name, "--max-tokens", "1000000", "-q")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    exp, rs = runs(store_dir, name)
    assert exp.status == "finished" and local_model.requests - mark == len(QUERIES)
    # the tokens the store counted are the server's own
    served = local_model.log()[mark:]
    with open_store(store_dir) as store:
        spend = store.attempts.spend_by_run(exp.id)
    (arm_spend,) = spend.values()
    assert arm_spend.input_tokens == sum(s.prompt_tokens for s in served)
    assert arm_spend.output_tokens == sum(s.completion_tokens for s in served)


def test_sigkill_mid_run_then_run_again_repeats_only_the_call_in_flight(local_model, tmp_path):
    store_dir = tmp_path / "store"
    judge = {"type": "llm_judge", "model": MODEL, "base_url": local_model.base_url, "max_tokens": 12,
             "temperature": 0, "timeout_s": 300, "retries": 0}  # fmt: skip
    name = make(store_dir, local_model, "killed", graders=["label_match", judge])
    mark = local_model.requests
    proc = subprocess.Popen(
        [sys.executable, "-m", "abbench", "--store", str(store_dir), "run", name, "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 600
        while local_model.requests - mark < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)  # wait on a condition: two requests answered
        assert proc.poll() is None, "the run finished before it could be killed"
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    killed_at = local_model.requests - mark
    again = abbench(store_dir, "run", name, "-q")
    assert again.returncode in (0, 1), again.stdout + again.stderr
    exp, rs = runs(store_dir, name)
    assert exp.status == "finished" and all(r.state in ("pass", "fail") for r in rs)
    total = local_model.requests - mark
    # every run asked its agent once, and the judge once when it had an answer to judge; what the kill
    # caught — the call in flight, and one answered but not yet stored — may be asked again, nothing else
    expected = len(rs) + sum(1 for r in rs if not r.execution_failed)
    assert expected <= total <= expected + 2, (killed_at, total, expected)
    # a re-grade is served by the response cache (temperature 0): no request reaches the server
    before = local_model.requests
    regraded = abbench(store_dir, "regrade", name, "-q")
    assert regraded.returncode in (0, 1), regraded.stdout + regraded.stderr
    assert local_model.requests == before

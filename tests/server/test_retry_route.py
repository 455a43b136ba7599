"""`POST /experiments/{id}/retry` re-grades grading failures in the pool without running the agent again."""

from __future__ import annotations

import pytest

from abbench.client import Client
from abbench.store import open_store
from tests.conftest import DEMO
from tests.server.live import LiveServer


@pytest.mark.slow
def test_retrying_grading_failures_over_http_grades_again_and_pays_no_agent_run(tmp_path):
    store_dir = tmp_path / "store"
    with open_store(store_dir) as s:
        key = s.keys.create("alice")[1]
    server = LiveServer(store_dir, "--agent", "python", log=tmp_path / "server.log").start()
    try:
        with Client(server.url, key) as c:
            ds = c.import_dataset(DEMO / "cases.csv", (DEMO / "mapping-csv.yaml").read_text(encoding="utf-8"))
            spec = {
                "name": "ungraded",
                "dataset": ds.fingerprint,
                "cases": {"limit": 5},
                # a verdict only an external tool gives: every run executed here fails grading
                "graders": [{"type": "recorded", "name": "judge"}],
                "arms": {"a": {"agent": "python", "function": "tests.blocking:gated"}},
            }
            exp = c.create_experiment(spec)
            c.start(exp.id)
            first = c.wait(exp.id, poll=0.1)
            assert first.grading_failed == 5
            asked = c.retry(exp.id, failed=True)
            assert asked["reset"] == 0 and asked["regrade"] == 5 and asked["queued"] is True
            assert "re-grading 5 grading failures" in asked["retried"]
            again = c.wait(exp.id, poll=0.1)
    finally:
        server.stop()
    assert again.grading_failed == 5
    with open_store(store_dir) as s:
        runs = s.runs.records(exp.id)
        assert {r.attempts for r in runs} == {1}  # never executed again
        assert all(len(s.grades.history(r.id)) == 2 for r in runs)  # graded twice

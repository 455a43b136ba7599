"""An experiment cancelled mid-run is *incomplete* in every view: gate CLI, report, results widget, progress.

The agent answers a set number of runs, then holds the rest until the test releases them; the test
cancels while they are held, so how far the experiment got depends on nothing but the test.
"""

from __future__ import annotations

import time

import pytest

from abbench.gate import evaluate_gate
from abbench.runner import cancel_experiment, create_experiment, experiment_status, start_experiment
from abbench.store import open_store
from tests.conftest import DEMO
from tests.gate.blocking import open_valve

CASES, ANSWERED, CONCURRENCY = 40, 30, 4


def _wait_for(condition, what: str, limit_s: float = 300.0) -> None:
    """Wait until `condition()` holds; the limit only stops a broken run from hanging the suite."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"never happened: {what}"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def cancelled(tmp_path_factory):
    """``(store, experiment)``: v1 vs v2 on 40 demo cases, cancelled after 30 of its 80 runs were graded."""
    folder = tmp_path_factory.mktemp("cancelled")
    store = open_store(folder / "store")
    ds = store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
    valve = open_valve(ANSWERED, CONCURRENCY)
    arm = {"agent": "python", "function": "tests.gate.blocking:answer", "token": valve.token}
    exp = create_experiment(
        {
            "name": "cut-short",
            "dataset": ds.fingerprint,
            "cases": {"limit": CASES},
            "concurrency": CONCURRENCY,
            "retries": 0,
            "arms": {"v1": arm, "v2": arm},
        },
        store=store,
    )
    handle = start_experiment(exp.id, store=store)
    try:
        assert valve.all_held.wait(300), "the agent never held a run"

        def graded() -> int:
            counts = store.runs.counts(exp.id)
            return sum(c.get("pass", 0) + c.get("fail", 0) for c in counts.values())

        _wait_for(lambda: graded() >= ANSWERED, f"{ANSWERED} runs graded")
        cancel_experiment(exp.id, store=store)
        _wait_for(lambda: store.experiments.get(exp.id).status == "cancelled", "the cancellation")
    finally:
        valve.release.set()
        handle.wait(300)
    yield store, store.experiments.get(exp.id)
    store.close()


def test_progress_does_not_count_cancelled_runs_as_done(cancelled):
    store, exp = cancelled
    p = experiment_status(exp.id, store=store)
    counts = p.counts()
    assert p.done == counts["pass"] + counts["fail"] >= ANSWERED
    assert p.cancelled == counts["cancelled"] > 0 and p.done + p.cancelled == p.total == 2 * CASES
    assert p.fraction < 1 and p.as_dict()["cancelled"] == p.cancelled


def test_the_gate_is_incomplete_and_says_its_coverage_first(cancelled, cli):
    store, exp = cancelled
    counts = store.runs.counts(exp.id)
    decided = {arm: c.get("pass", 0) + c.get("fail", 0) for arm, c in counts.items()}
    g = evaluate_gate(exp.id, store=store)
    assert g.outcome == "incomplete" and not g.passed
    assert {a.arm: a.decided for a in g.coverage.arms} == decided
    assert [a.planned for a in g.coverage.arms] == [CASES, CASES]
    result = cli("gate", exp.id, store=store.path)
    assert result.exit_code == 1, result.output  # incomplete is not a pass
    first = result.output.splitlines()[0]
    assert first.startswith("v2 vs v1: GATE INCOMPLETE — decided on ") and g.coverage.text in first
    assert "cancelled" in result.output.splitlines()[2]  # what the missing runs are, before any rule
    # A gate that says how little it accepts decides on what ran.
    lenient = evaluate_gate(
        exp.id, {"rules": ["accuracy >= 0"], "min_coverage": min(decided.values()) / CASES}, store=store
    )
    assert lenient.outcome == "pass"


def test_the_results_widget_shows_incomplete(cancelled):
    from abbench.widgets import ResultsWidget

    store, exp = cancelled
    w = ResultsWidget(store, experiment=exp.id)
    assert w.errors.message is None
    assert w.gate_result.outcome == "incomplete"
    html = w.decision_html.value
    assert f"v2 vs v1: gate INCOMPLETE — {w.gate_result.coverage.text}" in html
    assert "PASS" not in html


@pytest.mark.slow
def test_the_report_is_incomplete(cancelled, cli, tmp_path):
    from tests.report.conftest import parse_page

    store, exp = cancelled
    out = tmp_path / "cut.html"
    result = cli("report", exp.id, "--out", out, "--fail-on-block", store=store.path)
    assert result.exit_code == 1, result.output  # written, and not a pass
    g = evaluate_gate(exp.id, store=store)
    assert f"decision: v2 vs v1: INCOMPLETE ({g.coverage.text})" in result.output
    page = parse_page(out.read_text(encoding="utf-8"))
    banner = page.text.split("Arms")[0]
    assert "v2 vs v1: INCOMPLETE" in banner and g.coverage.text in banner and "PASS" not in banner
    assert "several rounds" not in page.text  # one round

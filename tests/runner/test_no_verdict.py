"""Item 3 of issue 37: no verdict is not a pass. A run whose graders only scored it (a recorded
``{score: 0.0}`` without ``passed``, a function grader returning a number) is *scored*: neither right nor
wrong, left out of accuracy, counted as such in every view, and its score is what the experiment shows."""

from __future__ import annotations

import csv
import statistics

import pytest
from click.testing import CliRunner

from abbench.export import export
from abbench.gate import evaluate_gate
from abbench.metrics import experiment_metrics
from abbench.runner import create_experiment, experiment_status, run_experiment
from abbench.types import RunOutcome, RunState
from tests.recorded import recorded_experiment, write_dataset

N = 30


def score_only(ctx):
    """A user's grader that only scores: the length of the answer, scaled (no pass/fail)."""
    return len(str(ctx.output.prediction)) / 10


@pytest.fixture
def judged(store, tmp_path):
    info = write_dataset(store, tmp_path, N)
    exp = recorded_experiment(
        store,
        info,
        "judged",
        lambda i, arm, r: {"prediction": "yes", "grades": {"judge": {"score": 0.0}}},
        n=N,
    )
    return store, info, exp


def test_a_recorded_score_without_a_verdict_is_never_right(judged):
    store, _, exp = judged
    runs = store.runs.records(exp.id)
    assert {(r.state, r.passed) for r in runs} == {(RunState.PASS, None)}
    m = experiment_metrics(exp.name, store=store)
    assert m.outcome == "score"
    for arm in ("a", "b"):
        a = m.arm(arm)
        assert (a.counts.passed, a.counts.failed, a.counts.scored) == (0, 0, N)
        assert a.accuracy.value is None and a.score.value == 0.0
    status = experiment_status(exp.name, store=store)
    assert (status.right, status.scored) == (0, 2 * N)
    assert status.arms[0].outcomes()[RunOutcome.SCORED] == N
    # The decision rests on the scored runs: coverage is complete, nothing claims a right answer.
    gate = evaluate_gate(exp.name, store=store)
    assert gate.coverage.complete
    assert all(r.rule.metric != "accuracy" for r in gate.rules)


def test_the_views_and_exports_say_scored(judged, tmp_path):
    from abbench.cli import cli

    store, _, exp = judged
    out = (
        CliRunner()
        .invoke(cli, ["--store", str(store.path), "metrics", exp.name], catch_exceptions=False)
        .output
    )
    assert f"{N}: {N} scored (no verdict), 0 right, 0 wrong" in out
    for fmt in ("csv", "jsonl"):
        path = tmp_path / f"runs.{fmt}"
        export(exp.name, "runs", fmt, path, store=store)
        text = path.read_text(encoding="utf-8")
        if fmt == "csv":
            outcomes = {row["outcome"] for row in csv.DictReader(text.splitlines())}
        else:
            import json

            outcomes = {json.loads(line)["outcome"] for line in text.splitlines()}
        assert outcomes == {"scored"}


def test_a_verdict_beside_a_score_only_grader_decides(store, tmp_path):
    """label_match reaches a verdict; the recorded score alone does not veto or pass anything."""
    info = write_dataset(store, tmp_path, N)
    right = {i: i % 3 != 0 for i in range(N)}

    def outcome(i, arm, r):
        gold = "yes" if i % 2 else "no"
        other = "no" if gold == "yes" else "yes"
        return {"prediction": gold if right[i] else other, "grades": {"judge": {"score": 0.0}}}

    exp = recorded_experiment(
        store, info, "mixed", outcome, n=N, graders=["label_match", {"type": "recorded", "name": "judge"}]
    )
    a = experiment_metrics(exp.name, store=store).arm("a")
    assert a.counts.scored == 0 and a.counts.passed == sum(right.values())
    assert a.accuracy.value == pytest.approx(sum(right.values()) / N)


def test_an_agents_run_graded_by_a_score_only_function_is_scored(store, tmp_path):
    info = write_dataset(store, tmp_path, 12)
    exp = create_experiment(
        {
            "name": "fn",
            "dataset": info.fingerprint,
            "arms": {
                "only": {"agent": "python", "function": "tests.widgets.agents:answer", "sees_gold": True}
            },
            "graders": [{"type": "tests.runner.test_no_verdict:score_only", "kind": "judge"}],
        },
        store=store,
    )
    run_experiment(exp.id, store=store)
    runs = store.runs.records(exp.id)
    assert {(r.state, r.passed) for r in runs} == {(RunState.PASS, None)}
    m = experiment_metrics(exp.name, store=store).arm("only")
    assert m.counts.scored == 12 and m.counts.passed == 0
    assert m.score.value == pytest.approx(statistics.mean(len(str(r.output.prediction)) / 10 for r in runs))

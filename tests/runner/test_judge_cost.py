"""Grading cost is the judge's: a pairwise judge's cost is charged to no arm (it was charged to the first).

Judges run against the scripted OpenAI-compatible server on 127.0.0.1 with fixed usage, so every
expected cost below is the script's tokens times the price, computed here.
"""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from abbench.cli import cli
from abbench.metrics import experiment_metrics, judge_report
from abbench.report._sections._arms import usage_section
from abbench.runner import create_experiment, run_experiment
from abbench.testing import Reply, ScriptedOpenAIServer

PRICES = {"input": 1.0, "output": 2.0}  # per million tokens
POINTWISE = (200 * 1.0 + 10 * 2.0) / 1e6
PAIRWISE = (300 * 1.0 + 20 * 2.0) / 1e6


def replies(request):
    if "comparing two answers" in request.messages[0]["content"]:
        return Reply.text('{"winner": "1", "comment": "the first"}', usage=(300, 20))
    return Reply.text(json.dumps({"scores": {"correctness": 4}, "comment": "ok"}), usage=(200, 10))


def test_pairwise_judge_cost_is_reported_apart_from_both_arms(store, definition):
    with ScriptedOpenAIServer(replies) as server:
        judge = {"model": "judge-m", "base_url": server.base_url, "prices": PRICES, "backoff_s": 0}
        spec = definition(
            rounds=1,
            graders=[
                {"type": "llm_judge", "rubric": {"correctness": "Is the label right?"}, **judge},
                {"type": "pairwise_judge", "both_orders": False, **judge},
            ],
        )
        exp = create_experiment(spec, store=store)
        run_experiment(exp.id, store=store)
    m = experiment_metrics(exp.id, store=store)
    cases = 6
    for arm in ("control", "treatment"):  # what judging this arm's own runs cost, and nothing else
        assert m.arm(arm).usage.judge_cost == pytest.approx(cases * POINTWISE)
    judging = {j.grader: j for j in m.judging}
    assert judging["pairwise_judge"].cost == pytest.approx(cases * PAIRWISE)
    assert (
        judging["pairwise_judge"].arms == ("control", "treatment")
        and judging["pairwise_judge"].grades == cases
    )
    assert judging["llm_judge"].cost == pytest.approx(2 * cases * POINTWISE)
    assert m.judge_cost == pytest.approx(2 * cases * POINTWISE + cases * PAIRWISE)
    assert judge_report(exp.id, store=store).judge_cost == pytest.approx(m.judge_cost)
    data = m.as_dict()
    assert [j["grader"] for j in data["judging"]] == ["llm_judge", "pairwise_judge"]

    note = "".join(str(p) for p in usage_section(m))
    assert "Grading cost is the judges&#x27;, apart from the arms&#x27; execution cost" in note
    assert "comparing control and treatment" in note
    out = CliRunner().invoke(cli, ["--store", str(store.path), "metrics", str(exp.id)])
    assert out.exit_code == 0, out.output
    assert "judging (apart from the arms' execution cost):" in out.output
    assert "pairwise_judge" in out.output and "(control vs treatment)" in out.output

"""The grading commands: grade (with --add-grader), grades, judge-report — output, JSON and exit codes."""

from __future__ import annotations

import json

import pytest

from abbench.runner import create_experiment, run_experiment
from abbench.store import open_store
from abbench.testing import Reply, ScriptedOpenAIServer
from abbench.types import Case
from tests.conftest import run_abbench

AGENT = "tests.graders.callables:answer"


@pytest.fixture
def experiment(cli, tmp_path):
    """A finished two-arm experiment in the CLI's store (6 runs), graded by label match."""
    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: tiny\n---\n# Rules\n- 打开空调: fast\n", encoding="utf-8")
    store = open_store(cli.store_dir)
    cases = [Case(f"c{i}", f"query {i}", "fast" if i else "slow") for i in range(3)]
    dataset = store.datasets.save("cli", cases, label_set=["fast", "slow"])
    exp = create_experiment(
        {
            "name": "graded",
            "dataset": dataset.fingerprint,
            "arms": {
                "control": {"agent": "python", "function": AGENT, "sees_gold": True, "wrong": ["c1"]},
                "treatment": {"agent": "python", "function": AGENT, "sees_gold": True, "skill": str(skill)},
            },
        },
        store=store,
    )
    run_experiment(exp.id, store=store)
    store.close()
    return exp


def test_grade_adds_graders_and_skips_what_is_graded(cli, experiment):
    result = cli("grade", experiment.id)
    assert result.exit_code == 0, result.output
    assert "graded 0" in result.output and "6 runs up to date (nothing new to grade)" in result.output
    result = cli(
        "grade",
        experiment.id,
        "--add-grader",
        "read_skill",
        "--add-grader",
        '{type: regex, pattern: "^(fast|slow)$", name: label_shape}',
        "--json",
    )
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["graded"] == 6 and summary["executed"] == 0 and summary["up_to_date"] == 0
    store = open_store(cli.store_dir)
    spec = store.experiments.get(experiment.id).spec
    assert spec.graders[1:] == [
        "read_skill",
        {"type": "regex", "pattern": "^(fast|slow)$", "name": "label_shape"},
    ]
    # the wrong answer fails label_shape too; the others pass every grader
    assert {r.case_id: r.state for r in store.runs.records(experiment.id) if r.arm == "control"} == {
        "c0": "pass",
        "c1": "fail",
        "c2": "pass",
    }
    assert len(store.grades.batches(experiment.id)) == 1


def test_grader_file_and_bad_specs(cli, experiment, tmp_path):
    path = tmp_path / "graders.yaml"
    path.write_text("- {type: max_tokens, n: 5, name: tiny_budget}\n- cited_evidence\n", encoding="utf-8")
    result = cli("grade", experiment.id, "--add-grader", str(path), "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["graded"] == 6
    bad = cli("grade", experiment.id, "--add-grader", "{type: regex, patern: x}")
    assert bad.exit_code == 2 and "grader 'regex' has no option 'patern'" in bad.output
    bad = cli("grade", experiment.id, "--add-grader", "[1, 2]")
    assert bad.exit_code == 2 and "give a grader name" in bad.output
    taken = cli("grade", experiment.id, "--add-grader", "{type: max_tokens, n: 9, name: tiny_budget}")
    assert taken.exit_code == 2 and "already has a grader named 'tiny_budget'" in taken.output


def test_grades_shows_latest_and_history(cli, experiment):
    assert cli("regrade", experiment.id, "-q").exit_code == 0
    latest = json.loads(cli("grades", experiment.id, "--json").output)
    history = json.loads(cli("grades", experiment.id, "--history", "--json").output)
    assert len(latest) == 6 and len(history) == 12
    run_id = latest[0]["run_id"]
    text = cli("grades", experiment.id, "--run", run_id, "--history").output
    assert text.count(f"run {run_id} ") == 2 and "label_match" in text
    assert "no grades for" in cli("grades", experiment.id, "--grader", "nobody").output


def test_judge_report_shows_judge_cost_apart_and_bias(cli, experiment):
    empty = cli("judge-report", experiment.id)
    assert "no judge grades yet" in empty.output and "no pairwise grades yet" in empty.output
    replies = lambda r: (  # noqa: E731
        Reply.text('{"winner": "1"}', usage=(100, 5))
        if "comparing two answers" in r.messages[0]["content"]
        else Reply.text('{"correctness": 4}', usage=(100, 5))
    )
    with ScriptedOpenAIServer(replies) as server:
        common = f"model: judge-m, base_url: {server.base_url}, prices: {{input: 1, output: 2}}"
        result = cli(
            "grade",
            experiment.id,
            "--add-grader",
            f"{{type: llm_judge, {common}}}",
            "--add-grader",
            f"{{type: pairwise_judge, both_orders: true, {common}}}",
            "-q",
        )
        assert result.exit_code == 0, result.output
        assert "3 pairs judged, 0 grading failed" in result.output
    report = json.loads(cli("judge-report", experiment.id, "--json").output)
    costs = {c["grader"]: c for c in report["judge_costs"]}
    assert costs["llm_judge"]["cost"] == pytest.approx(6 * 110 / 1e6)
    # the arms answer c0 and c2 alike: those pairs are the same prompt in both orders, asked once
    assert costs["pairwise_judge"]["cost"] == pytest.approx((6 - 2) * 110 / 1e6)
    assert costs["pairwise_judge"]["saved"] == pytest.approx(2 * 110 / 1e6)
    assert report["agent_cost"] == pytest.approx(0.006) and report["batches"] == 1
    (bias,) = report["position_bias"]
    assert bias["first_win_rate"] == 1.0 and bias["flips"] == 3 and bias["verdicts"]["tie"] == 3
    text = cli("judge-report", experiment.id).output
    assert "first-slot win rate 1.00 [" in text and "both orders: 3 pairs, flip rate 1.00" in text
    assert "judges $0.0011 · agents $0.0060 (6 executions" in text
    assert "$0.0004 (cache saved $0.0002)  tokens 400/20" in text


def test_unknown_experiment_exits_2_in_a_real_process(tmp_path):
    result = run_abbench("--store", tmp_path / "s", "judge-report", "nope")
    assert result.returncode == 2 and "no experiment named 'nope'" in result.stderr


def test_judge_report_says_unknown_for_agents_without_a_price(cli):
    store = open_store(cli.store_dir)
    dataset = store.datasets.save("unpriced", [Case("c0", "q", "fast")], label_set=["fast", "slow"])
    arm = {"agent": "python", "function": "tests.graders.callables:unpriced"}
    exp = create_experiment(
        {"name": "unpriced", "dataset": dataset.fingerprint, "arms": {"a": arm}}, store=store
    )
    run_experiment(exp.id, store=store)
    assert store.runs.agent_usage(exp.id)["unknown_cost"] == 1
    store.close()
    text = cli("judge-report", "unpriced").output
    assert "agents unknown (1 attempts of unknown cost)" in text and "agents $0" not in text

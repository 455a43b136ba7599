"""The analysis commands: compare, metrics, gate, review, reviews, disagreements, case."""

from __future__ import annotations

import json

import pytest

from abbench.store import open_store
from abbench.types import Case
from tests.conftest import run_abbench
from tests.results import cases_of, make_experiment, one_round, table_2x2

COMMANDS = ("compare", "metrics", "gate", "review", "reviews", "disagreements", "case")


@pytest.fixture
def stored(cli):
    """A store with a two-arm experiment (12 fixed, 3 regressed), a three-arm one, and one on another dataset."""
    store = open_store(cli.store_dir)
    a, b = table_2x2(30, 12, 3, 5)
    make_experiment(store, "two", cases_of(50), {"control": a, "treatment": b})
    three = {"x": [[True, False]] * 12, "y": [[True, True]] * 12, "z": [[False, False]] * 12}
    make_experiment(store, "three", cases_of(12), three, dataset="ds3")
    make_experiment(store, "other", cases_of(5), {"control": one_round([True] * 5)}, dataset="ds5")
    store.close()
    return cli


def test_compare_prints_the_verdict_first(stored):
    result = stored("compare", "two", "--arms", "control", "treatment", "--by-domain")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[1].startswith("treatment is better than control: treatment − control = +18.0 points")
    assert "fixed (12): c030" in result.output and "regressed (3): c042, c043, c044" in result.output
    assert "McNemar exact     b = 3 regressed, c = 12 fixed" in result.output
    assert "domain" in result.output and "car" in result.output


def test_compare_json_is_machine_readable(stored):
    result = stored("compare", "two", "--json")
    data = json.loads(result.output)
    assert data["verdict"]["code"] == "b_better"
    assert data["mcnemar"]["b"] == 3 and len(data["cases"]) == 50
    assert {c["category"] for c in data["cases"]} == {
        "fixed",
        "regressed",
        "unchanged_right",
        "unchanged_wrong",
    }


def test_compare_three_arms_runs_cochrans_q(stored):
    result = stored("compare", "three")
    assert result.exit_code == 0, result.output
    assert "Cochran's Q" in result.output and "y vs x" in result.output and "z vs x" in result.output


def test_compare_two_experiments_on_different_datasets_exits_1(stored):
    proc = run_abbench("--store", stored.store_dir, "compare", "two", "other")
    assert proc.returncode == 1
    assert "error: experiment 'two' ran on dataset ds@" in proc.stderr and "same cases" in proc.stderr


def test_metrics(stored):
    result = stored("metrics", "two", "--confusion", "--by-domain", "--by-round")
    assert result.exit_code == 0, result.output
    assert "accuracy            66.0% [52.2–77.6]" in result.output
    assert "confusion (rows gold, columns predicted)" in result.output and "(other)" in result.output
    data = json.loads(stored("metrics", "two", "--json").output)
    assert [a["arm"] for a in data["arms"]] == ["control", "treatment"]


def test_gate_exit_codes_and_rule_lines(stored, tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(
        "- {metric: diff_ci_low, op: '>=', value: 0}\n- {metric: regressed, op: '<=', value: 2, severity: warn}\n"
    )
    result = stored("gate", "two", "--rules", good)
    assert result.exit_code == 0, result.output
    assert "GATE PASS" in result.output
    assert "✓ diff_ci_low >= 0:" in result.output and "! regressed <= 2: 3 → warn [warn]" in result.output
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {metric: regressed, op: '<=', value: 2}\n")
    proc = run_abbench("--store", stored.store_dir, "gate", "two", "--rules", bad)
    assert (
        proc.returncode == 1 and "GATE BLOCK" in proc.stdout and "✗ regressed <= 2: 3 → BLOCK" in proc.stdout
    )
    broken = tmp_path / "broken.yaml"
    broken.write_text("- {metric: regresed, op: '<=', value: 2}\n")
    proc = run_abbench("--store", stored.store_dir, "gate", "two", "--rules", broken)
    assert (
        proc.returncode == 2 and "did you mean regressed" in proc.stderr and "rule 1 (line 1)" in proc.stderr
    )


def test_gate_lists_its_metrics(stored):
    result = stored("gate", "--list-metrics")
    assert result.exit_code == 0
    assert "no_domain_significant_regression" in result.output and "p95_latency_ms" in result.output
    rows = json.loads(stored("gate", "--list-metrics", "--json").output)
    assert {r["scope"] for r in rows} == {"arm", "comparison", "decision"}


def test_review_then_reviews_and_case(stored):
    result = stored(
        "review", "two", "c031", "--verdict", "gold_correct", "--arm", "treatment", "--note", "金标准是对的"
    )
    assert result.exit_code == 0 and "review #1 saved: c031 treatment → gold_correct" in result.output
    stored("review", "two", "c031", "--verdict", "model_correct", "--arm", "treatment")
    listing = stored("reviews", "two")
    assert "model_correct" in listing.output and "gold_correct" not in listing.output
    assert "gold_correct" in stored("reviews", "two", "--history").output
    case = stored("case", "two", "c031")
    assert "input: query 31" in case.output and "review #1" in case.output and "金标准是对的" in case.output
    bad = stored("review", "two", "c031", "--verdict", "nope")
    assert bad.exit_code == 2 and "choose one of gold_correct" in bad.output


def test_disagreements(stored):
    result = stored("disagreements", "two", "--kind", "gold", "--limit", "2")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].startswith("c030") and "2 case(s)" in result.output
    data = json.loads(stored("disagreements", "two", "--json").output)
    assert {d["case"]["case_id"] for d in data} >= {"c030", "c042"}


@pytest.mark.parametrize("command", COMMANDS)
def test_every_analysis_command_has_help(cli, command):
    result = cli(command, "--help")
    assert result.exit_code == 0
    assert len(result.output.splitlines()) > 3


def test_disagreements_show_whole_case_ids_and_labels_and_why_a_run_has_no_answer(cli):
    store = open_store(cli.store_dir)
    labels = ("card_payment_wrong_exchange_rate", "lost_or_stolen_card")
    cases = [Case(f"banking-test-{i:05d}", f"query {i}", labels[i % 2], domain="cards") for i in range(4)]
    runs = [[False, True], ["exec_fail", False], [True, True], [False, False]]
    make_experiment(store, "long", cases, {"only": runs}, dataset="long", label_set=labels)
    store.close()
    result = cli("disagreements", "long", "--kind", "gold", "--limit", "2")
    assert result.exit_code == 0, result.output
    first, _, second, _, summary = result.output.splitlines()
    assert first.startswith("banking-test-00000 ") and second.startswith("banking-test-00001 ")
    assert "gold card_payment_wrong_exchange_rate " in first and "only: wrong/card_payment" in first
    assert "only: (agent_error)/wrong" in second
    assert summary.startswith("2 case(s) (--limit 2: there may be more)")


def test_metrics_judge_lines_keep_a_space_before_the_figure(cli):
    store = open_store(cli.store_dir)
    judged = {"passed": True, "judge": {"score": 0.75, "dimensions": {"correctness": 4.0}}}
    make_experiment(store, "judged", cases_of(4), {"a": [[judged]] * 4}, judge="llm_judge")
    store.close()
    result = cli("metrics", "judged")
    assert result.exit_code == 0, result.output
    line = next(x for x in result.output.splitlines() if "judge llm_judge correctness" in x)
    assert "judge llm_judge correctness 4" in line


def test_case_shows_each_graders_verdict_so_a_failed_run_says_why(cli):
    store = open_store(cli.store_dir)
    judged = {"passed": False, "judge": {"score": 0.25, "dimensions": {"correctness": 2.0}}}
    make_experiment(store, "why", cases_of(2), {"a": [[judged], [True]]}, judge="llm_judge")
    store.close()
    result = cli("case", "why", "c000")
    assert result.exit_code == 0, result.output
    assert "grades: label_match wrong · llm_judge scored 0.25" in result.output


def test_usage_reads_in_its_units(stored):
    """Latency in ms or s, tokens whole and grouped, dollars as money — never `3.524e+04` tokens."""
    metrics = stored("metrics", "two").output
    usage = [line for line in metrics.splitlines() if line.lstrip().startswith(("latency", "tokens", "cost"))]
    assert usage and all("e+" not in line for line in usage), usage
    assert any(line.lstrip().startswith("latency ") and " ms" in line for line in usage), usage
    compared = stored("compare", "two", "--arms", "control", "treatment").output
    lines = [line for line in compared.splitlines() if line.startswith(("latency ", "tokens", "cost"))]
    assert lines and all("e+" not in line for line in lines), lines
    assert len(lines) == 3, lines

"""The pairwise contest in the double-blind workflow's shape, and per-arm rubric totals in `compare`
(issue 42, items 11 and 12), from an experiment judged over a scripted server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
from scipy.stats import binomtest
from statsmodels.stats.proportion import proportion_confint

from abbench.compare import compare_arms
from abbench.errors import UsageError
from abbench.export import export, export_table, pairwise_result
from tests.judged_pairs import WRONG, judged_experiment, prefers_longer


@pytest.fixture
def contest(store):
    return judged_experiment(store, prefers_longer, name="contest", rubric={"template": "writing"})


def test_the_export_has_the_workflows_shape(store, contest, tmp_path):
    result = export(contest.name, "pairwise", "json", tmp_path / "c.json", store=store)
    doc = json.loads(result.path.read_text(encoding="utf-8"))
    assert result.rows == 30 and list(doc) == ["format_version", "test_summary", "rounds", "final_result"]
    summary = doc["test_summary"]
    assert summary["task"] == "contest" and summary["rounds"] == 30
    assert summary["contestant_a"]["arm"] == "control" and summary["contestant_b"]["arm"] == "treatment"
    assert summary["rubric"]["template"] == "writing"
    assert [d["name"] for d in summary["rubric"]["dimensions"]] == [
        "accuracy",
        "completeness",
        "expression",
        "depth",
    ]
    first = doc["rounds"][0]
    assert set(first) >= {"round", "outputs", "judge_scores", "winner", "judge_comment"}
    assert first["round"] == 1 and first["case_id"] == "c000"
    assert first["judge_scores"] == {
        "a": {"accuracy": 6, "completeness": 7, "expression": 5, "depth": 6},
        "b": {"accuracy": 9, "completeness": 10, "expression": 8, "depth": 9},
    }
    assert first["winner"] == "tie" and first["tie_rule"] == "both answers equal the gold label"
    assert first["outputs"]["b"]["arm"] == "treatment" and first["outputs"]["a"]["prediction"] == "fast"
    decided = {r["case_id"]: r["winner"] for r in doc["rounds"] if r["winner"] != "tie"}
    assert decided == dict.fromkeys(WRONG, "treatment")

    final = doc["final_result"]
    assert (final["wins_a"], final["wins_b"], final["ties"], final["winner"]) == (0, 2, 28, "treatment")
    assert (final["total_score_a"], final["total_score_b"]) == (30 * 24, 30 * 36)
    assert final["dimensions"][0] == {
        "dimension": "accuracy", "pairs": 30, "total_a": 180, "total_b": 270, "mean_a": 6, "mean_b": 9
    }  # fmt: skip
    confidence = final["confidence"]
    assert confidence["sign_test_p"] == pytest.approx(binomtest(2, 2, 0.5).pvalue)
    low, high = proportion_confint(2, 2, alpha=0.05, method="wilson")
    assert confidence["b_win_interval"]["low"] == pytest.approx(low)
    assert confidence["b_win_interval"]["high"] == pytest.approx(high)
    assert confidence["position_bias"]["biased"] is False
    assert confidence["verbosity_bias"]["prefers"] == "longer"
    assert "the judge prefers the longer answer: treat it with caution" in confidence["summary"]


def test_compare_reports_each_arms_rubric_totals(store, contest, cli):
    (p,) = compare_arms(contest, store=store).pairwise
    assert (p.wins_a, p.wins_b, p.ties) == (0, 2, 28)
    assert [(t.dimension, t.total_a, t.total_b, t.mean_a, t.mean_b) for t in p.dimensions] == [
        ("accuracy", 180, 270, 6, 9),
        ("completeness", 210, 300, 7, 10),
        ("depth", 180, 270, 6, 9),
        ("expression", 150, 240, 5, 8),
    ]
    # the other way round, A and B swap
    (q,) = compare_arms(contest, "treatment", "control", store=store).pairwise
    assert q.dimensions[0].total_a == 270 and q.dimensions[0].mean_b == 6
    out = cli("compare", "contest").output
    assert "accuracy" in out and "total control 180.0, treatment 270.0; mean 6 → 9 over 30 pair(s)" in out
    doc = json.loads(cli("export", "contest", "--what", "pairwise", "--out", "-").output)
    assert doc["final_result"]["wins_b"] == 2


def test_the_pairwise_export_is_json_only(store, contest, tmp_path):
    with pytest.raises(UsageError, match="written as json, not csv"):
        export(contest.name, "pairwise", "csv", tmp_path / "c.csv", store=store)
    with pytest.raises(UsageError, match="one JSON document, not a table"):
        export_table(contest.name, "pairwise", store=store)
    with pytest.raises(UsageError, match="choose the pairwise judge to export: blind"):
        pairwise_result(contest.name, grader="other", store=store)

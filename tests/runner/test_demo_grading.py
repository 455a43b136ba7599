"""The demo, graded: label match plus trajectory checks on the builtin agent, then judges over local HTTP."""

from __future__ import annotations

import collections
import csv
import json
import re

import pytest

from abbench.metrics import judge_report
from abbench.runner import create_experiment, grade_experiment, run_experiment
from abbench.testing import Reply, ScriptedOpenAIServer
from abbench.types import Case
from tests.conftest import DEMO


@pytest.fixture
def demo_dataset(store):
    """The demo's 401 cases as they are in cases.csv, gold spellings untouched (`SLOW`, ` fast` ...)."""
    with open(DEMO / "cases.csv", encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    cases = [
        Case(
            r["case_id"],
            r["query"],
            r["route"],
            history=json.loads(r["history"]) if r["history"] else None,
            domain=r["domain"],
        )
        for r in rows
    ]
    return store.datasets.save("demo", cases, label_set=["fast", "slow"])


def accuracy(store, exp_id, arm):
    grades = [g for g in store.grades.records(exp_id, grader="label_match")]
    runs = {r.id: r.arm for r in store.runs.records(exp_id)}
    mine = [g.passed for g in grades if runs[g.run_id] == arm]
    return sum(mine) / len(mine)


@pytest.mark.slow
def test_the_demo_is_graded_by_label_match_and_trajectory_checks(store, demo_dataset):
    skills = DEMO / "skills"
    exp = create_experiment(
        {
            "name": "demo-graded",
            "dataset": demo_dataset.fingerprint,
            "arms": {
                "no-skill": {"agent": "builtin"},
                "v1": {"agent": "builtin", "skill": str(skills / "fast-slow-routing-v1")},
                "v2": {"agent": "builtin", "skill": str(skills / "fast-slow-routing-v2")},
            },
            "graders": ["label_match", "read_skill", "cited_evidence"],
            "concurrency": 32,
        },
        store=store,
    )
    summary = run_experiment(exp.id, store=store)
    assert summary.status == "finished" and summary.executed == 3 * 401
    assert len(store.grades.batches(exp.id)) == 1 and len(store.grades.records(exp.id)) == 3 * 3 * 401
    runs = store.runs.records(exp.id)
    latest = {r.id: store.grades.latest(r.id) for r in runs}
    for r in runs:
        g = latest[r.id]
        if r.arm == "no-skill":
            assert g["read_skill"].passed is None and g["cited_evidence"].passed is None
    with_skill = [latest[r.id] for r in runs if r.arm != "no-skill"]
    # the builtin agent opens the sections it uses and cites existing references
    assert sum(g["read_skill"].passed for g in with_skill) / len(with_skill) > 0.9
    assert sum(g["cited_evidence"].passed for g in with_skill) / len(with_skill) > 0.9
    assert accuracy(store, exp.id, "v2") > accuracy(store, exp.id, "no-skill")
    # gold spellings such as "SLOW" and " fast" count as the labels they are
    slow_caps = next(r for r in runs if r.case_id == "FS-0001" and r.arm == "v2")
    assert latest[slow_caps.id]["label_match"].passed is (slow_caps.output.prediction == "slow")


@pytest.mark.slow
def test_a_demo_experiment_with_a_pointwise_and_a_pairwise_judge_end_to_end(store, demo_dataset):
    def judge(request):
        system, user = request.messages[0]["content"], request.messages[-1]["content"]
        reference = user.split("<reference_answer>\n")[1].split("\n")[0].strip().lower()
        if "comparing two answers" in system:
            first = user.split('<response id="1">')[1].split("</response>")[0]
            second = user.split('<response id="2">')[1].split("</response>")[0]
            right = [f"Answer: {reference}" in first, f"Answer: {reference}" in second]
            winner = "tie" if right[0] == right[1] else ("1" if right[0] else "2")
            return Reply.text(
                json.dumps({"winner": winner, "comment": "checked against the reference"}), usage=(400, 15)
            )
        right = f"Answer: {reference}" in user
        return Reply.text(
            f'<score name="routing">{5 if right else 1}</score><comment>ok</comment>', usage=(300, 12)
        )

    skills = DEMO / "skills"
    with ScriptedOpenAIServer(judge) as server:
        common = {"model": "judge-m", "base_url": server.base_url, "prices": {"input": 0.5, "output": 1.5}}
        exp = create_experiment(
            {
                "name": "demo-judged",
                "dataset": demo_dataset.fingerprint,
                "cases": {"sample": 40, "seed": 3},
                "rounds": 2,
                "seed": 5,
                "arms": {
                    "v1": {"agent": "builtin", "skill": str(skills / "fast-slow-routing-v1")},
                    "v2": {"agent": "builtin", "skill": str(skills / "fast-slow-routing-v2")},
                },
                "graders": [
                    "label_match",
                    {
                        "type": "llm_judge",
                        "rubric": {"routing": {"description": "Is the route right?", "scale": [1, 5]}},
                        "output_format": "tagged",
                        "pass_threshold": 0.5,
                        **common,
                    },
                    {"type": "pairwise_judge", "both_orders": True, **common},
                ],
            },
            store=store,
        )
        summary = run_experiment(exp.id, store=store)
        assert summary.executed == 160 and summary.pairs_judged == 80
        assert grade_experiment(exp.id, store=store).graded == 0  # nothing new
        requests = server.chat_requests
    pairwise = [r for r in requests if "comparing two answers" in r.messages[0]["content"]]
    # a pair whose two answers are the same is the same prompt in both orders: asked once
    alike = sum(
        len(set(re.findall(r'<response id="\d">\n(.*?)\n</response>', r.messages[-1]["content"], re.S))) == 1
        for r in pairwise
    )
    assert len(requests) - len(pairwise) == 160 and len(pairwise) + alike == 80 * 2 and alike > 0
    runs = store.runs.records(exp.id)
    for r in runs:
        g = store.grades.latest(r.id)
        # the judge agrees with label match on every run here, because it reads the reference
        assert g["llm_judge"].passed is g["label_match"].passed
    report = judge_report(exp.id, store=store)
    assert report.batches == 1
    costs = {c.grader: c.cost for c in report.judge_costs}
    assert costs["llm_judge"] == pytest.approx(160 * (300 * 0.5 + 12 * 1.5) / 1e6)
    assert costs["pairwise_judge"] == pytest.approx((160 - alike) * (400 * 0.5 + 15 * 1.5) / 1e6)
    (bias,) = report.position_bias
    # a judge that reads content is consistent across orders and shows no position bias
    assert bias.inconsistent == 0 and bias.flip_rate == 0.0
    passed = {(r.case_id, r.round, r.arm): store.grades.latest(r.id)["label_match"].passed for r in runs}
    wins = collections.Counter(
        "tie"
        if passed[(c, rnd, "v1")] == passed[(c, rnd, "v2")]
        else ("a" if passed[(c, rnd, "v1")] else "b")
        for (c, rnd, arm) in passed
        if arm == "v1"
    )
    assert dict(bias.verdicts) == {"a": wins["a"], "b": wins["b"], "tie": wins["tie"]}
    # each decisive pair is won once from slot 1 and once from slot 2: nothing to call a bias
    assert bias.first_wins == bias.second_wins == wins["a"] + wins["b"]
    assert bias.decisive == 2 * (wins["a"] + wins["b"]) and bias.biased is False
    assert bias.verdicts["b"] >= bias.verdicts["a"]  # v2 beats v1 on the pairs where they differ

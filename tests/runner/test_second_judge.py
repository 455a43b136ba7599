"""A second judge (``judges: [primary, secondary]``): a regression counts only when the second judge
corroborates it; the two judges' agreement is Cohen's kappa (checked against scikit-learn and statsmodels).
The judges answer from a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import cohens_kappa

from abbench.compare import NOT_CORROBORATED, Comparison, apply_rule, compare_arms
from abbench.errors import ExperimentError
from abbench.gate import evaluate_gate
from abbench.runner import create_experiment, run_experiment
from abbench.testing import Reply, ScriptedOpenAIServer
from tests.runner.conftest import make_cases

WRONG = [f"c{i:03d}" for i in range(1, 13)]  # the treatment answers 12 of 20 cases wrong
PICKY = {"c000", "c005", "c010", "c015", "c013", "c019"}  # where the disagreeing judge fails any answer


def _case(user: str) -> str:
    return "c{:03d}".format(int(re.search(r"<input>\nquery (\d+)\n", user).group(1)))


def replies(request):
    """judge-a: right when the answer is the reference. judge-b (agreeing): the same. judge-c
    (disagreeing): right everywhere but the picky cases. Pairwise: judge-p prefers the right answer,
    judge-q always slot 1."""
    model, user = request.body["model"], request.messages[-1]["content"]
    system = request.messages[0]["content"]
    if "comparing two answers" in system:
        if model == "judge-q":
            return Reply.text('{"winner": "1"}')
        reference = user.split("<reference_answer>\n")[1].split("\n")[0]
        first = user.split('<response id="1">\n')[1].split("\n")[0]
        second = user.split('<response id="2">\n')[1].split("\n")[0]
        right = [f"Answer: {reference}" == x for x in (first, second)]
        winner = "tie" if right[0] == right[1] else ("1" if right[0] else "2")
        return Reply.text(json.dumps({"winner": winner}))
    reference = user.split("<reference_answer>\n")[1].split("\n")[0]
    right = f"Answer: {reference}\n" in user + "\n"
    if model == "judge-c":
        right = _case(user) not in PICKY
    return Reply.text(json.dumps({"scores": {"correctness": 5 if right else 1}}))


def _judge(server, name, model, **more):
    return {
        "type": "llm_judge", "name": name, "model": model, "base_url": server.base_url,
        "rubric": {"correctness": "Is the label right?"}, "pass_threshold": 0.5, "backoff_s": 0, **more,
    }  # fmt: skip


def _spec(store, server, secondary_model, rule="both", **more):
    dataset = store.datasets.save("twenty", make_cases(20), label_set=["fast", "slow"])
    return {
        "name": f"second-{secondary_model}-{rule}",
        "dataset": dataset.fingerprint,
        "rounds": 1,
        "arms": {
            "control": {"agent": "scripted", "wrong": []},
            "treatment": {"agent": "scripted", "wrong": WRONG},
        },
        "graders": [
            _judge(server, "judge_a", "judge-a"),
            _judge(server, "judge_b", secondary_model, advisory=True),  # the runs' verdicts are judge_a's
        ],
        "judges": {"primary": "judge_a", "secondary": "judge_b", "corroborate": rule},
        **more,
    }


def _verdicts(store, exp_id, grader):
    return {g.run_id: g.passed for g in store.grades.records(exp_id, grader=grader)}


def test_a_second_judge_that_disagrees_leaves_a_regression_not_corroborated(store):
    with ScriptedOpenAIServer(replies) as server:
        exp = create_experiment(_spec(store, server, "judge-c"), store=store)
        run_experiment(exp.id, store=store)
    c = compare_arms(exp.id, "control", "treatment", store=store)
    assert str(c.verdict.outcome) == "worse"  # the runs' verdicts (judge_a's) say so
    second = c.corroboration
    assert (second.primary_outcome, second.secondary_outcome) == ("worse", "inconclusive")
    assert second.outcome == NOT_CORROBORATED and second.corroborated is False
    assert (
        second.regressed == tuple(WRONG) and second.regressed_corroborated == ()
    )  # it fails c005, c010 in both arms
    assert "worse: not corroborated (judge_a says worse, judge_b says inconclusive; rule both)" in second.text
    assert any(n.startswith("second judge: worse: not corroborated") for n in c.notes)

    # kappa between the two judges on the 40 runs both judged, as scikit-learn and statsmodels have it
    a, b = _verdicts(store, exp.id, "judge_a"), _verdicts(store, exp.id, "judge_b")
    runs = sorted(a)
    x, y = [a[r] for r in runs], [b[r] for r in runs]
    assert second.n == 40 and second.agreement == pytest.approx(np.mean(np.equal(x, y)))
    assert second.kappa.kappa == pytest.approx(cohen_kappa_score(x, y))
    table = np.array(
        [
            [sum(1 for p, q in zip(x, y, strict=True) if (p, q) == (i, j)) for j in (False, True)]
            for i in (False, True)
        ]
    )
    sm = cohens_kappa(table)
    assert second.kappa.kappa == pytest.approx(sm.kappa)
    assert second.kappa.se == pytest.approx(sm.std_kappa)
    assert second.kappa.interval.low == pytest.approx(max(-1, sm.kappa - 1.959963984540054 * sm.std_kappa))

    # the gate does not block on a regression the second judge does not find: it is unsettled
    gate = evaluate_gate(exp.id, arms=("control", "treatment"), store=store)
    assert str(gate.outcome) != "block"
    capability = gate.decision.capability
    assert str(capability.conclusion) == "inconclusive" and "not corroborated" in capability.summary
    assert capability.evidence["corroboration"] == NOT_CORROBORATED
    assert c.as_dict()["corroboration"]["outcome"] == NOT_CORROBORATED
    # as a server sends it and the client reads it back
    assert Comparison.from_dict(json.loads(json.dumps(c.as_dict()))).corroboration == second


def test_a_second_judge_that_agrees_corroborates_and_the_gate_blocks(store):
    with ScriptedOpenAIServer(replies) as server:
        exp = create_experiment(_spec(store, server, "judge-b"), store=store)
        run_experiment(exp.id, store=store)
    c = compare_arms(exp.id, "control", "treatment", store=store)
    assert c.corroboration.outcome == "worse" and c.corroboration.corroborated is True
    assert c.corroboration.regressed_corroborated == tuple(WRONG)
    assert c.corroboration.agreement == 1.0 and c.corroboration.kappa.kappa == pytest.approx(1.0)
    gate = evaluate_gate(exp.id, arms=("control", "treatment"), store=store)
    assert str(gate.outcome) == "block"


def test_advisory_reports_the_second_judge_and_lets_the_primary_decide(store):
    with ScriptedOpenAIServer(replies) as server:
        exp = create_experiment(_spec(store, server, "judge-c", rule="advisory"), store=store)
        run_experiment(exp.id, store=store)
    c = compare_arms(exp.id, "control", "treatment", store=store)
    assert c.corroboration.outcome == "worse" and c.corroboration.corroborated is False
    assert str(evaluate_gate(exp.id, arms=("control", "treatment"), store=store).outcome) == "block"


def test_two_pairwise_judges_agreement_on_their_verdicts(store):
    with ScriptedOpenAIServer(replies) as server:
        spec = _spec(store, server, "x")
        pair = {"type": "pairwise_judge", "base_url": server.base_url, "backoff_s": 0}
        spec["graders"] = [
            "label_match",
            {**pair, "name": "judge_p", "model": "judge-p"},
            {**pair, "name": "judge_q", "model": "judge-q"},
        ]
        spec["judges"] = ["judge_p", "judge_q"]
        exp = create_experiment(spec, store=store)
        run_experiment(exp.id, store=store)
    c = compare_arms(exp.id, "control", "treatment", store=store)
    second = c.corroboration
    assert second.kind == "pairwise" and second.primary_outcome == "worse" and second.n == 20
    assert second.secondary_outcome == "inconclusive" and second.outcome == NOT_CORROBORATED
    p = {(g.run_id, g.other_run_id): g.verdict for g in store.grades.records(exp.id, grader="judge_p")}
    q = {(g.run_id, g.other_run_id): g.verdict for g in store.grades.records(exp.id, grader="judge_q")}
    keys = sorted(p)
    x, y = [p[k] for k in keys], [q[k] for k in keys]
    assert second.kappa.kappa == pytest.approx(cohen_kappa_score(x, y))
    assert second.agreement == pytest.approx(np.mean([i == j for i, j in zip(x, y, strict=True)]))


@pytest.mark.parametrize(
    ("rule", "primary", "secondary", "outcome", "corroborated"),
    [
        ("both", "worse", "worse", "worse", True),
        ("both", "worse", "inconclusive", NOT_CORROBORATED, False),
        ("both", "better", "not worse", NOT_CORROBORATED, False),
        ("both", "inconclusive", "worse", "inconclusive", None),
        ("either", "inconclusive", "worse", "worse", True),
        ("either", "better", "worse", NOT_CORROBORATED, False),
        ("either", "not worse", "inconclusive", "not worse", None),
        ("advisory", "worse", "inconclusive", "worse", False),
        ("advisory", "not worse", "worse", "not worse", None),
    ],
)
def test_the_rules(rule, primary, secondary, outcome, corroborated):
    assert apply_rule(rule, primary, secondary) == (outcome, corroborated)


def test_judges_must_name_two_judges_of_the_experiment(store):
    with ScriptedOpenAIServer(replies) as server:
        spec = _spec(store, server, "judge-b")
        with pytest.raises(ExperimentError, match=r"judges\.secondary: no grader 'nope'"):
            create_experiment({**spec, "judges": ["judge_a", "nope"]}, store=store)
        with pytest.raises(ExperimentError, match="both the primary and the secondary"):
            create_experiment({**spec, "judges": ["judge_a", "judge_a"]}, store=store)
        with pytest.raises(ExperimentError, match="two judges of one kind"):
            create_experiment(
                {**spec, "graders": [*spec["graders"], "label_match"], "judges": ["judge_a", "label_match"]},
                store=store,
            )

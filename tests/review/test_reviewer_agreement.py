"""People against people, then the judge against people: a second reviewer reviews blind, inter-reviewer
agreement (Cohen's and Fleiss' kappa, checked against scikit-learn and statsmodels) and the judge's
agreement with the reviewers' shared verdicts. The judge answers from a scripted server on 127.0.0.1."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, fleiss_kappa

from abbench.errors import NotFoundError, UsageError
from abbench.review import (
    add_review,
    assign_review,
    review_assignments,
    reviewer_agreement,
    visible_reviews,
)
from abbench.runner import create_experiment, run_experiment
from abbench.stats import fleiss_kappa as our_fleiss
from abbench.testing import Reply, ScriptedOpenAIServer
from abbench.types import REVIEW_VERDICTS, Case

M, G, A, U = "model_correct", "gold_correct", "ambiguous_standard", "unsure"
ALICE = [M, M, G, G, M, A, M, G, M, M, G, U, M, M, G, M]  # c000..c015; alice also reviews c016..c019
BOB = [M, G, G, G, M, A, M, M, M, M, G, A, M, G, G, M]


def judge(request):
    """Pass every answer but those to cases whose number is divisible by 4."""
    number = int(re.search(r"<input>\nquery (\d+)\n", request.messages[-1]["content"]).group(1))
    return Reply.text(json.dumps({"scores": {"correctness": 1 if number % 4 == 0 else 5}}))


@pytest.fixture
def judged(store):
    cases = [Case(f"c{i:03d}", f"query {i}", "fast" if i % 3 else "slow") for i in range(20)]
    dataset = store.datasets.save("twenty", cases, label_set=["fast", "slow"])
    with ScriptedOpenAIServer(judge) as server:
        exp = create_experiment(
            {
                "name": "reviewed",
                "dataset": dataset.fingerprint,
                "arms": {"only": {"agent": "builtin"}},
                "graders": [
                    {
                        "type": "llm_judge",
                        "model": "judge-m",
                        "base_url": server.base_url,
                        "rubric": {"correctness": "Is it right?"},
                        "pass_threshold": 0.5,
                    }
                ],
            },
            store=store,
        )
        run_experiment(exp.id, store=store)
        assert len(server.chat_requests) == 20
    return exp


def _review_all(store, exp):
    for i, verdict in enumerate(ALICE):
        add_review(exp.id, f"c{i:03d}", verdict, arm="only", reviewer="alice", store=store)
        assign_review(exp.id, f"c{i:03d}", "bob", arm="only", store=store)
    for i in range(16, 20):
        add_review(exp.id, f"c{i:03d}", M, arm="only", reviewer="alice", store=store)
    for i, verdict in enumerate(BOB):
        add_review(exp.id, f"c{i:03d}", verdict, arm="only", reviewer="bob", store=store)


def test_inter_reviewer_agreement_then_the_judge_against_it(store, judged, cli):
    _review_all(store, judged)
    result = reviewer_agreement(judged.id, store=store)
    assert result.items == 16 and result.reviewers == ("alice", "bob")
    assert result.agreement == pytest.approx(np.mean(np.equal(ALICE, BOB)))
    assert result.cohen.kappa == pytest.approx(cohen_kappa_score(ALICE, BOB))
    index = {v: i for i, v in enumerate(REVIEW_VERDICTS)}
    table = np.zeros((5, 5))
    for x, y in zip(ALICE, BOB, strict=True):
        table[index[x], index[y]] += 1
    sm = cohens_kappa(table)
    assert result.cohen.kappa == pytest.approx(sm.kappa) and result.cohen.se == pytest.approx(sm.std_kappa)
    counts, _ = aggregate_raters(np.array([[index[x], index[y]] for x, y in zip(ALICE, BOB, strict=True)]))
    assert result.fleiss == pytest.approx(fleiss_kappa(counts))

    # right or wrong only: the cases where both said who is right
    said = [(x, y) for x, y in zip(ALICE, BOB, strict=True) if {x, y} <= {M, G}]
    assert result.right_wrong_items == len(said)
    assert result.right_wrong.kappa == pytest.approx(cohen_kappa_score(*zip(*said, strict=True)))

    # the judge against the reviewers, where they agree on who is right
    agreed = [i for i, (x, y) in enumerate(zip(ALICE, BOB, strict=True)) if x == y and x in (M, G)]
    people = [ALICE[i] == M for i in agreed]
    judge_says = [i % 4 != 0 for i in agreed]
    assert result.judge_items == len(agreed)
    assert result.judge.kappa == pytest.approx(cohen_kappa_score(judge_says, people))
    assert result.judge_agreement == pytest.approx(np.mean(np.equal(judge_says, people)))
    assert result.excluded == {"the two reviewers disagree on who is right": 3}
    assert "two reviewers agree on 75% of 16 cases, kappa" in result.text
    assert result.as_dict()["cohen"]["kappa"] == pytest.approx(result.cohen.kappa)

    # the CLI: assign a case for a second review, and the agreement beside the reviews
    out = cli("review", "reviewed", "c016", "--arm", "only", "--assign", "carol", store=store.path)
    assert out.exit_code == 0 and "assigned to carol for a blind second review" in out.output
    listed = cli("reviews", "reviewed", store=store.path).output
    assert "people vs people: two reviewers agree on 75% of 16 cases" in listed


def test_the_second_reviewer_sees_only_their_own_verdict(store, judged):
    add_review(judged.id, "c001", M, arm="only", reviewer="alice", note="fine", store=store)
    add_review(judged.id, "c002", G, arm="only", reviewer="alice", store=store)
    made = assign_review(judged.id, "c001", "bob", arm="only", store=store)
    assert assign_review(judged.id, "c001", "bob", arm="only", store=store) == made  # once
    assert [a.case_id for a in review_assignments(judged.id, reviewer="bob", store=store)] == ["c001"]
    assert visible_reviews(judged.id, "c001", "bob", store=store) == []  # blind
    assert [r.reviewer for r in visible_reviews(judged.id, "c002", "bob", store=store)] == ["alice"]
    assert [r.reviewer for r in visible_reviews(judged.id, "c001", "alice", store=store)] == ["alice"]
    add_review(judged.id, "c001", G, arm="only", reviewer="bob", store=store)
    assert [(r.reviewer, r.verdict) for r in visible_reviews(judged.id, "c001", "bob", store=store)] == [
        ("bob", G)
    ]
    with pytest.raises(NotFoundError):
        assign_review(judged.id, "nope", "bob", store=store)
    with pytest.raises(UsageError, match="name the reviewer"):
        assign_review(judged.id, "c001", " ", store=store)


def test_nothing_doubly_reviewed_yet(store, judged):
    add_review(judged.id, "c001", M, arm="only", reviewer="alice", store=store)
    result = reviewer_agreement(judged.id, store=store)
    assert result.items == 0 and result.cohen is None and "no case is reviewed by two people" in result.text


@pytest.mark.parametrize(
    "ratings",
    [
        [["a", "a", "b"], ["a", "b", "b"], ["c", "c", "c"], ["a", "c", "b"]],
        [[1, 1], [2, 2], [1, 2], [3, 3], [1, 1]],
        [["快", "慢"], ["快", "快"], ["慢", "慢"]],
    ],
)
def test_fleiss_kappa_equals_statsmodels(ratings):
    codes = {v: i for i, v in enumerate(dict.fromkeys(v for r in ratings for v in r))}
    counts, _ = aggregate_raters(np.array([[codes[v] for v in r] for r in ratings]))
    assert our_fleiss(ratings) == pytest.approx(fleiss_kappa(counts))

"""Judges inside experiments, end to end against a scripted OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from abbench.metrics import judge_report, position_bias
from abbench.runner import create_experiment, grade_experiment, regrade_experiment, retry_runs, run_experiment
from abbench.testing import Reply, ScriptedOpenAIServer

PRICES = {"input": 1.0, "output": 2.0}


def judge_replies(request):
    """Pointwise: correctness 5 when the answer equals the reference, else 1. Pairwise: always slot 1."""
    system, user = request.messages[0]["content"], request.messages[-1]["content"]
    if "comparing two answers" in system:
        return Reply.text('{"winner": "1", "comment": "the first is better"}', usage=(300, 20))
    reference = user.split("<reference_answer>\n")[1].split("\n")[0]
    right = f"Answer: {reference}\n" in user + "\n"
    return Reply.text(
        json.dumps({"scores": {"correctness": 5 if right else 1}, "comment": "checked"}), usage=(200, 10)
    )


def judged(definition, server, tag, *, both_orders, rounds=2, extra=()):
    return definition(
        rounds=rounds,
        arms={
            "control": {"agent": "scripted", "wrong": ["c001", "c002"], "tag": tag},
            "treatment": {
                "agent": "scripted",
                "skill": definition()["arms"]["treatment"]["skill"],
                "wrong": ["c002"],
                "tag": tag,
            },
        },
        graders=[
            *extra,
            {
                "type": "llm_judge",
                "model": "judge-m",
                "base_url": server.base_url,
                "prices": PRICES,
                "rubric": {"correctness": "Is the label right?"},
                "pass_threshold": 0.5,
                "backoff_s": 0,
            },
            {
                "type": "pairwise_judge",
                "model": "judge-m",
                "base_url": server.base_url,
                "prices": PRICES,
                "both_orders": both_orders,
                "backoff_s": 0,
            },
        ],
        seed=11,
    )


@pytest.mark.slow
def test_an_experiment_with_rules_and_judges_end_to_end(store, definition, calls):
    with ScriptedOpenAIServer(judge_replies) as server:
        spec = judged(definition, server, "e2e", both_orders=True, extra=["label_match", "cited_evidence"])
        exp = create_experiment(spec, store=store)
        summary = run_experiment(exp.id, store=store)
        assert summary.status == "finished" and summary.executed == 24 and summary.pairs_judged == 12
        # each arm's runs are judged apart; but both arms answer c000, c002-c005 alike, so a pair's
        # two orders are the same prompt there: asked once, however the two calls overlap
        twins = 5 * 2
        assert len(server.chat_requests) == 24 + (12 * 2 - twins)

        runs = store.runs.records(exp.id)
        assert {r.state for r in runs} <= {"pass", "fail"} and not any(r.grading_failed for r in runs)
        wrong = {("control", "c001"), ("control", "c002"), ("treatment", "c002")}
        for r in runs:
            latest = store.grades.latest(r.id)
            assert latest["label_match"].passed is ((r.arm, r.case_id) not in wrong)
            assert latest["llm_judge"].dimensions == {"correctness": 1 if (r.arm, r.case_id) in wrong else 5}
            assert latest["cited_evidence"].passed is (True if r.arm == "treatment" else None)
            assert r.state == ("fail" if (r.arm, r.case_id) in wrong else "pass")
        exp_now = store.experiments.get(exp.id)
        assert store.grades.batches(exp.id) == [exp_now.batch_id]

        report = judge_report(exp.id, store=store)
        costs = {c.grader: c for c in report.judge_costs}
        assert set(costs) == {"llm_judge", "pairwise_judge"}  # rule graders cost nothing
        assert costs["llm_judge"].cost == pytest.approx(24 * (200 * 1 + 10 * 2) / 1e6)
        pairwise = (300 * 1 + 20 * 2) / 1e6
        assert costs["pairwise_judge"].cost == pytest.approx((24 - twins) * pairwise)
        assert costs["pairwise_judge"].saved == pytest.approx(twins * pairwise)
        assert (costs["llm_judge"].input_tokens, costs["pairwise_judge"].output_tokens) == (
            24 * 200,
            (24 - twins) * 20,
        )
        assert report.agent_cost == pytest.approx(24 * 0.001)  # the agents' cost, untouched by judging
        assert report.agent["input_tokens"] == 24 * 10
        (bias,) = report.position_bias
        assert bias.first_win_rate == 1.0 and bias.biased and bias.first_win_interval.low > 0.8
        assert (bias.both_orders, bias.flips, bias.flip_rate) == (12, 12, 1.0)
        assert bias.verdicts == {"a": 0, "b": 0, "tie": 12} and bias.arms == ("control", "treatment")
        assert report.batches == 1

        # re-grading appends to the one batch and never runs the agents; the judges' replies come
        # from the response cache (on for judges by default): nothing is asked again or spent
        before_agent, before_requests = calls.agent_total("e2e"), len(server.chat_requests)
        again = regrade_experiment(exp.id, store=store)
        assert again.executed == 0 and again.graded == 24 and again.pairs_judged == 12
        assert calls.agent_total("e2e") == before_agent
        assert len(server.chat_requests) == before_requests
        assert store.grades.batches(exp.id) == [exp_now.batch_id]
        assert len(store.grades.records(exp.id)) == 24 * 3 + 12
        assert len(store.grades.records(exp.id, latest=False)) == 2 * (24 * 3 + 12)
        regraded = {c.grader: c for c in judge_report(exp.id, store=store).judge_costs}
        assert regraded["llm_judge"].cost == pytest.approx(costs["llm_judge"].cost)
        assert regraded["llm_judge"].saved == pytest.approx(costs["llm_judge"].cost)
        assert (regraded["llm_judge"].cached, regraded["pairwise_judge"].cached) == (24, 12)
        assert regraded["pairwise_judge"].saved == pytest.approx((twins + 24) * pairwise)
        assert store.grades.latest(runs[0].id)["llm_judge"].cached is True

        # ordinary grading has nothing new to do
        quiet = grade_experiment(exp.id, store=store)
        assert quiet.graded == 0 and quiet.pairs_judged == 0 and len(server.chat_requests) == before_requests

        # a re-run of one case: its runs and its pairs are judged again, nothing else — and as the
        # scripted agents answer as before, the judges are asked the same and answered from the cache
        retry_runs(exp.id, store=store, cases=["c000"])
        assert len(server.chat_requests) == before_requests
        assert len(store.grades.records(exp.id, latest=False)) == 2 * (24 * 3 + 12) + 4 * 3 + 2
        assert store.grades.batches(exp.id) == [exp_now.batch_id]


@pytest.mark.parametrize("both_orders", [False, True])
def test_a_judge_that_prefers_the_first_slot_is_measured_as_biased(store, definition, both_orders):
    with ScriptedOpenAIServer(judge_replies) as server:
        exp = create_experiment(
            judged(definition, server, f"bias{both_orders}", both_orders=both_orders, rounds=3), store=store
        )
        run_experiment(exp.id, store=store)
        before = {
            (g.run_id, g.other_run_id): g.details["slots"]
            for g in store.grades.records(exp.id, grader="pairwise_judge")
        }
        regrade_experiment(exp.id, store=store, graders=["pairwise_judge"])
    (bias,) = position_bias(exp.id, store=store)
    assert bias.pairs == 18 and bias.judgements == 18 * (2 if both_orders else 1)
    assert bias.first_win_rate == 1.0
    assert bias.first_win_interval.low > 0.8 and not bias.first_win_interval.contains(0.5)
    assert bias.biased is True
    pairs = [g for g in store.grades.records(exp.id) if g.kind == "pairwise"]
    if both_orders:
        assert {g.verdict for g in pairs} == {"tie"} and bias.flip_rate == 1.0
    else:
        # one order: the verdict follows the seeded slot, so both arms "win" about half the time —
        # except where both labels are right: a tie whatever the judge said (tie_when_both_correct)
        assert {g.verdict for g in pairs if "tie_rule" not in g.details} == {"a", "b"}
        assert {g.verdict for g in pairs if "tie_rule" in g.details} == {"tie"}
        assert bias.both_orders == 0 and bias.flip_rate is None
    # each pair's seed comes from the experiment's seed, case and round: the re-grade showed the same order
    assert {(g.run_id, g.other_run_id): g.details["slots"] for g in pairs} == before
    assert len(store.grades.records(exp.id, grader="pairwise_judge", latest=False)) == 36


def test_judge_failures_are_grading_failures_that_keep_the_raw_reply(store, definition):
    def replies(request):
        if "comparing two answers" in request.messages[0]["content"]:
            return "I refuse to pick."
        return Reply.error(503, "overloaded", retry_after=0)

    with ScriptedOpenAIServer(replies) as server:
        spec = judged(definition, server, "jfail", both_orders=False, rounds=1)
        spec["retries"] = 1
        spec["graders"][0]["retries"] = 0
        exp = create_experiment(spec, store=store)
        summary = run_experiment(exp.id, store=store)
        requests = len(server.chat_requests)
    runs = store.runs.records(exp.id)
    assert {r.state for r in runs} == {"fail"} and all(r.grading_failed for r in runs)
    assert all("grading failed — llm_judge: the judge call failed (server_error)" in r.error for r in runs)
    grade = store.grades.latest(runs[0].id)["llm_judge"]
    assert grade.status == "error" and grade.retryable is True
    assert summary.failed == 12 and summary.pairs_failed == 6 and summary.pairs_judged == 0
    pair = next(g for g in store.grades.records(exp.id) if g.kind == "pairwise")
    assert pair.status == "error" and pair.raw_output == "I refuse to pick." and pair.retryable is False
    assert pair.judge_cost > 0  # the unreadable reply was paid for, and the cost report says so
    # each pointwise grade: 1 request + 1 retry in place (experiment retries: 1); each pair: 1 request
    assert requests == 12 * 2 + 6

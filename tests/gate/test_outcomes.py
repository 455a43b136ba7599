"""Non-inferiority rules, inconclusive gates and their exit codes, and the vote-based decision policy."""

from __future__ import annotations

import json

import pytest

from abbench.errors import UsageError
from abbench.gate import evaluate_gate, parse_rules
from abbench.runner import load_spec
from abbench.store import open_store
from tests.conftest import run_abbench
from tests.results import cases_of, make_experiment, table_2x2, voted_experiment


def _even(store, name="even"):
    """200 cases, 3 fixed and 3 regressed: B − A = 0, Newcombe 95 % CI about −3.0 to +3.0 points."""
    a, b = table_2x2(180, 3, 3, 14)
    return make_experiment(store, name, cases_of(200), {"control": a, "treatment": b}, dataset=name)


def _worse(store, name="worse"):
    a, b = table_2x2(30, 0, 20, 10)
    return make_experiment(store, name, cases_of(60), {"control": a, "treatment": b}, dataset=name)


@pytest.mark.parametrize(
    ("margin", "outcome", "status"),
    [(0.05, "pass", "pass"), (0.02, "inconclusive", "inconclusive"), (None, "inconclusive", "inconclusive")],
)
def test_non_inferior_passes_within_the_margin_and_is_inconclusive_when_straddled(
    store, margin, outcome, status
):
    rule = {"metric": "non_inferior"} | ({"margin": margin} if margin is not None else {})
    g = evaluate_gate(_even(store), [rule], store=store)
    assert g.outcome == outcome and [r.status for r in g.rules] == [status]
    assert not g.rules[0].blocks
    if outcome == "inconclusive":
        assert not g.passed
        assert "straddles the margin of −2.0 points" in g.rules[0].message
        assert "more paired cases would likely settle it" in g.reason and g.reason.startswith("not decided")
    else:
        assert g.rules[0].message == "non_inferior (margin 0.05): true → pass"
    json.dumps(g.as_dict(), allow_nan=False)


def test_non_inferior_blocks_a_worse_candidate_and_block_wins_over_inconclusive(store):
    exp = _worse(store)
    g = evaluate_gate(exp, [{"metric": "non_inferior", "margin": 0.02}], store=store)
    assert g.outcome == "block" and g.rules[0].value is False and g.rules[0].blocks
    even = _even(store)
    g = evaluate_gate(even, [{"metric": "non_inferior"}, "n_paired >= 500"], store=store)
    assert g.outcome == "block" and [r.status for r in g.rules] == ["inconclusive", "fail"]


def test_an_inconclusive_warn_rule_only_warns(store):
    g = evaluate_gate(
        _even(store), [{"metric": "non_inferior", "severity": "warn"}, "n_paired >= 10"], store=store
    )
    assert g.outcome == "pass with warnings" and g.passed
    assert [r.rule.metric for r in g.warnings] == ["non_inferior"]


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ({"metric": "non_inferior", "margin": -0.1}, "margin: a non-inferiority margin is a number in"),
        ({"metric": "non_inferior", "margin": "two"}, "margin: a non-inferiority margin is a number in"),
        ({"metric": "diff", "op": ">=", "value": 0, "margin": 0.02}, "margin belongs to non_inferior"),
    ],
)
def test_bad_margins_are_usage_errors(rule, message):
    with pytest.raises(UsageError, match=message):
        parse_rules([rule])


def test_gate_exit_codes(tmp_path):
    # A real child process: 0 pass, 1 block, 1 inconclusive (0 with --allow-inconclusive), 2 usage error.
    store_dir = tmp_path / "store"
    store = open_store(store_dir)
    _even(store)
    _worse(store)
    store.close()
    files = {}
    for name, text in {
        "wide": "rules:\n  - {metric: non_inferior, margin: 0.05}\n",
        "tight": "rules:\n  - {metric: non_inferior, margin: 0.02}\n",
        "bad": "rules:\n  - {metric: non_inferior, margin: 2}\n",
    }.items():
        files[name] = tmp_path / f"{name}.yaml"
        files[name].write_text(text, encoding="utf-8")

    def gate(exp, rules, *extra):
        return run_abbench("--store", store_dir, "gate", exp, "--rules", files[rules], *extra)

    passed = gate("even", "wide")
    assert passed.returncode == 0, passed.stderr
    # The decision is judged on the gate's own 5-point margin: it passes beside the rule, not unsettled
    # at the default 2 points while the gate says PASS.
    assert "GATE PASS" in passed.stdout and "  capability pass " in passed.stdout
    assert "outcome: not worse: treatment is at most 5.0 points worse than control" in passed.stdout
    blocked = gate("worse", "wide")
    assert blocked.returncode == 1 and "GATE BLOCK" in blocked.stdout
    unsettled = gate("even", "tight")
    assert unsettled.returncode == 1 and "GATE INCONCLUSIVE" in unsettled.stdout
    assert "not decided by the evidence: non_inferior (margin 0.02): the 95% CI" in unsettled.stdout
    assert "? non_inferior (margin 0.02): inconclusive: (as above) → INCONCLUSIVE" in unsettled.stdout
    assert gate("even", "tight", "--fail-on-inconclusive").returncode == 1
    allowed = gate("even", "tight", "--allow-inconclusive")
    assert allowed.returncode == 0 and "inconclusive allowed (--allow-inconclusive): exit 0" in allowed.stdout
    # --allow-inconclusive never lets a block through
    assert gate("worse", "wide", "--allow-inconclusive").returncode == 1
    bad = gate("even", "bad")
    assert bad.returncode == 2 and "margin" in bad.stderr
    shown = run_abbench("--store", store_dir, "compare", "even", "--margin", "0.05")
    assert (
        shown.returncode == 0 and "outcome: not worse: treatment is at most 5.0 points worse" in shown.stdout
    )
    assert run_abbench("--store", store_dir, "compare", "even", "--margin", "-1").returncode == 2


@pytest.fixture
def votes(store):
    """14 wins, 3 losses and 83 ties for the treatment, decided by votes."""
    return voted_experiment(store, "votes", (80, 14, 3, 3), margin=0.2, min_cases=5)


def test_the_vote_policy_decides_capability(store, votes):
    g = evaluate_gate(votes, store=store)
    assert g.votes is not None and (g.votes.wins, g.votes.losses, g.votes.ties) == (14, 3, 83)
    assert g.decision.capability.conclusion == "pass" and g.passed
    assert g.decision.capability.summary.startswith("votes: 14 wins, 3 losses, 83 ties; net +11")
    assert g.decision.capability.evidence["policy"] == "votes"
    json.dumps(g.as_dict(), allow_nan=False)


def test_the_vote_policy_blocks_only_on_lost_votes_and_is_not_assessed_on_too_few(store):
    # net +20 % of decided, sign test p = 0.38: the votes do not decide — inconclusive, never a block
    exp = voted_experiment(store, "near", (80, 6, 4, 10))
    g = evaluate_gate(exp, store=store)
    assert g.decision.capability.conclusion == "inconclusive" and g.outcome == "inconclusive"
    assert "the votes do not decide" in g.decision.capability.summary
    # 2 wins, 14 losses: the one-sided sign test of more losses gives p = 0.002 and net −75 %: a block
    lost = voted_experiment(store, "lost", (80, 2, 14, 4))
    g = evaluate_gate(lost, store=store)
    assert g.decision.capability.conclusion == "block" and g.outcome == "block"
    assert "loses the votes" in g.decision.capability.summary
    few = voted_experiment(store, "few", (90, 3, 0, 7), min_cases=5)
    g = evaluate_gate(few, store=store)
    assert not g.decision.capability.assessed and "only 3 decided case(s)" in g.decision.capability.summary


def test_the_vote_policy_shows_in_compare_and_gate(cli):
    store = open_store(cli.store_dir)
    voted_experiment(store, "votes", (80, 14, 3, 3))
    store.close()
    line = "votes: 14 wins, 3 losses, 83 ties; net +11 (+65 % of decided) · sign test p = 0.006 → better"
    compared = cli("compare", "votes")
    assert compared.exit_code == 0 and line in compared.output
    data = json.loads(cli("compare", "votes", "--json").output)
    assert data["votes"]["wins"] == 14 and data["verdict"]["outcome"] == "better"
    gated = cli("gate", "votes")
    assert gated.exit_code == 0 and line in gated.output
    assert "capability pass         votes: 14 wins" in gated.output


def test_a_decision_may_name_only_its_policy():
    spec, _ = load_spec({"name": "x", "dataset": "d", "arms": {"a": {}, "b": {}},
                         "decision": {"policy": "votes", "margin": 0.25, "min_cases": 8}})  # fmt: skip
    assert spec.decision.policy == "votes" and spec.decision.baseline is None
    with pytest.raises(Exception, match="margin and min_cases belong to policy: votes"):
        load_spec({"name": "x", "dataset": "d", "arms": {"a": {}, "b": {}}, "decision": {"margin": 0.2}})
    with pytest.raises(Exception, match="names a baseline but no candidate"):
        load_spec({"name": "x", "dataset": "d", "arms": {"a": {}, "b": {}}, "decision": {"baseline": "a"}})

"""Decisions on a named pair: never a guess among three arms, coverage first, nothing unassessed passed.

Every experiment here runs the builtin agent over the demo's cases (data/demo), imported through its
mapping profile into a real store; the CLI is called in-process through the `cli` fixture.
"""

from __future__ import annotations

import html
import json

import numpy as np
import pytest

from abbench.compare import ARMS_GIVEN, WAYS_TO_NAME, compare_arms, compare_experiments
from abbench.errors import PairNotNamed
from abbench.gate import COST_WARN_SHARE, Conclusion, decision_pair, evaluate_gate
from abbench.report import decision_section
from abbench.runner import create_experiment, run_experiment
from abbench.store import open_store
from tests.conftest import DEMO
from tests.results import cases_of, make_experiment

SKILLS = DEMO / "skills"


def _arms() -> dict:
    price = {"price_in_per_mtok": 0.15, "price_out_per_mtok": 0.60}
    return {
        "no-skill": {"agent": "builtin", **price},
        "v1": {"agent": "builtin", "skill": str(SKILLS / "fast-slow-routing-v1"), **price},
        "v2": {"agent": "builtin", "skill": str(SKILLS / "fast-slow-routing-v2"), **price},
    }


@pytest.fixture(scope="module")
def demo_store(tmp_path_factory):
    """A store holding the demo's cases and two finished three-arm experiments on 60 of them: `three`
    names no pair, `named` says ``decision: {baseline: v1, candidate: v2}``."""
    folder = tmp_path_factory.mktemp("decisions")
    store = open_store(folder / "store")
    ds = store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
    base = {"dataset": ds.fingerprint, "rounds": 1, "cases": {"limit": 60}, "arms": _arms()}
    for name, extra in (("three", {}), ("named", {"decision": {"baseline": "v1", "candidate": "v2"}})):
        exp = create_experiment({"name": name, **base, **extra}, store=store)
        run_experiment(exp.id, store=store)
    yield store, folder
    store.close()


def _gate(cli, store, *args):
    return cli("gate", *args, store=store.path)


def test_three_arms_and_no_pair_named_is_refused_with_the_arms_and_the_three_ways(demo_store, cli):
    store, _ = demo_store
    result = _gate(cli, store, "three")
    assert result.exit_code == 2, result.output
    assert "has 3 arms (no-skill, v1, v2) and abbench does not guess which two" in result.output
    for way in WAYS_TO_NAME:
        assert way in result.output
    assert "PASS" not in result.output
    with pytest.raises(PairNotNamed):
        evaluate_gate("three", store=store)
    with pytest.raises(PairNotNamed):
        compare_arms("three", store=store)
    with pytest.raises(PairNotNamed, match="candidate side of a two-experiment comparison"):
        compare_experiments("named", "three", store=store)


def test_the_pair_is_named_by_the_definition_the_gate_file_or_the_command_line(demo_store, cli, tmp_path):
    store, _ = demo_store
    # The definition's decision: v2 against v1.
    result = _gate(cli, store, "named", "--json")
    assert result.exit_code in (0, 1), result.output
    data = json.loads(result.output)
    assert (data["a"]["arm"], data["b"]["arm"], data["pair"]["named_by"]) == (
        "v1",
        "v2",
        "experiment decision",
    )
    text = _gate(cli, store, "named").output
    assert text.startswith("v2 vs v1: GATE ")  # the pair in the first words
    # The gate file names another pair: it wins over the definition, and a note says so.
    gate = tmp_path / "gate.yaml"
    gate.write_text("baseline: no-skill\ncandidate: v2\nrules:\n  - diff >= -1\n", encoding="utf-8")
    by_file = evaluate_gate("named", gate, store=store)
    assert (by_file.a.arm, by_file.b.arm, by_file.pair.named_by) == ("no-skill", "v2", str(gate))
    assert any("decision: names v2 vs v1" in n for n in by_file.notes)
    # The gate really measured that pair: its diff is compare_arms' on the same two arms.
    expected = compare_arms("named", "no-skill", "v2", store=store).main.difference
    assert by_file.rules[0].value == pytest.approx(expected)
    # --arms overrides both.
    result = _gate(cli, store, "named", "--rules", gate, "--arms", "no-skill", "v1")
    assert result.output.startswith("v1 vs no-skill: GATE "), result.output
    assert "pair named by --arms" in result.output
    # The three-arm experiment decides once the gate file names the pair.
    assert decision_pair("three", gate, store=store).candidate == "v2"


def test_unknown_arms_in_a_gate_file_or_a_definition_get_did_you_mean(demo_store, cli, tmp_path):
    store, _ = demo_store
    gate = tmp_path / "gate.yaml"
    gate.write_text("baseline: v1\ncandidate: v3\nrules: [diff >= 0]\n", encoding="utf-8")
    result = _gate(cli, store, "three", "--rules", gate)
    assert result.exit_code == 2
    assert "has no arm 'v3' (did you mean 'v2'?); its arms: no-skill, v1, v2" in result.output
    half = tmp_path / "half.yaml"
    half.write_text("candidate: v2\nrules: [diff >= 0]\n", encoding="utf-8")
    result = _gate(cli, store, "three", "--rules", half)
    assert result.exit_code == 2 and "names a candidate but no baseline" in result.output
    definition = tmp_path / "exp.yaml"
    fingerprint = store.experiments.get("three").dataset
    definition.write_text(
        f"name: typo\ndataset: {fingerprint}\narms:\n  v1: {{agent: builtin}}\n  v2: {{agent: builtin}}\n"
        "decision: {baseline: v1, candidate: V2}\n",
        encoding="utf-8",
    )
    result = cli("create", definition, store=store.path)
    assert result.exit_code == 2
    assert "decision.candidate: no arm 'V2' (did you mean 'v2'?); the arms: v1, v2" in result.output


def test_two_experiment_comparisons_follow_the_same_rule(demo_store, cli):
    store, _ = demo_store
    # The baseline experiment has three arms and no decision: which of its arms is the baseline?
    result = _gate(cli, store, "named", "--vs", "three")
    assert result.exit_code == 2 and "baseline side of a two-experiment comparison" in result.output
    result = _gate(cli, store, "named", "--vs", "three", "--arms", "v2", "v2")
    assert result.output.startswith("named/v2 vs three/v2: GATE "), result.output
    # An experiment's decision: names its candidate for comparisons across experiments too.
    c = compare_experiments("named", "named", arm_a="v1", store=store)
    assert (c.a.arm, c.b.arm) == ("named/v1", "named/v2")


def test_a_misspelt_class_in_a_gate_is_a_usage_error(demo_store, cli, tmp_path):
    store, _ = demo_store
    gate = tmp_path / "gate.yaml"
    gate.write_text("rules:\n  - accuracy >= 0\n  - recall[slwo] >= 0.5\n", encoding="utf-8")
    result = _gate(cli, store, "named", "--rules", gate)
    assert result.exit_code == 2, result.output
    assert f"{gate}, rule 2 (line 3): recall[slwo]: no class 'slwo' (did you mean 'slow'?)" in result.output


def test_the_default_gate_shows_what_it_could_not_assess_and_warns_on_a_dearer_candidate(demo_store, cli):
    store, _ = demo_store
    result = _gate(cli, store, "three", "--arms", "no-skill", "v2")
    lines = result.output.splitlines()
    g = evaluate_gate("three", store=store, arms=("no-skill", "v2"))
    # One round: stability is not assessed, shown as such, and neither passes nor blocks.
    assert g.decision.stability.conclusion == "not assessed"
    assert any(line.startswith("  stability  not assessed ") for line in lines), result.output
    assert g.decision.conclusion == "pass"  # on capability and cost; the heading says what is missing
    assert g.decision.headline == "pass on what was assessed — not assessed: stability"
    assert any(line.startswith("  · stability: stability_pass == true: no value") for line in lines)
    # The skill's injected text makes every call dearer: the default rules warn above the stated share.
    change = next(r for r in g.rules if r.rule.metric == "cost_change_ci_low")
    c = compare_arms("three", "no-skill", "v2", store=store)
    low = c.usage_metric("cost").relative_interval.low
    assert change.value == pytest.approx(low) and change.value > COST_WARN_SHARE
    assert g.outcome == "pass with warnings" and result.exit_code == 0
    assert lines[0] == "v2 vs no-skill: GATE PASS WITH WARNINGS — decided on 60 of 60 runs per arm"
    assert f"cost up at most {COST_WARN_SHARE:.0%}" in result.output


def test_latency_and_cost_differences_carry_their_medians(store, cli):
    # Three runs of twenty take a minute: the mean moves, the median does not.
    slow = {3, 9, 14}
    control = [[{"passed": True, "latency_ms": 1.0, "cost": 0.001}] for _ in range(20)]
    treatment = [
        [
            {
                "passed": True,
                "latency_ms": 60_000.0 if i in slow else 1.0,
                "cost": 0.003 if i in slow else 0.001,
            }
        ]
        for i in range(20)
    ]
    make_experiment(store, "slow", cases_of(20), {"control": control, "treatment": treatment})
    c = compare_arms("slow", store=store)
    lat = np.array([60_000.0 if i in slow else 1.0 for i in range(20)])
    u = c.usage_metric("latency_ms")
    assert u.value_b == pytest.approx(lat.mean()) and u.median_b == pytest.approx(np.median(lat))
    assert u.median_a == u.median_b == 1.0 and u.median_difference == 0.0 and u.median_relative == 0.0
    out = cli("compare", "slow").output
    latency = next(line for line in out.splitlines() if line.startswith("latency "))
    assert "mean 1.0 ms → 9.0 s" in latency and "median 1.0 ms → 1.0 ms (+0.0%)" in latency, latency
    g = evaluate_gate("slow", store=store)
    cost = g.decision.cost
    assert "median per case $0.0010 → $0.0010 (+0%)" in cost.summary and "(+30%)" in cost.summary
    assert cost.evidence["median_relative"] == 0.0


def _banner(gate) -> str:
    """The report's decision banner as text (the part above the dimension cards)."""
    page = html.unescape("".join(str(p) for p in decision_section(gate)))
    return page.split('<div class="abb-cards">')[0]


def test_the_pair_given_is_said_in_the_words_of_the_view_that_gave_it(demo_store, cli):
    store, _ = demo_store
    g = evaluate_gate("three", store=store, arms=("no-skill", "v2"))  # as a widget's choice calls it
    assert g.pair.named_by == ARMS_GIVEN
    assert g.pair.named_in("python") == "arms=('no-skill', 'v2')"
    assert g.pair.named_in("cli") == "--arms no-skill v2"
    assert g.as_dict("http")["pair"]["named_by"] == "the request's arms ['no-skill', 'v2']"
    banner = _banner(g)
    assert "(pair named by the analyst's choice: baseline no-skill, candidate v2)" in banner
    assert "--arms" not in banner and "arms=(" not in banner
    out = _gate(cli, store, "three", "--arms", "no-skill", "v2").output
    assert "pair named by --arms no-skill v2;" in out
    # Two experiments: the arms given are each experiment's arm, not the pair's display names.
    vs = evaluate_gate("named", store=store, vs="three", arms=("no-skill", "v2"))
    assert vs.pair.named_in("cli") == "--arms no-skill v2" and vs.pair.baseline == "three/no-skill"


def test_a_gate_without_a_cost_rule_warns_on_a_fourteen_fold_cost_and_the_card_says_warn(
    demo_store, cli, tmp_path
):
    store, _ = demo_store
    gate = tmp_path / "capability-only.yaml"
    gate.write_text(
        "rules:\n  - diff_ci_low >= -1\n  - {metric: regressed, op: '<=', value: 0, severity: warn}\n",
        encoding="utf-8",
    )
    exp = store.experiments.get("three")
    t = store.runs.table(exp.id)
    names = list(t.arms)
    cost = {}
    for arm in ("no-skill", "v2"):
        mask = (t.arm_index == names.index(arm)) & ~np.isnan(t.cost)
        cost[arm] = float(t.cost[mask].mean())  # one round: each case's cost is its run's
    rise = cost["v2"] / cost["no-skill"] - 1
    assert rise > 10  # the skill's text makes every call over ten times dearer

    g = evaluate_gate("three", gate, store=store, arms=("no-skill", "v2"))
    u = g.comparison.usage_metric("cost")
    assert u.relative == pytest.approx(rise)
    assert u.relative_interval.low > COST_WARN_SHARE and g.comparison.verdict.code == "b_better"
    # Paid for by a significant gain: not a block, but never a plain pass.
    assert g.decision.cost.conclusion == Conclusion.WARN and g.decision.conclusion == "pass"
    assert f"({rise:+,.0%})" in g.decision.cost.summary and "," in f"{rise:+,.0%}"  # +1,3xx%, grouped
    added = g.rules[-1]
    assert (
        added.rule.name
        == f"cost up at most {COST_WARN_SHARE:.0%} (added: no rule of the gate speaks of cost)"
    )
    assert added.status == "fail" and added.value == pytest.approx(u.relative_interval.low)
    assert g.outcome == "pass with warnings" and "cost up at most" in g.reason
    page = html.unescape("".join(str(p) for p in decision_section(g)))
    card = page.split('<div class="abb-card warn"><h4>cost · warn</h4>')
    assert len(card) == 2, page
    out = _gate(cli, store, "three", "--rules", gate, "--arms", "no-skill", "v2").output
    assert any(line.startswith("  cost       warn ") for line in out.splitlines()), out
    assert "GATE PASS WITH WARNINGS" in out.splitlines()[0]
    # The sentences name each metric by its label, never its id; the rules table keeps the rule as written.
    banner = _banner(g)
    assert "lower bound of the relative cost change: +" in banner and "cost_change_ci_low" not in banner
    assert f"Cases right in A and wrong in B: {g.comparison.count('regressed'):,} on v2 vs no-skill" in banner
    assert "regressed ≤ 0" in page.split("Gate rules")[1]
    # A gate that speaks of cost decides on cost itself: nothing is added.
    priced = tmp_path / "priced.yaml"
    priced.write_text("rules:\n  - diff_ci_low >= -1\n  - cost_change <= 20\n", encoding="utf-8")
    mine = evaluate_gate("three", priced, store=store, arms=("no-skill", "v2"))
    assert len(mine.rules) == 2 and mine.outcome == "pass"

"""Activation from a real store: a skill-creator trigger set run by the builtin agent with offered arms,
read through `abbench metrics --json`, `abbench compare --json` and the gate, and checked against the
runs' own records (statsmodels for the intervals)."""

from __future__ import annotations

import json

import pytest
from statsmodels.stats.proportion import proportion_confint

from abbench.gate import GateOutcome, evaluate_gate
from abbench.runner import create_experiment, run_experiment
from tests.conftest import run_abbench

SKILLS = ("internal-comms", "brand-guidelines", "theme-factory")


def _definition(realdata, name, dataset):
    skills = [str(realdata / "skills" / n) for n in SKILLS]
    return {
        "name": name,
        "dataset": dataset,
        "graders": ["label_match"],
        "arms": {
            "none": {"agent": "builtin"},
            "alone": {"agent": "builtin", "skill": skills[0], "skill_mode": "offered"},
            "plugin": {"agent": "builtin", "skills": skills, "skill_mode": "offered"},
        },
    }


@pytest.fixture
def activation(store, realdata):
    trigger_set = realdata / "skill_triggers" / "internal-comms.trigger_eval.json"
    dataset = {
        "file": str(trigger_set),
        "mapping": {"recipe": "skill-creator-triggers", "defaults": {"expected_skill": "internal-comms"}},
    }
    exp = create_experiment(_definition(realdata, "activation", dataset), store=store)
    run_experiment(exp.id, store=store)
    return exp


def _by_hand(store, exp, arm):
    """Recall, precision and false activation counted straight from the stored runs and cases."""
    expected = [c.expected_skill for c in store.datasets.load_cases(exp.dataset_id)]
    runs = [r for r in store.runs.records(exp.id) if r.arm == arm and not r.execution_failed]
    should = [r for r in runs if expected[r.case_idx] not in (None, "none")]
    must_not = [r for r in runs if expected[r.case_idx] == "none"]
    loading = [r for r in runs if r.skills_loaded and expected[r.case_idx] is not None]
    return {
        "activation": (sum(bool(r.skills_loaded) for r in runs), len(runs)),
        "recall": (sum(expected[r.case_idx] in r.skills_loaded for r in should), len(should)),
        "precision": (sum(expected[r.case_idx] in r.skills_loaded for r in loading), len(loading)),
        "false_activation": (sum(bool(r.skills_loaded) for r in must_not), len(must_not)),
    }


def metrics_selection(store, exp):
    from abbench.metrics import experiment_activation

    return experiment_activation(exp, store=store).arm("plugin").selection.value


def test_metrics_json_matches_the_stored_runs(store, activation):
    proc = run_abbench("--store", store.path, "metrics", "activation", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)["activation"]
    arms = {a["arm"]: a for a in report["arms"]}
    assert arms["none"]["mode"] == "none" and arms["none"]["recall"]["value"] is None
    for name in ("alone", "plugin"):
        a = arms[name]
        assert a["mode"] == "offered" and a["execution_failed"] == 0
        for figure, (k, n) in _by_hand(store, activation, name).items():
            got = a[figure]
            assert (got["value"], got["n_cases"]) == (pytest.approx(k / n), n), (name, figure)
            low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
            assert (got["interval"]["low"], got["interval"]["high"]) == pytest.approx((low, high))
    assert arms["plugin"]["skills_offered"] == list(SKILLS)
    assert arms["plugin"]["wrong_skill"]["value"] is not None  # three skills offered: assessed
    assert arms["alone"]["wrong_skill"]["value"] is None
    assert [(c["a"], c["b"], c["what"]) for c in report["comparisons"]] == [
        ("alone", "plugin", "loaded"),
        ("alone", "plugin", "correct"),
    ]  # the skill alone has no sibling: its selection is not compared
    # skill selection accuracy: of the should-trigger runs that loaded a skill, the first was the expected one
    expected = [c.expected_skill for c in store.datasets.load_cases(activation.dataset_id)]
    picked = [
        r for r in store.runs.records(activation.id)
        if r.arm == "plugin" and not r.execution_failed and r.skills_loaded
        and expected[r.case_idx] not in (None, "none")
    ]  # fmt: skip
    k, n = sum(r.skills_loaded[0] == expected[r.case_idx] for r in picked), len(picked)
    got = arms["plugin"]["selection"]
    assert (got["value"], got["n_cases"]) == (pytest.approx(k / n), n)
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    assert (got["interval"]["low"], got["interval"]["high"]) == pytest.approx((low, high))
    assert arms["alone"]["selection"]["value"] is None
    human = run_abbench("--store", store.path, "metrics", "activation")
    assert "skill activation" in human.stdout and "alone vs plugin (correct)" in human.stdout
    assert "skill selection accuracy" in human.stdout


def test_compare_json_splits_the_effect_and_the_parts_sum(store, activation):
    proc = run_abbench("--store", store.path, "compare", "activation", "--arms", "none", "plugin", "--json")
    assert proc.returncode == 0, proc.stderr
    c = json.loads(proc.stdout)
    t = c["trigger_help"]
    assert t["total"] == pytest.approx(c["value_b"]["value"] - c["value_a"]["value"], abs=1e-12)
    parts = t["loaded_more_often"] + t["helped_more_when_loaded"] + t["when_not_loaded"]
    assert parts == pytest.approx(t["total"], abs=1e-12)
    # by hand from the stored runs: p_B, h_B and m_A over the paired cases
    runs = store.runs.records(activation.id)
    base = [r for r in runs if r.arm == "none" and r.passed is not None]
    plugin = [r for r in runs if r.arm == "plugin" and r.passed is not None]
    m_a = sum(r.passed for r in base) / len(base)
    # "had the skill": loaded the skill under test (the arm's first, internal-comms), not a sibling
    loaded = [r for r in plugin if r.skills_offered[0] in (r.skills_loaded or ())]
    p_b, h_b = len(loaded) / len(plugin), sum(r.passed for r in loaded) / len(loaded)
    assert t["a"]["activation"] == 0 and t["b"]["activation"] == pytest.approx(p_b)
    assert t["help_when_loaded"] == pytest.approx(h_b - m_a)
    assert t["loaded_more_often"] == pytest.approx(p_b * (h_b - m_a))
    human = run_abbench("--store", store.path, "compare", "activation", "--arms", "none", "plugin")
    assert "trigger vs help" in human.stdout


def test_gate_reads_activation_and_calls_missing_expectations_not_assessed(store, realdata, activation):
    gate = evaluate_gate(
        activation,
        ["activation_recall >= 0", "false_activation_rate <= 1", "skill_selection_accuracy >= 0"],
        store=store,
        arms=("none", "plugin"),
    )
    assert gate.outcome == GateOutcome.PASS
    assert gate.rules[2].value == pytest.approx(metrics_selection(store, activation))
    recall = _by_hand(store, activation, "plugin")["recall"]
    assert gate.rules[0].value == pytest.approx(recall[0] / recall[1])
    # the same rows without expected_skill: activation is measured, recall and precision are not assessed
    rows = [{"id": f"q{i}", "query": q["query"], "label": str(q["should_trigger"]).lower()} for i, q in enumerate(
        json.loads((realdata / "skill_triggers" / "internal-comms.trigger_eval.json").read_text(encoding="utf-8"))
    )]  # fmt: skip
    path = store.path / "plain.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    dataset = {
        "file": str(path),
        "mapping": {
            "fields": {"case_id": "id", "input": "query", "expected": "label"},
            "label_set": ["true", "false"],
        },
    }
    exp = create_experiment(_definition(realdata, "plain", dataset), store=store)
    run_experiment(exp.id, store=store)
    result = evaluate_gate(
        exp, ["activation_rate >= 0", "activation_recall >= 0.5"], store=store, arms=("none", "plugin")
    )
    assert result.outcome == GateOutcome.BLOCK
    assert result.rules[0].status == "pass" and result.rules[1].status == "missing"
    assert "no case has an expected_skill" in result.rules[1].message


def test_results_widget_shows_activation_and_the_split(store, activation):
    from abbench.widgets import ResultsWidget

    w = ResultsWidget(store, experiment="activation", baseline="none", candidate="plugin")
    assert w.errors.message is None
    assert "internal-comms, brand-guidelines, theme-factory" in w.activation.table_html.value
    assert "skill selection accuracy" in w.activation.table_html.value
    assert "loaded the wrong sibling" in w.activation.split_html.value
    assert [bar.name for bar in w.activation.figure.data] == ["alone", "plugin"]
    t = w.activation.trigger_help
    assert t is not None and t.b.arm == "plugin" and "trigger vs help" in w.activation.split_html.value
    assert t.loaded_more_often + t.helped_more_when_loaded + t.when_not_loaded == pytest.approx(t.total)

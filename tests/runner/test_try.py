"""Trying one input at once: answered, explained, resolved to the skill, and kept as a one-case experiment."""

from __future__ import annotations

import json

import pytest

from abbench.errors import ExperimentError
from abbench.runner import try_input
from tests.conftest import DEMO, demo_source

V2 = DEMO / "skills" / "fast-slow-routing-v2"


def test_try_answers_with_resolved_evidence_and_keeps_an_experiment(store):
    result = try_input("到目的地电量够不够", skill=V2, store=store)
    assert result.state == "executed" and result.prediction in ("fast", "slow") and result.error is None
    assert result.reason and 0 <= result.confidence <= 1
    assert result.evidence and all(e["text"] for e in result.evidence)
    assert result.evidence[0]["text"].lstrip().startswith("#")  # the cited section's own text
    assert "SKILL.md" in result.files_read
    exp = store.experiments.get(result.experiment_id)
    assert exp.tags == ("try",) and [a.name for a in exp.arms] == ["try"] and exp.arms[0].snapshot
    (run,) = store.runs.records(exp.id)
    assert run.id == result.run_id and run.case_id == "try-1" and run.output.prediction == result.prediction
    again = try_input("到目的地电量够不够", skill=V2, store=store)
    assert again.experiment_id != result.experiment_id  # each try is kept
    assert again.prediction == result.prediction  # the builtin agent is deterministic


def test_try_with_a_gold_label_is_graded(store):
    result = try_input("打开空调", labels=["fast", "slow"], expected="fast", store=store)
    assert result.prediction == "fast" and result.passed is True and result.state == "pass"


def test_try_that_cannot_be_answered_says_why(cli):
    out = cli("try", "打开空调")
    assert out.exit_code == 2
    assert "without a skill chooses among labels, and none were given" in out.output
    assert "--label fast --label slow" in out.output


def test_try_cli_json(cli):
    out = cli("try", "导航去最近的充电站然后打电话给老婆", "--skill", V2, "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert data["prediction"] == "slow" and data["evidence"] and data["experiment"].startswith("try-")


def test_try_cli_lists_the_sections_read_not_only_whole_files(cli):
    out = cli("try", "导航去最近的充电站然后打电话给老婆", "--skill", V2)
    assert out.exit_code == 0, out.output
    sections = next(line for line in out.output.splitlines() if line.startswith("sections "))
    assert "SKILL.md#" in sections or "knowledge/" in sections


def test_the_labels_of_a_try_count_even_when_the_input_was_tried_before(store):
    first = try_input("my card has not arrived", labels=["exchange_rate", "card_arrival"], store=store)
    again = try_input("my card has not arrived", labels=["card_arrival", "pin_blocked"], store=store)
    assert first.prediction == "card_arrival" and again.prediction == "card_arrival"
    other = try_input("my card has not arrived", labels=["exchange_rate", "pin_blocked"], store=store)
    assert other.prediction in ("exchange_rate", "pin_blocked")  # not a label of an earlier try
    with pytest.raises(ExperimentError):
        try_input("my card has not arrived", store=store)  # no labels: refused, whatever came before


def test_try_with_a_skill_that_names_no_labels_says_so(cli, tmp_path):
    skill = tmp_path / "nolabels"
    skill.mkdir()
    (skill / "SKILL.md").write_text('# Rules\n\n## card_arrival\n- "has not arrived"\n', encoding="utf-8")
    out = cli("try", "my card has not arrived", "--skill", skill)
    assert out.exit_code == 2 and "names no labels" in out.output and "--label" in out.output
    named = cli(
        "try",
        "my card has not arrived",
        "--skill",
        skill,
        "--label",
        "card_arrival",
        "--label",
        "pin_blocked",
    )
    assert named.exit_code == 0 and named.output.startswith("prediction  card_arrival"), named.output


def _stored(store) -> dict[str, int]:
    counts = {
        t: store.query(f"SELECT COUNT(*) FROM {t}")[0][0] for t in ("datasets", "experiments", "snapshots")
    }
    folder = store.path / "snapshots"
    counts["snapshot files"] = sum(1 for p in folder.rglob("*") if p.is_file()) if folder.exists() else 0
    return counts


def test_a_refused_try_stores_nothing(store, tmp_path):
    nothing = {"datasets": 0, "experiments": 0, "snapshots": 0, "snapshot files": 0}
    with pytest.raises(ExperimentError, match="declares none"):
        try_input("打开空调", store=store)  # the builtin agent without labels: refused
    assert _stored(store) == nothing
    skill = tmp_path / "nolabels"
    skill.mkdir()
    (skill / "SKILL.md").write_text('# Rules\n\n## card_arrival\n- "has not arrived"\n', encoding="utf-8")
    # refused after the skill was snapshotted (its SKILL.md names no labels): the snapshot goes too
    with pytest.raises(ExperimentError):
        try_input("my card has not arrived", skill=skill, store=store)
    assert _stored(store) == nothing
    with pytest.raises(ExperimentError, match="unknown agent 'nope'"):
        try_input("打开空调", agent="nope", labels=["fast", "slow"], store=store)
    assert _stored(store) == nothing
    # and one that is answered stores its dataset, snapshot and experiment as before
    try_input("my card has not arrived", skill=skill, labels=["card_arrival", "pin_blocked"], store=store)
    kept = _stored(store)
    assert kept["datasets"] == kept["experiments"] == kept["snapshots"] == 1 and kept["snapshot files"] >= 1


def test_tries_stay_out_of_the_default_lists(cli, store):
    from abbench.runner import create_experiment, list_experiments
    from abbench.store import list_datasets

    real = create_experiment(
        {
            "name": "routing",
            "dataset": demo_source(),
            "cases": {"limit": 3},
            "arms": {"v2": {"agent": "builtin", "skill": str(V2)}},
        },
        store=store,
    )
    tried = try_input("打开空调", skill=V2, store=store)
    store.close()
    assert [e.name for e in list_experiments(store=store.path)] == ["routing"]
    assert [e.name for e in list_experiments(store=store.path, include_tries=True)] == [
        tried.experiment,
        "routing",
    ]
    assert [d.name for d in list_datasets(store.path)] == ["demo"]
    assert sorted(d.name for d in list_datasets(store.path, include_tries=True)) == ["demo", "try"]
    listed = cli("experiments", store=store.path).output
    assert f"#{real.id} " in listed and tried.experiment not in listed
    assert tried.experiment in cli("experiments", "--all", store=store.path).output
    data = json.loads(cli("datasets", "--json", store=store.path).output)
    assert [d["name"] for d in data] == ["demo"]
    every = json.loads(cli("datasets", "--all", "--json", store=store.path).output)
    assert sorted(d["name"] for d in every) == ["demo", "try"]
    # a try's dataset that a real experiment runs on is a real dataset: listed
    try_fp = next(d["fingerprint"] for d in every if d["name"] == "try")
    create_experiment(
        {"name": "on-a-try", "dataset": try_fp, "arms": {"v2": {"agent": "builtin", "skill": str(V2)}}},
        store=store.path,
    )
    assert sorted(d.name for d in list_datasets(store.path)) == ["demo", "try"]
    from abbench.store import open_store
    from abbench.widgets import ResultsWidget

    with open_store(store.path) as s:
        assert tried.experiment_id not in ResultsWidget(s).chooser.values  # nor in the widgets' lists
        assert real.id in ResultsWidget(s).chooser.values

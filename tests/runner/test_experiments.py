"""Creating, naming, cloning experiments and selecting their cases."""

from __future__ import annotations

import sys

import pytest

from abbench.errors import ExperimentError
from abbench.runner import clone_experiment, create_experiment, load_spec, run_experiment
from abbench.types import Case
from tests.conftest import refused_file
from tests.runner.conftest import make_cases


def test_a_run_exists_for_every_case_round_and_arm(store, definition):
    exp = create_experiment(definition(cases={"ids": ["c000", "c001"]}), store=store)
    runs = store.runs.records(exp.id)
    assert len(runs) == 8  # 2 cases × 2 rounds × 2 arms
    assert {(r.case_id, r.round, r.arm) for r in runs} == {
        (c, rnd, a) for c in ("c000", "c001") for rnd in (0, 1) for a in ("control", "treatment")
    }
    assert {r.state for r in runs} == {"pending"}


def test_experiment_records_what_it_runs(store, definition, skill_dir):
    exp = create_experiment(definition(), store=store)
    treatment = exp.arm("treatment")
    assert treatment.snapshot and exp.arm("control").snapshot is None
    assert exp.spec.arms["treatment"].snapshot == treatment.snapshot
    assert exp.spec.dataset == exp.dataset
    assert exp.skill_version == treatment.snapshot[:12]
    assert treatment.params == {"wrong": ["c002"]}


def test_taken_name_is_refused_unless_reused(store, definition):
    first = create_experiment(definition(), store=store)
    with pytest.raises(ExperimentError, match="already exists"):
        create_experiment(definition(), store=store)
    assert create_experiment(definition(), store=store, reuse=True).id == first.id
    other_owner = create_experiment(definition(owner="someone-else"), store=store)
    assert other_owner.id != first.id


def test_clone_replaces_one_arm_and_keeps_the_rest(store, definition, tmp_path):
    exp = create_experiment(definition(), store=store)
    v2 = tmp_path / "skill-v2"
    v2.mkdir()
    (v2 / "SKILL.md").write_text("# Rules\n- more fast things\n", encoding="utf-8")
    clone = clone_experiment(exp.id, name="exp-v2", arms={"treatment": {"skill": str(v2)}}, store=store)
    assert clone.parent_id == exp.id
    assert clone.arm("control").snapshot is None
    assert clone.arm("treatment").snapshot not in (None, exp.arm("treatment").snapshot)
    assert clone.arm("treatment").params == {"wrong": ["c002"]}
    assert len(store.runs.records(clone.id)) == len(store.runs.records(exp.id))


@pytest.mark.parametrize(
    ("selection", "expected"),
    [
        ({"ids": ["c003", "c001"]}, ["c001", "c003"]),
        ({"domains": ["nav"]}, ["c000", "c003"]),
        ({"tag": "smoke"}, ["c000", "c001"]),
        ({"limit": 2}, ["c000", "c001"]),
        ({"labels": ["slow"]}, ["c000", "c003"]),
        ({"expected": ["slow"], "domains": ["nav"]}, ["c000", "c003"]),
    ],
)
def test_case_subsets(store, definition, selection, expected):
    exp = create_experiment(
        definition(cases=selection, rounds=1, arms={"a": {"agent": "scripted"}}), store=store
    )
    assert [r.case_id for r in store.runs.records(exp.id)] == expected


def test_unknown_case_ids_are_refused(store, definition):
    with pytest.raises(ExperimentError, match="not in the dataset: nope"):
        create_experiment(definition(cases={"ids": ["nope"]}), store=store)


def test_definition_errors_name_their_place(tmp_path):
    bad = tmp_path / "exp.yaml"
    bad.write_text("name: x\ndataset: d\narms: {}\nrounds: 0\n", encoding="utf-8")
    with pytest.raises(ExperimentError) as err:
        load_spec(bad)
    assert "arms" in str(err.value) and "rounds" in str(err.value) and str(bad) in str(err.value)
    broken = tmp_path / "broken.yaml"
    broken.write_text("name: [unclosed\n", encoding="utf-8")
    with pytest.raises(ExperimentError, match="line 2, column 1"):
        load_spec(broken)


@pytest.mark.parametrize("source", ["", "  ", "."])
def test_a_definition_left_empty_or_naming_a_folder_is_refused_with_what_to_give(
    source, tmp_path, monkeypatch
):
    """02_run with ``definition = ""`` showed a raw IsADirectoryError: "" is the current folder to pathlib."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ExperimentError, match="YAML or JSON file"):
        load_spec(source)
    with pytest.raises(ExperimentError, match="is a folder"):
        load_spec(tmp_path)


def test_an_arm_name_yaml_reads_as_a_boolean_is_refused_with_its_line(tmp_path):
    """``yes:`` / ``no:`` are booleans to YAML 1.1: the arm would be named True, not the file's word."""
    spec = tmp_path / "exp.yaml"
    arms = "arms:\n  yes: {agent: builtin}\n  'no': {agent: builtin}\n  2: {agent: builtin}\n"
    message = refused_file(load_spec, spec, "name: x\ndataset: d\n" + arms, ExperimentError)
    assert "line 4, column 3: 'yes' is read as a boolean" in message
    assert "line 6, column 3: '2' is read as a number" in message
    assert "'no'" not in message.split("—")[1].split(";")[0]  # the quoted name is text
    spec.write_text("name: x\ndataset: d\narms:\n  'yes': {agent: builtin}\n", encoding="utf-8")
    assert list(load_spec(spec)[0].arms) == ["yes"]


def test_arm_extras_become_parameters():
    spec, _ = load_spec({"name": "x", "dataset": "d", "arms": {"a": {"agent": "builtin", "latency_ms": 20}}})
    assert spec.arms["a"].params == {"latency_ms": 20}


@pytest.mark.parametrize(
    ("selection", "message"),
    [
        (
            {"labels": ["fats"]},
            "cases.labels: 'fats' (did you mean 'fast'?) is not a gold label of the dataset; its labels: fast, slow",
        ),
        (
            {"domains": ["navi"]},
            "cases.domains: 'navi' (did you mean 'nav'?) is not a domain of the dataset; its domains: car, media, nav",
        ),
    ],
)
def test_unknown_labels_and_domains_are_refused_with_the_known_ones(store, definition, selection, message):
    with pytest.raises(ExperimentError) as err:
        create_experiment(definition(cases=selection), store=store)
    assert message in str(err.value)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"round": 2}, "(top): unknown key 'round' (did you mean 'rounds'?); valid keys: name, dataset"),
        (
            {"cases": {"limt": 2}},
            "cases: unknown key 'limt' (did you mean 'limit'?); valid keys: ids, domains",
        ),
        (
            {"dataset": {"file": "a.csv", "maping": "p"}},
            "dataset: unknown key 'maping' (did you mean 'mapping'?)",
        ),
    ],
)
def test_unknown_keys_name_the_valid_ones(definition, overrides, message):
    with pytest.raises(ExperimentError) as err:
        load_spec(definition(**overrides))
    assert message in str(err.value)
    assert "Input should be a valid string" not in str(err.value)  # the union's other branch is noise


def test_a_misspelt_arm_setting_is_refused_when_created_not_mid_run(store, definition, skill_dir):
    arms = {"a": {"agent": "builtin", "skil": str(skill_dir)}}
    with pytest.raises(ExperimentError) as err:
        create_experiment(definition(arms=arms), store=store)
    assert "arm 'a': builtin: unknown parameter(s) skil" in str(err.value)
    assert "did you mean 'skill'?" in str(err.value)
    assert store.experiments.all() == []


def test_a_builtin_arm_with_nothing_to_choose_from_is_refused_when_created(store, definition):
    unlabelled = store.datasets.save("unlabelled", make_cases(4))
    with pytest.raises(ExperimentError, match="arm 'a': the builtin agent without a skill") as err:
        create_experiment(
            definition(dataset=unlabelled.fingerprint, arms={"a": {"agent": "builtin"}}), store=store
        )
    # the gold values are offered as the labels to give, written so YAML reads them back as text
    assert "Its gold values are fast (2), slow (2): e.g. `labels: [fast, slow]`" in str(err.value)
    yes_no = store.datasets.save(
        "yes-no",
        [Case(f"q{i}", f"question {i}", expected=("True", "False", "null")[i % 3]) for i in range(6)],
    )
    with pytest.raises(ExperimentError) as err:
        create_experiment(
            definition(dataset=yes_no.fingerprint, arms={"a": {"agent": "builtin"}}), store=store
        )
    assert 'e.g. `labels: ["False", "True", "null"]`' in str(err.value)
    answers = store.datasets.save(
        "answers", [Case(f"q{i}", f"question {i}", expected=f"answer number {i}") for i in range(6)]
    )
    with pytest.raises(ExperimentError) as err:
        create_experiment(
            definition(dataset=answers.fingerprint, arms={"a": {"agent": "builtin"}}), store=store
        )
    assert "gold values" not in str(err.value)  # one case per value: answers, not labels
    exp = create_experiment(
        definition(
            dataset=unlabelled.fingerprint, arms={"a": {"agent": "builtin", "labels": ["fast", "slow"]}}
        ),
        store=store,
    )
    assert len(store.runs.records(exp.id)) == 8


def test_a_command_arms_files_are_found_beside_the_definition(store, dataset, tmp_path, monkeypatch):
    folder = tmp_path / "defs"
    folder.mkdir()
    (folder / "agent.py").write_text(
        "import json\nprint(json.dumps({'prediction': 'fast'}))\n",
        encoding="utf-8",
    )
    (folder / "exp.yaml").write_text(
        f"name: cmd\ndataset: {dataset.fingerprint}\n"
        f"arms:\n  script: {{agent: command, argv: [{sys.executable}, agent.py]}}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)  # not the definition's folder
    exp = create_experiment(folder / "exp.yaml", store=store)
    run_experiment(exp.id, store=store)
    runs = store.runs.records(exp.id)
    assert [r.failure_type for r in runs] == [None] * 6 and {r.state for r in runs} == {"pass", "fail"}


def test_a_python_arms_file_is_found_beside_the_definition(store, dataset, tmp_path, monkeypatch):
    folder = tmp_path / "defs"
    (folder / "agents").mkdir(parents=True)
    (folder / "agents" / "router.py").write_text("def route(task):\n    return 'fast'\n", encoding="utf-8")
    (folder / "exp.yaml").write_text(
        f"name: py\ndataset: {dataset.fingerprint}\narms:\n  mine: {{agent: python, function: agents/router.py:route}}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)
    exp = create_experiment(folder / "exp.yaml", store=store)
    run_experiment(exp.id, store=store)
    assert [r.output.prediction for r in store.runs.records(exp.id)] == ["fast"] * 6


@pytest.mark.parametrize(
    ("arm", "message"),
    [
        ({"agent": "buitin"}, "unknown agent 'buitin' (did you mean 'builtin'?); choose one of:"),
        ({"agent": "builtin", "tempreature": 0.3}, "unknown parameter(s) tempreature"),
        ({"agent": "openai", "model": "m", "api_key": "sk-not-stored-1234"}, "no setting 'api_key'"),
        ({"agent": "command", "argv": "echo hi"}, "must be a list"),
        ({"agent": "python", "function": "no_such_file.py:f"}, "no file"),
        ({"agent": "python"}, "needs `function:`"),
    ],
)
def test_an_arm_that_cannot_run_is_refused_when_created_and_nothing_is_stored(store, dataset, arm, message):
    spec = {"name": "bad-arm", "dataset": dataset.fingerprint, "arms": {"control": arm}}
    with pytest.raises(ExperimentError, match="arm 'control'") as err:
        create_experiment(spec, store=store)
    assert message in str(err.value)
    assert store.query_one("SELECT COUNT(*) FROM experiments")[0] == 0
    assert "sk-not-stored" not in str(store.query("SELECT * FROM experiments"))


def test_a_python_agent_file_next_to_the_definition_is_found_from_any_folder(
    store, dataset, tmp_path, monkeypatch
):
    folder = tmp_path / "defs"
    folder.mkdir()
    (folder / "route.py").write_text("def route(task):\n    return 'fast'\n", encoding="utf-8")
    (folder / "exp.yaml").write_text(
        f"name: near\ndataset: {dataset.fingerprint}\nrounds: 1\n"
        "arms:\n  a: {agent: python, function: 'route.py:route'}\n",
        encoding="utf-8",
    )
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    exp = create_experiment(folder / "exp.yaml", store=store)
    assert exp.arm("a").params["base_dir"] == str(folder.resolve())
    from abbench.runner import run_experiment

    summary = run_experiment(exp.id, store=store)
    assert (summary.executed, summary.failed) == (6, 0)
    assert {r.output.prediction for r in store.runs.records(exp.id)} == {"fast"}

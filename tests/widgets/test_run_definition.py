"""A definition loaded into the run form runs as written; what the form changed is listed before Start."""

from __future__ import annotations

import re

import pytest
import yaml

from abbench.runner import create_experiment, load_spec
from abbench.store import ArmSpec, CaseSelection, ExperimentSpec
from abbench.widgets import RunControlWidget
from tests.conftest import DEMO
from tests.skillfiles import SKILL_V1, write_files
from tests.widgets.conftest import python_arm, without_errors

FUNCTION = "tests.widgets.agents:answer"
OTHER = SKILL_V1["SKILL.md"].replace("name: fast-slow-routing", "name: other-routing")


def every_key(dataset: str, skill: str, other: str) -> dict:
    """A definition that sets every key of the schema (each away from its default)."""
    return {
        "name": "every-key",
        "dataset": dataset,
        "arms": {
            "a": {
                "agent": "python",
                "model": "m-1",
                "skill": skill,
                "skill_mode": "offered",
                "git_ref": "HEAD",
                "params": {"function": FUNCTION, "temperature": 0.2},
                "cache": "off",
                "budget": {"max_cost": 2.0},
            },
            "b": {
                "agent": "python",
                "skills": [skill, other],
                "skill_mode": "offered",
                "params": {"function": FUNCTION},
            },
        },
        "rounds": 3,
        "graders": [
            "label_match",
            {"type": "tests.widgets.agents:grade"},
            *(
                {
                    "type": "llm_judge",
                    "name": n,
                    "model": "m",
                    "base_url": "http://127.0.0.1:9/v1",
                    "advisory": True,
                }
                for n in ("judge_a", "judge_b")
            ),
        ],
        "judges": {"primary": "judge_a", "secondary": "judge_b", "corroborate": "either"},
        "concurrency": 16,
        "timeout_s": 12.5,
        "retries": 4,
        "priority": 7,
        "executor": "dask",
        "dask": {"local": 2, "connect_timeout_s": 5.0},
        "tags": ["nightly"],
        "cases": {
            "ids": ["c01", "c03", "c04"],
            "domains": ["导航"],
            "labels": ["fast"],
            "tag": "smoke",
            "limit": 5,
            "sample": 4,
            "seed": 3,
        },
        "owner": "ana",
        "description": "every key set: 车载 routing",
        "gate": [{"metric": "accuracy", "min": 0.5}],
        "decision": {"baseline": "a", "candidate": "b"},
        "seed": 11,
        "cache": "read-only",
        "budget": {"max_cost": 9.0, "max_tokens": 100_000},
        "stopping": {"alpha": 0.1, "margin": 0.05, "min_cases": 10, "check_every": 5},
    }


@pytest.fixture
def skills(tmp_path):
    return (
        str(write_files(tmp_path / "skill-one", SKILL_V1)),
        str(write_files(tmp_path / "skill-two", {**SKILL_V1, "SKILL.md": OTHER})),
    )


def test_every_key_of_the_schema_runs_as_written(store, small, skills, tmp_path):
    definition = every_key(small.fingerprint, *skills)
    # a key the schema gains must be added above, so the form is checked to carry it too
    assert set(definition) == set(ExperimentSpec.model_fields)
    assert {k for arm in definition["arms"].values() for k in arm} == set(ArmSpec.model_fields)
    assert set(definition["cases"]) == set(CaseSelection.model_fields)
    path = tmp_path / "every.yaml"
    path.write_text(yaml.safe_dump(definition, allow_unicode=True), encoding="utf-8")
    w = without_errors(RunControlWidget(store, definition=path))
    written, _ = load_spec(path)
    ran, _ = load_spec(w.spec())
    assert ran.model_dump() == written.model_dump()
    assert w.form_changes() == [] and "runs every.yaml (every-key) as written" in w.changes_html.value
    assert (w.name.value, w.rounds.value, w.concurrency.value) == ("every-key", 3, 16)


def test_what_the_form_changed_is_listed_before_start_and_the_rest_runs_as_written(store, demo):
    w = without_errors(RunControlWidget(store, definition=DEMO / "experiment.yaml", params={"latency_ms": 0}))
    assert w.dataset.value == "file:" and "cases.csv as demo" in w.dataset.widget.label
    lines = w.form_changes()
    assert lines == [f"arms.{arm}.params.latency_ms — → 0" for arm in ("no-skill", "v1", "v2")]
    w.concurrency.value = 8
    w.cases.value = 4
    w.name.value = "demo-small"
    html = w.changes_html.value
    assert "6 changes to experiment.yaml (demo-routing)" in html
    for line in ("concurrency 16 → 8", "cases.limit — → 4", "name demo-routing → demo-small"):
        assert f"<li>{line}</li>" in html, html
    w.concurrency.value = 16
    assert "concurrency" not in w.changes_html.value  # changed back: not a change any more
    w.start_button.click()
    assert w.errors.message is None
    assert w.wait(120).status == "finished"
    exp = store.experiments.get("demo-small")
    written = yaml.safe_load((DEMO / "experiment.yaml").read_text(encoding="utf-8"))
    assert exp.dataset == demo.fingerprint  # the definition's file, imported at Start: the same cases
    assert exp.spec.description == written["description"] and exp.spec.tags == ["demo"]
    assert exp.spec.decision is not None
    assert (exp.spec.decision.baseline, exp.spec.decision.candidate) == ("v1", "v2")
    assert exp.spec.concurrency == 16 and exp.rounds == 3 and exp.spec.graders == written["graders"]
    assert [a.name for a in exp.arms] == ["no-skill", "v1", "v2"] and exp.arms[1].snapshot
    assert exp.spec.arms["v2"].params["temperature"] == 0.3
    assert store.runs.counts(exp.id)["v1"]["pass"] + store.runs.counts(exp.id)["v1"]["fail"] == 12


def test_arms_removed_and_added_are_listed(store, small, skills):
    definition = {
        "name": "two",
        "dataset": small.fingerprint,
        "arms": {"a": {"agent": "builtin"}, "b": {"agent": "builtin", "skill": skills[0]}},
    }
    w = without_errors(RunControlWidget(store, definition=definition))
    w.remove_arm(w.arm_rows[0])
    w.add_arm("c")
    assert w.form_changes() == ["arm a removed", "arm c added"]
    assert "the definition (two)" in w.changes_html.value


def test_a_clone_lists_what_changed_of_its_source(store, ab):
    w = without_errors(RunControlWidget(store, experiment="ab"))
    w.clone_button.click()
    assert w.errors.message is None
    assert w.form_changes() == ["name ab → ab-2"]
    w.rounds.value = 1
    assert w.form_changes() == ["name ab → ab-2", "rounds 2 → 1"]
    assert re.search(r"2 changes to #\d+ \(ab\)", w.changes_html.value)


def test_a_form_without_a_definition_lists_no_changes(store, small):
    w = without_errors(RunControlWidget(store, dataset=small.fingerprint))
    assert w.form_changes() == [] and w.changes_html.value == ""


def test_a_name_taken_here_gets_a_free_one_listed_as_a_change(store, small):
    definition = {"name": "twice", "dataset": small.fingerprint, "arms": {"a": python_arm()}}
    create_experiment(definition, store=store)
    w = without_errors(RunControlWidget(store, definition=definition))
    assert w.name.value == "twice-2" and w.form_changes() == ["name twice → twice-2"]

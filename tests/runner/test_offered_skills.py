"""Offered skills on real data: a skill-creator trigger eval set imported with its recipe, an arm that
offers three real anthropics skills to the builtin agent, and what every run records it loaded."""

from __future__ import annotations

import json
import shutil

import pytest

from abbench.errors import ExperimentError
from abbench.runner import create_experiment, run_experiment

SKILLS = ("internal-comms", "brand-guidelines", "theme-factory")


@pytest.fixture
def trigger_set(realdata):
    return realdata / "skill_triggers" / "internal-comms.trigger_eval.json"


def _definition(realdata, trigger_set, **arms):
    skills = [str(realdata / "skills" / n) for n in SKILLS]
    return {
        "name": "activation",
        "dataset": {
            "file": str(trigger_set),
            "mapping": {"recipe": "skill-creator-triggers", "defaults": {"expected_skill": "internal-comms"}},
        },
        "arms": arms
        or {
            "none": {"agent": "builtin"},
            "alone": {"agent": "builtin", "skill": skills[0], "skill_mode": "offered"},
            "plugin": {"agent": "builtin", "skills": skills, "skill_mode": "offered"},
        },
    }


def test_the_trigger_recipe_fills_expected_skill(store, trigger_set):
    rows = json.loads(trigger_set.read_text(encoding="utf-8"))
    info = store.datasets.import_file(
        trigger_set, {"recipe": "skill-creator-triggers", "defaults": {"expected_skill": "internal-comms"}}
    )
    cases = store.datasets.load_cases(info)
    assert [c.expected_skill for c in cases] == [
        "internal-comms" if r["should_trigger"] else "none" for r in rows
    ]
    assert [c.expected for c in cases] == [str(r["should_trigger"]).lower() for r in rows]
    again = store.datasets.get_case(info, cases[0].case_id)
    assert again.expected_skill == "internal-comms"


def test_a_trigger_set_inside_a_skill_folder_names_that_skill(store, realdata, trigger_set, tmp_path):
    skill = tmp_path / "internal-comms"
    shutil.copytree(realdata / "skills" / "internal-comms", skill)
    (skill / "evals").mkdir()
    shutil.copy(trigger_set, skill / "evals" / "trigger_eval.json")
    info = store.datasets.import_file(skill / "evals" / "trigger_eval.json", recipe="skill-creator-triggers")
    assert {c.expected_skill for c in store.datasets.load_cases(info)} == {"internal-comms", "none"}


def test_should_trigger_cases_with_no_skill_named_are_warned_about(store, trigger_set):
    info = store.datasets.import_file(trigger_set, recipe="skill-creator-triggers")
    assert [c.expected_skill for c in store.datasets.load_cases(info)].count(None) == 6
    (warning,) = [p for p in info.validation.problems if p.kind == "missing_expected_skill"]
    assert "6 of 12 cases have no expected_skill" in warning.message
    assert "defaults: {expected_skill: NAME}" in warning.message


def test_expected_skill_leaves_other_fingerprints_alone(store, realdata, trigger_set):
    plain = store.datasets.import_file(trigger_set, {"recipe": "skill-creator-triggers"}, name="plain")
    with_skill = store.datasets.import_file(
        trigger_set,
        {"recipe": "skill-creator-triggers", "defaults": {"expected_skill": "internal-comms"}},
        name="plain",
    )
    # the same rows, but the should-trigger cases now say which skill: a different dataset
    assert plain.content_hash != with_skill.content_hash
    from abbench.dataset import content_hash

    cases = store.datasets.load_cases(plain)
    assert content_hash(cases) == plain.content_hash  # the Python and the import paths agree
    assert content_hash(store.datasets.load_cases(with_skill)) == with_skill.content_hash


def test_an_offered_arm_records_what_each_run_loaded(store, realdata, trigger_set):
    exp = create_experiment(_definition(realdata, trigger_set), store=store)
    run_experiment(exp.id, store=store)
    runs = {(r.arm, r.case_idx): r for r in store.runs.records(exp.id)}
    cases = store.datasets.load_cases(exp.dataset_id)
    for i in range(len(cases)):
        none, alone, plugin = (runs[(a, i)] for a in ("none", "alone", "plugin"))
        assert none.skills_offered is None and none.skills_loaded is None and none.first_load_turn is None
        assert alone.skills_offered == ("internal-comms",)
        assert plugin.skills_offered == SKILLS
        for run in (alone, plugin):
            assert not run.execution_failed
            assert set(run.skills_loaded) <= set(run.skills_offered) and len(run.skills_loaded) <= 1
            assert (run.first_load_turn == 1) == bool(run.skills_loaded)
            assert run.activated == bool(run.skills_loaded)
            loads = [e for e in _transcript(run) if e.get("name") == "load_skill"]
            assert [json.loads(e["arguments"])["name"] for e in loads] == list(run.skills_loaded)
    loaded = [runs[("plugin", i)].skills_loaded for i in range(len(cases))]
    # hand-checked: clear internal-comms requests load it, the brand and theme requests load their
    # own skill (a sibling's activation), an unrelated question loads nothing
    assert loaded[0] == ("internal-comms",)  # a 3P update
    assert loaded[6] == ("brand-guidelines",)
    assert loaded[7] == ("theme-factory",)
    assert loaded[9] == ()  # a translation of a press release
    assert loaded[2] == ()  # internal-comms and brand-guidelines cover it equally: no clear choice
    # offered alone, the skill is loaded where a sibling tied with it, and on one near-miss (a python
    # script for a sales CSV: "sales" in its description) — the sibling arm's interference, measured
    alone = [runs[("alone", i)].skills_loaded for i in range(len(cases))]
    assert alone[2] == ("internal-comms",) and alone[8] == ("internal-comms",) and alone[9] == ()
    assert sum(1 for i, c in enumerate(cases) if c.expected_skill in alone[i]) == 5
    hits = sum(1 for i, c in enumerate(cases) if c.expected_skill in loaded[i])
    assert hits == 4 and sum(1 for c in cases if c.expected_skill == "internal-comms") == 6


def _transcript(run):
    if run.transcript_path is None:
        return []
    lines = run.transcript_path.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


@pytest.mark.parametrize(
    ("arm", "message"),
    [
        ({"agent": "builtin", "skill_mode": "offered"}, "no skill to offer"),
        ({"agent": "builtin", "skills": ["a", "b"]}, "add skill_mode: offered"),
        ({"agent": "builtin", "skill": "a", "skills": ["b"]}, "not both"),
        ({"agent": "builtin", "skills": ["a", "a"], "skill_mode": "offered"}, "listed twice"),
        ({"agent": "builtin", "skill": "a", "skill_mode": "sometimes"}, "injected or offered"),
    ],
)
def test_bad_offered_arms_are_refused_clearly(store, realdata, trigger_set, arm, message):
    with pytest.raises(ExperimentError, match=message):
        create_experiment(_definition(realdata, trigger_set, x=arm), store=store)


def test_an_agent_that_cannot_offer_is_refused(store, realdata, trigger_set):
    arm = {"agent": "python", "function": "json:dumps", "skill": str(realdata / "skills" / SKILLS[0])}
    with pytest.raises(ExperimentError, match="cannot offer skills"):
        create_experiment(_definition(realdata, trigger_set, x={**arm, "skill_mode": "offered"}), store=store)


def test_two_versions_of_one_skill_are_not_offered_together(store, realdata, trigger_set, tmp_path):
    skill = realdata / "skills" / SKILLS[0]
    edited = shutil.copytree(skill, tmp_path / "edited")
    with open(edited / "SKILL.md", "a", encoding="utf-8") as out:
        out.write("\nOne more line.\n")
    arm = {"agent": "builtin", "skills": [str(skill), str(edited)], "skill_mode": "offered"}
    with pytest.raises(ExperimentError, match="the skills offered share the name 'internal-comms'"):
        create_experiment(_definition(realdata, trigger_set, x=arm), store=store)

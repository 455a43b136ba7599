"""The define form: running only some domains or gold labels, a limit or a sample; list-valued parameters."""

from __future__ import annotations

import pytest

from abbench.agents import make_agent
from abbench.widgets import RunControlWidget, parse_params
from abbench.widgets._arm_form import params_text
from tests.widgets.conftest import make_cases, python_arm


def test_domains_and_labels_are_offered_from_the_dataset_and_run_as_chosen(store, small):
    w = RunControlWidget(store, dataset=small.fingerprint, arms={"a": python_arm()}, name="some")
    form = w.case_form
    assert dict(form.domains.options) == {"媒体 (8)": "媒体", "导航 (8)": "导航", "车控 (8)": "车控"}
    assert dict(form.labels.options) == {"fast (16)": "fast", "slow (8)": "slow"}
    assert "every case — 24 of 24 cases" in form.summary.value
    form.domains.value = ("导航", "车控")
    form.labels.value = ("fast",)
    assert "domains 导航, 车控 · labels fast — 8 of 24 cases" in form.summary.value
    w.cases.value = 5
    assert w.spec()["cases"] == {"domains": ["导航", "车控"], "labels": ["fast"], "limit": 5}
    w.sample.value = True
    assert w.spec()["cases"] == {"domains": ["导航", "车控"], "labels": ["fast"], "sample": 5}
    assert "a sample of 5 (seed 0) — 5 of 24 cases" in form.summary.value
    w.start_button.click()
    assert w.errors.message is None
    w.wait(60)
    exp = store.experiments.get("some")
    runs = store.runs.records(exp.id)
    cases = {c.case_id: c for c in make_cases(24)}
    assert len(runs) == 5 and all(
        cases[r.case_id].domain in ("导航", "车控") and cases[r.case_id].expected == "fast" for r in runs
    )
    # the definition shown says which cases it runs
    assert "cases: domains 导航, 车控 · labels fast · a sample of 5 (seed 0)" in w.definition_html.value
    # and a clone starts from the same choice
    w.clone_button.click()
    assert w.case_form.selection() == {"domains": ["导航", "车控"], "labels": ["fast"], "sample": 5}


def test_a_selection_that_selects_nothing_is_said_before_start(store, small):
    w = RunControlWidget(store, dataset=small.fingerprint, arms={"a": python_arm()}, name="none")
    w.case_form.domains.value = ("导航",)  # every 导航 case is slow
    w.case_form.labels.value = ("fast",)
    assert "selects no case" in w.case_form.summary.value
    w.start_button.click()
    assert "selects no case" in w.errors.message and store.experiments.all() == []


def test_free_text_answers_are_not_offered_as_labels(store):
    from abbench.types import Case

    info = store.datasets.save(
        "qa", [Case(f"q{i}", f"question {i}", f"answer number {i}") for i in range(30)]
    )
    w = RunControlWidget(store, dataset=info.fingerprint, name="qa")
    assert w.case_form.labels.options == () and w.case_form.labels.layout.display == "none"
    assert "30 distinct gold answers (free text)" in w.case_form.labels_note.value


@pytest.mark.parametrize("agent", ["builtin", "command"])
def test_every_list_parameter_hint_is_what_its_field_and_the_box_accept(store, small, agent):
    w = RunControlWidget(store, dataset=small.fingerprint, arms={"a": {"agent": agent}}, name="x")
    row = w.arm_rows[0]
    lists = [k for k, kind in row._kinds.items() if kind == "list"]
    assert lists
    for key in lists:
        row.fields[key].value = ["one", "two, three"]
        assert parse_params(row.params.value)[key] == ["one", "two", "three"]
        # what the box shows reads back the same, and fills the field the same
        text = row.params.value
        row.params.value = ""
        row.params.value = text
        assert row.fields[key].value == ["one", "two", "three"]
    assert w.errors.message is None
    row.params.value = row.params.placeholder  # the box's own hint is accepted, in the agent's words
    hinted = parse_params(row.params.value)
    assert w.errors.message is None and set(hinted) <= set(row.fields) and set(hinted) & set(lists)
    assert all(row.fields[k].value == v for k, v in hinted.items() if k in lists)


def test_labels_from_the_form_reach_the_agent(store, small):
    w = RunControlWidget(store, dataset=small.fingerprint, arms={"a": {"agent": "builtin"}}, name="x")
    row = w.arm_rows[0]
    row.fields["labels"].value = ["快", "慢"]
    params = w.spec()["arms"]["a"]["params"]
    assert params == {"labels": ["快", "慢"]} and parse_params(params_text(params)) == params
    make_agent("builtin", **params)


def test_an_offered_arm_keeps_its_mode_and_skills_through_the_form(store, small):
    arm = {"agent": "builtin", "skill_mode": "offered", "skills": ["a-hash", "b-hash"], "labels": ["快"]}
    w = RunControlWidget(store, dataset=small.fingerprint, arms={"p": arm}, name="x")
    got = w.spec()["arms"]["p"]
    assert got["skill_mode"] == "offered" and got["skills"] == ["a-hash", "b-hash"]
    assert "skill" not in got and got["params"] == {"labels": ["快"]}

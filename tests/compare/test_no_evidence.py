"""Cases that became or stopped being "no evidence" between two arms with a skill, on banking77 runs recorded
with references that come and go (see `realdata_runs`): the comparison record, the CLI, the report's comparison
section and the JSON all give the counts an independent reading of the scripted runs gives."""

from __future__ import annotations

import html
import json

import pytest
from click.testing import CliRunner

from abbench.cli import cli
from abbench.compare import compare_arms
from abbench.report import comparison_section
from abbench.runner import create_experiment, record_runs
from abbench.store import open_store
from tests.compare import realdata_runs


@pytest.fixture(scope="module")
def skilled(realdata, tmp_path_factory):
    """Arms a and b with a skill, arm c without; outcomes scripted as in `realdata_runs`."""
    root = tmp_path_factory.mktemp("noev")
    skill = root / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("# routing\nroute\n# cards\ncards\n# limits\nlimits\n", encoding="utf-8")
    store = open_store(root / "store")
    categories = json.loads((realdata / "banking77" / "categories.json").read_text())
    profile = {"fields": {"input": "text", "expected": "category"}, "label_set": categories}
    info = store.datasets.import_file(realdata / "banking77" / "test.csv", profile, name="banking77")
    cases = [c for c in store.datasets.load_cases(info) if c.expected in realdata_runs.SUBSET]
    exp = create_experiment(
        {
            "name": "noev",
            "dataset": info.fingerprint,
            "rounds": 3,
            "cases": {"labels": realdata_runs.SUBSET},
            "arms": {
                "a": {"agent": "external", "skill": str(skill)},
                "b": {"agent": "external", "skill": str(skill)},
                "c": {"agent": "external"},
            },
            "graders": ["label_match", {"type": "recorded", "name": "ext"}],
        },
        store=store,
    )
    outcomes = [o for c in cases for a in "abc" for r in (1, 2, 3) if (o := realdata_runs.outcome(c, a, r))]
    record_runs(store, exp, outcomes)
    return store, exp, outcomes


def _no_evidence_cases(outcomes: list[dict], arm: str) -> tuple[set[str], set[str]]:
    """(cases answered by the arm, those with an answered run citing nothing), read from the scripted outcomes."""
    answered, bare = set(), set()
    for o in outcomes:
        if o["arm"] != arm or "error" in o:
            continue
        answered.add(o["case_id"])
        refs = [r for r in o.get("evidence_refs") or [] if r.strip()]
        if not refs:
            bare.add(o["case_id"])
    return answered, bare


def _page(c) -> str:
    """The report's comparison section as text (its charts left out)."""
    return html.unescape("".join(p for p in comparison_section(c) if isinstance(p, str)))


def test_cases_that_became_or_stopped_being_no_evidence_match_the_scripted_runs(skilled):
    store, exp, outcomes = skilled
    seen_a, bare_a = _no_evidence_cases(outcomes, "a")
    seen_b, bare_b = _no_evidence_cases(outcomes, "b")
    both = seen_a & seen_b
    became = sorted(both & (bare_b - bare_a))
    stopped = sorted(both & (bare_a - bare_b))
    assert len(became) > 10 and len(stopped) > 10  # the data exercise both directions (and the list is cut)

    c = compare_arms(exp.id, "a", "b", store=store, details=True)
    assert sorted(c.text.became_no_evidence) == became
    assert sorted(c.text.stopped_no_evidence) == stopped
    assert c.text.no_evidence_reason is None
    exported = json.loads(json.dumps(c.as_dict()))["text"]  # what the server answers (`answer`)
    assert sorted(exported["became_no_evidence"]) == became
    assert sorted(exported["stopped_no_evidence"]) == stopped

    out = (
        CliRunner()
        .invoke(
            cli, ["--store", str(store.path), "compare", exp.name, "--arms", "a", "b"], catch_exceptions=False
        )
        .output
    )
    assert f"became no evidence ({len(became):,}): " in out
    assert f"stopped being no evidence ({len(stopped):,}): " in out

    page = _page(c)
    assert f"{len(became):,} cases became no evidence ({', '.join(c.text.became_no_evidence[:10])}, …" in page
    assert f"{len(stopped):,} cases stopped being no evidence" in page


def test_an_arm_without_a_skill_has_no_no_evidence_status_to_compare(skilled):
    store, exp, _ = skilled
    c = compare_arms(exp.id, "c", "a", store=store, details=True)
    assert c.text.became_no_evidence == () and c.text.stopped_no_evidence == ()
    assert c.text.no_evidence_reason == "A has no skill to cite"
    assert "not compared: A has no skill to cite" in _page(c)

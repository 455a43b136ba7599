"""A draft skill version is marked wherever a command names a version: experiments, status, compare."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from abbench.runner import create_experiment, run_experiment
from abbench.store import open_store, snapshot_skill
from tests.conftest import DEMO, run_abbench
from tests.skillfiles import SKILL_V1, GitRepo, write_files

EDITED = {"SKILL.md": SKILL_V1["SKILL.md"] + "- 打开空调：fast\n"}


@pytest.fixture(scope="module")
def drafted(tmp_path_factory):
    """``(store folder, committed, draft)``: experiment ``routing`` (6 demo cases) with arm ``control`` on a
    skill taken from a clean git commit and arm ``treatment`` on an edited copy outside git (a draft),
    and ``plain`` whose only skill is the committed one."""
    tmp = tmp_path_factory.mktemp("drafts")
    repo = GitRepo(tmp / "repo")
    repo.write({f"skill/{k}": v for k, v in SKILL_V1.items()})
    repo.commit("skill v1")
    draft = write_files(tmp / "draft", {**SKILL_V1, **EDITED})
    with open_store(tmp / "store") as store:
        store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
        for name, arms in (
            ("routing", {"control": repo.path / "skill", "treatment": draft}),
            ("plain", {"control": repo.path / "skill"}),
        ):
            exp = create_experiment(
                {
                    "name": name,
                    "dataset": "demo",
                    "cases": {"limit": 6},
                    "arms": {arm: {"agent": "builtin", "skill": str(path)} for arm, path in arms.items()},
                },
                store=store,
            )
            run_experiment(exp.id, store=store)
        routing = store.experiments.get("routing")
        committed, drafted_arm = routing.arm("control"), routing.arm("treatment")
        snaps = store.snapshots
        assert not snaps.get(committed.snapshot).draft and snaps.get(drafted_arm.snapshot).draft
        return tmp, repo, committed.snapshot[:12], drafted_arm.snapshot[:12]


def test_experiments_marks_a_draft_version(drafted):
    tmp, _, committed, draft = drafted
    out = run_abbench("--store", tmp / "store", "experiments")
    assert out.returncode == 0, out.stderr
    lines = {line.split()[1]: line for line in out.stdout.splitlines()}
    assert f"fast-slow-routing@{draft} (draft)" in lines["routing"]
    assert f"fast-slow-routing@{committed} " in lines["plain"] and "(draft)" not in lines["plain"]
    listed = {
        r["name"]: r
        for r in json.loads(run_abbench("--store", tmp / "store", "experiments", "--json").stdout)
    }
    assert listed["routing"]["draft"] is True and listed["routing"]["skill"] == f"fast-slow-routing@{draft}"
    assert listed["plain"]["draft"] is False


def test_status_names_each_arms_version_with_its_mark(drafted, cli):
    tmp, _, committed, draft = drafted
    out = cli("status", "routing", store=tmp / "store")
    assert out.exit_code == 0, out.output
    arms = {line.split()[0]: line for line in out.output.splitlines() if line.startswith("  ")}
    assert arms["treatment"].endswith(f"· fast-slow-routing@{draft} (draft)")
    assert arms["control"].endswith(f"· fast-slow-routing@{committed}")


def test_compare_names_both_sides_with_the_draft_marked(drafted, cli):
    tmp, _, committed, draft = drafted
    out = cli("compare", "routing", "--arms", "control", "treatment", store=tmp / "store")
    assert out.exit_code == 0, out.output
    sides = next(line for line in out.output.splitlines() if line.startswith("baseline "))
    assert sides == (
        f"baseline control (builtin, skill fast-slow-routing@{committed}); "
        f"candidate treatment (builtin, skill fast-slow-routing@{draft} (draft))"
    )
    data = json.loads(
        cli("compare", "routing", "--arms", "control", "treatment", "--json", store=tmp / "store").output
    )
    assert data["b"]["label"].endswith("(draft))") and "(draft)" not in data["a"]["label"]


def test_the_mark_goes_once_the_same_content_is_committed(drafted, tmp_path, cli):
    """The mark says what the store knows now: the draft's bytes taken again from a clean commit lose it."""
    tmp, repo, _, draft = drafted
    store_dir = tmp_path / "store"
    shutil.copytree(tmp / "store", store_dir)  # the module's store stays as the other tests read it
    repo.write({f"skill/{k}": v for k, v in EDITED.items()})
    repo.commit("skill v2")
    with open_store(store_dir) as store:
        snap = snapshot_skill(repo.path / "skill", store=store)
        assert snap.short == draft and not snap.draft
    out = cli("experiments", store=store_dir)
    assert f"fast-slow-routing@{draft}" in out.output and "(draft)" not in out.output
    status = cli("status", "routing", store=store_dir).output
    assert re.search(rf"^  treatment .*· fast-slow-routing@{draft}$", status, re.M), status


def test_metrics_says_once_that_an_agent_reporting_no_cost_has_none(drafted):
    """The builtin agent reports no cost at all: "cost not reported" says it; listing every attempt as
    "of unknown cost (killed or cancelled ...)" on top read as if runs had been lost."""
    tmp, *_ = drafted
    out = run_abbench("--store", tmp / "store", "metrics", "plain")
    assert out.returncode == 0, out.stderr
    spent = next(line for line in out.stdout.splitlines() if line.strip().startswith("spent"))
    assert "cost not reported over 6 attempts" in spent, spent
    assert "unknown cost" not in spent and "killed" not in spent, spent

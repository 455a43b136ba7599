"""One name, several experiments (the definition re-run after its skill changed): the latest, a note, and ways to pick."""

from __future__ import annotations

import json
import logging
import shutil

import pytest

from tests.conftest import DEMO, run_abbench


@pytest.fixture(scope="module")
def two_versions(tmp_path_factory):
    """The demo definition run twice on 6 cases, its skill (a copy) edited in between: two `routing`s."""
    tmp_path = tmp_path_factory.mktemp("same-name")  # read, never changed, by the tests below
    skill = tmp_path / "skill"
    shutil.copytree(DEMO / "skills" / "fast-slow-routing-v2", skill)
    definition = tmp_path / "exp.yaml"
    definition.write_text(
        f"""name: routing
dataset: {{file: {json.dumps(str(DEMO / "cases.csv"))}, mapping: {json.dumps(str(DEMO / "mapping-csv.yaml"))}, name: demo}}
cases: {{limit: 6}}
arms:
  control: {{agent: builtin}}
  treatment: {{agent: builtin, skill: skill}}
""",
        encoding="utf-8",
    )
    store = tmp_path / "store"
    ids = []
    for edit in (False, True):
        if edit:
            md = skill / "SKILL.md"
            md.write_text(
                md.read_text(encoding="utf-8") + "\n- \u6253\u5f00\u7a7a\u8c03 \u2192 fast\n",
                encoding="utf-8",
            )
        done = run_abbench("--store", store, "run", definition, "-q", "--json")
        assert done.returncode == 0, done.stderr
        ids.append(json.loads(done.stdout)["experiment_id"])
    assert ids[0] != ids[1]
    return store, ids


def _version(store, exp_id: int) -> str:
    listed = json.loads(run_abbench("--store", store, "experiments", "--json").stdout)
    return next(r["skill_version"] for r in listed if r["id"] == exp_id)


def test_a_bare_name_is_the_latest_with_a_note_naming_the_others(two_versions):
    store, (first, latest) = two_versions
    status = run_abbench("--store", store, "status", "routing", "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["experiment_id"] == latest
    note = status.stderr
    assert "2 experiments are named 'routing'" in note and f"using the latest, #{latest}" in note
    old = _version(store, first)
    assert f"#{first} (fast-slow-routing@{old}" in note and f"routing@{old[:8]}" in note
    assert "routing@<skill version> or #ID" in note


@pytest.mark.parametrize("how", ["version", "skill@version", "id"])
def test_name_at_version_and_hash_id_pick_one_everywhere(two_versions, how):
    store, (first, latest) = two_versions
    old = _version(store, first)
    ref = {
        "version": f"routing@{old[:8]}",
        "skill@version": f"routing@fast-slow-routing@{old}",
        "id": f"#{first}",
    }[how]
    for args in (
        ("status", ref, "--json"),
        ("metrics", ref, "--json"),
        ("export", ref, "--what", "runs", "--format", "jsonl", "--out", "-"),
    ):
        out = run_abbench("--store", store, *args)
        assert out.returncode == 0, (args, out.stderr)
        assert "experiments are named" not in out.stderr  # picked: no note
    status = json.loads(run_abbench("--store", store, "status", ref, "--json").stdout)
    assert status["experiment_id"] == first
    # two experiments of one name compared with each other, each named its own way
    compared = run_abbench(
        "--store", store, "compare", ref, f"#{latest}", "--arms", "treatment", "treatment", "--json"
    )
    assert compared.returncode == 0, compared.stderr


def test_the_python_api_resolves_the_same_way(two_versions, caplog):
    from abbench.runner import load_experiment

    store, (first, latest) = two_versions
    old = _version(store, first)
    with caplog.at_level(logging.WARNING, logger="abbench"):
        assert load_experiment("routing", store=store).id == latest
    assert any("2 experiments are named 'routing'" in r.getMessage() for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="abbench"):
        assert load_experiment(f"routing@{old[:6]}", store=store).id == first
    assert not caplog.records


def test_experiments_groups_one_name_with_its_versions_beneath(two_versions):
    store, (first, latest) = two_versions
    lines = run_abbench("--store", store, "experiments").stdout.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("routing: 2 experiments"))
    assert f"#{latest}" in lines[head] and "routing@<skill version> or #ID" in lines[head]
    beneath = lines[head + 1 : head + 3]
    assert [line.split()[0] for line in beneath] == [f"#{latest}", f"#{first}"]
    assert all(line.startswith("  ") and "fast-slow-routing@" in line for line in beneath)


def test_an_unknown_name_offers_the_closest_and_exits_2(two_versions):
    store, _ = two_versions
    for args in (("status", "routnig"), ("metrics", "routnig"), ("run", "routnig")):
        out = run_abbench("--store", store, *args)
        assert out.returncode == 2, out.stderr
        assert "no experiment named 'routnig'; did you mean 'routing'?" in out.stderr
    far = run_abbench("--store", store, "status", "zzzz")
    assert far.returncode == 2 and "did you mean" not in far.stderr and "abbench experiments" in far.stderr
    at = run_abbench("--store", store, "status", "routing@ffffffff")
    assert at.returncode == 2 and "did you mean 'routing'?" in at.stderr

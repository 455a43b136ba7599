"""The snapshot commands: snapshot, snapshots, show-ref, diff-skill — output and exit codes."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.conftest import run_abbench
from tests.skillfiles import SKILL_V1, GitRepo, write_files


@pytest.fixture
def skill(tmp_path):
    return write_files(tmp_path / "routing", SKILL_V1)


def test_snapshot_prints_name_hash_source_files_and_refs(cli, skill):
    result = cli("snapshot", skill)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("fast-slow-routing@") and lines[0].endswith("(draft)  stored (new)")
    text = result.output
    assert "source   draft: not in a git repository" in text
    assert "files    3 (" in text and "refs     8 sections" in text
    again = cli("snapshot", skill)
    assert "already stored (first taken " in again.output.splitlines()[0]


def test_snapshot_json(cli, skill):
    data = json.loads(cli("snapshot", skill, "--json").output)
    assert data["skill_name"] == "fast-slow-routing"
    assert data["draft"] is True and data["new"] is True and data["n_refs"] == 8 and data["n_files"] == 3
    assert len(data["hash"]) == 64 and data["root"].endswith(data["hash"])
    assert json.loads(cli("snapshot", skill, "--json").output)["times_taken"] == 2


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_snapshot_git_ref_and_repo(cli, tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.write({f"skills/r/{k}": v for k, v in SKILL_V1.items()})
    v1 = repo.commit("v1", tag="v1")
    repo.write({"skills/r/knowledge/new.md": "# 新知识\n"})
    v2 = repo.commit("v2")
    old = json.loads(cli("snapshot", repo.path / "skills" / "r", "--git-ref", "v1", "--json").output)
    assert (old["commit"], old["tag"], old["draft"], old["n_files"]) == (v1, "v1", False, 3)
    head = cli("snapshot", "skills/r", "--repo", repo.path)
    assert head.exit_code == 0, head.output
    assert f"source   commit {v2}" in head.output and "git ref  HEAD" in head.output
    bad = cli("snapshot", repo.path / "skills" / "r", "--git-ref", "v7")
    assert bad.exit_code == 2 and "'v7' is not a commit" in bad.output and "tags: v1" in bad.output


def test_snapshots_lists_and_filters(cli, skill, tmp_path):
    empty = cli("snapshots")
    assert empty.exit_code == 0 and "no snapshots yet" in empty.output
    cli("snapshot", skill)
    cli(
        "snapshot",
        write_files(tmp_path / "other", {"SKILL.md": "---\nname: other\ndescription: o\n---\n# O\n"}),
    )
    listing = cli("snapshots").output.splitlines()
    assert listing[0].split() == ["SKILL", "HASH", "SOURCE", "FILES", "REFS", "CREATED"]
    assert [line.split()[0] for line in listing[1:]] == ["fast-slow-routing", "other"]
    assert listing[1].split()[2:5] == ["draft", "3", "8"]
    only = json.loads(cli("snapshots", "--skill", "other", "--json").output)
    assert [s["skill_name"] for s in only] == ["other"] and only[0]["n_refs"] == 1


def test_show_ref_prints_the_section_text(cli, skill):
    snap = json.loads(cli("snapshot", skill, "--json").output)
    result = cli("show-ref", snap["hash"][:8], "knowledge/车控.md#空调-2")
    assert result.exit_code == 0
    assert result.output == "## 空调\n- 空调温度调到 22 度：fast\n"
    data = json.loads(cli("show-ref", "fast-slow-routing", "SKILL.md#规则", "--json").output)
    assert (data["heading"], data["level"], data["parents"], data["start_line"]) == (
        "规则",
        2,
        ["快慢路由"],
        9,
    )
    refs = cli("show-ref", "fast-slow-routing").output.splitlines()
    assert refs[0] == "SKILL.md#快慢路由" and "knowledge/车控.md#空调-2" in refs and len(refs) == 8


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("show-ref", "fast-slow-routing", "SKILL.md#没有"), "no section 'SKILL.md#没有'"),
        (("show-ref", "nobody", "SKILL.md#x"), "skills in the store: fast-slow-routing"),
        (("snapshot", "/no/such/folder"), "no folder at /no/such/folder"),
        (("snapshot", ".", "--max-file-size", "lots"), "'lots' is not a size"),
        (("diff-skill", "fast-slow-routing", "nobody"), "no snapshot 'nobody'"),
        (("snapshot",), "give the skill folder DIR, or --git URL"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(cli, skill, args, message):
    cli("snapshot", skill)
    result = cli(*args)
    assert result.exit_code == 2
    assert message in result.output


def test_refused_content_exits_2(cli, skill):
    os.symlink("/etc", skill / "etc")
    result = cli("snapshot", skill, "--max-file-size", "100B")
    assert result.exit_code == 2
    assert "etc: symlink to /etc leaves the skill folder" in result.output
    size = len(SKILL_V1["SKILL.md"].encode())
    assert f"SKILL.md: {size} B, over the 100 B per-file limit" in result.output


def test_diff_skill_between_stored_and_folder(cli, skill, tmp_path):
    cli("snapshot", skill)
    (skill / "knowledge" / "车控.md").write_text(
        SKILL_V1["knowledge/车控.md"].replace("打开车窗：fast", "打开车窗：slow"), encoding="utf-8"
    )
    write_files(skill, {"knowledge/天气.md": "# 天气\n"})
    result = cli("diff-skill", "fast-slow-routing", skill)
    assert result.exit_code == 0
    out = result.output
    assert "files: 1 added, 0 removed, 1 changed, 0 renamed, 2 unchanged" in out
    assert "  ~ knowledge/车控.md#车窗 (+1 -1 lines)" in out
    assert "-- 打开车窗：fast\n+- 打开车窗：slow" in out
    stat = cli("diff-skill", "fast-slow-routing", skill, "--stat").output
    assert "  + knowledge/天气.md#天气" in stat and "@@" not in stat
    data = json.loads(cli("diff-skill", "fast-slow-routing", skill, "--json").output)
    assert data["sections"]["changed"][0]["ref"] == "knowledge/车控.md#车窗"


def test_diff_skill_of_two_folders_needs_no_store(cli, skill, tmp_path):
    other = write_files(
        tmp_path / "v2", {**SKILL_V1, "knowledge/media.md": "# Media\n\n## Play\n- play: slow\n"}
    )
    result = cli("diff-skill", skill, other, "-U", "0")
    assert result.exit_code == 0
    assert "+- play: slow" in result.output
    assert not cli.store_dir.exists()


def test_real_process_with_chinese_output(tmp_path, skill):
    store = tmp_path / "store"
    taken = run_abbench("--store", store, "snapshot", skill, "--json")
    assert taken.returncode == 0, taken.stderr
    short = json.loads(taken.stdout)["hash"][:10]
    shown = run_abbench("--store", store, "show-ref", f"fast-slow-routing@{short}", "knowledge/车控.md#车窗")
    assert shown.returncode == 0 and shown.stdout == "## 车窗\n- 打开车窗：fast\n"
    missing = run_abbench("--store", store, "show-ref", short, "knowledge/车控.md#座椅")
    assert missing.returncode == 2
    assert "error: no section 'knowledge/车控.md#座椅'" in missing.stderr
    assert "knowledge/车控.md#空调-2" in missing.stderr

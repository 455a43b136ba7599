"""Diffing two snapshots: files and sections added, removed, changed, with readable text."""

from __future__ import annotations

import json

import pytest

from abbench.errors import NotFoundError
from abbench.snapshot import build_snapshot, diff_snapshots
from tests.skillfiles import SKILL_V1, write_files

V2 = {
    **SKILL_V1,
    "SKILL.md": SKILL_V1["SKILL.md"]
    .replace("判断车载助手", "判断车载语音助手")
    .replace("- 其他走 slow", "- 其他走 slow\n- 导航到充电站：fast")
    + "\n## 例外\n- 多意图请求走 slow\n",
    "knowledge/车控.md": SKILL_V1["knowledge/车控.md"].replace(
        "打开车窗：fast", "打开车窗：fast\n- 关闭车窗：fast"
    ),
    "knowledge/weather.md": "# 天气\n\n## 今天\n- 今天天气：slow\n",
}


@pytest.fixture
def versions(tmp_path):
    v1 = write_files(tmp_path / "v1", {**SKILL_V1, "LICENSE.txt": "license text\n"})
    v2_files = {k: v for k, v in V2.items() if k != "knowledge/media.md"}
    v2 = write_files(tmp_path / "v2", {**v2_files, "LICENSE": "license text\n", "logo.png": b"\x89PNG\0"})
    return build_snapshot(v1), build_snapshot(v2)


def test_files_added_removed_changed_renamed(versions):
    diff = diff_snapshots(*versions)
    assert diff.files_added == ("knowledge/weather.md", "logo.png")
    assert diff.files_removed == ("knowledge/media.md",)
    assert diff.files_changed == ("SKILL.md", "knowledge/车控.md")
    assert [(r.old_path, r.new_path) for r in diff.files_renamed] == [("LICENSE.txt", "LICENSE")]
    assert diff.files_unchanged == 0
    assert not diff.identical


def test_sections_by_reference(versions):
    diff = diff_snapshots(*versions)
    assert [s.ref for s in diff.sections_added] == [
        "SKILL.md#例外",
        "knowledge/weather.md#天气",
        "knowledge/weather.md#今天",
    ]
    assert [s.ref for s in diff.sections_removed] == ["knowledge/media.md#Media", "knowledge/media.md#Play"]
    changed = {c.ref: c for c in diff.sections_changed}
    # the rule added under 车窗 changes that section only, not its duplicate-named neighbours
    assert set(changed) == {"SKILL.md#规则", "knowledge/车控.md#车窗"}
    window = changed["knowledge/车控.md#车窗"]
    assert (window.lines_added, window.lines_removed) == (1, 0)
    text = diff.section_diff("knowledge/车控.md#车窗")
    assert "--- a/knowledge/车控.md#车窗" in text and "+- 关闭车窗：fast" in text
    with pytest.raises(NotFoundError, match="did not change"):
        diff.section_diff("knowledge/车控.md#空调")


def test_front_matter_and_summary(versions):
    diff = diff_snapshots(*versions)
    assert [(c.key, c.old, c.new) for c in diff.front_matter_changes] == [
        ("description", "判断车载助手的请求走快系统还是慢系统", "判断车载语音助手的请求走快系统还是慢系统")
    ]
    summary = diff.summary()
    lines = summary.splitlines()
    assert lines[0] == f"{versions[0].label} -> {versions[1].label}"
    assert "files: 2 added, 1 removed, 2 changed, 1 renamed, 0 unchanged" in lines
    assert "  ~ knowledge/车控.md#车窗 (+1 -0 lines)" in lines
    assert "  > LICENSE.txt -> LICENSE" in lines
    assert "sections: 3 added, 2 removed, 2 changed" in lines
    assert diff.summary(max_items=2).count("... and") == 2


def test_file_diff_and_json(versions):
    diff = diff_snapshots(*versions)
    assert "+## 例外" in diff.file_diff("SKILL.md")
    assert diff.file_diff("logo.png").endswith("+(binary file)")
    with pytest.raises(NotFoundError):
        diff.file_diff("nope.md")
    data = json.loads(json.dumps(diff.to_dict(), ensure_ascii=False))
    assert data["files"]["renamed"] == [{"old": "LICENSE.txt", "new": "LICENSE"}]
    assert data["sections"]["changed"][-1]["diff"].startswith("--- a/knowledge/车控.md#车窗")
    assert "text" not in diff.to_dict(text=False)["sections"]["added"][0]


def test_identical_snapshots(tmp_path):
    a = build_snapshot(write_files(tmp_path / "a", SKILL_V1))
    b = build_snapshot(write_files(tmp_path / "b", SKILL_V1))
    diff = diff_snapshots(a, b)
    assert diff.identical and diff.files_unchanged == 3
    assert not (diff.files_added or diff.sections_changed or diff.front_matter_changes)
    assert diff.summary().endswith("identical content")


def test_moved_section_is_unchanged(tmp_path):
    a = build_snapshot(write_files(tmp_path / "a", {"SKILL.md": "# A\none\n\n# B\ntwo\n"}))
    b = build_snapshot(write_files(tmp_path / "b", {"SKILL.md": "# B\ntwo\n\n# A\none\n"}))
    diff = diff_snapshots(a, b)
    assert diff.files_changed == ("SKILL.md",)
    assert not diff.sections_changed and not diff.sections_added

"""Reading skill folders: the content hash, ignored names, size limits, symlinks, binary files, SKILL.md."""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

import pytest

from abbench.errors import SnapshotError
from abbench.snapshot import IGNORED_NAMES, build_snapshot, content_hash
from tests.skillfiles import SKILL_V1, write_files

REAL_SKILLS = ["brand-guidelines", "internal-comms", "theme-factory"]


def test_content_hash_is_the_documented_encoding():
    files = [("b.md", b"two"), ("SKILL.md", b"one")]
    h = hashlib.sha256(b"abbench-snapshot-v1\0")
    for path, data in sorted(files):
        h.update(len(path.encode()).to_bytes(8, "big") + path.encode())
        h.update(len(data).to_bytes(8, "big") + data)
    assert content_hash(files) == h.hexdigest()
    assert content_hash(reversed(files)) == h.hexdigest()


@pytest.mark.parametrize(
    ("one", "other"),
    [
        ([("ab", b"c")], [("a", b"bc")]),  # boundary between path and bytes
        ([("a", b""), ("b", b"x")], [("a", b"x"), ("b", b"")]),  # bytes moved between files
        ([("a", b"x")], [("a", b"x"), ("b", b"")]),  # an empty file still counts
        ([("a/b", b"x")], [("a", b"/bx")]),
    ],
)
def test_content_hash_is_unambiguous(one, other):
    assert content_hash(one) != content_hash(other)


@pytest.mark.parametrize("name", REAL_SKILLS)
def test_real_skills_build(realdata, tmp_path, name):
    # a copy outside any git repository (the test data itself is committed)
    folder = Path(shutil.copytree(realdata / "skills" / name, tmp_path / "outside-git" / name))
    snap = build_snapshot(folder)
    on_disk = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    assert [f.path for f in snap.files] == on_disk
    assert snap.skill_name == name
    assert snap.description and snap.has_skill_md and not snap.warnings
    assert snap.draft and snap.draft_reason == "not in a git repository"
    assert snap.root == folder.resolve()
    # every Markdown file is indexed, sub-folders included
    md_files = {p for p in on_disk if p.endswith(".md")}
    assert {s.path for s in snap.sections} == md_files
    assert snap.refs[0].startswith("SKILL.md#")
    # the hash depends on content only, not on where the folder lives
    copy = shutil.copytree(folder, tmp_path / "elsewhere" / name)
    assert build_snapshot(copy).hash == snap.hash


@pytest.mark.parametrize("name", REAL_SKILLS)
def test_resolving_one_file_agrees_with_the_full_index(realdata, name):
    indexed = build_snapshot(realdata / "skills" / name)
    assert indexed.sections  # fills the index
    for ref in indexed.refs:
        path, _, heading = ref.partition("#")
        for form in (ref, f"./{ref}", f"{path}#{heading.lower()}"):
            fresh = build_snapshot(realdata / "skills" / name)  # nothing parsed yet
            assert fresh.resolve(form) == indexed.resolve(form), form
    assert build_snapshot(realdata / "skills" / name).resolve("LICENSE.txt") is None


def test_cjk_headings_and_duplicates_are_references(tmp_path):
    snap = build_snapshot(write_files(tmp_path / "skill", SKILL_V1))
    assert "knowledge/车控.md#空调" in snap.refs
    assert "knowledge/车控.md#空调-2" in snap.refs
    assert "22 度" in snap.resolve("knowledge/车控.md#空调-2").text
    assert snap.resolve("knowledge/车控.md#车窗").parents == ("车控",)
    assert snap.skill_name == "fast-slow-routing"
    assert snap.description.startswith("判断")


def test_ignored_names_are_left_out(tmp_path):
    plain = build_snapshot(write_files(tmp_path / "plain", SKILL_V1))
    litter = {
        ".DS_Store": b"\0\0\0\1Bud1",
        "__pycache__/x.cpython-311.pyc": b"\x00pyc",
        "knowledge/.DS_Store": b"junk",
        "scripts/tool.pyc": b"\x00",
        "knowledge/车控.md.swp": b"swap",
        ".git/HEAD": "ref: refs/heads/main\n",
        ".ipynb_checkpoints/a.md": "# old",
    }
    messy = build_snapshot(write_files(tmp_path / "messy", {**SKILL_V1, **litter}))
    assert messy.hash == plain.hash
    assert [f.path for f in messy.files] == [f.path for f in plain.files]
    assert {".git", "__pycache__", ".DS_Store"} <= IGNORED_NAMES


def test_symlinks_inside_are_followed(tmp_path):
    folder = write_files(tmp_path / "skill", SKILL_V1)
    os.symlink("knowledge/media.md", folder / "media-link.md")
    os.symlink("knowledge", folder / "kb")
    snap = build_snapshot(folder)
    paths = [f.path for f in snap.files]
    assert "media-link.md" in paths and "kb/media.md" in paths
    assert snap.read_text("media-link.md") == SKILL_V1["knowledge/media.md"]
    assert snap.resolve("kb/media.md#Play") is not None


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("../../outside.md", "leaves the skill folder"),
        ("/etc/hostname", "leaves the skill folder"),
        ("missing.md", "broken symlink"),
        ("..", "symlink loop"),
        ("../.git/config", "ignored location"),
    ],
)
def test_bad_symlinks_are_refused(tmp_path, target, expected):
    (tmp_path / "outside.md").write_text("secret")
    folder = write_files(tmp_path / "skill", {**SKILL_V1, ".git/config": "[core]"})
    os.symlink(target, folder / "knowledge" / "link")
    with pytest.raises(SnapshotError, match=expected) as err:
        build_snapshot(folder)
    assert "knowledge/link" in str(err.value)


def test_every_problem_is_reported_at_once(tmp_path):
    folder = write_files(tmp_path / "skill", {**SKILL_V1, "data/big.bin": b"x" * 3000})
    os.symlink("/etc", folder / "etc")
    with pytest.raises(SnapshotError) as err:
        build_snapshot(folder, max_file_bytes=2000)
    message = str(err.value)
    assert "etc: symlink to /etc leaves the skill folder" in message
    assert "data/big.bin: 2.9 KB, over the 2 KB per-file limit" in message
    assert "--max-file-size" in message
    assert str(folder) in message


def test_total_and_count_limits(tmp_path):
    folder = write_files(tmp_path / "skill", {**SKILL_V1, "a.txt": b"a" * 600, "b.txt": b"b" * 600})
    with pytest.raises(SnapshotError, match="over the 1 KB total limit"):
        build_snapshot(folder, max_total_bytes=1024)
    with pytest.raises(SnapshotError, match="more than 3 files"):
        build_snapshot(folder, max_files=3)
    assert len(build_snapshot(folder, max_total_bytes=10_000, max_files=5).files) == 5


def test_limits_must_be_positive(tmp_path):
    with pytest.raises(SnapshotError, match="max_file_bytes must be a positive"):
        build_snapshot(write_files(tmp_path / "s", SKILL_V1), max_file_bytes=0)


def test_binary_files_are_kept_but_not_indexed(tmp_path):
    png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR"
    gbk = "# 标题\n\n内容\n".encode("gb18030")
    folder = write_files(tmp_path / "skill", {**SKILL_V1, "assets/logo.png": png, "knowledge/旧.md": gbk})
    snap = build_snapshot(folder)
    by_path = {f.path: f for f in snap.files}
    assert by_path["assets/logo.png"].binary and by_path["knowledge/旧.md"].binary
    assert not by_path["SKILL.md"].binary
    assert by_path["assets/logo.png"].sha256 == hashlib.sha256(png).hexdigest()
    assert not any(s.path in ("knowledge/旧.md", "assets/logo.png") for s in snap.sections)
    assert any("knowledge/旧.md: not UTF-8" in w for w in snap.warnings)
    assert snap.read_bytes("assets/logo.png") == png


def test_missing_skill_md_is_flagged(tmp_path):
    folder = write_files(tmp_path / "my-skill", {"skill.md": "# lower case\n", "notes.md": "# Notes\n"})
    snap = build_snapshot(folder)
    assert snap.skill_name == "my-skill"
    assert not snap.has_skill_md
    assert any("no SKILL.md" in w and "rename it to SKILL.md" in w for w in snap.warnings)
    assert "notes.md#Notes" in snap.refs


@pytest.mark.parametrize(
    ("skill_md", "warning"),
    [
        ("---\nname: [unclosed\n---\n# A\n", "not valid YAML at line 2"),
        ("---\n- a list\n---\n# A\n", "is a list, not a mapping"),
        ("---\ndescription: d\n---\n# A\n", "no name; using the folder name 'fallback'"),
        ("# No front matter\n", "no YAML front matter"),
        ("---\nname: x\n---\n# A\n", "no description"),
    ],
)
def test_front_matter_problems_are_warnings(tmp_path, skill_md, warning):
    snap = build_snapshot(write_files(tmp_path / "fallback", {"SKILL.md": skill_md}))
    assert any(warning in w for w in snap.warnings), snap.warnings
    assert snap.resolve("SKILL.md#A") is not None or "No front matter" in skill_md


def test_front_matter_with_bom_and_dates(tmp_path):
    text = "\ufeff---\nname: dated\ndescription: d\nupdated: 2024-05-01\n---\n# Title\n"
    snap = build_snapshot(write_files(tmp_path / "s", {"SKILL.md": text}))
    assert snap.skill_name == "dated"
    assert snap.front_matter["updated"] == "2024-05-01"
    assert snap.refs == ("SKILL.md#Title",)


@pytest.mark.parametrize(
    ("make", "expected"),
    [
        (lambda p: p, "no folder at"),
        (lambda p: write_files(p, {"SKILL.md": "x"}) / "SKILL.md", "is a file, not a folder"),
        (lambda p: write_files(p, {".DS_Store": b"x"}), "holds no files to snapshot"),
    ],
)
def test_bad_folders(tmp_path, make, expected):
    with pytest.raises(SnapshotError, match=expected):
        build_snapshot(make(tmp_path / "s"))


def test_undecodable_file_name_is_refused(tmp_path):
    folder = write_files(tmp_path / "s", SKILL_V1)
    with open(os.path.join(os.fsencode(folder), b"bad-\xff.md"), "wb") as f:
        f.write(b"# x\n")
    with pytest.raises(SnapshotError, match="not valid UTF-8; rename it"):
        build_snapshot(folder)

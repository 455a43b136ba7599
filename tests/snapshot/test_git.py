"""Git provenance: clean commits versus drafts, and past versions read with git archive."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from abbench.errors import SnapshotError, UsageError
from abbench.snapshot import build_snapshot, prepare_snapshot, snapshot_from_git
from abbench.snapshot._git import clean_remote_url
from tests.conftest import run_abbench
from tests.skillfiles import SKILL_V1, GitRepo, write_files

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

V2_CHANGES = {
    "knowledge/车控.md": SKILL_V1["knowledge/车控.md"] + "\n## 座椅\n- 座椅加热：fast\n",
    "knowledge/weather.md": "# 天气\n- 今天天气：slow\n",
}


@pytest.fixture
def repo(tmp_path):
    """A repository holding skills/routing at v1 (tagged) and v2 (HEAD), plus an unrelated folder."""
    r = GitRepo(tmp_path / "repo")
    r.write({f"skills/routing/{k}": v for k, v in SKILL_V1.items()})
    r.write({"README.md": "# repo\n", ".gitignore": "__pycache__/\n*.log\n"})
    r.v1 = r.commit("v1", tag="v1")
    r.write({f"skills/routing/{k}": v for k, v in V2_CHANGES.items()})
    r.v2 = r.commit("v2")
    r.git("remote", "add", "origin", "https://alice:s3cret-token@git.example.com/team/skills.git")
    r.skill = r.path / "skills" / "routing"
    return r


def test_clean_folder_records_commit_repo_and_remote(repo):
    snap = build_snapshot(repo.skill)
    assert not snap.draft and snap.draft_reason is None
    assert snap.commit == repo.v2
    assert snap.tag is None
    assert snap.repo == str(repo.path.resolve())
    assert snap.subdir == "skills/routing"
    assert snap.remote == "https://git.example.com/team/skills.git"
    assert "s3cret" not in repr(snap)


def test_tag_is_recorded_when_the_commit_is_tagged(repo):
    repo.git("tag", "v2.0")
    repo.git("tag", "v10.0")
    assert build_snapshot(repo.skill).tag == "v10.0"  # the highest version


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"skills/routing/SKILL.md": "# edited\n"}, "SKILL.md"),
        ({"skills/routing/knowledge/new.md": "# new\n"}, "knowledge/new.md (untracked)"),
        ({"skills/routing/run.log": "log\n"}, "run.log (ignored by git)"),
    ],
)
def test_uncommitted_content_is_a_draft(repo, change, reason):
    repo.write(change)
    snap = build_snapshot(repo.skill)
    assert snap.draft and snap.commit is None
    assert "uncommitted change(s) on top of " + repo.v2[:12] in snap.draft_reason
    assert reason in snap.draft_reason
    assert snap.repo == str(repo.path.resolve())  # where the draft lives is still recorded


def test_folder_inside_a_git_ignored_folder_is_a_draft(tmp_path):
    r = GitRepo(tmp_path / "repo")
    r.write({"README.md": "# r\n", ".gitignore": "skills/\n"})
    r.commit("init")
    r.write({f"skills/routing/{k}": v for k, v in SKILL_V1.items()})
    snap = build_snapshot(r.path / "skills" / "routing")
    assert snap.draft and "the whole folder (ignored by git: skills/)" in snap.draft_reason


def test_deleted_file_is_a_draft(repo):
    (repo.skill / "knowledge" / "media.md").unlink()
    snap = build_snapshot(repo.skill)
    assert snap.draft and "knowledge/media.md" in snap.draft_reason


@pytest.mark.parametrize(
    "change",
    [
        {"README.md": "# edited elsewhere\n"},  # outside the skill folder
        {"skills/routing/__pycache__/x.pyc": b"\0"},  # ignored by git and by snapshots
        {"other/new.md": "# untracked elsewhere\n"},
    ],
)
def test_changes_that_do_not_touch_the_content_keep_it_clean(repo, change):
    repo.write(change)
    snap = build_snapshot(repo.skill)
    assert not snap.draft, snap.draft_reason
    assert snap.commit == repo.v2


def test_nested_repository_makes_a_draft(repo):
    nested = GitRepo(repo.skill / "vendor")
    nested.write({"x.md": "# x\n"})
    nested.commit("x")
    repo.git("add", "-A")  # records the nested repository as a gitlink
    repo.commit("add nested")
    snap = build_snapshot(repo.skill)
    assert snap.draft and "nested git repository (vendor)" in snap.draft_reason


def test_repository_without_commits_is_a_draft(tmp_path):
    r = GitRepo(tmp_path / "fresh")
    r.write(SKILL_V1)
    snap = build_snapshot(r.path)
    assert snap.draft and snap.draft_reason == "the repository has no commits yet"


def test_git_ref_reads_the_older_version_without_touching_the_work_tree(repo, tmp_path):
    repo.write({"skills/routing/SKILL.md": SKILL_V1["SKILL.md"] + "\nuncommitted line\n"})
    before = repo.state()
    snap = snapshot_from_git(repo.path, "v1", "skills/routing", dest=tmp_path / "out")
    assert repo.state() == before
    assert not snap.draft
    assert (snap.commit, snap.tag, snap.git_ref, snap.subdir) == (repo.v1, "v1", "v1", "skills/routing")
    assert "knowledge/weather.md" not in [f.path for f in snap.files]
    assert snap.read_text("SKILL.md") == SKILL_V1["SKILL.md"]
    assert snap.root == (tmp_path / "out").resolve()
    # the same content read from a clean folder at v1 has the same hash
    assert snap.hash == build_snapshot(write_files(tmp_path / "v1copy", SKILL_V1)).hash


def test_folder_and_git_ref_agree_on_a_clean_commit(repo):
    from_folder = build_snapshot(repo.skill)
    from_git = snapshot_from_git(repo.path, "HEAD", "skills/routing")
    try:
        assert from_git.hash == from_folder.hash
        assert from_git.commit == from_folder.commit == repo.v2
    finally:
        shutil.rmtree(from_git.root)


def test_git_ref_of_a_folder_deleted_since(repo):
    shutil.rmtree(repo.skill)
    repo.commit("drop the skill")
    prepared = prepare_snapshot(repo.skill, git_ref="v1")
    assert prepared.source.commit == repo.v1
    assert prepared.info.name == "fast-slow-routing"


def test_a_bare_repository_is_read_as_its_clone_is(repo, tmp_path):
    """CI mirrors are often bare: `git archive` reads them; the snapshot equals the work tree's."""
    import subprocess

    bare = tmp_path / "skills.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo.path), str(bare)], check=True)
    expected = prepare_snapshot(repo=repo.path, subdir="skills/routing", git_ref="v1")
    for prepared in (
        prepare_snapshot(repo=bare, subdir="skills/routing", git_ref="v1"),
        prepare_snapshot(bare / "skills" / "routing", git_ref="v1"),  # the folder as a path inside it
    ):
        assert prepared.content.hash == expected.content.hash
        assert (prepared.source.commit, prepared.source.tag, prepared.source.subdir) == (
            repo.v1,
            "v1",
            "skills/routing",
        )
        assert prepared.source.repo == str(bare.resolve()) and not prepared.source.draft
    with pytest.raises(SnapshotError, match=r"'v9' is not a commit .*tags: v1"):
        prepare_snapshot(repo=bare, subdir="skills/routing", git_ref="v9")
    store = tmp_path / "store"
    taken = run_abbench(
        "--store", store, "snapshot", "--repo", bare, "--git-ref", "v1", "skills/routing", "-q"
    )
    assert taken.returncode == 0, taken.stderr
    assert taken.stdout.strip() == expected.content.hash


def test_repo_relative_subdir_from_a_sub_folder(repo):
    prepared = prepare_snapshot(repo=repo.path / "skills", subdir="routing", git_ref="v1")
    assert prepared.source.subdir == "skills/routing"
    assert prepared.source.commit == repo.v1


@pytest.mark.parametrize(
    ("kwargs", "error", "expected"),
    [
        ({"git_ref": "v9"}, SnapshotError, "'v9' is not a commit.*branches: main; tags: v1"),
        ({"git_ref": "--output=/tmp/x"}, SnapshotError, "is not valid"),
        (
            {"subdir": "skills/nope"},
            SnapshotError,
            "'skills/nope' does not exist at HEAD.*folders in skills there: routing",
        ),
        ({"subdir": "README.md"}, SnapshotError, "is a file, not a folder"),
        ({"subdir": "../elsewhere"}, SnapshotError, "leaves the repository"),
        ({"subdir": "/etc"}, SnapshotError, "is not inside the repository"),
        ({"subdir": "skills/routing", "folder": "x"}, UsageError, "not both"),
    ],
)
def test_bad_git_requests(repo, kwargs, error, expected):
    kwargs = dict(kwargs)
    folder = kwargs.pop("folder", None)
    with pytest.raises(error, match=expected):
        prepare_snapshot(folder, repo=repo.path, **kwargs)


def test_not_a_repository(tmp_path):
    write_files(tmp_path / "plain", SKILL_V1)
    with pytest.raises(SnapshotError, match="not in a git repository"):
        snapshot_from_git(tmp_path / "plain", "HEAD")


def test_committed_symlink_leaving_the_skill_is_refused(repo):
    os.symlink("../../README.md", repo.skill / "readme-link.md")
    repo.commit("link out")
    with pytest.raises(SnapshotError, match=r"readme-link\.md.*outside the skill folder"):
        snapshot_from_git(repo.path, "HEAD", "skills/routing")
    with pytest.raises(
        SnapshotError, match=re.escape("readme-link.md: symlink to ../../README.md leaves the skill folder")
    ):
        build_snapshot(repo.skill)


def test_committed_symlink_inside_is_followed(repo, tmp_path):
    os.symlink("knowledge/media.md", repo.skill / "media.md")
    repo.commit("link in")
    snap = snapshot_from_git(repo.path, "HEAD", "skills/routing", dest=tmp_path / "out")
    assert snap.read_text("media.md") == SKILL_V1["knowledge/media.md"]
    assert not (tmp_path / "out" / "media.md").is_symlink()
    assert snap.hash == build_snapshot(repo.skill).hash


def test_oversize_file_in_git_is_refused_before_extraction(repo):
    repo.write({"skills/routing/data.bin": b"\1" * 4096})
    repo.commit("big")
    with pytest.raises(SnapshotError, match=re.escape("data.bin: 4 KB, over the 1 KB per-file limit")):
        snapshot_from_git(repo.path, "HEAD", "skills/routing", max_file_bytes=1024)


def test_dest_must_be_empty(repo, tmp_path):
    write_files(tmp_path / "full", {"x": "y"})
    with pytest.raises(SnapshotError, match="is not empty"):
        snapshot_from_git(repo.path, "v1", "skills/routing", dest=tmp_path / "full")


@pytest.mark.parametrize(
    ("url", "clean"),
    [
        ("https://alice:tok@github.com/a/b.git", "https://github.com/a/b.git"),
        ("https://ghp_token@github.com/a/b.git", "https://github.com/a/b.git"),
        ("git@github.com:a/b.git", "git@github.com:a/b.git"),
        ("ssh://git@host/a/b.git", "ssh://git@host/a/b.git"),
        ("ssh://git:pw@host/a/b.git", "ssh://host/a/b.git"),
        ("/srv/git/skills.git", "/srv/git/skills.git"),
    ],
)
def test_remote_urls_lose_their_credentials(url, clean):
    assert clean_remote_url(url) == clean


@pytest.mark.parametrize(
    ("subdir", "prefix", "expected"),
    [
        (None, "", None),
        ("", "", None),
        (".", "skills", "skills"),
        ("routing/", "skills", "skills/routing"),
        ("a\\b", "", "a/b"),
        ("../x", "skills", "x"),
        ("/abs", "", SnapshotError),
        ("C:/abs", "", SnapshotError),
        ("../../x", "skills", SnapshotError),
    ],
)
def test_normalize_subdir(subdir, prefix, expected):
    from abbench.snapshot._git import normalize_subdir

    if expected is SnapshotError:
        with pytest.raises(SnapshotError):
            normalize_subdir(subdir, prefix)
    else:
        assert normalize_subdir(subdir, prefix) == expected

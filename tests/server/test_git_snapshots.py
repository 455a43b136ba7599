"""POST /skill-snapshots with a git URL and ref: a real repository made here, served as file://."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from abbench.client import Client, ServerError
from abbench.snapshot import build_snapshot
from tests.server.live import REPO, LiveServer, keyed_store

V1 = {"SKILL.md": "---\nname: routing\ndescription: Route fast or slow.\n---\n# Routing\n\nv1 rules\n"}
V2 = {**V1, "SKILL.md": V1["SKILL.md"] + "\n## Edge cases\n\nv2 adds these\n", "refs/table.md": "# Table\n"}
GIT_ENV = {
    **os.environ,
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.invalid",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, env=GIT_ENV, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def _write(folder: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def repo(tmp_path_factory):
    """A repository: skills/routing committed and tagged v1, then changed and committed on main."""
    root = tmp_path_factory.mktemp("gitrepo") / "skills-repo"
    root.mkdir()
    _git(root, "init", "--quiet", "--initial-branch=main")
    _write(root / "skills" / "routing", V1)
    (root / "README.md").write_text("other things\n")
    _git(root, "add", ".")
    _git(root, "commit", "--quiet", "-m", "v1")
    _git(root, "tag", "v1")
    v1_sha = _git(root, "rev-parse", "HEAD")
    _write(root / "skills" / "routing", V2)
    _git(root, "add", ".")
    _git(root, "commit", "--quiet", "-m", "v2")
    return root, v1_sha, _git(root, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def gitserver(tmp_path_factory):
    """A server allowing file:// clones, 2 MB fetches; the keys of ann and ben."""
    root = tmp_path_factory.mktemp("gitsvc")
    store_dir, keys = keyed_store(root, {o: (o, "read,run") for o in ("ann", "ben")})
    args = ("--git-scheme", "file", "--git-scheme", "https", "--max-request-mb", "2")
    server = LiveServer(store_dir, *args, log=root / "server.log").start()
    yield server, keys
    server.stop()


@pytest.fixture(scope="module")
def ann(gitserver):
    server, keys = gitserver
    with Client(server.url, keys["ann"]) as c:
        yield c


def _local_hash(tmp_path: Path, files: dict[str, str]) -> str:
    """The hash a local snapshot of a folder holding `files` gives (no git involved)."""
    return build_snapshot(_write(tmp_path / "local-routing", files)).hash


def _spool(server: LiveServer) -> Path:
    return server.store.parent / f"{server.store.name}.incoming"


def _refused(call, *args, **kwargs) -> ServerError:
    with pytest.raises(ServerError) as refused:
        call(*args, **kwargs)
    return refused.value


def test_tag_branch_and_sha_give_the_local_snapshots_of_those_commits(repo, ann, gitserver, tmp_path):
    root, v1_sha, v2_sha = repo
    url = root.as_uri()
    by_tag = ann.snapshot_git(url, ref="v1", path="skills/routing")
    assert by_tag.snapshot.hash == _local_hash(tmp_path / "a", V1)
    tagged = by_tag.snapshot
    assert (tagged.commit, tagged.tag, tagged.git_ref) == (v1_sha, "v1", "v1")
    assert tagged.draft is False and tagged.remote == url and tagged.repo == url
    assert by_tag.snapshot.skill_name == "routing" and by_tag.snapshot.subdir == "skills/routing"
    by_branch = ann.snapshot_git(url, ref="main", path="skills/routing")
    assert by_branch.snapshot.hash == _local_hash(tmp_path / "b", V2) != by_tag.snapshot.hash
    assert by_branch.snapshot.commit == v2_sha
    assert ann.snapshot_git(url, ref=v1_sha, path="skills/routing").snapshot.hash == by_tag.snapshot.hash
    assert ann.snapshot_git(url, ref=v1_sha[:10], path="skills/routing").snapshot.hash == by_tag.snapshot.hash
    whole = ann.snapshot_git(url)  # HEAD, the top of the repository
    assert whole.snapshot.commit == v2_sha and whole.snapshot.hash != by_branch.snapshot.hash
    hashes = {s["hash"] for s in ann.http.get("/api/skill-snapshots").json()}
    assert {by_tag.snapshot.hash, by_branch.snapshot.hash, whole.snapshot.hash} <= hashes
    server, _ = gitserver
    assert list(_spool(server).iterdir()) == []  # every clone removed


def test_an_unknown_ref_or_folder_is_named_with_what_exists(repo, ann):
    url = repo[0].as_uri()
    err = _refused(ann.snapshot_git, url, ref="v9", path="skills/routing")
    assert err.status == 422 and "'v9'" in err.problem["detail"]
    assert "main" in err.problem["detail"] and "v1" in err.problem["detail"]
    err = _refused(ann.snapshot_git, url, ref="v1", path="skills/missing")
    assert (
        err.status == 422 and "skills/missing" in err.problem["detail"] and "routing" in err.problem["detail"]
    )
    assert "gitsvc" not in err.problem["detail"]  # no server folder named


def test_an_unreachable_repository_answers_502(ann, tmp_path):
    err = _refused(ann.snapshot_git, (tmp_path / "no-such-repo").as_uri(), ref="main")
    assert err.status == 502 and "cannot read the git repository" in err.problem["detail"]


def test_schemes_and_transports_outside_the_settings_are_refused(repo, ann, alice, tmp_path):
    url = repo[0].as_uri()
    err = _refused(alice.snapshot_git, url, ref="v1")  # the default server: https and ssh only
    assert err.status == 422 and "'file' is not allowed" in err.problem["detail"]
    marker = tmp_path / "ran"
    err = _refused(ann.snapshot_git, f"ext::sh -c touch% {marker}", ref="v1")
    assert err.status == 422 and "ext::" in err.problem["detail"]
    err = _refused(ann.snapshot_git, "--upload-pack=touch " + str(marker), ref="v1")
    assert err.status == 422
    err = _refused(ann.snapshot_git, url, ref="--output=" + str(marker))
    assert err.status == 422
    err = _refused(ann.snapshot_git, "gopher://example.invalid/x", ref="v1")
    assert err.status == 422 and "gopher" in err.problem["detail"]
    assert not marker.exists()


def test_a_path_leaving_the_repository_is_refused(repo, ann):
    url = repo[0].as_uri()
    for path in ("../..", "skills/../../etc", "/etc"):
        err = _refused(ann.snapshot_git, url, ref="v1", path=path)
        assert err.status == 422 and "path" in err.problem["detail"], path


def test_a_repository_over_the_fetch_limit_answers_413(ann, tmp_path, gitserver):
    big = tmp_path / "big"
    big.mkdir()
    _git(big, "init", "--quiet", "--initial-branch=main")
    _write(big, V1)
    (big / "noise.bin").write_bytes(os.urandom(3 * 1024 * 1024))  # incompressible, over the 2 MB limit
    _git(big, "add", ".")
    _git(big, "commit", "--quiet", "-m", "big")
    err = _refused(ann.snapshot_git, big.as_uri(), ref="main")
    assert err.status == 413 and "limit" in err.problem["detail"]
    server, _ = gitserver
    assert list(_spool(server).iterdir()) == []


def test_another_owner_does_not_see_the_snapshot(repo, ann, gitserver):
    server, keys = gitserver
    mine = ann.snapshot_git(repo[0].as_uri(), ref="v1", path="skills/routing")
    with Client(server.url, keys["ben"]) as ben:
        assert mine.snapshot.hash not in {s["hash"] for s in ben.http.get("/api/skill-snapshots").json()}


def test_a_bad_body_is_refused_by_name(ann):
    err = _refused(ann._call, "POST", "/skill-snapshots", json={"git": "https://x.invalid/r", "branch": "m"})
    assert err.status == 422 and "branch" in err.problem["detail"]
    err = _refused(
        ann._call, "POST", "/skill-snapshots", content=b"x", headers={"Content-Type": "text/plain"}
    )
    assert err.status == 422 and "multipart" in err.problem["detail"]


def _abbench(*args: str, key: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if key:
        env["ABBENCH_KEY"] = key
    return subprocess.run(
        [sys.executable, "-m", "abbench", *args], capture_output=True, text=True, env=env, check=False
    )


def test_the_cli_snapshots_a_git_url_on_the_server_and_locally(repo, gitserver, tmp_path):
    server, keys = gitserver
    url = repo[0].as_uri()
    snapshot = ("snapshot", "--git", url, "--ref", "v1", "--path", "skills/routing", "--json")
    remote = _abbench("--server", server.url, *snapshot, key=keys["ann"])
    assert remote.returncode == 0, remote.stderr
    expected = _local_hash(tmp_path, V1)
    assert json.loads(remote.stdout)["hash"] == expected
    local = _abbench("--store", str(tmp_path / "st"), *snapshot)
    assert local.returncode == 0, local.stderr
    data = json.loads(local.stdout)
    assert (data["hash"], data["tag"], data["remote"]) == (expected, "v1", url)
    both = _abbench("--store", str(tmp_path / "st"), "snapshot", "skills", "--git", url)
    assert both.returncode == 2 and "--git URL takes" in both.stderr

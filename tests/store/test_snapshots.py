"""Snapshots in the store: copied once per content, provenance kept, found by ref, all or nothing."""

from __future__ import annotations

import os
import shutil
import stat
import threading
from pathlib import Path

import pytest

import abbench
from abbench.errors import NotFoundError, SnapshotError, StoreError, UsageError
from abbench.snapshot import build_snapshot
from tests.skillfiles import SKILL_V1, GitRepo, write_files

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def _count(store, table: str) -> int:
    return store.query_one(f"SELECT COUNT(*) FROM {table}")[0]


def _snapshot_dirs(store) -> list[str]:
    root = store.path / "snapshots"
    return sorted(p.relative_to(root).as_posix() for p in root.glob("*/*"))


@pytest.mark.parametrize("name", ["brand-guidelines", "internal-comms", "theme-factory"])
def test_real_skill_is_copied_under_its_hash(store, realdata, tmp_path, name):
    # a copy outside any git repository (the test data itself is committed)
    folder = Path(shutil.copytree(realdata / "skills" / name, tmp_path / "outside-git" / name))
    snap = store.snapshots.freeze(folder)
    assert snap.root == store.path / "snapshots" / name / snap.hash
    assert snap.hash == build_snapshot(folder).hash
    for f in snap.files:
        assert (snap.root / f.path).read_bytes() == (folder / f.path).read_bytes()
    assert sorted(p.relative_to(snap.root).as_posix() for p in snap.root.rglob("*") if p.is_file()) == [
        f.path for f in snap.files
    ]
    refs = store.snapshots.references(snap)
    assert sorted(refs) == sorted(snap.refs) and len(refs) > 5
    assert snap.created_at and snap.draft and snap.draft_reason == "not in a git repository"
    section = store.snapshots.resolve_reference(snap, refs[-1])
    assert section.text == snap.resolve(refs[-1]).text


def test_same_content_twice_is_stored_once(store, tmp_path):
    first = store.snapshots.freeze(write_files(tmp_path / "a" / "routing", SKILL_V1))
    second = store.snapshots.freeze(write_files(tmp_path / "b" / "other-name", SKILL_V1))
    assert second == first
    assert _count(store, "snapshots") == 1
    assert _snapshot_dirs(store) == [f"fast-slow-routing/{first.hash}"]
    sources = store.snapshots.sources(first)
    assert [s.source_path for s in sources] == [
        str(tmp_path / "a" / "routing"),
        str(tmp_path / "b" / "other-name"),
    ]
    assert all(s.taken_at and s.taken_by for s in sources)
    assert _count(store, "snapshot_refs") == len(first.sections)


def test_stored_copy_is_immune_to_later_edits(store, tmp_path):
    folder = write_files(tmp_path / "skill", SKILL_V1)
    snap = store.snapshots.freeze(folder)
    (folder / "SKILL.md").write_text("# rewritten\n", encoding="utf-8")
    assert store.snapshots.get(snap.hash).read_text("SKILL.md") == SKILL_V1["SKILL.md"]
    assert store.snapshots.freeze(folder).hash != snap.hash


def test_executable_bit_is_kept(store, tmp_path):
    folder = write_files(tmp_path / "skill", {**SKILL_V1, "scripts/run.sh": "#!/bin/sh\necho hi\n"})
    (folder / "scripts" / "run.sh").chmod(0o755)
    snap = store.snapshots.freeze(folder)
    assert (snap.root / "scripts" / "run.sh").stat().st_mode & stat.S_IXUSR
    assert not (snap.root / "SKILL.md").stat().st_mode & stat.S_IXUSR


@needs_git
def test_draft_then_commit_records_the_commit(store, tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.write({f"routing/{k}": v for k, v in SKILL_V1.items()})
    draft = store.snapshots.freeze(repo.path / "routing")
    assert draft.draft and draft.draft_reason.startswith("the repository has no commits")
    commit = repo.commit("v1")
    clean = store.snapshots.freeze(repo.path / "routing")
    assert clean.hash == draft.hash
    assert (clean.draft, clean.commit, clean.subdir, clean.draft_reason) == (False, commit, "routing", None)
    # a later commit with identical content is listed as a source, but the first commit stays
    repo.write({"README.md": "unrelated\n"})
    later = repo.commit("docs")
    repo.git("tag", "v1", commit)
    again = store.snapshots.freeze(repo.path / "routing")
    assert again.commit == commit and again.tag is None
    # the first commit, tagged since, gets its tag filled in
    tagged = store.snapshots.freeze(git_ref="v1", repo=repo.path, subdir="routing")
    assert (tagged.commit, tagged.tag) == (commit, "v1")
    sources = store.snapshots.sources(draft.hash)
    assert [(s.draft, s.commit) for s in sources] == [
        (True, None),
        (False, commit),
        (False, later),
        (False, commit),
    ]
    assert _count(store, "snapshots") == 1


@needs_git
def test_git_ref_into_the_store_leaves_the_work_tree_alone(store, tmp_path):
    repo = GitRepo(tmp_path / "repo")
    repo.write({f"skills/r/{k}": v for k, v in SKILL_V1.items()})
    v1 = repo.commit("v1", tag="v1")
    repo.write({"skills/r/SKILL.md": SKILL_V1["SKILL.md"] + "\n## 新规则\n- x\n"})
    repo.commit("v2")
    repo.write({"skills/r/draft.md": "# wip\n"})
    before = repo.state()
    snap = store.snapshots.freeze(repo.path / "skills" / "r", git_ref="v1")
    assert repo.state() == before
    assert (snap.draft, snap.commit, snap.tag, snap.git_ref) == (False, v1, "v1", "v1")
    assert "SKILL.md#新规则" not in store.snapshots.references(snap)
    assert store.snapshots.get("fast-slow-routing").hash == snap.hash


def test_copy_failing_half_way_leaves_nothing(store, tmp_path, monkeypatch):
    import abbench.snapshot._content as content

    written = []
    real_write = content._write_file

    def write_then_fail(dest, entry):
        if len(written) == 2:
            raise OSError(28, "No space left on device")
        written.append(entry.path)
        real_write(dest, entry)

    monkeypatch.setattr(content, "_write_file", write_then_fail)
    with pytest.raises(OSError, match="No space left"):
        store.snapshots.freeze(write_files(tmp_path / "skill", SKILL_V1))
    assert len(written) == 2
    _assert_empty(store)


def test_rename_failing_leaves_nothing(store, tmp_path, monkeypatch):
    import abbench.store._snapshots as module

    def fail(src, dst):
        raise OSError(13, "Permission denied")

    monkeypatch.setattr(module, "_move_into_place", fail)
    with pytest.raises(OSError, match="Permission denied"):
        store.snapshots.freeze(write_files(tmp_path / "skill", SKILL_V1))
    _assert_empty(store)


def test_database_failing_after_the_rename_leaves_nothing(store, tmp_path):
    # A real failure of the last statement of the transaction, after the folder was moved into place.
    with store.transaction() as conn:
        conn.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON snapshot_sources BEGIN SELECT RAISE(ABORT, 'disk I/O'); END"
        )
    with pytest.raises(Exception, match="disk I/O"):
        store.snapshots.freeze(write_files(tmp_path / "skill", SKILL_V1))
    _assert_empty(store)


def _assert_empty(store):
    for table in ("snapshots", "snapshot_refs", "snapshot_sources"):
        assert _count(store, table) == 0, table
    leftovers = [
        p.name for p in (store.path / "snapshots").rglob("*") if p.is_file() or p.name.startswith(".tmp")
    ]
    assert leftovers == []
    assert _snapshot_dirs(store) == []


def test_refused_content_writes_nothing(store, tmp_path):
    folder = write_files(tmp_path / "skill", SKILL_V1)
    os.symlink("/etc/passwd", folder / "passwd")
    with pytest.raises(SnapshotError, match="passwd: symlink to /etc/passwd leaves the skill folder"):
        store.snapshots.freeze(folder)
    _assert_empty(store)


def test_missing_files_are_restored_by_taking_again(store, tmp_path):
    folder = write_files(tmp_path / "skill", SKILL_V1)
    snap = store.snapshots.freeze(folder)
    shutil.rmtree(snap.root)
    with pytest.raises(StoreError, match="missing"):
        store.snapshots.resolve_reference(snap, "SKILL.md#规则")
    store.snapshots.freeze(folder)
    assert store.snapshots.resolve_reference(snap, "SKILL.md#规则").heading == "规则"


def test_store_inside_the_skill_folder_is_not_copied(tmp_path):
    folder = write_files(tmp_path / "skill", SKILL_V1)
    with abbench.open_store(folder / "my-store") as store:
        snap = store.snapshots.freeze(folder)
        assert not any(f.path.startswith("my-store") for f in snap.files)
        assert snap.hash == build_snapshot(write_files(tmp_path / "clean", SKILL_V1)).hash


def test_concurrent_takes_of_the_same_content(store, tmp_path):
    folders = [write_files(tmp_path / f"s{i}", SKILL_V1) for i in range(4)]
    results, errors = [], []

    def take(folder):
        try:
            results.append(store.snapshots.freeze(folder).hash)
        except Exception as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=take, args=(f,)) for f in folders]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(results)) == 1
    assert _count(store, "snapshots") == 1 and _count(store, "snapshot_sources") == 4
    assert len(_snapshot_dirs(store)) == 1


@pytest.fixture
def two_versions(store, tmp_path):
    v1 = store.snapshots.freeze(write_files(tmp_path / "v1", SKILL_V1))
    v2 = store.snapshots.freeze(write_files(tmp_path / "v2", {**SKILL_V1, "knowledge/new.md": "# 新\n"}))
    other = store.snapshots.freeze(
        write_files(tmp_path / "other", {"SKILL.md": "---\nname: other\n---\n# O\n"})
    )
    return v1, v2, other


def test_get_snapshot_by_every_kind_of_ref(store, two_versions):
    v1, v2, _ = two_versions
    assert store.snapshots.get(v1.hash) == v1
    assert store.snapshots.get(v1.hash[:6]) == v1
    assert store.snapshots.get(v1.hash[:12].upper()) == v1
    assert store.snapshots.get(f"fast-slow-routing@{v2.hash[:4]}") == v2
    assert store.snapshots.get(v1.label) == v1  # "name@hash12 (draft)" as printed
    assert store.snapshots.get("fast-slow-routing") == v2  # the latest taken
    assert store.snapshots.get(v1) == v1
    store.snapshots.freeze(v1.source_path)  # taking v1 again makes it the latest
    assert store.snapshots.get("fast-slow-routing").hash == v1.hash
    assert [s.hash for s in store.snapshots.all("fast-slow-routing")] == [v1.hash, v2.hash]
    assert [s.skill_name for s in store.snapshots.all()] == [
        "fast-slow-routing",
        "fast-slow-routing",
        "other",
    ]
    assert store.snapshots.all("nobody") == []


@pytest.mark.parametrize(
    ("ref", "error", "expected"),
    [
        ("nobody", NotFoundError, "no snapshot 'nobody'.*skills in the store: fast-slow-routing, other"),
        ("abc", NotFoundError, "at least 6 hex digits"),
        ("other@ffff", NotFoundError, "snapshots of other: other@"),
        ("nobody@ffff", NotFoundError, "no skill named 'nobody'"),
        ("other@zz", UsageError, "at least 4 hex digits"),
        ("", UsageError, "give a snapshot"),
    ],
)
def test_get_snapshot_errors(store, two_versions, ref, error, expected):
    with pytest.raises(error, match=expected):
        store.snapshots.get(ref)


def test_ambiguous_prefix_lists_the_candidates(store, two_versions):
    v1, _, _ = two_versions
    # Real hashes sharing six digits are too rare to wait for: copy v1's row under a hash sharing its prefix.
    twin = v1.hash[:8] + "0" * 56
    with store.transaction() as conn:
        conn.execute("CREATE TEMP TABLE t AS SELECT * FROM snapshots WHERE hash = ?", (v1.hash,))
        conn.execute("UPDATE t SET hash = ?", (twin,))
        conn.execute("INSERT INTO snapshots SELECT * FROM t")
    with pytest.raises(
        UsageError, match=f"matches 2 snapshots: .*{v1.hash[:12]}.*{twin[:12]}.*give more hex digits"
    ):
        store.snapshots.get(v1.hash[:6])
    assert store.snapshots.get(v1.hash[:9]) == v1


def test_resolve_reference(store, two_versions):
    v1, _, _ = two_versions
    assert store.snapshots.resolve_reference(v1, "knowledge/车控.md#空调-2").text.endswith("22 度：fast")
    assert store.snapshots.resolve_reference("fast-slow-routing", "./SKILL.md#规则").heading == "规则"
    with pytest.raises(
        NotFoundError, match=r"no section 'SKILL.md#nope'.*references in SKILL.md: SKILL.md#快慢路由"
    ):
        store.snapshots.resolve_reference(v1, "SKILL.md#nope")
    with pytest.raises(NotFoundError, match=r"no file 'nope\.md'.*Markdown files: SKILL\.md, knowledge/"):
        store.snapshots.resolve_reference(v1, "nope.md#x")


def test_public_api(tmp_path):
    folder = write_files(tmp_path / "skill", SKILL_V1)
    snap = abbench.snapshot_skill(folder, store=tmp_path / "store")
    assert isinstance(snap, abbench.Snapshot)
    assert abbench.load_snapshot(snap.short, store=tmp_path / "store") == snap
    diff = abbench.diff_snapshots(snap, abbench.build_snapshot(folder))
    assert isinstance(diff, abbench.SnapshotDiff) and diff.identical
    with pytest.raises(StoreError, match="no abbench store"):
        abbench.load_snapshot(snap.short, store=tmp_path / "missing")


def test_stale_temporary_folders_are_swept(store, tmp_path):
    stale = store.path / "snapshots" / ".tmp-crashed"
    fresh = store.path / "snapshots" / ".tmp-running"
    for folder in (stale, fresh):
        write_files(folder, {"content/SKILL.md": "x"})
    os.utime(stale, (0, 0))
    store.snapshots.freeze(write_files(tmp_path / "skill", SKILL_V1))
    assert not stale.exists() and fresh.exists()


@pytest.mark.parametrize(
    ("name", "folder"),
    [
        ("快慢路由", "快慢路由"),
        ("../../escape", "escape"),
        ("a/b c", "a-b-c"),
        ("...", "skill"),
    ],
)
def test_skill_names_become_safe_folder_names(store, tmp_path, name, folder):
    skill = write_files(tmp_path / "s", {"SKILL.md": f"---\nname: {name!r}\ndescription: d\n---\n# A\n"})
    snap = store.snapshots.freeze(skill)
    assert snap.skill_name == name
    assert snap.root == store.path / "snapshots" / folder / snap.hash
    assert store.snapshots.get(f"{name}@{snap.hash[:6]}") == snap

"""Hostile uploads: traversal, links, bombs, oversize bodies — refused, nothing written outside."""

from __future__ import annotations

import io
import tarfile
import zipfile

import pytest

from abbench.client import ServerError


def _zip(members: dict[str, bytes], *, symlink: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in members.items():
            zf.writestr(name, data)
        if symlink:
            info = zipfile.ZipInfo("skill/link")
            info.external_attr = 0o120777 << 16
            zf.writestr(info, symlink)
    return buf.getvalue()


def _tar_with_link() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        data = b"---\nname: x\n---\n# X\n"
        info = tarfile.TarInfo("skill/SKILL.md")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("skill/secret")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        tf.addfile(link)
    return buf.getvalue()


def _post(client, name: str, data: bytes):
    with pytest.raises(ServerError) as refused:
        client._call("POST", "/skill-snapshots", files={"file": (name, data)})
    return refused.value


def test_archives_that_climb_out_or_link_out_are_refused(live, alice):
    server, _ = live
    spool = server.store.parent / f"{server.store.name}.incoming"
    before = sorted(p.name for p in server.store.parent.iterdir() if p != spool)
    err = _post(alice, "evil.zip", _zip({"skill/SKILL.md": b"# s\n", "../../evil.txt": b"pwned"}))
    assert err.status == 422 and "../../evil.txt" in err.problem["detail"]
    err = _post(alice, "abs.zip", _zip({"/tmp/abs-evil.txt": b"pwned"}))
    assert err.status == 422
    err = _post(alice, "link.zip", _zip({"skill/SKILL.md": b"# s\n"}, symlink="/etc/passwd"))
    assert err.status == 422 and "link" in err.problem["detail"]
    err = _post(alice, "link.tgz", _tar_with_link())
    assert err.status == 422 and "skill/secret" in err.problem["detail"]
    assert not (server.store.parent.parent / "evil.txt").exists()
    assert sorted(p.name for p in server.store.parent.iterdir() if p != spool) == before
    assert list(spool.iterdir()) == []  # every request's folder removed
    assert alice.http.get("/api/skill-snapshots").json() == [] or all(
        s["skill_name"] != "x" for s in alice.http.get("/api/skill-snapshots").json()
    )


def test_a_zip_bomb_and_a_non_archive_are_refused(alice):
    bomb = _zip({"skill/SKILL.md": b"# s\n", "skill/zeros.md": b"\0" * (4 * 1024 * 1024)})
    err = _post(alice, "bomb.zip", bomb)
    assert err.status == 422 and "zip bomb" in err.problem["detail"]
    err = _post(alice, "plain.zip", b"this is not an archive at all")
    assert err.status == 422 and "neither a zip nor a tar" in err.problem["detail"]


def test_a_body_over_the_limit_answers_413_and_nothing_is_kept(live, alice):
    server, _ = live
    big = b"a,b\n" + b"x,y\n" * (3 * 1024 * 1024 // 4)  # 3 MB against the fixture's 2 MB limit
    with pytest.raises(ServerError) as refused:
        alice._call("POST", "/datasets", files={"file": ("big.csv", big)}, data={"name": "big"})
    assert refused.value.status == 413 and "limit" in refused.value.problem["detail"]
    spool = server.store.parent / f"{server.store.name}.incoming"
    assert not spool.exists() or list(spool.iterdir()) == []


def test_a_parquet_bomb_uploaded_as_a_dataset_is_refused_and_nothing_is_stored(live, alice):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    buf = io.BytesIO()
    pq.write_table(pa.table({"input": ["a" * (256 << 20)], "expected": ["x"]}), buf, compression="zstd")
    assert len(buf.getvalue()) < 100_000  # well under the fixture's 2 MB upload limit
    with pytest.raises(ServerError) as refused:
        alice._call(
            "POST", "/datasets", files={"file": ("cases.parquet", buf.getvalue())}, data={"name": "b"}
        )
    assert refused.value.status == 422 and "compression bomb" in refused.value.problem["detail"]
    assert alice.http.get("/api/datasets").json() == []

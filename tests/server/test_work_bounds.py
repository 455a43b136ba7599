"""A request whose work passes the server's bounds is stopped and answered with the bound: a real server
with a two-second bound on a request's work, and a git host that never answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.server.live import LiveServer, api_client, keyed_store, store_state, work_processes
from tests.server.test_sweep import _HeldHost, held_host  # noqa: F401 - the fixture


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    root = tmp_path_factory.mktemp("bounds")
    store_dir, keys = keyed_store(root, {"mallory": ("mallory", "read,run")})
    server = LiveServer(
        store_dir,
        "--git-scheme",
        "http",
        "--git-timeout",
        "300",
        "--request-timeout",
        "2",
        log=root / "server.log",
    ).start()
    client = api_client(server, keys["mallory"], timeout=120)
    yield server, client
    client.close()
    server.stop()


def test_work_past_its_time_is_stopped_answered_with_the_bound_and_leaves_nothing(svc, held_host):  # noqa: F811
    server, client = svc
    before = store_state(server.store)
    r = client.post("/skill-snapshots", json={"git": held_host})  # git waits on a host that never answers
    assert _HeldHost.asked.is_set()  # it was the host it waited for, not a refusal before
    port = held_host.rsplit(":", 1)[1].split("/")[0].encode()
    assert [p for p in _processes() if b"127.0.0.1:" + port in _cmdline(p)] == []  # git went with its job
    _HeldHost.release.set()
    assert r.status_code == 422, r.text
    problem = r.json()
    assert problem["title"] == "over this server's limits" and "--request-timeout" in problem["detail"]
    assert work_processes(server.proc.pid) == []  # the job's process was stopped
    spool = server.store.parent / f"{server.store.name}.incoming"
    assert not spool.exists() or list(spool.iterdir()) == []  # its clone folder went with its request
    assert store_state(server.store) == before
    assert client.get("/datasets").status_code == 200


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _processes() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]

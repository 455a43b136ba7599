"""Fixtures: one real server over a store with three owners' keys, and a client per key."""

from __future__ import annotations

import pytest

from abbench.client import Client
from tests.server.live import LiveServer, keyed_store


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    """A running server (rate 120 a minute, 2 MB requests) and the keys of alice, bob and carol (read only)."""
    root = tmp_path_factory.mktemp("svc")
    scopes = {"alice": "read,run,review", "bob": "read,run,review", "carol": "read", "dave": "read"}
    store_dir, keys = keyed_store(root, {name: (name, scope) for name, scope in scopes.items()})
    server = LiveServer(store_dir, "--rate", "120", "--max-request-mb", "2", log=root / "server.log").start()
    yield server, keys
    server.stop()


@pytest.fixture(scope="module")
def alice(live):
    server, keys = live
    with Client(server.url, keys["alice"], actor="ci/job-7") as c:
        yield c


@pytest.fixture(scope="module")
def bob(live):
    server, keys = live
    with Client(server.url, keys["bob"]) as c:
        yield c

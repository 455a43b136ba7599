"""A store holding the six finished fixture experiments, built once per session for the export tests."""

from __future__ import annotations

import pytest

from abbench.store import open_store
from tests.experiments import build_all


@pytest.fixture(scope="session")
def finished(tmp_path_factory):
    """``(store, ids)``: a store with the fixture experiments (read-only for tests) and their ids by shape."""
    folder = tmp_path_factory.mktemp("export-store")
    store = open_store(folder / "store")
    ids = build_all(store, folder / "files")
    yield store, ids
    store.close()

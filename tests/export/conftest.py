"""A store holding the six finished fixture experiments, built once per session for the export tests."""

from __future__ import annotations

import pytest

from abbench.errors import StoreError
from abbench.export import export_table
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


def fast_path_tables(finished, path: str):
    """``(shape, runs table)`` of each fixture experiment whose table has the fast `path` (``csv_lines``,
    ``xlsx_rows``); a pairwise judge keeps the record path."""
    store, ids = finished
    for shape, exp_id in ids.items():
        table = export_table(exp_id, "runs", store=store)
        if getattr(table, path) is not None:
            yield shape, table


def refuses_not_utf8(store, exp_id: int, run: int, write, path) -> None:
    """`write(runs table, path)` refuses the text that is not UTF-8 in `run` (`not_utf8`), naming the run."""
    with pytest.raises(StoreError, match=rf"run {run} holds text that is not UTF-8 \(invalid start byte\)"):
        write(export_table(exp_id, "runs", store=store), path)

"""A store this user may read but not write: every view works, every write is refused with a message."""

from __future__ import annotations

import pytest

from abbench.store import open_store
from tests.conftest import DEMO
from tests.permissions import run_abbench_restricted, without_write_permission


@pytest.fixture(scope="module")
def read_only_store(tmp_path_factory):
    if without_write_permission() is None:
        pytest.skip("running as root without setpriv: permissions cannot be enforced")
    from abbench.runner import create_experiment, run_experiment

    root = tmp_path_factory.mktemp("ro")
    store_dir = root / "store"
    store = open_store(store_dir)
    store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
    exp = create_experiment(
        {
            "name": "ro",
            "dataset": "demo",
            "cases": {"limit": 12},
            "arms": {
                "a": {"agent": "builtin"},
                "b": {"agent": "builtin", "skill": str(DEMO / "skills/fast-slow-routing-v2")},
            },
        },
        store=store,
    )
    run_experiment(exp.id, store=store)
    store.close()  # the last connection checkpoints the WAL: no -shm file is left to read through
    paths = [store_dir, *store_dir.rglob("*")]
    for p in paths:
        p.chmod(0o555 if p.is_dir() else 0o444)
    yield root, store_dir
    for p in paths:
        p.chmod(0o755 if p.is_dir() else 0o644)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ("datasets",),
        ("experiments",),
        ("status", "ro"),
        ("metrics", "ro"),
        ("compare", "ro"),
        ("case", "ro", "FS-0001"),
        ("gate", "ro"),
        ("export", "ro", "--format", "csv", "--out", "{root}/runs.csv"),
    ],
    ids=lambda a: a[0],
)
def test_every_view_reads_a_read_only_store(read_only_store, args):
    root, store_dir = read_only_store
    args = [a.format(root=root) for a in args]
    result = run_abbench_restricted("--store", store_dir, *args)
    assert result.returncode in (0, 1), result.stderr  # gate may block; it must not fail
    assert "Traceback" not in result.stderr and "error" not in result.stderr
    assert result.stdout.strip()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "what"),
    [
        (("run", "ro"), "cannot be saved"),
        (("review", "ro", "FS-0001", "--verdict", "unsure"), "cannot be saved"),
        (("cancel", "ro"), "cannot be saved"),
        (
            ("import", DEMO / "cases.csv", "--name", "again"),
            "a dataset imported from cases.csv cannot be saved",
        ),
        (("snapshot", DEMO / "skills/fast-slow-routing-v1"), "a snapshot of"),
    ],
    ids=lambda a: a[0] if isinstance(a, tuple) else None,
)
def test_a_write_to_a_read_only_store_is_refused_with_what_to_do(read_only_store, args, what):
    _, store_dir = read_only_store
    result = run_abbench_restricted("--store", store_dir, *args)
    assert result.returncode == 2, result.stdout
    assert "Traceback" not in result.stderr
    assert f"the store {store_dir} is read-only for this user" in result.stderr
    assert what in result.stderr and "cp -r" in result.stderr


def test_a_store_path_that_is_a_file_is_refused(cli, tmp_path):
    path = tmp_path / "not-a-folder"
    path.write_text("hello", encoding="utf-8")
    result = cli("datasets", store=path)
    assert result.exit_code == 2
    assert f"the store path {path} is a file, not a folder" in result.output
    assert path.read_text(encoding="utf-8") == "hello"

"""Temporary files a killed export or import left are removed when the same command starts again; those
another live process is writing are not. Real processes, killed with SIGKILL; a lock tells them apart."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from abbench.runner import create_experiment, run_experiment
from abbench.store import open_store
from tests.blocking import SAFETY_NET_S, wait_for
from tests.conftest import DEMO, REPO, run_abbench, subprocess_env

HOLD = """
import sys, threading
from pathlib import Path
from abbench._files import claimed_temp
folder, prefix, suffix, ready = sys.argv[1:5]
fd, tmp = claimed_temp(Path(folder), prefix=prefix, suffix=suffix)
tmp.write_bytes(b"half a file " * 1000)
Path(ready).write_text(str(tmp), encoding="utf-8")
threading.Event().wait()  # writing, as far as anyone can tell, until killed
"""


def _writer(folder: Path, prefix: str, suffix: str, ready: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """A process writing a temporary file in `folder` the way abbench does, stopped half way."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder), prefix, suffix, str(ready)], cwd=REPO, env=subprocess_env()
    )
    path = Path(wait_for(lambda: ready.exists() and ready.read_text(encoding="utf-8"), f"{ready} to appear"))
    return proc, path


def _killed_and_live(folder: Path, prefix: str, suffix: str, tmp_path: Path):
    killed, stale = _writer(folder, prefix, suffix, tmp_path / "ready-killed")
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=SAFETY_NET_S)
    live, writing = _writer(folder, prefix, suffix, tmp_path / "ready-live")
    assert stale.exists() and writing.exists()
    return stale, live, writing


@pytest.fixture
def finished(tmp_path):
    store = open_store(tmp_path / "store")
    ds = store.import_dataset(DEMO / "cases.csv", DEMO / "mapping-csv.yaml")
    exp = create_experiment(
        {
            "name": "temp",
            "dataset": ds.fingerprint,
            "cases": {"limit": 5},
            "arms": {"a": {"agent": "builtin", "labels": ["fast", "slow"]}},
        },
        store=store,
    )
    run_experiment(exp.id, store=store)
    yield store, exp
    store.close()


@pytest.mark.slow
def test_an_export_removes_what_a_killed_export_left_beside_it_and_nothing_else(tmp_path, finished):
    store, exp = finished
    out = tmp_path / "exports"
    out.mkdir()
    target = out / "runs.csv"
    stale, live, writing = _killed_and_live(out, f".{target.name}.", ".tmp", tmp_path)
    other = out / ".notes.tmp"  # a hidden file of someone else's, not an export's
    other.write_text("mine", encoding="utf-8")
    try:
        done = run_abbench("--store", store.path, "export", exp.id, "--what", "runs", "--out", target)
        assert done.returncode == 0, done.stderr
        assert target.exists()
        assert not stale.exists()  # the killed export's half file is gone
        assert writing.exists() and other.exists()  # a live export's, and what is not ours, stay
    finally:
        live.kill()
        live.wait()


@pytest.mark.slow
def test_an_import_removes_the_copies_a_killed_import_left_in_the_store(tmp_path, finished):
    store, _ = finished
    uploads = store.path / "uploads"
    stale, live, writing = _killed_and_live(uploads, ".import-", ".csv", tmp_path)
    try:
        done = run_abbench(
            "--store",
            store.path,
            "import",
            DEMO / "cases.csv",
            "--mapping",
            DEMO / "mapping-csv.yaml",
            "--name",
            "again",
        )
        assert done.returncode == 0, done.stderr
        assert not stale.exists() and writing.exists()
        assert sorted(p.name for p in uploads.glob(".import-*")) == [writing.name]
    finally:
        live.kill()
        live.wait()

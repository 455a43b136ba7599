"""Temporary files a killed export or import left are removed when the same command starts again; those
another live process is writing are not. Real processes, killed with SIGKILL; a lock tells them apart."""

from __future__ import annotations

import contextlib
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
    ds = store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml")
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


HOLD_TRANSCRIPT = """
import sys, threading
from pathlib import Path
from abbench.runner import StoreWriter
from abbench.store import open_store
store, target, ready = sys.argv[1], Path(sys.argv[2]), Path(sys.argv[3])

def messages():  # a long transcript, stopped half way: its writer is writing, as far as anyone can tell
    yield {"role": "user", "content": "half a transcript " * 1000}
    ready.write_text("", encoding="utf-8")
    threading.Event().wait()

StoreWriter(open_store(store)).transcript(target, messages())
threading.Event().wait()
"""


def _transcript_writer(store: Path, target: Path, ready: Path) -> tuple[subprocess.Popen[bytes], Path]:
    """A process whose store writer writes the transcript `target`, stopped half way."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD_TRANSCRIPT, str(store), str(target), str(ready)],
        cwd=REPO,
        env=subprocess_env(),
    )
    wait_for(ready.exists, f"{ready} to appear")
    (partial,) = target.parent.glob(f".{target.name}.*.partial")
    return proc, partial


@pytest.mark.slow
def test_a_run_removes_the_partial_transcripts_killed_runs_left_and_nothing_else(tmp_path, finished):
    store, exp = finished
    folder = store.path / "transcripts"
    # the live one first: a writer that starts removes what killed ones left (the test's run must)
    live, writing = _transcript_writer(store.path, folder / "900002.jsonl", tmp_path / "ready-live")
    killed, stale = _transcript_writer(store.path, folder / "900001.jsonl", tmp_path / "ready-killed")
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=SAFETY_NET_S)
    assert writing.exists()  # the second writer's start left the live one's alone
    older = folder / "900003.jsonl.partial"  # what a killed abbench of before the lock left
    older.write_text('{"role": "user"}\n', encoding="utf-8")
    notes = folder / "notes.partial.txt"  # not a transcript's
    notes.write_text("mine", encoding="utf-8")
    arms = {"a": {"agent": "builtin", "labels": ["fast", "slow"]}}
    again = create_experiment(
        {"name": "again", "dataset": exp.dataset, "cases": {"limit": 5}, "arms": arms}, store=store
    )
    try:
        done = run_abbench("--store", store.path, "run", again.id, "-q")
        assert done.returncode == 0, done.stderr
        assert not stale.exists() and not older.exists()  # what killed runs left is gone
        assert writing.exists() and notes.exists()  # a live writer's, and what is not a transcript, stay
        assert sorted(p.name for p in folder.glob("*partial*")) == sorted([writing.name, notes.name])
        assert not (folder / "900001.jsonl").exists()  # the killed transcript was never published
    finally:
        live.kill()
        live.wait()


HOLD_REQUEST = """
import sys, threading
from pathlib import Path
from abbench.server._uploads import temp_folder
spool, ready = Path(sys.argv[1]), Path(sys.argv[2])
folder = temp_folder(spool)
(folder / "outcomes.json").write_bytes(b'{"outcomes": [' * 1000)
ready.write_text(str(folder), encoding="utf-8")
threading.Event().wait()  # a live server's request, as far as anyone can tell, until killed
"""


@pytest.mark.slow
def test_a_server_removes_the_request_folders_a_killed_server_left_and_nothing_else(tmp_path):
    import threading

    import httpx

    from abbench.store import current_user
    from tests.runner.conftest import make_cases
    from tests.server.live import LiveServer

    store_dir = tmp_path / "store"
    with open_store(store_dir) as s:
        key = s.keys.create(current_user())[1]
        ds = s.datasets.save("spool", make_cases(3), label_set=["fast", "slow"])
        arm = {"agent": "external"}
        exp = create_experiment({"name": "spool", "dataset": ds.fingerprint, "arms": {"a": arm}}, store=s)
    spool = tmp_path / "store.incoming"  # the default: beside the store
    server = LiveServer(store_dir, log=tmp_path / "s1.log").start()
    release = threading.Event()

    def body():  # outcomes that arrive slowly: the request holds its folder while they do
        yield b'{"outcomes": ['
        release.wait(SAFETY_NET_S)
        yield b"]}"

    def send() -> None:
        with contextlib.suppress(httpx.TransportError):  # the server is killed under it
            httpx.post(
                f"{server.url}/api/experiments/{exp.id}/runs",
                content=body(),
                headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
                timeout=SAFETY_NET_S,
            )

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    (stale,) = wait_for(lambda: list(spool.glob("req-*")), "the request's folder in the spool")
    wait_for(lambda: (stale / "outcomes.json").exists(), "the request to spool its body")
    server.kill()
    release.set()
    sender.join(SAFETY_NET_S)
    assert stale.exists()  # nothing removed it: the server died under it
    ready = tmp_path / "ready"
    live = subprocess.Popen(
        [sys.executable, "-c", HOLD_REQUEST, str(spool), str(ready)], cwd=REPO, env=subprocess_env()
    )
    held = Path(wait_for(lambda: ready.exists() and ready.read_text(encoding="utf-8"), "a live request"))
    notes = spool / "notes.txt"  # not a request's
    notes.write_text("mine", encoding="utf-8")
    again = LiveServer(store_dir, log=tmp_path / "s2.log").start()  # the same command, started again
    try:
        assert not stale.exists()  # the killed server's request folder is gone
        assert held.exists() and (held / "outcomes.json").exists() and notes.exists()
        assert sorted(p.name for p in spool.iterdir()) == sorted([held.name, notes.name])
    finally:
        again.stop()
        live.kill()
        live.wait()

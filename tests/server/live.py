"""A real `abbench serve` child process on a free 127.0.0.1 port, waited for on its health route."""

from __future__ import annotations

import os
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import httpx

from abbench.store import open_store

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    """A port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def keyed_store(root: Path, keys: dict[str, tuple[str, str]]) -> tuple[Path, dict[str, str]]:
    """A new store at ``root/store`` with an API key for each of `keys` (name -> (owner, scopes)).

    Returns the store's folder and each name's secret key."""
    store_dir = root / "store"
    with open_store(store_dir) as s:
        made = {name: s.keys.create(owner, scopes=scopes)[1] for name, (owner, scopes) in keys.items()}
    return store_dir, made


def api_client(server: LiveServer, key: str, timeout: float) -> httpx.Client:
    """An HTTP client of `server`'s ``/api`` that sends `key` as its bearer token."""
    return httpx.Client(
        base_url=f"{server.url}/api", headers={"Authorization": f"Bearer {key}"}, timeout=timeout
    )


class LiveServer:
    """`abbench --store STORE serve` in a child process; `url` once it answers /api/health."""

    def __init__(self, store: Path, *args: str, log: Path, env: dict[str, str] | None = None):
        self.store, self.args, self.log_path, self.env = store, args, log, env or {}
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> LiveServer:
        env = {**os.environ, **self.env, "PYTHONPATH": str(REPO)}
        cmd = [
            sys.executable,
            "-m",
            "abbench",
            "--store",
            str(self.store),
            "serve",
            "--port",
            str(self.port),
            *self.args,
        ]
        self.log = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env, cwd=self.store.parent
        )
        self._wait_healthy()
        return self

    def _wait_healthy(self) -> None:
        assert self.proc is not None
        while True:  # the condition is the server answering; a server that died ends the wait
            if self.proc.poll() is not None:
                raise RuntimeError(
                    f"the server exited ({self.proc.returncode}): {self.log_path.read_text()[-3000:]}"
                )
            try:
                if httpx.get(f"{self.url}/api/health", timeout=5).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.05)

    def kill(self) -> None:
        """SIGKILL: nothing is cleaned up, as when a machine loses power."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.log.close()

    def stop(self) -> None:
        """Stop it (SIGTERM, then wait)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=60)
        if not self.log.closed:
            self.log.close()


def store_state(store: Path) -> dict[str, object]:
    """What a store holds: the rows of every table and the files beside the database (a refused
    request must leave it exactly so). Read through a read-only connection, as another process would."""
    uri = f"file:{store / 'abbench.db'}?mode=ro"
    with sqlite3.connect(uri, uri=True) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        rows = {t: conn.execute(f'SELECT COUNT(*) FROM "{t}"').fetchone()[0] for t in sorted(tables)}
        rows["experiments.control"] = conn.execute(
            "SELECT group_concat(id || ':' || status || ':' || control) FROM experiments"
        ).fetchone()[0]
        rows["runs.state"] = conn.execute("SELECT group_concat(state) FROM runs").fetchone()[0]
    files = sorted(
        str(p.relative_to(store))
        for p in store.rglob("*")
        if p.is_file() and not p.name.startswith("abbench.db")
    )
    return {"rows": rows, "files": files}


def _parents() -> dict[int, int]:
    """pid -> parent pid of every process (Linux /proc)."""
    found = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue  # it ended meanwhile
        found[int(stat.parent.name)] = int(text.rpartition(")")[2].split()[1])
    return found


def work_processes(server_pid: int) -> list[int]:
    """The server's work processes now (jobs reading a caller's request): children of its fork server."""
    parents = _parents()
    forkservers = set()
    for pid, parent in parents.items():
        if parent != server_pid:
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"forkserver" in cmdline:
            forkservers.add(pid)
    return [pid for pid, parent in parents.items() if parent in forkservers]

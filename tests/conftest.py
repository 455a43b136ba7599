"""Shared fixtures: a fresh store, the real public data, and ways to call the CLI."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import settings

REPO = Path(__file__).resolve().parent.parent

# A property test never depends on the machine's speed: hypothesis's default 200 ms deadline per example
# failed a canonical-JSON test on a loaded machine, though nothing was wrong but the load.
settings.register_profile("abbench", deadline=None)
settings.load_profile("abbench")
# Public data copied unchanged from public repositories (sources and licences in tests/realdata/SOURCES.md)
# travels with the tests, so CI on a fresh machine runs every real-data test instead of skipping it.
REALDATA = REPO / "tests" / "realdata"
DEMO = REPO / "data" / "demo"


def demo_source() -> dict[str, str]:
    """The demo's cases as a definition's ``dataset:`` names a file to import (with its mapping): a new
    dict each call, so a test may change it."""
    return {"file": str(DEMO / "cases.csv"), "mapping": str(DEMO / "mapping-csv.yaml"), "name": "demo"}


@pytest.fixture
def store(tmp_path):
    """An empty store in a temporary folder, closed after the test."""
    from abbench.store import open_store

    s = open_store(tmp_path / "store")
    yield s
    s.close()


@pytest.fixture(scope="session")
def realdata() -> Path:
    """The folder of real public data (tests/realdata, with its sources and licences)."""
    if not REALDATA.exists():
        pytest.skip(f"real data not found at {REALDATA}")
    return REALDATA


@pytest.fixture(scope="session")
def banking_store(tmp_path_factory) -> Iterator[Path]:
    """A store holding banking77 and a finished 300-case experiment of two builtin arms given the 77
    labels, its mapping declaring no label set (see tests/banking.py); shared, never written to."""
    from tests.banking import build_banking_store

    path = _built_once(
        tmp_path_factory, "banking", lambda root: build_banking_store(root / "store", cases=300)
    )
    with _kept_unwritten(path):
        yield path


@pytest.fixture(scope="session")
def shared_demo_store(tmp_path_factory) -> Iterator[Path]:
    """The demo store as `tests.widgets.demo.build_demo_store` makes it (experiments ``demo`` and
    ``demo-v2-only``), in a folder named ``.abbench``; built once per session and shared, so never written
    to: a test that writes takes `demo_store_copy`."""
    from tests.widgets.demo import build_demo_store

    path = _built_once(tmp_path_factory, "demo", lambda root: build_demo_store(root / ".abbench"))
    with _kept_unwritten(path):
        yield path


def _built_once(tmp_path_factory, name: str, build) -> Path:
    """What `build(folder)` returns, built once per run: under xdist the first worker to ask builds it in
    the run's shared temporary folder while the others wait on a lock, then all share it (read-only)."""
    base = tmp_path_factory.getbasetemp()
    root = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the run's own, never older runs'
    folder, done = root / f"shared-{name}", root / f"shared-{name}.built"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a worker that died part way
            folder.mkdir()
            done.write_text(str(build(folder)), encoding="utf-8")
    return Path(done.read_text(encoding="utf-8"))


@contextlib.contextmanager
def _kept_unwritten(store_dir: Path):
    """Fail the session when a test wrote to a store it shares (the others would see its writes,
    depending on the order the tests ran in): its database's contents before and after are compared."""

    def contents() -> str:
        conn = sqlite3.connect(f"file:{store_dir / 'abbench.db'}?mode=ro", uri=True)
        try:
            return hashlib.sha256("\n".join(conn.iterdump()).encode()).hexdigest()
        finally:
            conn.close()

    before = contents()
    yield
    assert contents() == before, f"a test wrote to the shared store {store_dir}: take a copy to write to"


@pytest.fixture
def demo_store_copy(shared_demo_store, tmp_path) -> Path:
    """A copy of `shared_demo_store` of the test's own, to write to (the store keeps paths relative)."""
    return Path(shutil.copytree(shared_demo_store, tmp_path / "demo" / ".abbench"))


@pytest.fixture
def cli(tmp_path):
    """Call the CLI in-process against a temporary store: ``cli("import", path)`` returns the result."""
    from abbench.cli import cli as group

    runner = CliRunner()
    store_dir = tmp_path / "store"

    def invoke(*args, input=None, store=store_dir):
        return runner.invoke(
            group, ["--store", str(store), *map(str, args)], input=input, catch_exceptions=False
        )

    invoke.store_dir = store_dir
    return invoke


def found_in_package(find, say: str = "") -> list[str]:
    """``path:line: <say><what>`` for each ``(line, what)`` that `find(path)` gives in abbench's modules."""
    paths = sorted(p for p in (REPO / "abbench").rglob("*.py") if "__pycache__" not in p.parts)
    return [f"{path.relative_to(REPO)}:{line}: {say}{what}" for path in paths for line, what in find(path)]


def assert_none_in_package(find, advice: str, say: str = "") -> None:
    """Fail with `advice` and the places (`found_in_package`) if `find` finds anything in abbench."""
    found = found_in_package(find, say)
    assert found == [], f"{advice}:\n" + "\n".join(found)


def plant_module(path: Path, text: str) -> Path:
    """Write `text` as the module at `path` (what a guard's own test plants for it to find); the path."""
    path.write_text(text)
    return path


def refused_file(read, path: Path, text: str, error: type[Exception]) -> str:
    """Write `text` to `path` and return the message of the `error` that ``read(path)`` raises."""
    path.write_text(text, encoding="utf-8")
    with pytest.raises(error) as caught:
        read(path)
    return str(caught.value)


def subprocess_env(**extra) -> dict[str, str]:
    """Environment for running ``python -m abbench`` in a child process on this checkout's code."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    env.setdefault("NO_COLOR", "1")
    env["TQDM_DISABLE"] = env.get("TQDM_DISABLE", "0")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def start_run(store_dir, exp_id, *, preexec_fn=None, stdout=subprocess.PIPE, **env) -> subprocess.Popen:
    """``abbench --store DIR run EXP -q`` in a child process (text mode, no progress bar, stderr piped).

    `env` adds environment variables; `preexec_fn` runs in the child before abbench starts (to set how
    it takes SIGINT, as a terminal or a script's background job would).
    """
    return subprocess.Popen(
        [sys.executable, "-m", "abbench", "--store", str(store_dir), "run", str(exp_id), "-q"],
        cwd=REPO,
        env=subprocess_env(TQDM_DISABLE="1", **env),
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=preexec_fn,
    )


def run_python(code: str) -> subprocess.CompletedProcess:
    """Run ``python -c CODE`` in a child process on this checkout's code; fail the test if it fails."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        check=True,
    )


def run_abbench(*args, cwd=None, timeout=300, **env) -> subprocess.CompletedProcess:
    """Run ``python -m abbench ARGS`` in a child process and capture its output."""
    return subprocess.run(
        [sys.executable, "-m", "abbench", *map(str, args)],
        cwd=cwd or REPO,
        env=subprocess_env(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )

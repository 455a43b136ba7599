"""JupyterLab on 127.0.0.1 for real-browser tests: a free port, no token, its own settings, shut down cleanly."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import httpx
import nbformat

from tests.conftest import REPO


def free_port() -> int:
    """A TCP port nobody listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def parameterized(source: Path, target: Path, **parameters) -> Path:
    """Copy a notebook with papermill's injected-parameters cell after its ``parameters`` cell, as a
    person editing the top cell would; the copy is what the browser opens (and autosaves)."""
    from papermill.iorw import load_notebook_node
    from papermill.parameterize import parameterize_notebook

    nb = parameterize_notebook(load_notebook_node(str(source)), parameters)
    nbformat.write(nb, target)
    return target


@contextmanager
def jupyterlab(
    root: Path, *, env: dict[str, str] | None = None, timeout: float = 90.0, base_url: str = "/"
) -> Iterator[str]:
    """Run JupyterLab on `root`; yields its URL (with `base_url`, no trailing slash). Kernels it starts
    inherit `env`. A `base_url` other than ``/`` serves it as JupyterHub does (``/jh/user/``).

    The server runs in its own process group, so the kernels it started end with it.
    """
    port = free_port()
    settings = root / ".lab-settings"
    full_env = dict(os.environ)
    full_env.update(
        {
            "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
            "JUPYTERLAB_SETTINGS_DIR": str(settings / "user-settings"),
            "JUPYTERLAB_WORKSPACES_DIR": str(settings / "workspaces"),
            "JUPYTER_RUNTIME_DIR": str(settings / "runtime"),
            "TQDM_DISABLE": "1",
        }
    )
    full_env.update(env or {})
    # Keep the notification about Jupyter news from covering the page.
    plugin = settings / "user-settings" / "@jupyterlab" / "apputils-extension"
    plugin.mkdir(parents=True, exist_ok=True)
    (plugin / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}', encoding="utf-8")
    log = (root / "jupyterlab.log").open("wb")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            "--IdentityProvider.token=",
            "--ServerApp.password=",
            "--ServerApp.disable_check_xsrf=True",
            f"--ServerApp.root_dir={root}",
            f"--ServerApp.base_url={base_url}",
            "--LabApp.expose_app_in_browser=True",
            "--LabApp.news_url=",
            "--LabServerApp.extension_manager=readonly",
        ],
        cwd=root,
        env=full_env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/{base_url.strip('/')}".rstrip("/")
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited ({proc.returncode}); see {root / 'jupyterlab.log'}")
            try:
                if httpx.get(f"{url}/api/status", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"JupyterLab did not answer within {timeout:.0f} s")
            time.sleep(0.3)
        yield url
    finally:
        _stop(proc)
        log.close()


def _stop(proc: subprocess.Popen) -> None:
    """Shut the server down (it stops its kernels), then end its process group if anything is left."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)  # jupyter_server asks for confirmation: a second SIGINT confirms
        time.sleep(0.2)
        proc.send_signal(signal.SIGINT)
        with suppress(subprocess.TimeoutExpired):
            proc.wait(20)
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)  # kernels the server started share its process group
    if proc.poll() is None:
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)

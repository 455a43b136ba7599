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
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import nbformat

from tests.browser import HANG_MS, offline_page
from tests.conftest import REPO


@dataclass(frozen=True)
class Lab:
    """A folder on a running JupyterLab: `root` on disk, `prefix` its path on the server (``""`` when the
    server's root is this folder), `url` the server's."""

    url: str
    root: Path
    prefix: str = ""

    @property
    def host(self) -> str:
        """``127.0.0.1:PORT``: the only host a page of this server may reach."""
        return urlsplit(self.url).netloc

    def path(self, name: str) -> str:
        """The file `name` (relative to `root`) as the server names it."""
        return f"{self.prefix}{name}"

    def folder(self, name: str) -> Lab:
        """A new subfolder `name` of this one, on the same server."""
        (self.root / name).mkdir()
        return Lab(self.url, self.root / name, self.path(f"{name}/"))

    def open(self, page, name: str) -> None:
        """Open the notebook `name` (relative to `root`) in `page` and run it (`open_notebook`)."""
        open_notebook(page, self.url, self.path(name))

    def shut_down_kernels(self) -> None:
        """End every session and kernel the server runs (JupyterLab leaves them when a page closes)."""
        for what in ("sessions", "kernels"):
            for item in httpx.get(f"{self.url}/api/{what}", timeout=60).json():
                httpx.delete(f"{self.url}/api/{what}/{item['id']}", timeout=120)


VIEWPORT = {"width": 1400, "height": 1000}


@contextmanager
def lab_page(browser, lab: Lab, failure_shot: Path, *, viewport=None, **context_options) -> Iterator:
    """A page (`offline_page`, `VIEWPORT` unless given) that may reach `lab`'s server and nothing else.
    When the test fails inside, the page is screenshot to `failure_shot` and the widgets' and the page's
    errors are printed; when it ends, no request may have tried to leave the machine."""
    with offline_page(browser, allow_hosts=(lab.host,), viewport=viewport or VIEWPORT, **context_options) as (
        page,
        network,
        errors,
    ):
        page.set_default_timeout(HANG_MS)  # waits are on conditions: the timeout only ends a hang
        try:
            yield page
        except BaseException:
            page.screenshot(path=str(failure_shot), full_page=True)
            print("widget errors:", page.locator(".abbench-error").all_inner_texts())
            print("page errors:", *errors[-20:], sep="\n  ")
            raise
        assert network.blocked == [], f"the page tried to leave the machine: {network.blocked[:5]}"


def open_notebook(page, url: str, path: str) -> None:
    """Open the notebook at `path` on the server at `url`, wait for its kernel, run every cell, and wait
    until the kernel is idle again. The workspace is reset (``?reset``): the notebooks an earlier page
    opened on the server are not opened again."""
    page.goto(f"{url}/lab/tree/{path}?reset", wait_until="domcontentloaded")
    page.wait_for_function(
        "(path) => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;"
        " const k = w && w.context && w.context.path === path && w.sessionContext.session"
        " && w.sessionContext.session.kernel; return !!k && k.status === 'idle'; }",
        arg=path,
        timeout=HANG_MS,
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(
        "() => { const w = window.jupyterapp.shell.currentWidget;"
        " const cells = w.content.widgets.filter(c => c.model.type === 'code');"
        " return cells.every(c => c.model.executionCount !== null)"
        " && w.sessionContext.session.kernel.status === 'idle'; }",
        timeout=HANG_MS,
    )


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

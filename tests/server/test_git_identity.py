"""A git snapshot a caller asks for borrows none of the server's credentials, unless its operator named
the repository: a real server whose home holds a ~/.netrc, and a git host on 127.0.0.1 that asks for one."""

from __future__ import annotations

import base64
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import httpx
import pytest

from abbench.server._policy import git_credentials
from tests.server.live import LiveServer, api_client, keyed_store

PASSWORD = "netrc-password-3b9d"


class _AskingHost(BaseHTTPRequestHandler):
    """Every request is refused with a Basic challenge; what each brought as Authorization is kept."""

    seen: ClassVar[list[str | None]] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Authorization"))
        self.send_response(401)
        self.send_header("WWW-Authenticate", 'Basic realm="git"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    root = tmp_path_factory.mktemp("git-identity")
    home = root / "home"
    home.mkdir()
    netrc = home / ".netrc"
    netrc.write_text(
        f"machine 127.0.0.1 login ops password {PASSWORD}\nmachine localhost login ops password {PASSWORD}\n"
    )
    netrc.chmod(0o600)
    host = ThreadingHTTPServer(("127.0.0.1", 0), _AskingHost)
    threading.Thread(target=host.serve_forever, daemon=True).start()
    store_dir, keys = keyed_store(root, {"mallory": ("mallory", "read,run")})
    server = LiveServer(
        store_dir,
        *("--git-scheme", "http", "--git-credentials", "localhost/acme", "--git-timeout", "60"),
        log=root / "server.log",
        env={"HOME": str(home)},
    ).start()
    client = api_client(server, keys["mallory"], timeout=120)
    yield client, host.server_address[1]
    client.close()
    server.stop()
    host.shutdown()


def _sent(client: httpx.Client, url: str) -> list[str | None]:
    _AskingHost.seen.clear()
    r = client.post("/skill-snapshots", json={"git": url})
    assert r.status_code == 502, r.text  # the host refuses everyone: git cannot read it
    assert PASSWORD not in r.text
    return list(_AskingHost.seen)


def test_a_caller_s_git_url_is_cloned_without_the_server_s_netrc(svc):
    client, port = svc
    seen = _sent(client, f"http://127.0.0.1:{port}/acme/skills.git")
    assert seen and all(a is None for a in seen)  # asked, and never given the server's password


def test_a_repository_the_operator_named_is_cloned_with_the_server_s_credentials(svc):
    client, port = svc
    seen = _sent(client, f"http://localhost:{port}/acme/skills.git")
    token = base64.b64encode(f"ops:{PASSWORD}".encode()).decode()
    assert f"Basic {token}" in seen


@pytest.mark.parametrize(
    ("url", "allowed"),
    [
        ("git@github.com:acme/skills.git", True),
        ("https://github.com/acme/skills", True),
        ("ssh://git@github.com/acme/skills/sub.git", True),
        ("https://github.com/acme/skills-other", False),
        ("https://github.com/evil/x", False),
        ("https://github.com/acme/skills/../../evil/x", False),
        ("https://github.com/acme/skills/%2e%2e/evil", False),
        ("https://github.com.evil.test/acme/skills", False),
        ("https://a.corp.example/any/repo.git", True),
        ("https://corp.example/any/repo.git", False),
    ],
)
def test_credentials_go_only_to_repositories_under_a_named_pattern(url, allowed):
    assert git_credentials(url, ["github.com/acme/skills", "*.corp.example"]) is allowed

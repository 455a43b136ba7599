"""The client against a server that misbehaves (a wrong URL, a proxy, a hostile host on 127.0.0.1): it
reads at most what it allows, never follows a redirect (the key would go along), and never writes a file
outside the folder asked for or half a file."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from abbench.client import Client, ServerError
from tests.blocking import SAFETY_NET_S


class _Host(BaseHTTPRequestHandler):
    """Answers each path as `routes` says: (status, headers, body); records what it was sent."""

    routes: ClassVar[dict[str, tuple[int, dict[str, str], bytes]]] = {}
    seen: ClassVar[list[tuple[str, str | None]]] = []

    def do_GET(self) -> None:
        self.seen.append((self.path, self.headers.get("Authorization")))
        status, headers, body = self.routes.get(self.path.split("?")[0], (404, {}, b"{}"))
        self.send_response(status)
        for name, value in {"Content-Length": str(len(body)), **headers}.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    do_POST = do_GET

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def host():
    """A server on a free 127.0.0.1 port; set ``host.RequestHandlerClass.routes`` for what it answers."""
    handler = type("Host", (_Host,), {"routes": {}, "seen": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _in_a_thread(call) -> BaseException | None:
    """What `call()` raised (None: nothing), run in a thread a safety net ends (a call that never
    returns fails the test rather than hanging it)."""
    raised: list[BaseException | None] = []

    def run() -> None:
        try:
            call()
            raised.append(None)
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(SAFETY_NET_S)
    assert raised, f"{call} did not return within {SAFETY_NET_S} s"
    return raised[0]


def _url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"


def test_a_redirect_elsewhere_is_not_followed_and_the_key_stays(host):
    other = ThreadingHTTPServer(("127.0.0.1", 0), type("Other", (_Host,), {"routes": {}, "seen": []}))
    threading.Thread(target=other.serve_forever, daemon=True).start()
    try:
        elsewhere = f"{_url(other)}/api/experiments/1"
        for path in ("/api/experiments/1", "/api/experiments/1/events", "/api/experiments/1/export"):
            host.RequestHandlerClass.routes[path] = (302, {"Location": elsewhere}, b"")
        with Client(_url(host), "abk_secret") as c:
            for call in (
                lambda: c.load_experiment(1),
                lambda: c.wait(1, poll=0.1),  # a redirect's body has no end event: it asked again forever
                lambda: c.export(1, out="x.csv"),
            ):
                raised = _in_a_thread(call)
                assert isinstance(raised, ServerError) and raised.status == 302, raised
                assert f"to {elsewhere}: not followed" in str(raised)
        assert other.RequestHandlerClass.seen == []  # the key never reached the other host
        assert {auth for _, auth in host.RequestHandlerClass.seen} == {"Bearer abk_secret"}
    finally:
        other.shutdown()
        other.server_close()


def test_an_answer_over_the_bound_is_refused_not_held(host):
    big = json.dumps({"id": 1, "padding": "x" * 200_000}).encode()
    host.RequestHandlerClass.routes["/api/experiments/1"] = (200, {"Content-Type": "application/json"}, big)
    bounded = Client(_url(host), "abk_secret", max_answer_bytes=100_000)
    with bounded, pytest.raises(ServerError, match=r"more than 100,000 bytes, the most this client reads"):
        bounded.load_experiment(1)
    # an error answer is read only in part: its first megabyte, never the whole
    huge = b"<html>" + b"y" * 3_000_000
    host.RequestHandlerClass.routes["/api/experiments/2"] = (500, {"Content-Type": "text/html"}, huge)
    with Client(_url(host), "abk_secret") as c, pytest.raises(ServerError) as failed:
        c.load_experiment(2)
    assert failed.value.status == 500 and len(str(failed.value)) < 1000


def test_a_download_over_the_bound_leaves_no_file_and_names_no_folder(host, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    written = json.dumps(
        {"path": "../../evil.csv", "what": "runs", "format": "csv", "rows": 1, "columns": []}
    )
    headers = {"Content-Type": "text/csv", "X-Abbench-Export": written}
    host.RequestHandlerClass.routes["/api/experiments/1/export"] = (200, headers, b"a,b\n" * 50_000)
    with Client(_url(host), "abk_secret", max_download_bytes=10_000) as c:
        with pytest.raises(ServerError, match="more than 10,000 bytes"):
            c.export(1, out="runs.csv")
        assert not (tmp_path / "runs.csv").exists()  # never half a file
    with Client(_url(host), "abk_secret") as c:
        result = c.export(1)  # the server's file name: its last part only, here
    assert result.path == tmp_path / "evil.csv" and not (tmp_path.parent.parent / "evil.csv").exists()


def test_an_answer_that_is_not_json_is_said_plainly(host):
    host.RequestHandlerClass.routes["/api/experiments/1"] = (200, {"Content-Type": "text/html"}, b"<html>hi")
    with (
        Client(_url(host), "abk_secret") as c,
        pytest.raises(ServerError, match="not JSON; check the server URL"),
    ):
        c.load_experiment(1)


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 100_000 + b"]" * 100_000,  # nested past the json module's depth
        b"[1, 2]",  # a list where a record is
        json.dumps({"id": "x", "name": 5, "progress": 7}).encode(),  # fields of the wrong type
    ],
    ids=["deep", "list", "wrong-types"],
)
def test_an_answer_of_the_wrong_shape_is_said_plainly_not_a_traceback(host, body):
    host.RequestHandlerClass.routes["/api/experiments/1"] = (200, {"Content-Type": "application/json"}, body)
    with Client(_url(host), "abk_secret") as c:
        for call in (c.load_experiment, c.experiment_status):
            with pytest.raises(
                ServerError, match=r"GET /experiments/1 answered .*; check the server URL"
            ) as failed:
                call(1)
            assert failed.value.status == 502 and failed.value.title == "not an abbench answer"


def test_wait_refuses_an_answer_that_is_no_event_stream_or_a_line_that_never_ends(host, monkeypatch):
    events = "/api/experiments/1/events"
    host.RequestHandlerClass.routes[events] = (200, {"Content-Type": "application/json"}, b"{}\n")
    with Client(_url(host), "abk_secret") as c:
        # timeout=0: a client that read the JSON as events would time out at its first line
        with pytest.raises(ServerError, match=r"'application/json', not events; check the server URL"):
            c.wait(1, timeout=0)
        monkeypatch.setattr("abbench.client._client.MAX_EVENT_BYTES", 100_000, raising=False)
        endless = b"data: " + b"x" * 200_000  # no line end: an event stream that never says where it ends
        host.RequestHandlerClass.routes[events] = (200, {"Content-Type": "text/event-stream"}, endless)
        with pytest.raises(ServerError, match=r"more than 100,000 bytes"):
            c.wait(1, timeout=0)

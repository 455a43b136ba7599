"""An attacker with a read,run key against a real server: nothing it sends crashes, hangs or stalls the
server for another caller, passes the limits on what one request may store or compute, or leaves the
store changed when it is refused."""

from __future__ import annotations

import io
import json
import select
import socket
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import openpyxl
import pytest

from tests.server.live import LiveServer, api_client, keyed_store, store_state, work_processes
from tests.server.uploads import DEMO_MAPPING, demo_csv, upload_demo

OPTIONS = (
    *("--rate", "100000", "--max-request-mb", "20", "--max-document-mb", "1", "--max-runs", "5000"),
    *("--git-scheme", "http", "--git-timeout", "300"),
    *("--request-cpu", "5", "--request-memory-mb", "1024", "--request-workers", "2", "--max-inflight", "4"),
)


@pytest.fixture(scope="module")
def svc(tmp_path_factory):
    root = tmp_path_factory.mktemp("sweep")
    store_dir, keys = keyed_store(
        root, {"attacker": ("mallory", "read,run"), "victim": ("victor", "read,run")}
    )
    server = LiveServer(store_dir, *OPTIONS, log=root / "server.log").start()
    attacker, victim = (api_client(server, keys[who], timeout=300) for who in ("attacker", "victim"))
    fp = upload_demo(attacker, "d")
    created = attacker.post(
        "/experiments",
        json={"name": "e", "dataset": fp, "cases": {"limit": 3}, "arms": {"b": {"agent": "external"}}},
    )
    assert created.status_code == 201, created.text
    yield {
        "server": server,
        "keys": keys,
        "attacker": attacker,
        "victim": victim,
        "dataset": fp,
        "exp": created.json()["id"],
        "root": root,
    }
    attacker.close()
    victim.close()
    server.stop()


def _refused(svc: dict, send, status: int, *words: str) -> dict:
    """`send()` answers `status` with `words` in its detail, and the store is as it was."""
    before = store_state(svc["server"].store)
    r = send()
    assert r.status_code == status, r.text[:800]
    problem = r.json()
    for word in words:
        assert word in json.dumps(problem, ensure_ascii=False), (word, problem)
    assert store_state(svc["server"].store) == before
    return problem


def test_an_outcome_larger_than_an_agent_s_output_is_refused_with_the_limit(svc):
    outcome = {"case_id": "FS-0001", "arm": "b", "prediction": "fast", "raw_output": "y" * 6_000_000}
    problem = _refused(
        svc,
        lambda: svc["attacker"].post(f"/experiments/{svc['exp']}/runs", json={"outcomes": [outcome]}),
        422,
        "5,000,000",
        "raw_output",
    )
    assert problem["title"] == "invalid outcomes"


def test_a_document_over_its_limit_is_refused_before_it_is_read(svc):
    definition = {"name": "big", "dataset": svc["dataset"], "arms": {"a": {}}, "description": "x" * 2_000_000}
    _refused(svc, lambda: svc["attacker"].post("/experiments", json=definition), 413, "1,048,576")


DEEP = "[" * 100_000 + "]" * 100_000
_LAUGHS = (
    "l0: &l0 lol\n"
    + "".join(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 9))
    + "name: *l8\n"
)


def _deep_and_huge(svc: dict) -> dict:
    a, exp, fp = svc["attacker"], svc["exp"], svc["dataset"]
    json_headers = {"content-type": "application/json"}
    return {
        "definition nested 100,000 deep": lambda: a.post("/experiments", content=DEEP, headers=json_headers),
        "definition in YAML nested deep": lambda: a.post(
            "/experiments",
            content="a: " + "[" * 5000 + "]" * 5000,
            headers={"content-type": "application/yaml"},
        ),
        "a YAML alias bomb": lambda: a.post(
            "/experiments", content=_LAUGHS, headers={"content-type": "application/yaml"}
        ),
        "priority beyond SQLite": lambda: a.post(
            "/experiments", json={"name": "p", "dataset": fp, "arms": {"a": {}}, "priority": 10**30}
        ),
        "timeout .inf": lambda: a.post(
            "/experiments",
            content=f"name: t\ndataset: {fp}\narms: {{a: {{}}}}\ntimeout_s: .inf\n",
            headers={"content-type": "application/yaml"},
        ),
        "outcomes nested deep": lambda: a.post(
            f"/experiments/{exp}/runs", content=DEEP, headers=json_headers
        ),
        "a round beyond SQLite": lambda: a.post(
            f"/experiments/{exp}/runs",
            json={"outcomes": [{"case_id": "FS-0001", "arm": "b", "prediction": "x", "round": 10**30}]},
        ),
        "a comparison nested deep": lambda: a.post("/compare", content=DEEP, headers=json_headers),
        "a gate value of 400 digits": lambda: a.post(
            f"/experiments/{exp}/gate",
            json={"rules": [{"metric": "b.accuracy", "op": ">=", "value": 10**400}]},
        ),
        "a try nested deep": lambda: a.post("/try", content='{"input": ' + DEEP + "}", headers=json_headers),
        "a mapping nested deep": lambda: a.post(
            f"/datasets/{fp}/mapping", data={"mapping": "x: " + "[" * 5000 + "]" * 5000}
        ),
    }


@pytest.mark.parametrize(
    "attack",
    [
        "definition nested 100,000 deep",
        "definition in YAML nested deep",
        "a YAML alias bomb",
        "priority beyond SQLite",
        "timeout .inf",
        "outcomes nested deep",
        "a round beyond SQLite",
        "a comparison nested deep",
        "a gate value of 400 digits",
        "a try nested deep",
        "a mapping nested deep",
    ],
)
def test_deep_nesting_huge_numbers_and_aliases_answer_422_with_the_limit(svc, attack):
    problem = _refused(svc, _deep_and_huge(svc)[attack], 422)
    detail = problem["detail"]
    assert any(w in detail for w in ("levels", "beyond", "not a finite number", "alias")), detail


@pytest.mark.parametrize(
    "path",
    [
        f"/experiments/{10**30}",
        f"/experiments/{10**30}/results",
        "/experiments/1/results?offset=" + str(10**30),
        "/experiments/²",
    ],
)
def test_numbers_in_paths_and_queries_beyond_the_store_s_range_are_refused(svc, path):
    r = svc["attacker"].get(path)
    assert r.status_code in (404, 422), r.text


def test_a_budget_that_is_not_finite_is_refused(svc):
    _refused(svc, lambda: svc["attacker"].post(f"/experiments/{svc['exp']}/resume?budget=1e999"), 422)


def test_a_file_wider_than_excel_is_refused_without_mapping_it(svc, tmp_path):
    header = ",".join(["query", *(f"c{i}" for i in range(20_000))])
    row = ",".join(["q", *("x" for _ in range(20_000))])
    body = f"{header}\n{row}\n".encode()
    _refused(
        svc,
        lambda: svc["attacker"].post("/datasets", files={"file": ("wide.csv", body)}, data={"name": "w"}),
        422,
        "16,384",
    )


def test_an_experiment_over_the_run_limit_is_refused(svc):
    definition = {
        "name": "huge",
        "dataset": svc["dataset"],
        "rounds": 100,
        "arms": {f"a{i}": {"agent": "builtin"} for i in range(3)},
    }
    _refused(svc, lambda: svc["attacker"].post("/experiments", json=definition), 422, "5,000")


def _xlsx_bomb() -> bytes:
    """Four rows and one cell at the last column of the last row: a dense reader allocates 17 billion cells."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["query", "route"])
    for i in range(4):
        ws.append([f"打开空调 {i}", "fast"])
    ws["XFD1048576"] = "x"
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def _front_matter_bomb() -> bytes:
    """A skill whose SKILL.md front matter holds a billion-laughs alias chain (about 600 bytes)."""
    chain = "".join(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 9))
    text = f"---\nname: bomb\nl0: &l0 lol\n{chain}description: *l8\n---\n# Bomb\n"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("skill/SKILL.md", text)
    return buf.getvalue()


REGEX_CSV = ("query,route\n" + "a" * 40 + "!,fast\nb,slow\n").encode()
REGEX_MAPPING = json.dumps(
    {"fields": {"input": {"column": "query", "match": "^(a+)+$"}, "expected": "route"}}
)


def _bombs(svc: dict) -> dict:
    a = svc["attacker"]
    return {
        "an XLSX of 17 billion cells": lambda: a.post(
            "/datasets", files={"file": ("bomb.xlsx", _xlsx_bomb())}, data={"name": "bomb"}
        ),
        "a backtracking match": lambda: a.post(
            "/datasets", files={"file": ("r.csv", REGEX_CSV)}, data={"name": "rx", "mapping": REGEX_MAPPING}
        ),
        "a YAML alias bomb in a skill": lambda: a.post(
            "/skill-snapshots", files={"file": ("bomb.zip", _front_matter_bomb())}
        ),
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    "bomb", ["an XLSX of 17 billion cells", "a backtracking match", "a YAML alias bomb in a skill"]
)
def test_a_file_that_would_crash_or_hang_its_reader_ends_only_its_own_process(svc, bomb):
    server, victim = svc["server"], svc["victim"]
    before = store_state(server.store)
    answer: dict = {}
    sent = threading.Thread(target=lambda: answer.update(r=_bombs(svc)[bomb]()))
    sent.start()
    while not work_processes(server.proc.pid) and sent.is_alive():
        pass  # the condition: the bomb's work process is running (or it was answered already)
    answered = 0
    while sent.is_alive() and answered < 3:  # another caller is answered while the bomb is being read
        r = victim.get("/datasets")
        assert r.status_code == 200
        answered += 1
    sent.join()
    r = answer["r"]
    assert httpx.get(f"{server.url}/api/health").status_code == 200 and server.proc.poll() is None
    if r.status_code == 201:  # the reader itself refused the bomb and kept what it could (a warning)
        assert any("alias bomb" in w for w in r.json()["warnings"]), r.text
        return
    # Refused by the reader's own bounds or by the server's: never a crash, and nothing stored.
    assert r.status_code == 422, r.text
    assert r.json()["title"] in ("over this server's limits", "invalid input", "archive refused"), r.text
    assert store_state(server.store) == before


class _HeldHost(BaseHTTPRequestHandler):
    """A git host that answers nothing until released: a request that hangs, for as long as a test needs."""

    asked = threading.Event()
    release = threading.Event()

    def do_GET(self) -> None:
        type(self).asked.set()
        type(self).release.wait()
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def held_host():
    _HeldHost.asked.clear()
    _HeldHost.release.clear()
    host = ThreadingHTTPServer(("127.0.0.1", 0), _HeldHost)
    threading.Thread(target=host.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{host.server_address[1]}/repo.git"
    _HeldHost.release.set()
    host.shutdown()


def test_a_request_that_hangs_holds_one_slot_of_its_key_and_nothing_else(svc, held_host):
    attacker, victim = svc["attacker"], svc["victim"]
    answer: dict = {}
    sent = threading.Thread(
        target=lambda: answer.update(r=attacker.post("/skill-snapshots", json={"git": held_host}))
    )
    sent.start()
    assert _HeldHost.asked.wait(120), "the clone never reached the git host"
    try:
        second = attacker.post(
            "/datasets", files=demo_csv(), data={"name": "again", "mapping": json.dumps(DEMO_MAPPING)}
        )
        assert second.status_code == 429 and second.headers["Retry-After"], second.text
        theirs = victim.post(
            "/datasets", files=demo_csv(), data={"name": "mine", "mapping": json.dumps(DEMO_MAPPING)}
        )
        assert theirs.status_code == 201, theirs.text
        for _ in range(3):
            assert victim.get("/datasets").status_code == 200
        assert sent.is_alive()  # all of that while the attacker's request still hangs
    finally:
        _HeldHost.release.set()
        sent.join()
    assert answer["r"].status_code == 502, answer["r"].text


def _raw(
    server: LiveServer, key: str, method: str, path: str, length: int, upload: bool = False
) -> socket.socket:
    """A request whose headers say `length` bytes of body, of which only the first KB is sent (a JSON
    document, or with `upload` a multipart upload, which a framework reads before any route)."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=120)
    kind = "multipart/form-data; boundary=b0undary" if upload else "application/json"
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: {kind}\r\nContent-Length: {length}\r\n\r\n"
    )
    part = b'--b0undary\r\nContent-Disposition: form-data; name="file"; filename="x.csv"\r\n\r\n'
    sock.sendall(head.encode() + (part + b"q," * 512 if upload else b"[" * 1024))
    return sock


def test_a_body_without_a_valid_key_is_refused_before_it_is_read(svc):
    forged = svc["keys"]["attacker"][:-4] + "AAAA"  # a key id that exists, a secret that does not
    with _raw(svc["server"], forged, "POST", "/api/datasets", 10_000_000, upload=True) as sock:
        reply = sock.recv(4096).decode("latin-1")  # the answer comes before the body is complete
    assert reply.startswith("HTTP/1.1 401"), reply


def test_a_key_with_every_slot_in_flight_waits_and_other_keys_do_not(svc):
    server, keys = svc["server"], svc["keys"]
    slow = [_raw(server, keys["attacker"], "POST", "/api/experiments", 900_000) for _ in range(4)]
    try:
        for _ in range(1000):  # the condition: the server holds the four half-sent requests in flight
            for i, sock in enumerate(slow):
                if select.select([sock], [], [], 0)[0]:  # answered 429 (a probe held a slot): send again
                    sock.close()
                    slow[i] = _raw(server, keys["attacker"], "POST", "/api/experiments", 900_000)
            probe = svc["attacker"].get("/datasets")
            if probe.status_code != 200:
                break
        assert probe.status_code == 429 and probe.headers["Retry-After"], probe.text
        assert "in flight" in probe.json()["detail"]
        assert svc["victim"].get("/datasets").status_code == 200
    finally:
        for sock in slow:
            sock.close()
    for _ in range(100_000):  # the condition: the slots free as the server sees the connections closed
        if svc["attacker"].get("/datasets").status_code == 200:
            break
    else:
        pytest.fail("the key's slots stayed taken after its connections closed")

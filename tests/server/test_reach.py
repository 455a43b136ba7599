"""Nothing on the server is reachable through what a caller sends: no file, no environment variable,
no URL the operator did not allow, no other owner's mapping profile. A real server, real keys."""

from __future__ import annotations

import json
import time

import pytest

from abbench.runner import create_experiment
from abbench.store import open_store
from abbench.testing import ScriptedOpenAIServer
from tests.conftest import DEMO
from tests.server.live import LiveServer, api_client, keyed_store, store_state
from tests.server.uploads import DEMO_MAPPING, demo_csv, upload_demo

SECRET = "PRIVATE-KEY-MATERIAL-7f3a"
ENV_SECRET = "env-secret-value-91c2"
GOOD_KEY = "good-key-value-55e1"
HIDDEN_BASE = "http://internal-gateway.invalid:9999/v1"  # the server's $OPENAI_BASE_URL, never to be echoed


@pytest.fixture(scope="module")
def paths(tmp_path_factory):
    """A JSON file holding a secret, one that does not exist, a folder and a file that is not JSON."""
    root = tmp_path_factory.mktemp("server-files")
    (root / "secret.json").write_text(json.dumps({"alice": SECRET, "type": "object"}), encoding="utf-8")
    (root / "folder").mkdir()
    (root / "notjson.txt").write_text(f"root:x:0:0:{SECRET}\n", encoding="utf-8")
    return {
        "file": str(root / "secret.json"),
        "missing": str(root / "missing.json"),
        "folder": str(root / "folder"),
        "not json": str(root / "notjson.txt"),
    }


@pytest.fixture(scope="module")
def svc(tmp_path_factory, paths):
    """A server allowing openai arms and judges, one endpoint with the GOOD_KEY variable, the others none."""
    root = tmp_path_factory.mktemp("reach")
    allowed = ScriptedOpenAIServer(['{"prediction": "fast", "reason": "r"}'] * 50).__enter__()
    attacker = ScriptedOpenAIServer(['{"prediction": "fast"}'] * 50).__enter__()
    store_dir, keys = keyed_store(
        root, {"alice": ("alice", "read,run"), "bob": ("bob", "read,run"), "bob-reader": ("bob", "read")}
    )
    with open_store(store_dir) as s:
        ds = s.datasets.import_file(DEMO / "cases.csv", DEMO_MAPPING, name="demo")
        s.keys.grant("dataset", ds.fingerprint, "alice")
        base = {"dataset": ds.fingerprint, "cases": {"limit": 2}, "owner": "alice"}
        local = {  # made on the command line by alice: what her local user may use
            "gate-file": {**base, "name": "gate-file", "arms": {"a": {}}, "gate": paths["file"]},
            "command": {**base, "name": "command", "arms": {"a": {"agent": "command", "argv": ["true"]}}},
        }
        ids = {k: create_experiment(d, store=s, owner="alice").id for k, d in local.items()}
    server = LiveServer(
        store_dir,
        *("--agent", "builtin", "--agent", "openai", "--allow-judges", "--rate", "100000"),
        *("--endpoint", allowed.base_url, "--key-env", f"GOOD_KEY={allowed.base_url}"),
        log=root / "server.log",
        env={"SECRET_TOKEN_X": ENV_SECRET, "GOOD_KEY": GOOD_KEY, "OPENAI_BASE_URL": HIDDEN_BASE},
    ).start()

    alice, bob, reader = (api_client(server, keys[who], timeout=60) for who in ("alice", "bob", "bob-reader"))
    yield {
        "server": server,
        "alice": alice,
        "bob": bob,
        "reader": reader,
        "allowed": allowed,
        "attacker": attacker,
        "dataset": upload_demo(bob, "bd"),
        "local": ids,
    }
    for c in (alice, bob, reader):
        c.close()
    server.stop()
    allowed.__exit__(None, None, None)
    attacker.__exit__(None, None, None)


def _with_lookup(path: str) -> str:
    profile = {**DEMO_MAPPING, "name": None, "lookups": {"d": {"file": path}}}
    profile["fields"] = {**DEMO_MAPPING["fields"], "domain": {"lookup": "d", "key": "route"}}
    return json.dumps({k: v for k, v in profile.items() if v is not None})


def _definition(svc: dict, name: str, **extra) -> dict:
    return {
        "name": name,
        "dataset": svc["dataset"],
        "cases": {"limit": 1},
        "arms": {"a": {"agent": "builtin"}},
        **extra,
    }


# Every field that could name a server path, sent as each of the four kinds of path.
PROBES = {
    "import: lookups.file": lambda s, p: s["bob"].post(
        "/datasets", files=demo_csv(), data={"mapping": _with_lookup(p), "name": "x"}
    ),
    "preview: lookups.file": lambda s, p: s["reader"].post(
        f"/datasets/{s['dataset']}/mapping", data={"mapping": _with_lookup(p)}
    ),
    "import: mapping as a path": lambda s, p: s["bob"].post(
        "/datasets", files=demo_csv(), data={"mapping": p, "name": "x"}
    ),
    "preview: mapping as a path": lambda s, p: s["reader"].post(
        f"/datasets/{s['dataset']}/mapping", data={"mapping": p}
    ),
    "definition: dataset.file": lambda s, p: s["bob"].post(
        "/experiments", json={**_definition(s, "d"), "dataset": {"file": p}}
    ),
    "definition: gate": lambda s, p: s["bob"].post("/experiments", json=_definition(s, "g", gate=p)),
    "definition: json_schema schema": lambda s, p: s["bob"].post(
        "/experiments", json=_definition(s, "j", graders=[{"type": "json_schema", "schema": p}])
    ),
    "definition: openai prices": lambda s, p: s["bob"].post(
        "/experiments",
        json=_definition(
            s,
            "o",
            arms={"a": {"agent": "openai", "model": "m", "base_url": s["allowed"].base_url, "prices": p}},
        ),
    ),
    "definition: judge prices": lambda s, p: s["bob"].post(
        "/experiments",
        json=_definition(
            s,
            "jp",
            graders=[{"type": "llm_judge", "model": "m", "base_url": s["allowed"].base_url, "prices": p}],
        ),
    ),
    "definition: dask shared_store": lambda s, p: s["bob"].post(
        "/experiments", json=_definition(s, "k", executor="dask", dask={"local": 1, "shared_store": p})
    ),
    "definition: skill": lambda s, p: s["bob"].post(
        "/experiments", json=_definition(s, "s", arms={"a": {"skill": p}})
    ),
}


@pytest.mark.parametrize("field", list(PROBES))
def test_no_field_reads_a_server_file_and_every_path_gets_the_same_answer(svc, paths, field):
    before = store_state(svc["server"].store)
    answers = {}
    for kind, path in paths.items():
        r = PROBES[field](svc, path)
        assert SECRET not in r.text and "alice" not in r.text, (kind, r.text)
        problem = r.json()
        answers[kind] = (
            r.status_code,
            problem.get("title"),
            str(problem.get("detail")).replace(path, "<path>"),
        )
    assert len(set(answers.values())) == 1, answers  # no oracle: a file, a missing one, a folder, not JSON
    assert next(iter(answers.values()))[0] in (404, 422)
    assert store_state(svc["server"].store) == before


def test_an_experiment_s_own_gate_file_is_not_read_over_http(svc):
    alice = svc["alice"]
    exp = svc["local"]["gate-file"]
    for route in (f"/experiments/{exp}/gate", f"/experiments/{exp}/report"):
        r = alice.post(route, json={})
        assert r.status_code == 422 and SECRET not in r.text, r.text
        assert "names a file or folder" in r.json()["detail"]


def test_a_caller_cannot_send_a_server_variable_anywhere_it_chooses(svc):
    bob, attacker, allowed = svc["bob"], svc["attacker"], svc["allowed"]
    before = store_state(svc["server"].store)

    def arm(**settings):
        return _definition(svc, "steal", arms={"a": {"agent": "openai", "model": "m", **settings}})

    def judge(kind="llm_judge", **settings):
        return _definition(svc, "steal", graders=[{"type": kind, "model": "m", **settings}])

    refused = {
        "key to the caller's URL": arm(base_url=attacker.base_url, api_key_env="SECRET_TOKEN_X"),
        "no key, caller's URL": arm(base_url=attacker.base_url),
        "header to the caller's URL": arm(base_url=attacker.base_url, headers={"X-T": "${SECRET_TOKEN_X}"}),
        "another variable to the allowed URL": arm(base_url=allowed.base_url, api_key_env="SECRET_TOKEN_X"),
        "a header variable to the allowed URL": arm(
            base_url=allowed.base_url, headers={"X": "${SECRET_TOKEN_X}"}
        ),
        "the server's default endpoint": arm(),
        "a judge's key to the caller's URL": judge(base_url=attacker.base_url, api_key_env="SECRET_TOKEN_X"),
        "a pairwise judge's default endpoint": judge("pairwise_judge"),
    }
    for what, definition in refused.items():
        r = bob.post("/experiments", json=definition)
        assert r.status_code == 422, (what, r.text)
        assert ENV_SECRET not in r.text and HIDDEN_BASE not in r.text and "internal-gateway" not in r.text
    r = bob.post("/try", json={"input": "打开空调", "agent": "openai", "model": "m"})
    assert r.status_code == 422 and "internal-gateway" not in r.text, r.text
    assert attacker.requests == [] and allowed.requests == []  # refused before any request left
    assert store_state(svc["server"].store) == before


def test_an_allowed_key_goes_to_its_allowed_endpoint_only(svc):
    bob, allowed, attacker = svc["bob"], svc["allowed"], svc["attacker"]
    definition = _definition(
        svc,
        "allowed",
        arms={
            "a": {"agent": "openai", "model": "m", "base_url": allowed.base_url, "api_key_env": "GOOD_KEY"}
        },
    )
    created = bob.post("/experiments", json=definition)
    assert created.status_code == 201, created.text
    exp = created.json()["id"]
    assert bob.post(f"/experiments/{exp}/start").status_code == 202
    while bob.get(f"/experiments/{exp}").json()["status"] not in ("finished", "cancelled"):
        time.sleep(0.05)  # polls the condition: the experiment's status
    sent = [r.headers.get("authorization") for r in allowed.requests]
    assert sent and set(sent) == {f"Bearer {GOOD_KEY}"}
    assert attacker.requests == []


def test_a_stored_experiment_the_server_may_not_run_is_refused_before_anything_changes(svc):
    alice = svc["alice"]
    exp = svc["local"]["command"]
    before = store_state(svc["server"].store)
    for action in ("start", "resume"):  # retry and re-grade: tests/server/test_resume_only_own.py
        r = alice.post(f"/experiments/{exp}/{action}")
        assert r.status_code == 422 and "'command' agent" in r.json()["detail"], (action, r.text)
    assert store_state(svc["server"].store) == before


def test_another_owner_s_mapping_profile_is_missing_by_name_and_never_changed(svc):
    alice, bob, reader = svc["alice"], svc["bob"], svc["reader"]
    private = {**DEMO_MAPPING, "name": "alice-private-map", "label_map": {"秘密": "fast"}}
    mine = alice.post("/datasets", files=demo_csv(), data={"mapping": json.dumps(private), "name": "a1"})
    assert mine.status_code == 201 and mine.json()["label_map"] == {"秘密": "fast"}, mine.text
    before = store_state(svc["server"].store)
    theirs = bob.post("/datasets", files=demo_csv(), data={"mapping": "alice-private-map", "name": "b1"})
    nobody = bob.post("/datasets", files=demo_csv(), data={"mapping": "nobody-saved-this", "name": "b1"})
    assert theirs.status_code == nobody.status_code == 404, theirs.text
    assert theirs.json()["detail"].replace("alice-private-map", "X") == nobody.json()["detail"].replace(
        "nobody-saved-this", "X"
    )
    assert "秘密" not in theirs.text
    peek = reader.post(f"/datasets/{svc['dataset']}/mapping", data={"mapping": "alice-private-map@1"})
    assert peek.status_code == 404 and "秘密" not in peek.text
    assert store_state(svc["server"].store) == before
    # bob saving a profile of the same name is his own; alice's name still gives her profile
    own = {**DEMO_MAPPING, "name": "alice-private-map", "label_map": {"偷": "slow"}}
    assert (
        bob.post("/datasets", files=demo_csv(), data={"mapping": json.dumps(own), "name": "b2"}).status_code
        == 201
    )
    again = alice.post("/datasets", files=demo_csv(), data={"mapping": "alice-private-map", "name": "a2"})
    assert again.status_code == 201 and again.json()["label_map"] == {"秘密": "fast"}, again.text
    reused = bob.post("/datasets", files=demo_csv(), data={"mapping": "alice-private-map", "name": "b3"})
    assert reused.status_code == 201 and reused.json()["label_map"] == {"偷": "slow"}

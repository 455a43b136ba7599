"""The HTTP service end to end, against a real uvicorn server on 127.0.0.1: every route, two owners."""

from __future__ import annotations

import csv
import io
import json

import httpx
import pytest

from abbench.client import ServerError
from abbench.store import open_store
from tests.conftest import DEMO
from tests.server.live import LiveServer, keyed_store

MAPPING = (DEMO / "mapping-csv.yaml").read_text(encoding="utf-8")


def _definition(name: str, dataset: str, v1: str, v2: str, limit: int = 30) -> dict:
    return {
        "name": name,
        "dataset": dataset,
        "rounds": 2,
        "graders": ["label_match"],
        "cases": {"limit": limit},
        "arms": {"v1": {"agent": "builtin", "skill": v1}, "v2": {"agent": "builtin", "skill": v2}},
        "decision": {"baseline": "v1", "candidate": "v2"},
    }


@pytest.fixture(scope="module")
def done(alice):
    """Alice's dataset, two snapshots and a finished experiment (30 cases × 2 rounds × 2 arms)."""
    ds = alice.import_dataset(DEMO / "cases.csv", mapping=MAPPING, name="demo")
    v1 = alice.snapshot_skill(DEMO / "skills" / "fast-slow-routing-v1")
    v2 = alice.snapshot_skill(DEMO / "skills" / "fast-slow-routing-v2")
    exp = alice.create_experiment(_definition("routing", ds.fingerprint, v1.snapshot.hash, v2.snapshot.hash))
    alice.start(exp.id)
    finished = alice.wait(exp.id)
    return {"dataset": ds, "v1": v1, "v2": v2, "exp": alice.load_experiment(exp.id), "progress": finished}


def test_an_experiment_runs_in_the_server_and_every_read_route_answers(alice, done, tmp_path):
    exp, progress = done["exp"], done["progress"]
    assert exp.status == "finished" and exp.owner == "alice"
    assert progress.total == 120 and progress.done == 120
    page = alice.results(exp.id, arm="v2", limit=7, offset=5)
    assert page["total"] == 60 and len(page["runs"]) == 7
    assert {r["arm"] for r in page["runs"]} == {"v2"}
    assert {r["started_by"] for r in page["runs"]} == {"ci/job-7"}  # the actor named, not the service account
    every = alice.results(exp.id, limit=1000)["runs"]
    assert len({(r["arm"], r["case_id"], r["round"]) for r in every}) == 120
    passed = alice.results(exp.id, state="pass", limit=1000)
    assert passed["total"] == sum(r["state"] == "pass" for r in every)
    comparison = alice.compare_arms(exp.id, "v1", "v2")
    assert comparison.n_cases == 30, comparison
    moved = alice.results(exp.id, moved="moved", limit=1000)["runs"]
    assert {r["case_id"] for r in moved} <= {r["case_id"] for r in every}
    gate = alice.evaluate_gate(
        exp.id, [{"metric": "b.accuracy", "op": ">=", "value": 0.0, "severity": "block"}]
    )
    assert gate.passed, gate.outcome
    out = alice.export(exp.id, "runs", "csv", tmp_path / "runs.csv").path
    rows = list(csv.DictReader(io.StringIO(out.read_text(encoding="utf-8-sig"))))
    assert len(rows) == 120
    review = alice.add_review(exp.id, every[0]["case_id"], "gold_correct", "checked by hand")
    assert review.verdict == "gold_correct"


def test_results_number_rounds_from_1_as_every_view_does_and_filter_by_them(live, alice, done):
    exp = done["exp"]  # 2 rounds
    every = alice.results(exp.id, limit=1000)["runs"]
    with open_store(live[0].store) as s:  # the store counts from 0, read as another process would
        stored = {r.id: r.round for r in s.runs.records(exp.id)}
    assert sorted({r["round"] for r in every}) == [1, 2]
    assert all(r["round"] == stored[r["run_id"]] + 1 for r in every)
    second = alice.results(exp.id, round=2, limit=1000)
    assert second["total"] == 60 and {r["round"] for r in second["runs"]} == {2}
    assert {r["run_id"] for r in second["runs"]} == {i for i, n in stored.items() if n == 1}
    assert alice.results(exp.id, round=1, arm="v1")["total"] == 30
    for bad, words in (
        (0, "round=0: rounds are numbered from 1; experiment 'routing' has rounds 1 to 2"),
        (3, "round=3: rounds are numbered from 1"),
        (-1, "round=-1: rounds are numbered from 1"),
    ):
        with pytest.raises(ServerError) as refused:
            alice.results(exp.id, round=bad)
        assert refused.value.status == 422 and words in refused.value.problem["detail"], refused.value.problem


def test_the_experiment_events_stream_ends_with_its_state(live, done):
    server, keys = live
    headers = {"Authorization": f"Bearer {keys['alice']}"}
    with httpx.stream("GET", f"{server.url}/api/experiments/{done['exp'].id}/events", headers=headers) as r:
        assert r.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in r.iter_lines() if line.startswith("event:")]
    assert lines[0] == "event: state" and lines[-1] == "event: end"


def test_another_owner_sees_nothing_and_gets_the_404_of_a_missing_object(alice, bob, done):
    exp_id, fp = done["exp"].id, done["dataset"].fingerprint
    assert bob.list_datasets() == [] and bob.list_experiments() == []
    assert bob.http.get("/api/skill-snapshots").json() == []
    routes = [
        ("GET", f"/api/experiments/{exp_id}", None),
        ("GET", f"/api/experiments/{exp_id}/results", None),
        ("GET", f"/api/experiments/{exp_id}/failures", None),
        ("GET", f"/api/experiments/{exp_id}/events", None),
        ("GET", f"/api/experiments/{exp_id}/export", None),
        ("GET", f"/api/experiments/{exp_id}/report", None),
        ("POST", f"/api/experiments/{exp_id}/start", None),
        ("POST", f"/api/experiments/{exp_id}/pause", None),
        ("POST", f"/api/experiments/{exp_id}/resume", None),
        ("POST", f"/api/experiments/{exp_id}/cancel", None),
        ("POST", f"/api/experiments/{exp_id}/retry?failed=true", None),
        ("POST", f"/api/experiments/{exp_id}/regrade", None),
        ("POST", f"/api/experiments/{exp_id}/gate", {}),
        ("POST", f"/api/experiments/{exp_id}/report", {}),
        ("POST", f"/api/experiments/{exp_id}/reviews", {"case_id": "FS-0001", "verdict": "unsure"}),
        ("POST", "/api/compare", {"experiment": str(exp_id)}),
        ("GET", f"/api/datasets/{fp}", None),
    ]
    missing = 99999
    for method, path, body in routes:
        theirs = bob.http.request(method, path, json=body)
        gone = (
            {k: (str(missing) if v == str(exp_id) else v) for k, v in (body or {}).items()} if body else body
        )
        absent = bob.http.request(
            method, path.replace(f"/{exp_id}", f"/{missing}").replace(fp, "nope@000000000000"), json=gone
        )
        assert theirs.status_code == 404 == absent.status_code, (path, theirs.text)
        a, b = theirs.json(), absent.json()
        assert a["title"] == b["title"] and a.keys() == b.keys()
        assert a["detail"].replace(str(exp_id), "X").replace(fp, "X") == b["detail"].replace(
            str(missing), "X"
        ).replace("nope@000000000000", "X")
    # bob cannot build on alice's dataset or snapshots either
    with pytest.raises(ServerError) as refused:
        bob.create_experiment(_definition("theft", fp, done["v1"].snapshot.hash, done["v2"].snapshot.hash))
    assert refused.value.status == 404
    # alice's objects are untouched
    assert alice.load_experiment(exp_id).status == "finished"


def test_compare_takes_a_grader_of_the_experiment_and_refuses_another(alice, done):
    exp_id = done["exp"].id
    own = alice.compare_arms(exp_id, "v1", "v2")
    by = alice.compare_arms(exp_id, "v1", "v2", grader="label_match")
    # its one grader decides every run: the view is the runs' own verdicts, and says whose it is
    assert by.grader == "label_match" and own.grader is None
    assert (by.n_cases, by.value_b.value, by.verdict.p_value) == (
        own.n_cases,
        own.value_b.value,
        own.verdict.p_value,
    )
    for grader in ("x" * 201, ""):  # bounded before anything is read
        with pytest.raises(ServerError) as refused:
            alice.compare_arms(exp_id, "v1", "v2", grader=grader)
        assert refused.value.status == 422, grader
    with pytest.raises(ServerError) as refused:
        alice.compare_arms(exp_id, "v1", "v2", grader="judge")
    assert refused.value.status == 422
    assert "has no grader 'judge'; its graders: label_match" in refused.value.problem["detail"]
    # a report is refused before a kernel starts
    r = alice.http.post(f"/api/experiments/{exp_id}/report", json={"grader": "judge"})
    assert r.status_code == 422 and "its graders: label_match" in r.json()["detail"]


def test_the_same_bytes_from_two_owners_are_shared_without_revealing_the_first(alice, bob, done):
    ds = bob.import_dataset(DEMO / "cases.csv", mapping=MAPPING, name="demo")
    assert ds.fingerprint == done["dataset"].fingerprint and ds.created_by is None
    assert [d.fingerprint for d in bob.list_datasets()] == [ds.fingerprint]
    assert bob.list_experiments() == []
    assert [d.fingerprint for d in alice.list_datasets()] == [ds.fingerprint]


def test_experiments_on_different_datasets_are_refused_409_with_both_fingerprints(alice, done, tmp_path):
    lines = (DEMO / "cases.csv").read_text(encoding="utf-8-sig").splitlines()
    small = tmp_path / "small.csv"
    small.write_text("\n".join(lines[:41]) + "\n", encoding="utf-8")
    other = alice.import_dataset(small, mapping=MAPPING, name="demo-small")
    exp2 = alice.create_experiment(
        _definition("routing-small", other.fingerprint, done["v1"].snapshot.hash, done["v2"].snapshot.hash)
    )
    with pytest.raises(ServerError) as refused:
        alice.compare_experiments(done["exp"].id, exp2.id)
    assert refused.value.status == 409
    assert refused.value.problem["fingerprints"] == [done["dataset"].fingerprint, other.fingerprint]


def test_an_invalid_file_answers_422_with_the_report_and_stores_nothing(alice, done, tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text(
        "case_id,query,route,domain,history,vehicle_state,request_id\n"
        "A1,hello,fast,x,,,r1\nA1,again,slow,x,,,r2\nA3,,banana,x,,,r3\n",
        encoding="utf-8",
    )
    before = alice.list_datasets()
    with pytest.raises(ServerError) as refused:
        alice.import_dataset(bad, mapping=MAPPING, name="bad")
    assert refused.value.status == 422
    report = refused.value.problem["report"]
    assert report["n_invalid"] >= 1 or report["problems"], report
    assert alice.list_datasets() == before


def test_scopes_are_checked_per_route(live, done):
    server, keys = live
    carol = {"Authorization": f"Bearer {keys['carol']}"}
    r = httpx.post(f"{server.url}/api/experiments", headers=carol, content=b"name: x")
    assert r.status_code == 403 and "run" in r.json()["detail"]
    assert httpx.get(f"{server.url}/api/experiments", headers=carol).json() == []
    assert httpx.get(f"{server.url}/api/experiments").status_code == 401
    wrong = {"Authorization": "Bearer abk_000000000000_" + "x" * 40}
    assert httpx.get(f"{server.url}/api/experiments", headers=wrong).status_code == 401


def test_a_key_over_its_rate_gets_429_with_retry_after(tmp_path):
    # a rate of 2 a minute: the third request comes long before a token is back (one in 30 s), however
    # slow the machine — 130 requests against 120 a minute tripped only when they took under 5 s
    store_dir, keys = keyed_store(tmp_path, {"dave": ("dave", "read")})
    server = LiveServer(store_dir, "--rate", "2", log=tmp_path / "server.log").start()
    try:
        headers = {"Authorization": f"Bearer {keys['dave']}"}
        with httpx.Client(base_url=server.url, headers=headers) as c:
            codes = [c.get("/api/datasets") for _ in range(3)]
    finally:
        server.stop()
    assert [r.status_code for r in codes[:2]] == [200, 200]
    limited = codes[2]
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
    assert limited.headers["content-type"].startswith("application/problem+json")


def test_a_definition_naming_server_files_or_unsafe_agents_is_refused(alice, done):
    fp = done["dataset"].fingerprint
    cases = [
        {"name": "f", "dataset": {"file": "/etc/passwd"}, "arms": {"a": {"agent": "builtin"}}},
        {
            "name": "c",
            "dataset": fp,
            "arms": {"a": {"agent": "command", "params": {"argv": ["sh", "-c", "id"]}}},
        },
        {"name": "p", "dataset": fp, "arms": {"a": {"agent": "builtin", "skill": "/etc"}}},
        {"name": "o", "dataset": fp, "owner": "bob", "arms": {"a": {"agent": "builtin"}}},
        {"name": "g", "dataset": fp, "graders": ["os:system"], "arms": {"a": {"agent": "builtin"}}},
    ]
    for definition in cases:
        with pytest.raises(ServerError) as refused:
            alice.create_experiment(definition)
        assert refused.value.status in (404, 422), definition


def test_openapi_and_docs_are_served_without_a_cdn(live):
    server, _ = live
    schema = httpx.get(f"{server.url}/openapi.json").json()
    assert "/api/experiments/{ref}/results" in schema["paths"]
    docs = httpx.get(f"{server.url}/docs").text
    assert "/docs-assets/swagger-ui-bundle.js" in docs and "cdn" not in docs.lower()
    js = httpx.get(f"{server.url}/docs-assets/swagger-ui-bundle.js")
    assert js.status_code == 200 and len(js.content) > 100_000


def test_try_runs_one_input_and_keeps_it(alice, done):
    result = alice.try_input(
        "导航去公司", skill=done["v2"].snapshot.hash, expected="slow", labels=["fast", "slow"]
    )
    assert result["state"] in ("pass", "fail") and result["experiment"]["owner"] == "alice"
    assert result["experiment_id"] not in [e.id for e in alice.list_experiments()]
    assert result["experiment_id"] in [e.id for e in alice.list_experiments(include_tries=True)]


@pytest.mark.slow
def test_a_report_renders_on_the_server_and_downloads(alice, done, tmp_path):
    page = alice.render_report(done["exp"].id, tmp_path / "report.html")
    html = page.html_path.read_text(encoding="utf-8")
    assert "<html" in html.lower() and "routing" in html


def test_controls_pause_resume_cancel_retry_regrade_over_http(alice, done):
    defn = _definition(
        "controls", done["dataset"].fingerprint, done["v1"].snapshot.hash, done["v2"].snapshot.hash, limit=5
    )
    exp = alice.create_experiment(defn)
    assert alice.pause_experiment(exp.id) is False  # no runner holds it: paused at once
    assert alice.load_experiment(exp.id).status == "paused"
    assert alice.resume_experiment(exp.id) is True  # queued: the server's pool goes on
    assert alice.wait(exp.id).status == "finished"
    exp2 = alice.create_experiment({**defn, "name": "controls-2"})
    assert alice.cancel_experiment(exp2.id) == 20
    assert alice.load_experiment(exp2.id).status == "cancelled"
    assert {r["state"] for r in alice.results(exp2.id, limit=100)["runs"]} == {"cancelled"}
    retried = alice.retry(exp2.id, cancelled=True)
    assert retried["reset"] == 20 and retried["queued"] is True
    assert alice.wait(exp2.id).status == "finished"
    regraded = alice.regrade(exp2.id)
    assert regraded["queued"] is True
    final = alice.wait(exp2.id)
    assert final.status == "finished" and final.done == 20


def test_a_mapping_preview_reads_the_stored_file_and_imports_nothing(alice, done):
    before = alice.list_datasets()
    preview = alice._call(
        "POST", f"/datasets/{done['dataset'].fingerprint}/mapping", data={"mapping": MAPPING, "n": "3"}
    )
    assert len(preview["cases"]) == 3 and preview["cases"][0]["case_id"] == "FS-0001"
    assert alice.list_datasets() == before


def test_cors_is_off(live):
    server, _ = live
    r = httpx.options(
        f"{server.url}/api/experiments",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "GET"},
    )
    assert not any(h.lower().startswith("access-control-") for h in r.headers)


def test_an_upload_takes_the_local_import_s_read_options_such_as_json_splits(alice, done, tmp_path):
    # The ATIS trial: a Rasa NLU file keeps its rows two levels down; the remote import had no --split.
    doc = {"rasa_nlu_data": {"common_examples": [{"text": f"fly {i}", "intent": "flight"} for i in range(4)]}}
    doc["rasa_nlu_data"]["regex_features"] = []
    path = tmp_path / "rasa.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    ds = alice.import_dataset(path, name="rasa", splits=["rasa_nlu_data.common_examples"])
    assert ds.n_cases == 4, ds
    with pytest.raises(ServerError) as refused:
        alice.import_dataset(path, name="rasa-bad", splits=["nope"])
    assert refused.value.status == 422
    assert "no split 'nope'; its splits: rasa_nlu_data.common_examples (4)" in str(refused.value)


def test_runs_executed_elsewhere_are_recorded_graded_and_idempotent(alice, bob, done):
    cases = [r["case_id"] for r in alice.results(done["exp"].id, limit=200)["runs"]][:3]
    cases = list(dict.fromkeys(cases))
    definition = {
        "name": "recorded-elsewhere",
        "dataset": done["dataset"].fingerprint,
        "graders": ["label_match"],
        "cases": {"ids": cases},
        "arms": {"ci-old": {"agent": "external"}, "ci-new": {"agent": "external"}},
    }
    exp = alice.create_experiment(definition)
    outcomes = [
        {"case_id": c, "arm": arm, "round": 1, "prediction": "fast", "latency_ms": 12.5, "cost": 0.001}
        for c in cases
        for arm in ("ci-old", "ci-new")
    ]
    first = alice.record_runs(exp.id, outcomes)
    assert (first.recorded, first.unchanged) == (2 * len(cases), 0), first
    again = alice.record_runs(exp.id, outcomes)  # the same outcomes again: a no-op
    assert (again.recorded, again.unchanged) == (0, 2 * len(cases)), again
    runs = alice.results(exp.id, limit=50)["runs"]
    assert len(runs) == 2 * len(cases) and {r["state"] for r in runs} <= {"pass", "fail"}, runs  # graded
    with pytest.raises(ServerError) as refused:
        alice.record_runs(exp.id, [{"case_id": cases[0], "arm": "nope", "round": 1, "prediction": "x"}])
    assert refused.value.status == 422 and "nope" in str(refused.value.problem), refused.value.problem
    with pytest.raises(ServerError) as hidden:
        bob.record_runs(exp.id, outcomes)
    assert hidden.value.status == 404


def test_an_empty_or_odd_experiment_reference_is_refused_plainly(alice, done):
    """`abbench status "$EXP"` with an empty $EXP (a failed create) printed a traceback: GET /experiments/
    answered a redirect the client handed on as if it were the experiment."""
    from abbench.errors import UsageError

    for call in (alice.load_experiment, alice.start, alice.results):
        with pytest.raises(UsageError, match="no experiment given"):
            call("  ")
    with pytest.raises(ServerError) as missing:
        alice.load_experiment("no such experiment?")  # quoted: a name is one path segment, never a query
    assert missing.value.status == 404
    assert alice.load_experiment(done["exp"].name).id == done["exp"].id

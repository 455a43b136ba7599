"""One command set over one backend: `status`, `pause`, `cancel`, `resume` and `export` print the same
text on a local store and with ``--server`` (a real `abbench serve` of that store), and the client hands
back the library's typed records."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest
from click.testing import CliRunner

from abbench.cli import cli
from abbench.client import Client
from abbench.dataset import DatasetInfo
from abbench.export import ExportResult
from abbench.runner import Progress, experiment_status
from abbench.store import Experiment, Failures, open_store
from tests.conftest import DEMO
from tests.server.live import LiveServer, keyed_store

pytestmark = pytest.mark.slow  # a server, and an experiment run in it


def refuses_some(task):
    """A python agent that gives no answer for every third case (an execution failure), else ``fast``."""
    if int(task.case.case_id[-1]) % 3 == 0:
        raise RuntimeError(f"no answer for {task.case.case_id}")
    return "fast"


def _spec(name: str, fingerprint: str) -> dict:
    agent = {"agent": "python", "function": "tests.server.test_one_command_set:refuses_some"}
    return {
        "name": name,
        "dataset": fingerprint,
        "cases": {"limit": 6},
        "graders": ["label_match"],
        "arms": {"a": agent, "b": {"agent": "python", "function": "tests.blocking:gated"}},
    }


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """A server over a store holding one finished experiment with failures and four not started."""
    root = tmp_path_factory.mktemp("both")
    store_dir, keys = keyed_store(root, {"alice": ("alice", "read,run")})
    key = keys["alice"]
    server = LiveServer(store_dir, "--agent", "python", log=root / "server.log").start()
    try:
        with Client(server.url, key) as c:
            ds = c.import_dataset(DEMO / "cases.csv", (DEMO / "mapping-csv.yaml").read_text(encoding="utf-8"))
            done = c.create_experiment(_spec("both-ways", ds.fingerprint))
            c.start(done.id)
            c.wait(done.id, poll=0.1)
            for i in range(4):
                c.create_experiment(_spec(f"fresh-{i}", ds.fingerprint))
        yield server, key, store_dir
    finally:
        server.stop()


def _invoke(served, how: str, folder, *args: str) -> str:
    """The output of ``abbench ARGS`` run in `folder` on the store (`how` "local") or its server ("server")."""
    server, key, store_dir = served
    target = ["--store", str(store_dir)] if how == "local" else ["--server", server.url]
    folder.mkdir(exist_ok=True)
    runner = CliRunner(env={"ABBENCH_KEY": key, "ABBENCH_SERVER": None, "ABBENCH_STORE": None})
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        result = runner.invoke(cli, [*target, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    if how == "server":
        assert not (folder / ".abbench").exists()  # nothing ran on a local store
    return result.output.replace(str(folder), "HERE")


def _both(served, tmp_path, *args: str, where: str = "") -> tuple[str, str]:
    """The output of ``abbench ARGS`` on the store, and with ``--server`` on its server (each command in a
    folder of its own, its name made the same in both)."""
    local, remote = (_invoke(served, how, tmp_path / f"{how}{where}", *args) for how in ("local", "server"))
    return local, remote


def test_status_says_the_same_on_a_store_and_on_its_server(served, tmp_path):
    local, remote = _both(served, tmp_path, "status", "both-ways")
    assert local == remote
    # what the local status shows, all of it there over HTTP: counts per arm, where it ran, the failures
    assert re.search(
        r"^both-ways \(#1\): finished, 12/12 done: right \d+ wrong (\d+) \(by label_match \1\) execution failed 2$",
        local,
        re.M,
    )
    assert re.search(r"^  (last executed|executes) locally", local, re.M)
    assert "failures: 2 run(s) got no verdict" in local and "RuntimeError" not in local.split("failures:")[0]
    assert "  re-run them: abbench retry both-ways --failed" in local
    local_json, remote_json = _both(served, tmp_path, "status", "both-ways", "--json", where="-json")
    assert json.loads(local_json) == json.loads(remote_json)


def test_pause_and_cancel_say_the_same_on_a_store_and_on_its_server(served, tmp_path):
    local, remote = _both(served, tmp_path, "pause", "both-ways")
    assert local == remote == "#1 both-ways is finished; nothing to pause\n"
    local, remote = _both(served, tmp_path, "pause", "fresh-0", where="-p")
    assert local == remote == "pause asked for #2 fresh-0 (no process is running it now)\n"
    local, remote = _both(served, tmp_path, "status", "fresh-0", where="-s")
    assert local == remote and local.startswith("fresh-0 (#2): ") and "0/12 done" in local
    server, key, store_dir = served
    said = {}
    for how, name, target in (
        ("local", "fresh-1", ["--store", str(store_dir)]),
        ("server", "fresh-2", ["--server", server.url]),
    ):
        runner = CliRunner(env={"ABBENCH_KEY": key, "ABBENCH_SERVER": None, "ABBENCH_STORE": None})
        result = runner.invoke(cli, [*target, "cancel", name], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        said[how] = result.output
    assert said["local"] == "cancel asked for #3 fresh-1: 12 pending runs cancelled\n"
    assert said["server"] == "cancel asked for #4 fresh-2: 12 pending runs cancelled\n"


def test_export_writes_the_same_file_and_says_the_same(served, tmp_path):
    for args in (
        ("export", "both-ways"),
        ("export", "both-ways", "--what", "grades", "--format", "jsonl"),
        ("export", "both-ways", "--what", "comparison", "--arms", "a", "b"),
    ):
        where = "-" + "-".join(args[2:]).replace("-", "")
        local, remote = _both(served, tmp_path, *args, where=where)
        assert local == remote and local.startswith("wrote "), (local, remote)
        written = re.search(r"to HERE/(\S+) ", local).group(1)
        assert (tmp_path / f"local{where}" / written).read_bytes() == (
            tmp_path / f"server{where}" / written
        ).read_bytes()


def test_resume_over_the_server_goes_on_in_its_pool(served, tmp_path):
    """Locally `resume` of an experiment no process holds says to run it; the server's pool runs it."""
    server, key, store_dir = served
    runner = CliRunner(env={"ABBENCH_KEY": key, "ABBENCH_SERVER": None, "ABBENCH_STORE": None})
    local = runner.invoke(cli, ["--store", str(store_dir), "resume", "fresh-3"], catch_exceptions=False)
    assert local.output == (
        "resume asked for #5 fresh-3; no process is running it: continue with `abbench run fresh-3`\n"
    )
    remote = runner.invoke(cli, ["--server", server.url, "resume", "fresh-3"], catch_exceptions=False)
    assert remote.exit_code == 0 and remote.output == "resume asked for #5 fresh-3\n"
    with Client(server.url, key) as c:
        assert c.wait("fresh-3", poll=0.1).done == 12
    refused = runner.invoke(cli, ["--server", server.url, "resume", "fresh-3", "--budget", "1", "--arm", "a"])
    assert refused.exit_code == 2 and "--max-tokens and --arm work on a local store" in refused.output


def test_the_client_returns_the_library_s_records(served):
    server, key, store_dir = served
    with Client(server.url, key) as c, open_store(store_dir) as s:
        exp = c.load_experiment("both-ways")
        assert isinstance(exp, Experiment)
        stored = s.experiments.get("both-ways")
        hidden = {"profile_id", "created_by", "definition", "dataset_id", "settings"}
        for f in dataclasses.fields(Experiment):
            if f.name not in hidden:
                assert getattr(exp, f.name) == getattr(stored, f.name), f.name
        assert exp.settings == stored.settings and exp.spec.arms.keys() == stored.spec.arms.keys()
        progress = c.experiment_status("both-ways")
        assert isinstance(progress, Progress)
        assert progress.as_dict() == experiment_status(stored.id, store=s).as_dict()
        failures = c.failures(exp.id, limit=1)
        assert isinstance(failures, Failures) and failures == s.runs.failures(stored.id, limit=1)
        assert [e.name for e in c.list_experiments()] == [
            "fresh-3",
            "fresh-2",
            "fresh-1",
            "fresh-0",
            "both-ways",
        ]
        assert c.command_handle(exp) == "both-ways"
        datasets = c.list_datasets()
        assert datasets and all(isinstance(d, DatasetInfo) for d in datasets)
        kept = s.datasets.get(datasets[0].fingerprint)
        for f in dataclasses.fields(DatasetInfo):
            if f.name not in {"id", "created_by", "upload_path"}:  # the server's own, not shown
                assert getattr(datasets[0], f.name) == getattr(kept, f.name), f.name
        assert DatasetInfo.from_dict(kept.to_dict()) == kept


def test_records_read_back_what_they_wrote(tmp_path):
    """`from_dict` of `as_dict` is the record itself (the shapes the server sends)."""
    from abbench.report import ReportResult
    from abbench.runner import ArmProgress, HaltReason, PauseReason, RecordSummary, RunSummary
    from abbench.store import Review

    arms = (
        ArmProgress("a", {"pass": 3, "fail": 4, "pending": 1}, {"execution_failed": 2, "grading_failed": 1}),
        ArmProgress("b", {"pass": 5, "cancelled": 2}, {"scored": 2}),
    )
    pause = PauseReason("budget reached", None, 5.02, 5.0, None, None, 7, 20)
    halt = HaltReason(
        why="stopped", signal="SIGTERM", origin="cli", pid=42, host="h", at="2026-12-07T01:00:00Z"
    )
    p = Progress("x", 7, "paused", arms, pairs_total=3, pairs_done=1, pause_reason=pause, notes=("n",),
                 halt_reason=halt)  # fmt: skip
    again = Progress.from_dict(json.loads(json.dumps(p.as_dict())))
    assert again.as_dict() == p.as_dict() and again.arms == p.arms and again.status_text == p.status_text
    result = ExportResult(tmp_path / "x.csv", "runs", "csv", 3, ("a", "b"), 10, 0.5, ("note",))
    assert ExportResult.from_dict(result.as_dict()) == result
    summary = RunSummary(
        "x", 7, "paused", 3, 2, 1, 0, 1.5, p, execution_failed=1, pause_reason=pause, notes=("n",)
    )
    assert RunSummary.from_dict(json.loads(json.dumps(summary.as_dict()))).as_dict() == summary.as_dict()
    recorded = RecordSummary("x", 7, 3, 1, (4, 5, 6), summary)
    assert RecordSummary.from_dict(recorded.as_dict()).as_dict() == recorded.as_dict()
    page = ReportResult(tmp_path / "p.html", tmp_path / "p.ipynb", 10, 1.5, "#7 x", "x", 3, 1.0, "pass", "h")
    assert ReportResult.from_dict(page.as_dict()) == page
    review = Review(3, 7, "c001", "b", 12, "gold_correct", "by hand", "ann", "2026-12-07T01:00:00Z")
    assert Review.from_dict(review.as_dict()) == review


def _definition(folder, name: str, fingerprint: str) -> str:
    path = folder / f"{name}.yaml"
    path.write_text(json.dumps(_spec(name, fingerprint)), encoding="utf-8")
    return str(path)


def test_create_says_the_same_on_a_store_and_on_its_server(served, tmp_path):
    server, key, _ = served
    with Client(server.url, key) as c:
        fingerprint = c.load_experiment("both-ways").dataset
    said = {}
    for how in ("local", "server"):
        said[how] = _invoke(
            served, how, tmp_path / how, "create", _definition(tmp_path, f"made-{how}", fingerprint)
        )
        quiet = _invoke(
            served, how, tmp_path / how, "create", "-q", _definition(tmp_path, f"id-{how}", fingerprint)
        )
        assert re.fullmatch(r"\d+\n", quiet), quiet  # a script's EXP=$(abbench create -q FILE)
    local, remote = (re.sub(rf"#\d+ made-{how} ", "#N made-X ", said[how]) for how in ("local", "server"))
    assert (
        local
        == remote
        == f"created #N made-X on {fingerprint}: 12 runs over arms a (python, no skill), b (python, no skill)\n"
    )


def test_import_prints_the_same_record_on_a_store_and_on_its_server(served, tmp_path):
    """The server's import is told as the local one: the same JSON record, and each line the server's
    answer holds as the local command words it (the counts of stored labels and domains are local)."""
    args = ("import", str(DEMO / "cases.csv"), "--mapping", str(DEMO / "mapping-csv.yaml"), "--name")
    local = json.loads(_invoke(served, "local", tmp_path / "jl", *args, "copy-local", "--json"))
    remote = json.loads(_invoke(served, "server", tmp_path / "jr", *args, "copy-remote", "--json"))
    assert set(remote) <= set(local) and local.keys() - remote.keys() == {
        "labels",
        "domains",
        "label_conflicts",
    }
    for key in ("n_cases", "content_hash", "read_options", "validation", "expected_kind", "label_set"):
        assert remote[key] == local[key], key

    def text(how: str, name: str) -> str:
        out = _invoke(served, how, tmp_path / how, *args, name).replace(name, "X")
        return re.sub(r"(?m)^(  mapping +\S+)@\d+$", r"\1@V", out)  # each owner saves its own versions

    local_text, remote_text = text("local", "copy-local"), text("server", "copy-remote")
    lines = [line for line in remote_text.splitlines() if not line.startswith("  source")]
    assert lines and all(line in local_text.splitlines() for line in lines[1:]), (local_text, remote_text)
    assert re.match(r"already imported: X@[0-9a-f]{12} holds the same \d+ cases", remote_text), remote_text


def test_report_says_the_same_on_a_store_and_on_its_server(served, tmp_path):
    """The page is written here either way, told in the same words (its notebook stays on the server)."""

    def said(how: str) -> str:
        out = _invoke(served, how, tmp_path / how, "report", "both-ways", "--out", "page.html")
        assert (tmp_path / how / "page.html").read_text(encoding="utf-8").lower().startswith("<!doctype html")
        return re.sub(r"\([\d.]+ [KMG]?B, (\d+) figures\) in [\d.]+ s", r"(SIZE, \1 figures) in S", out)

    local, remote = said("local"), said("server")
    assert local.startswith("wrote HERE/page.html (SIZE, ") and "\ndecision: " in local, local
    assert remote == local.replace("executed notebook: HERE/page.ipynb\n", ""), (local, remote)


def _said(served, how: str, folder, *args: str) -> tuple[int, str]:
    """The exit code and output (stderr too) of ``abbench ARGS`` in `folder`, on the store or its server."""
    server, key, store_dir = served
    target = ["--store", str(store_dir)] if how == "local" else ["--server", server.url]
    folder.mkdir(exist_ok=True)
    env = {"ABBENCH_KEY": key, "ABBENCH_SERVER": None, "ABBENCH_STORE": None, "NO_COLOR": "1"}
    runner = CliRunner(env={**env, "ABBENCH_USER": "alice"})  # what is made here is the key owner's too
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(folder)
        result = runner.invoke(cli, [*target, *args], catch_exceptions=False)
    return result.exit_code, result.output.replace(str(folder), "HERE")


@pytest.mark.parametrize(
    "args",
    [
        ("compare", "both-ways"),
        ("compare", "both-ways", "--arms", "b", "a", "--by-domain", "--margin", "0.1", "--limit", "2"),
        ("compare", "both-ways", "--grader", "label_match", "--no-bootstrap", "--details"),
        ("compare", "both-ways", "--json"),
        ("gate", "both-ways"),
        ("gate", "both-ways", "--arms", "b", "a", "--allow-inconclusive"),
        ("gate", "both-ways", "--rules", "GATE"),
        ("gate", "both-ways", "--rules", "GATE", "--json"),
        # what goes wrong is said in the same words, with the same exit code
        ("compare", "both-ways", "--arms", "a", "bb"),
        ("compare", "no-such-experiment"),
        ("gate", "both-ways", "--rules", "BAD"),
        ("gate", "both-ways", "--rules", "missing.yaml"),
        ("gate", "both-ways", "--arms", "a", "nope"),
    ],
)
def test_compare_and_gate_say_the_same_on_a_store_and_on_its_server(served, tmp_path, args):
    gate = tmp_path / "gate.yaml"
    gate.write_text(
        "baseline: a\ncandidate: b\nrules:\n  - {metric: accuracy, op: '>=', value: 0.5}\n"
        "  - {metric: regressed, op: '<=', value: 0, severity: warn}\n",
        encoding="utf-8",
    )
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "rules:\n  - {metric: accuracy, op: '>=', value: 0.5}\n  - {metric: nope, op: '>=', value: 1}\n"
    )
    args = tuple({"GATE": str(gate), "BAD": str(bad)}.get(a, a) for a in args)
    local, remote = (_said(served, how, tmp_path / how, *args) for how in ("local", "server"))
    assert local == remote, (local, remote)
    code, out = local
    if "--json" in args:
        assert json.loads(out)  # the same JSON, key for key
    elif args[:2] == ("compare", "both-ways") and code == 0:
        assert out.startswith(("b vs a on ", "a vs b on ")) and "paired case(s)" in out, out
    elif args[0] == "gate" and code in (0, 1) and "error" not in out:
        assert "GATE" in out and ("decision (b vs a):" in out or "decision (a vs b):" in out), out
    else:
        assert code == 2 and out.startswith("error: "), out


def _skill(folder):
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: routing\ndescription: routes\n---\n# Rules\n- fast\n## More\n"
    )
    (folder / "notes.md").write_text("# Notes\ntext\n", encoding="utf-8")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    return folder


def test_snapshot_says_the_same_on_a_store_and_on_its_server(served, tmp_path):
    """The same files sent to the server make the same snapshot, told in the same words; the folder the
    store keeps them in is said only locally (a server's folders are its own)."""
    skill = _skill(tmp_path / "skills" / "routing")
    code, first = _said(served, "local", tmp_path / "first", "snapshot", str(skill))
    assert code == 0 and "stored (new)" in first, first
    local, remote = (
        _said(served, how, tmp_path / how, "snapshot", str(skill)) for how in ("local", "server")
    )
    assert local[0] == remote[0] == 0
    folder = [line for line in local[1].splitlines(keepends=True) if line.startswith("  folder ")]
    assert len(folder) == 1 and remote[1] == local[1].replace(folder[0], ""), (local, remote)
    assert (
        "already stored (first taken " in remote[1]
        and "files    3 (" in remote[1]
        and "1 binary" in remote[1]
    )
    local_json, remote_json = (
        json.loads(_said(served, how, tmp_path / f"{how}-j", "snapshot", str(skill), "--json")[1])
        for how in ("local", "server")
    )
    server_own = {"root", "source_path"}  # a server's paths are never sent
    assert remote_json.keys() == local_json.keys() - server_own
    assert remote_json.pop("times_taken") == local_json.pop("times_taken") + 1
    assert remote_json == {k: v for k, v in local_json.items() if k not in server_own}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--git-ref", "v1"), "--git-ref and --repo read a repository of this machine"),
        (("--max-files", "3"), "--max-files is the local store's limit"),
    ],
)
def test_snapshot_refuses_on_a_server_what_only_a_local_store_does(served, tmp_path, args, said):
    code, out = _said(served, "server", tmp_path, "snapshot", str(_skill(tmp_path / "s")), *args)
    assert code == 2 and said in out, out


def test_run_says_the_same_on_a_store_and_on_its_server(served, tmp_path):
    """An experiment run here and its twin run by the server's pool are told alike: the totals, each
    arm, the failures and what to do (the name, the id and the time aside)."""
    server, key, _ = served
    with Client(server.url, key) as c:
        fingerprint = c.load_experiment("both-ways").dataset
    said = {}
    for how in ("local", "server"):
        spec = {**_spec(f"run-{how}", fingerprint), "arms": {}}
        agent = {"agent": "python", "function": "tests.server.test_one_command_set:refuses_some"}
        spec["arms"] = {"a": agent, "b": {**agent}}
        path = tmp_path / f"run-{how}.yaml"
        path.write_text(json.dumps(spec), encoding="utf-8")
        code, out = _said(served, how, tmp_path / how, "run", str(path), "-q")
        said[how] = (code, re.sub(r"#\d+", "#N", out.replace(f"run-{how}", "X")))
        said[how] = (code, re.sub(r" in [\d.]+ s —", " in S s —", said[how][1]))
    assert said["local"] == said["server"], said
    code, out = said["local"]
    assert code == 0 and out.startswith("X (#N): finished in S s — executed 8, graded 8, execution failed 4")
    assert "  re-run them: abbench retry X --failed" in out
    local, remote = (
        _said(served, how, tmp_path / f"{how}-c", "compare", "run-local", "run-server")
        for how in ("local", "server")
    )
    assert local == remote and local[0] == 0 and "run-server/b vs run-local/b" in local[1], (local, remote)


def test_run_refuses_on_a_server_what_only_a_local_run_does(served, tmp_path):
    code, out = _said(served, "server", tmp_path, "run", "both-ways", "--concurrency", "3", "--as", "me")
    assert code == 2 and "--concurrency, --as: a local run's setting(s)" in out, out
    code, out = _said(served, "local", tmp_path, "run", "both-ways", "--no-wait")
    assert code == 2 and "--no-wait starts it in a server's pool" in out, out


def test_the_client_returns_the_comparison_and_gate_records(served):
    """The records the server sends are the library's, field for field (`from_dict` of `as_dict`)."""
    from abbench.compare import Comparison, compare_arms
    from abbench.gate import GateResult, evaluate_gate

    server, key, store_dir = served
    with Client(server.url, key) as c, open_store(store_dir) as s:
        remote = c.compare_arms("both-ways", "a", "b", margin=0.05, seed=3)
        assert isinstance(remote, Comparison)
        local = compare_arms("both-ways", "a", "b", store=s, margin=0.05, seed=3)
        assert remote.as_dict() == local.as_dict() and remote.fixed == local.fixed
        gate = c.evaluate_gate("both-ways", arms=["a", "b"])
        assert isinstance(gate, GateResult)
        here = evaluate_gate("both-ways", store=s, arms=["a", "b"])
        assert gate.as_dict("cli") == here.as_dict("cli") and gate.worded_reason("cli") == here.worded_reason(
            "cli"
        )

"""Errors carry their facts (kind, name, choices, hint) and each view words the hint its own way."""

from __future__ import annotations

import ast
import inspect
import pickle
import re

import pytest
import yaml

import abbench
from abbench import _actions as do
from abbench.cli._commands import COMMANDS
from abbench.errors import Action, ExperimentError, NotFoundError, StoreError, UnknownName, UsageError
from abbench.graders import grader_names, make_grader
from abbench.runner import create_experiment
from abbench.store import open_store
from abbench.types import FailureType
from tests.conftest import DEMO


def test_the_message_words_each_action_for_its_view_and_keeps_the_facts():
    err = ExperimentError(
        "experiment 'routing' is paused: resume it (",
        do.resume_experiment(3),
        ") or cancel it (",
        do.cancel_experiment(3),
        ")",
        kind="experiment",
        name="routing",
    )
    assert str(err) == (
        "experiment 'routing' is paused: resume it (abbench.resume_experiment(3)) or cancel it "
        "(abbench.cancel_experiment(3))"
    )
    assert (
        err.worded("cli")
        == "experiment 'routing' is paused: resume it (abbench resume 3) or cancel it (abbench cancel 3)"
    )
    assert err.worded("http") == (
        "experiment 'routing' is paused: resume it (POST /api/experiments/3/resume) or cancel it "
        "(POST /api/experiments/3/cancel)"
    )
    assert err.facts() == {
        "kind": "experiment",
        "name": "routing",
        "hint": {
            "python": "abbench.resume_experiment(3)",
            "cli": "abbench resume 3",
            "http": "POST /api/experiments/3/resume",
        },
    }
    copy = pickle.loads(pickle.dumps(err))  # across a Dask worker or a server job's process
    assert (type(copy), str(copy), copy.worded("cli"), copy.facts()) == (
        ExperimentError,
        str(err),
        err.worded("cli"),
        err.facts(),
    )


def test_an_action_without_a_route_is_worded_as_the_command_on_the_server():
    err = UsageError("draw one with `", do.draw_review_sample(7), "`")
    assert err.worded("http") == err.worded("cli") == "draw one with `abbench review 7 --sample 100 --seed 1`"
    assert str(err) == "draw one with `abbench.review.draw_review_sample(7, 100, seed=1)`"


def test_a_plain_message_is_the_same_in_every_view():
    err = UsageError("a page needs offset >= 0")
    assert str(err) == err.worded("cli") == err.worded("http") == "a page needs offset >= 0"
    assert err.facts() == {} and err.hint is None and err.choices == ()


def test_an_unknown_name_carries_the_choices_and_the_closest():
    with pytest.raises(UnknownName) as err:
        make_grader("label_mach")
    assert (err.value.kind, err.value.name, err.value.choices) == (
        "grader",
        "label_mach",
        tuple(grader_names()),
    )
    assert str(err.value).startswith(
        "unknown grader 'label_mach' (did you mean 'label_match'?); choose one of: "
    )
    assert str(err.value).endswith(", or module:function")
    assert isinstance(err.value, UsageError) and err.value.exit_code == 2


def _every_action() -> list[Action]:
    out = []
    for name, fn in vars(do).items():
        if name.startswith("_") or not inspect.isfunction(fn) or fn.__module__ != do.__name__:
            continue
        params = inspect.signature(fn).parameters
        args = {"ref": 3, "dataset": "demo@1a2b3c4d", "max_tokens": 1000}
        out.append(fn(*[args[p] for p in params if p in args]))
    return out


@pytest.mark.parametrize("action", _every_action(), ids=lambda a: a.cli)
def test_every_action_names_a_real_command_a_real_function_and_a_real_route(action, store):
    command = action.cli.split()[1]
    assert action.cli.startswith("abbench ") and command in COMMANDS, action.cli
    call = re.match(r"abbench\.((?:open_store\(\)\.)?[\w.]+)\(", action.python)
    assert call is not None, action.python
    target = abbench
    for part in call.group(1).replace("()", "").split("."):
        target = store if part == "open_store" else getattr(target, part)
    assert callable(target), action.python
    params = inspect.signature(target).parameters
    if not any(p.kind is p.VAR_KEYWORD for p in params.values()):
        given = {
            k.arg for n in ast.walk(ast.parse(action.python)) if isinstance(n, ast.Call) for k in n.keywords
        }
        assert given <= set(params), action.python
    if action.http:
        from abbench.server import _routes_analysis, _routes_data, _routes_runs

        routes = {
            (method, re.sub(r"\{\w+\}", "3", route.path))
            for module in (_routes_analysis, _routes_data, _routes_runs)
            for route in module.router.routes
            for method in route.methods
        }
        method, _, target = action.http.partition(" ")
        assert (method, target.split()[0].split("?")[0]) in routes, action.http


def test_failure_types_keep_their_stored_words():
    # the words already in stores (runs.failure_type, run_attempts.failure_type) never change
    assert {t.value for t in FailureType} >= {
        "agent_error", "timeout", "bad_output", "truncated", "max_turns", "bad_task", "auth", "quota",
        "rate_limited", "server_error", "connection_error", "not_found", "bad_request", "stream_interrupted",
        "interrupted", "cancelled", "worker_lost", "snapshot_mismatch", "not_recorded", "external_error",
        "not_graded",
    }  # fmt: skip
    from abbench.errors import AgentError

    assert AgentError("slow", "timeout").failure_type is FailureType.TIMEOUT
    assert AgentError("mine", "my_own_word").failure_type == "my_own_word"  # a custom agent's own word


def _bad_definition(store_dir) -> dict:
    with open_store(store_dir) as s:
        ds = s.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
    return {
        "name": "typo",
        "dataset": ds.fingerprint,
        "arms": {"v1": {"agent": "builtin", "skill": "routing-v9"}},
    }


def test_a_notebook_is_told_the_call_and_the_cli_the_command(tmp_path, cli):
    spec = _bad_definition(cli.store_dir)
    with pytest.raises(ExperimentError) as err:
        create_experiment(spec, store=cli.store_dir)
    said = str(err.value)
    assert "skill 'routing-v9' is neither a folder" in said
    assert said.endswith("nor a stored snapshot (`abbench.open_store().snapshots.all()` lists them)")
    assert (err.value.kind, err.value.name) == ("skill", "routing-v9")

    (tmp_path / "typo.yaml").write_text(yaml.safe_dump(spec), encoding="utf-8")
    ran = cli("create", tmp_path / "typo.yaml")
    assert ran.exit_code == 2
    assert "nor a stored snapshot (`abbench snapshots` lists them)" in ran.output
    assert "open_store" not in ran.output


def test_a_missing_experiment_names_the_listing_call_in_python(store):
    with pytest.raises(NotFoundError) as err:
        store.experiments.get("#42")
    assert (err.value.kind, err.value.name) == ("experiment", "#42")
    assert str(err.value) == "no experiment #42; `abbench.list_experiments()` lists them"
    assert err.value.worded("cli") == "no experiment #42; `abbench experiments` lists them"
    with pytest.raises(NotFoundError) as empty:
        store.experiments.get("nope")
    assert str(empty.value).endswith("create one with `abbench.create_experiment('FILE.yaml')`")


@pytest.mark.parametrize(
    ("ref", "python", "cli", "http"),
    [
        (3, "abbench.resume_experiment(3)", "abbench resume 3", "POST /api/experiments/3/resume"),
        ("#3", "abbench.resume_experiment(3)", "abbench resume '#3'", "POST /api/experiments/3/resume"),
        ("my exp", "abbench.resume_experiment('my exp')", "abbench resume 'my exp'", "POST /api/experiments/my%20exp/resume"),
    ],
)  # fmt: skip
def test_a_reference_is_written_as_each_view_reads_it(ref, python, cli, http):
    # '#3' unquoted would start a shell comment; a name with a space is one word, in a path URL-quoted
    assert do.resume_experiment(ref) == Action(python, cli, http)


def test_a_missing_store_names_the_import_call_in_a_notebook_and_the_command_in_the_cli(tmp_path):
    where = tmp_path / "nothing"
    with pytest.raises(StoreError) as err:
        open_store(where, create=False)
    said = str(err.value)
    assert f"create one by importing a dataset (abbench.import_dataset('FILE', store={str(where)!r}))" in said
    assert not re.search(r"abbench (--store|import)\b", said)  # no CLI command in a notebook's error
    assert f"(abbench --store {where} import FILE)" in err.value.worded("cli")
    assert err.value.hint == do.import_dataset("FILE", store=where)

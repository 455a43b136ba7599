"""Start-up: what `abbench --help` and `abbench run` load (checked by the modules loaded, never by time),
the lazy tables that make it so, and the failure list `abbench run` prints, asked of the store alone."""

from __future__ import annotations

import ast
import csv
import importlib
import json
import os
import subprocess
import sys
import textwrap
from collections import Counter

import click
import pytest

import abbench
from abbench.cli import cli
from abbench.cli._commands import COMMANDS
from abbench.cli._snapshot import MAX_FILES
from abbench.snapshot import DEFAULT_MAX_FILES
from abbench.store import ArmSettings, RunSettings, import_dataset, open_store
from abbench.types import RunState

from ..conftest import REPO, run_abbench, run_python, subprocess_env

HEAVY = ("numpy", "pandas", "scipy", "statsmodels", "plotly", "pydantic", "httpx", "yaml")
"""Loaded by neither `--help` nor `abbench run` of a stored experiment before its first agent call."""
RUN_COMMAND_MODULES = {"abbench.cli", "abbench.cli._app", "abbench.cli._commands", "abbench.cli._run"}


def _loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == n or m.startswith(n + ".") for n in names))


def test_help_loads_nothing_heavy():
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['abbench', '--help']\n"
        "try:\n    runpy.run_module('abbench', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print(sorted(sys.modules))\n"
    )
    out = run_python(probe)
    assert "Usage: abbench" in out.stdout
    modules = ast.literal_eval(out.stdout.strip().splitlines()[-1])
    assert _loaded(modules, (*HEAVY, "asyncio", "sqlite3", "abbench.snapshot", "abbench.store")) == []
    # no command's module: the list of commands comes from abbench/cli/_commands.py
    # (the errors name an execution failure's `FailureType`, from abbench.types: dataclasses and enums)
    assert sorted(m for m in modules if m.startswith("abbench.")) == ["abbench.cli", "abbench.cli._app",
                                                                      "abbench.cli._commands", "abbench.errors",
                                                                      "abbench.types"]  # fmt: skip
    assert all(f"  {name} " in out.stdout for name in COMMANDS)


def test_the_cli_default_of_max_files_is_the_snapshot_packages():
    assert MAX_FILES == DEFAULT_MAX_FILES


# -- abbench run: its first agent call -------------------------------------------------------------------

PROBE = '''
"""A python agent that writes what its process has loaded when it is first called, and a grader."""
import json, os, sys
from abbench.errors import AgentError
from abbench.graders import GradeResult

_CALLED = []


def answer(task):
    if not _CALLED:
        _CALLED.append(True)
        with open(os.environ["PROBE_MODULES"], "w", encoding="utf-8") as f:
            json.dump(sorted(sys.modules), f)
    i = int(task.case.case_id[1:])
    if i % 10 == 3:  # an execution failure, of one of 13 types
        raise AgentError(f"boom on {i}\\n  second line", failure_type=f"kind{i % 13:02d}", retryable=False)
    return task.case.expected


def grade(ctx):
    i = int(ctx.case.case_id[1:])
    if i % 10 == 7:  # a grading failure
        raise RuntimeError(f"the grader broke on {i}")
    return GradeResult(passed=ctx.output.prediction == ctx.case.expected)
'''


@pytest.fixture(scope="module")
def probe_store(tmp_path_factory):
    """A real store with one stored experiment of 2 arms × 400 cases (800 runs) of the probe agent."""
    root = tmp_path_factory.mktemp("startup")
    (root / "probe_agent.py").write_text(textwrap.dedent(PROBE), encoding="utf-8")
    data = root / "cases.csv"
    with data.open("w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["case_id", "input", "expected", "domain"])
        w.writerows([f"c{i:04d}", f"问题 {i}", ("fast", "slow")[i % 2], f"d{i % 5}"] for i in range(400))
    store = root / "store"
    import_dataset(data, name="probe", store=store)
    arm = {"agent": "python", "function": "probe_agent:answer", "sees_gold": True}
    definition = {"name": "probe", "dataset": "probe", "retries": 0, "concurrency": 4, "arms": {"A": arm, "B": arm},
                  "graders": ["probe_agent:grade"]}  # fmt: skip
    (root / "probe.json").write_text(json.dumps(definition), encoding="utf-8")
    modules = root / "modules.json"
    env = {"PYTHONPATH": os.pathsep.join([str(REPO), str(root)]), "PROBE_MODULES": str(modules)}
    created = run_abbench("--store", store, "create", root / "probe.json", cwd=root, **env)
    assert created.returncode == 0, created.stderr
    result = run_abbench("--store", store, "run", "probe", "-q", cwd=root, **env)
    return store, json.loads(modules.read_text(encoding="utf-8")), result


def test_run_reaches_its_first_agent_call_without_heavy_modules(probe_store):
    _, modules, result = probe_store
    assert result.returncode == 0, result.stderr
    assert _loaded(modules, HEAVY) == []
    # only the `run` command's module of the CLI (and the backend it runs through), and no statistics,
    # dataset reader, judge or HTTP client
    assert {m for m in modules if m.startswith("abbench.cli")} <= RUN_COMMAND_MODULES | {
        "abbench.cli._progress",
        "abbench.cli._backend",
    }
    assert _loaded(modules, ("abbench.stats", "abbench.metrics", "abbench.compare", "abbench.report")) == []
    assert (
        _loaded(modules, ("abbench.dataset._profile", "abbench.graders._judge", "abbench.llm._client")) == []
    )


def test_the_run_did_its_work_and_lists_its_failures_capped(probe_store):
    store, _, result = probe_store
    with open_store(store) as s:
        exp = s.experiments.get("probe")
        runs = s.runs.records(exp.id)
    assert len(runs) == 800
    assert Counter(r.state for r in runs) == {RunState.PASS: 640, RunState.FAIL: 160}
    out = result.stdout
    assert "failures: 160 run(s) got no verdict (errors, not wrong answers):" in out
    # 13 execution types + grading: 10 listed, then how many more
    listed = [line for line in out.splitlines() if line.startswith(("  execution ", "  grading "))]
    assert len(listed) == 10
    assert "  grading grading_error: 80 (A 40, B 40)" in listed[0]
    assert (
        "    e.g. case c0007: grading failed — probe_agent:grade: RuntimeError: the grader broke on 7" in out
    )
    assert "  execution kind03: 8 (A 4, B 4)\n    e.g. case c0003: boom on 3 second line\n" in out
    assert "  and 4 more kind(s): " in out
    assert "re-run them: abbench retry" in out and "re-grade them: abbench regrade" in out


def _failures_from_every_run(store_path, exp_id):
    """The same summary computed the old way, from every run record (the reference)."""
    with open_store(store_path) as s:
        failed = [r for r in s.runs.records(exp_id) if r.execution_failed or r.grading_failed]
    kinds: dict[tuple[str, str], list] = {}
    for r in failed:
        kind = "execution" if r.execution_failed else "grading"
        kinds.setdefault((kind, r.failure_type or "grading_error"), []).append(r)
    ranked = sorted(kinds.items(), key=lambda kv: -len(kv[1]))
    return failed, [(k, len(rs), tuple(Counter(r.arm for r in rs).items()), rs[0].case_id, rs[0].error)
                    for k, rs in ranked]  # fmt: skip


@pytest.mark.parametrize("limit", [0, 3, 10, 50])
def test_the_failures_query_agrees_with_every_run_read(probe_store, limit):
    store, _, _ = probe_store
    with open_store(store) as s:
        exp_id = s.experiments.get("probe").id
        got = s.runs.failures(exp_id, limit=limit)
    failed, expected = _failures_from_every_run(store, exp_id)
    assert got.total == len(failed) == 160
    assert got.execution == sum(1 for r in failed if r.execution_failed) == 80
    assert got.grading == 80
    shown = [((k.kind, k.failure_type), k.runs, k.arms, k.case_id, k.error) for k in got.kinds]
    assert shown == expected[:limit]
    assert got.more_kinds == max(len(expected) - limit, 0)
    assert got.more_runs == sum(n for _, n, *_ in expected[limit:])


def test_an_experiment_without_failures_has_an_empty_summary(probe_store):
    store, _, _ = probe_store
    with open_store(store) as s:
        assert s.runs.failures(10**6).total == 0


# -- the lazy tables ----------------------------------------------------------------------------------


def _lazy_packages() -> list[str]:
    return sorted(
        f"abbench.{p.parent.name}"
        for p in (REPO / "abbench").glob("*/__init__.py")
        if "_lazy.exports(" in p.read_text(encoding="utf-8")
    )


def test_the_run_path_packages_load_lazily():
    assert {"abbench.agents", "abbench.graders", "abbench.llm", "abbench.runner", "abbench.store",
            "abbench.stats", "abbench.dataset", "abbench.snapshot"} <= set(_lazy_packages())  # fmt: skip


@pytest.mark.parametrize("package", _lazy_packages())
def test_a_lazy_package_lists_the_same_names_three_times(package):
    """The type checker's imports, the runtime table and ``__all__`` name the same names, from the same modules:
    ``__all__`` the documented ones, and the names imported ``as`` themselves the sibling tier (the rest)."""
    tree = ast.parse((REPO / package.replace(".", "/") / "__init__.py").read_text(encoding="utf-8"))
    checked: dict[str, list[str]] = {}
    siblings: set[str] = set()
    table: dict[str, tuple[str, ...]] = {}
    declared: list[str] = []
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "typing.TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                checked.setdefault(imp.module, []).extend(a.name for a in imp.names)
                siblings |= {a.name for a in imp.names if a.asname == a.name}
        elif isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "__all__":
            declared = ast.literal_eval(node.value)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            table = ast.literal_eval(node.value.args[1])
    assert {m: sorted(n) for m, n in checked.items()} == {m: sorted(n) for m, n in table.items()}
    exported = {n for names in table.values() for n in names}
    assert sorted(declared) == sorted(exported - siblings), (
        "an exported name is in __all__ or imported `as` itself"
    )
    mod = importlib.import_module(package)
    for name in exported - set(declared):
        assert name not in dir(mod) and getattr(mod, name) is not None
    for name in declared:
        assert getattr(mod, name) is getattr(
            importlib.import_module(next(m for m, n in table.items() if name in n)), name
        )
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        mod.nope  # noqa: B018


def test_every_public_name_of_abbench_resolves_in_a_fresh_process():
    code = "import abbench\nfor n in abbench.__all__: getattr(abbench, n)\nprint('ok')\n"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=subprocess_env(), capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert out.stdout.strip() == "ok"
    assert set(abbench.__all__) <= set(dir(abbench))


@pytest.mark.parametrize("package", ["graders", "agents"])
def test_the_builtin_registries_name_every_registered_factory(package):
    """Graders and agents abbench ships are found by name without importing their modules first, wherever
    in abbench they register (the ``external`` agent and ``recorded`` grader once registered only when
    the runner's module defining them happened to be imported)."""
    code = (
        f"import importlib, json, pkgutil, abbench\nbase = importlib.import_module('abbench.{package}._base')\n"
        "lazy = dict(base._BUILTIN)\nnames = base.grader_names() if hasattr(base, 'grader_names') else base.agent_names()\n"
        "for m in pkgutil.walk_packages(abbench.__path__, 'abbench.'):\n"
        "    if not m.name.startswith(('abbench.widgets', 'abbench.server', 'abbench.client', 'abbench.__main__')):\n"
        "        importlib.import_module(m.name)\n"
        "print(json.dumps([sorted(lazy), sorted(names), sorted(base._REGISTRY)]))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=subprocess_env(), capture_output=True,
                         text=True, check=True)  # fmt: skip
    lazy, names_before, registered = json.loads(out.stdout)
    assert sorted(set(registered) - {"label_match"}) == lazy
    assert names_before == registered


def test_a_grader_and_an_agent_named_load_their_module_in_a_fresh_process():
    code = (
        "import sys\nfrom abbench.graders import make_grader\nfrom abbench.agents import make_agent\n"
        "assert 'abbench.graders._rules' not in sys.modules and 'abbench.agents._builtin' not in sys.modules\n"
        "print(make_grader({'type': 'regex', 'pattern': 'x'}).name, type(make_agent('builtin')).__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=subprocess_env(), capture_output=True,
                         text=True, check=True)  # fmt: skip
    assert out.stdout.split() == ["regex", "BuiltinAgent"]


# -- the command table --------------------------------------------------------------------------------


def test_the_command_table_matches_the_commands():
    commands = cli.commands  # imports every command module
    assert list(commands) == list(COMMANDS), (
        "write a new command into abbench/cli/_commands.py, in flow order"
    )
    for name, command in commands.items():
        module, summary = COMMANDS[name]
        assert command.callback is not None
        assert command.callback.__module__ == f"abbench.cli.{module}", name
        assert summary == " ".join((command.help or "").split("\n\n")[0].split()), (
            f"abbench/cli/_commands.py: the summary of {name!r} differs from its help's first paragraph"
        )
        assert not command.hidden and not command.short_help and not command.deprecated


@pytest.mark.parametrize("width", [40, 80, 100, 160])
def test_help_lists_the_commands_as_click_would_with_every_command_loaded(width):
    ctx = click.Context(cli, info_name="abbench", max_content_width=width, terminal_width=width)
    ours, clicks = click.HelpFormatter(width=width), click.HelpFormatter(width=width)
    cli.format_commands(ctx, ours)
    click.Group.format_commands(cli, ctx, clicks)  # click's own: every command loaded, its help shortened
    assert ours.getvalue() == clicks.getvalue()


# -- what the runner reads of a stored definition, without pydantic ------------------------------------


def _settings_of(spec) -> RunSettings:
    """The settings as the validated model has them (the reference for `RunSettings.from_json`)."""

    def budget(b):
        return b.model_dump(exclude_none=True) if b is not None else None

    return RunSettings(
        concurrency=spec.concurrency,
        timeout_s=spec.timeout_s,
        retries=spec.retries,
        seed=spec.seed,
        cache=spec.cache,
        graders=tuple(spec.graders),
        budget=budget(spec.budget),
        stopping=spec.stopping.model_dump(mode="json", exclude_none=True) if spec.stopping else None,
        arms={
            name: ArmSettings(a.cache, budget(a.budget), a.skill_mode, tuple(a.snapshots or ()))
            for name, a in spec.arms.items()
        },
    )


def test_run_settings_read_a_stored_definition_as_its_model_does(tmp_path):
    from abbench.runner import create_experiment

    store = tmp_path / "store"
    made = [create_experiment(REPO / "data" / "demo" / f"{name}.yaml", store=store)
            for name in ("experiment", "stopping", "activation")]  # fmt: skip
    budgeted = {
        "name": "budgeted", "dataset": made[0].dataset, "concurrency": 3, "timeout_s": 7, "retries": 0,
        "seed": 5, "cache": "read-only", "budget": {"max_cost": 2}, "graders": ["label_match", {"type": "regex", "pattern": "x"}],
        "arms": {"a": {"agent": "builtin", "cache": "off", "budget": {"max_tokens": 1000}}, "b": {"agent": "builtin"}},
    }  # fmt: skip
    made.append(create_experiment(budgeted, store=store))
    with open_store(store) as s:
        for exp in made:
            stored = s.experiments.get(exp.id)
            assert stored.settings == _settings_of(stored.spec), exp.name
            assert stored.settings == RunSettings.from_json(stored.spec.as_json())
    assert made[1].settings.stopping == {"rule": "decided", "alpha": 0.05, "margin": 0.02, "min_cases": 50,
                                         "check_every": 20}  # fmt: skip
    assert made[3].settings.arms["a"] == ArmSettings("off", {"max_tokens": 1000}, "injected", ())
    assert made[2].settings.arms["v2-offered"].skill_mode == "offered"


def test_run_settings_of_a_definition_missing_keys_take_the_models_defaults():
    from abbench.store import StoredExperimentSpec

    old = {"name": "old", "dataset": "demo@0123456789ab", "arms": {"a": {"agent": "builtin"}}}
    assert RunSettings.from_json(old) == _settings_of(StoredExperimentSpec.model_validate(old))

"""Guards on the package's shape: public names, layers, and CLI help."""

from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

import abbench
from abbench.cli import cli

from .conftest import REPO, subprocess_env

VIEWS = {"abbench.cli", "abbench.widgets", "abbench.report", "abbench.demo"}
# click is not here: httpx imports it for its own command line.
FORBIDDEN_IN_CORE = (
    "ipywidgets",
    "IPython",
    "ipykernel",
    "papermill",
    "nbconvert",
    "nbformat",
    "abbench.cli",
    "abbench.widgets",
    "abbench.report",
    "tqdm",
    "plotly",
)


def _packages() -> list[str]:
    """abbench and its direct subpackages and modules (public ones)."""
    names = ["abbench"]
    for info in pkgutil.iter_modules(abbench.__path__):
        if not info.name.startswith("_"):
            names.append(f"abbench.{info.name}")
    return names


def test_top_level_all_is_sorted_and_resolves():
    assert abbench.__all__ == sorted(abbench.__all__)
    for name in abbench.__all__:
        assert getattr(abbench, name) is not None, name


def _subpackages() -> list[str]:
    return [m for m in _packages() if m != "abbench" and hasattr(importlib.import_module(m), "__path__")]


@pytest.mark.parametrize("module", _subpackages())
def test_public_names_match_all(module):
    mod = importlib.import_module(module)
    declared = set(getattr(mod, "__all__", ()))
    public = {n for n in vars(mod) if not n.startswith("_") and n != "annotations"}
    public -= {n for n in public if isinstance(getattr(mod, n), type(sys))}  # submodules
    assert declared == public, f"{module}: __all__ differs from its public names: {declared ^ public}"
    for name in declared:
        assert getattr(mod, name) is not None


def test_core_imports_no_view_or_notebook_module():
    core = [m for m in _packages() if m not in VIEWS]
    code = (
        "import importlib, json, sys\n"
        f"for m in {core!r}: importlib.import_module(m)\n"
        f"print(json.dumps(sorted(n for n in sys.modules if n.split('.')[0] in {FORBIDDEN_IN_CORE!r} "
        f"or any(n == f or n.startswith(f + '.') for f in {FORBIDDEN_IN_CORE!r}))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == []


def test_every_cli_command_has_help():
    runner = CliRunner()
    assert cli.commands
    for name, command in cli.commands.items():
        assert (command.help or "").strip(), f"`abbench {name}` has no help text"
        result = runner.invoke(cli, [name, "--help"])
        assert result.exit_code == 0, (name, result.output)
        assert "Usage:" in result.output


# Graders and agents return values: reading or writing the store is the runner's and metrics' job.
STORE_READERS = ("abbench.store", "abbench.runner", "abbench.metrics", "abbench.review", "abbench.export")


def _imports(path) -> list[tuple[int, str]]:
    """Every module a file imports, at any depth (function-level imports too), with its line."""
    import ast

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def _touches_store(module: str) -> bool:
    return any(module == m or module.startswith(m + ".") for m in STORE_READERS)


@pytest.mark.parametrize("package", ["graders", "agents"])
def test_graders_and_agents_never_import_the_store(package):
    bad = [
        f"{path.relative_to(REPO)}:{line}: imports {module}"
        for path in sorted((REPO / "abbench" / package).glob("*.py"))
        for line, module in _imports(path)
        if _touches_store(module)
    ]
    assert bad == []
    # and nothing they import does so behind their back
    code = (
        f"import json, sys, abbench.{package}\n"
        f"print(json.dumps(sorted(n for n in sys.modules if any(n == m or n.startswith(m + '.') for m in {STORE_READERS!r}))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(out.stdout) == []


def test_the_store_guard_catches_an_import_in_a_function(tmp_path):
    """The guard reads imports at every depth: a function-level import of the store is caught."""
    planted = tmp_path / "_planted.py"
    planted.write_text("def grade(ctx):\n    from abbench.store import open_store\n    return open_store\n")
    assert [m for _, m in _imports(planted) if _touches_store(m)] == [
        "abbench.store",
        "abbench.store.open_store",
    ]

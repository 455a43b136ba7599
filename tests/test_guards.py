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

from .conftest import REPO, assert_none_in_package, found_in_package, plant_module, run_python

VIEWS = {
    "abbench.cli",
    "abbench.widgets",
    "abbench.report",
    "abbench.demo",
    "abbench.server",
    "abbench.client",
}
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
    "abbench.server",
    "fastapi",
    "uvicorn",
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
    public = {n for n in dir(mod) if not n.startswith("_") and n != "annotations"}  # dir: lazy names too
    public -= {n for n in public if isinstance(getattr(mod, n), type(sys))}  # submodules
    assert declared == public, f"{module}: __all__ differs from its public names: {declared ^ public}"
    for name in declared:
        assert getattr(mod, name) is not None
    assert dir(mod) == sorted(declared), f"{module}: dir() lists more than __all__"


def _sibling_tier(package: str) -> set[str]:
    """The names a package's ``__init__`` imports ``as`` themselves: importable, not in ``__all__`` or ``dir()``."""
    import ast

    tree = ast.parse((REPO / package.replace(".", "/") / "__init__.py").read_text(encoding="utf-8"))
    return {a.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) for a in node.names
            if a.asname == a.name}  # fmt: skip


@pytest.mark.parametrize("module", _subpackages())
def test_the_sibling_tier_is_importable_and_apart_from_the_documented_names(module):
    mod = importlib.import_module(module)
    siblings = _sibling_tier(module)
    assert not siblings & set(mod.__all__), f"{module}: a name is both documented and sibling-only"
    assert not siblings & set(dir(mod))
    for name in siblings:
        assert getattr(mod, name) is not None, name


def _outside_the_faces(path, owner: str, faces: dict[str, set[str]]) -> list[tuple[int, str]]:
    """``from abbench.x import N`` in a file of package `owner` where N is in neither of x's tiers."""
    return [
        (line, module)
        for line, module in _imports(path)
        if module.rpartition(".")[0] in faces
        and module.split(".")[1] != owner
        and module.rpartition(".")[2] not in faces[module.rpartition(".")[0]]
        and module not in faces  # `from abbench import compare`: a package, not a name
        and not (
            REPO / module.replace(".", "/") / "__init__.py"
        ).is_file()  # `from abbench.store import bulk`
    ]


def _faces() -> dict[str, set[str]]:
    return {m: set(importlib.import_module(m).__all__) | _sibling_tier(m) for m in _subpackages()}


def test_packages_import_from_another_package_only_its_two_tiers():
    """`from abbench.x import N` in another package names x's documented API or its sibling tier, never a
    name x's ``__init__`` happens to import for itself."""
    faces = _faces()
    assert_none_in_package(
        lambda path: _outside_the_faces(path, _owner(path), faces),
        "a name outside the package's __all__ and sibling tier",
    )


def test_the_two_tier_guard_catches_a_name_outside_both_tiers(tmp_path):
    planted = plant_module(
        tmp_path / "_planted.py",
        "from abbench.compare import Comparison, magnitude, annotations\nfrom abbench import compare\n",
    )
    assert [m for _, m in _outside_the_faces(planted, "report", _faces())] == ["abbench.compare.annotations"]


def test_core_imports_no_view_or_notebook_module():
    core = [m for m in _packages() if m not in VIEWS]
    code = (
        "import importlib, json, sys\n"
        f"for m in {core!r}: importlib.import_module(m)\n"
        f"print(json.dumps(sorted(n for n in sys.modules if n.split('.')[0] in {FORBIDDEN_IN_CORE!r} "
        f"or any(n == f or n.startswith(f + '.') for f in {FORBIDDEN_IN_CORE!r}))))\n"
    )
    out = run_python(code)
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
    out = run_python(code)
    assert json.loads(out.stdout) == []


def test_the_store_guard_catches_an_import_in_a_function(tmp_path):
    """The guard reads imports at every depth: a function-level import of the store is caught."""
    planted = plant_module(
        tmp_path / "_planted.py",
        "def grade(ctx):\n    from abbench.store import open_store\n    return open_store\n",
    )
    assert [m for _, m in _imports(planted) if _touches_store(m)] == [
        "abbench.store",
        "abbench.store.open_store",
    ]


def _owner(path) -> str:
    """The package a file of abbench/ belongs to (``store`` for abbench/store/_runs.py, ``demo`` for demo.py)."""
    parts = path.relative_to(REPO / "abbench").parts
    return parts[0] if len(parts) > 1 else parts[0].removesuffix(".py")


def _private_imports(path, owner: str) -> list[tuple[int, str]]:
    """Imports of another package's private modules or names (``abbench.store._runs``, ``from abbench.x import _y``).

    The root's private modules (``abbench._text``) are shared helpers and allowed; so is anything of the
    file's own package.
    """
    bad = []
    for line, module in _imports(path):
        parts = module.split(".")
        if parts[0] != "abbench" or len(parts) < 3 or parts[1] == owner or parts[1].startswith("_"):
            continue
        if any(p.startswith("_") for p in parts[2:]):
            bad.append((line, module))
    return bad


def test_packages_import_only_public_names_of_other_packages():
    assert_none_in_package(
        lambda path: _private_imports(path, _owner(path)),
        "import the package's public name instead",
        say="imports ",
    )


def test_the_private_import_guard_catches_a_private_module_and_allows_the_root_helpers(tmp_path):
    planted = plant_module(
        tmp_path / "_planted.py",
        "from abbench.store._experiments import Experiment\n"
        "from abbench._text import clip\n"
        "from abbench.store import Store\n"
        "def f():\n    import abbench.runner._grading\n    from abbench.graders import _rules\n"
        "from abbench.metrics._arms import x\n",
    )
    assert [m for _, m in _private_imports(planted, "metrics")] == [
        "abbench.store._experiments",
        "abbench.store._experiments.Experiment",
        "abbench.runner._grading",
        "abbench.graders._rules",
    ]


def _tracked_files() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True)
    if out.returncode != 0:
        pytest.skip("not a git checkout: no list of tracked files")
    return out.stdout.splitlines()


def test_nothing_in_the_repository_points_outside_it():
    """The map is docs/ARCHITECTURE.md: a clone must hold every document its files cite."""
    outside = ("DESIGN" + ".md", "../" + "shared")  # spelt apart, so this file does not match itself
    bad = []
    for name in _tracked_files():
        path = REPO / name
        if not path.is_file() or path.suffix not in {
            ".py",
            ".md",
            ".ipynb",
            ".toml",
            ".yaml",
            ".yml",
            ".txt",
            "",
        }:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        bad += [
            f"{name}:{n}: {line.strip()[:80]}"
            for n, line in enumerate(text.splitlines(), 1)
            if any(o in line for o in outside)
        ]
    assert bad == [], "cite docs/ARCHITECTURE.md (or another page in docs/) instead:\n" + "\n".join(bad)


def test_every_docs_page_is_linked_from_the_readme_or_the_map():
    pages = sorted(p.name for p in (REPO / "docs").glob("*.md"))
    assert "ARCHITECTURE.md" in pages
    linked = (REPO / "README.md").read_text(encoding="utf-8") + (REPO / "docs" / "ARCHITECTURE.md").read_text(
        encoding="utf-8"
    )
    missing = [p for p in pages if p != "ARCHITECTURE.md" and p not in linked]
    assert missing == [] and "docs/ARCHITECTURE.md" in linked


def _make_target(name: str) -> list[str]:
    """The recipe lines of a Makefile target."""
    lines = (REPO / "Makefile").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{name}:"))
    recipe = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


@pytest.mark.parametrize("target", ["lint", "test"])
def test_lint_and_test_run_the_type_checker_and_ruff(target):
    recipe = _make_target(target)
    assert "$(PY) -m mypy" in recipe, f"`make {target}` does not run mypy"
    assert "$(PY) -m ruff check abbench tests bench" in recipe


def test_ruff_checks_the_docstrings_of_public_names():
    import tomllib

    lint = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["ruff"]["lint"]
    assert "D1" in lint["select"]
    assert not {"D100", "D101", "D102", "D103"} & set(lint["ignore"])


def test_the_map_names_every_table_of_the_store_and_every_cli_command():
    """docs/ARCHITECTURE.md stays the map of the code: a new table or command is written into it."""
    import re

    text = (REPO / "docs" / "ARCHITECTURE.md").read_text(encoding="utf-8")
    schema = "".join(
        (REPO / "abbench" / "store" / f).read_text(encoding="utf-8") for f in ("_schema.py", "_migrations.py")
    )
    tables = set(re.findall(r"CREATE TABLE (?:IF NOT EXISTS )?(\w+)", schema)) - {"schema_migrations"}
    assert len(tables) >= 10
    assert sorted(t for t in tables if f"`{t}`" not in text) == []
    assert sorted(name for name in cli.commands if f"`{name}`" not in text) == []


MAX_FUNCTION_LEVEL_IMPORTS = 40
"""Function-level imports of abbench modules kept where a heavy third-party import (numpy, scipy, pydantic,
PyYAML, httpx, fastapi, dask), the CLI's start-up or an import cycle needs them: each says why on its line."""


def _function_level_imports(path) -> list[tuple[int, str]]:
    """The abbench modules (absolute or relative) a file imports inside a function, with their lines."""
    import ast

    found: list[tuple[int, str]] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if in_function and isinstance(child, ast.ImportFrom):
                if child.level or (child.module or "").split(".")[0] == "abbench":
                    found.append((child.lineno, "." * child.level + (child.module or "")))
            elif in_function and isinstance(child, ast.Import):
                found.extend((child.lineno, a.name) for a in child.names if a.name.split(".")[0] == "abbench")
            visit(
                child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            )

    visit(ast.parse(path.read_text(encoding="utf-8"), str(path)), False)
    return found


def test_function_level_imports_of_abbench_stay_few():
    """The import graph a reader sees at the top of a module is the real one."""
    found = found_in_package(_function_level_imports)
    assert len(found) <= MAX_FUNCTION_LEVEL_IMPORTS, (
        f"{len(found)} function-level imports of abbench modules (at most {MAX_FUNCTION_LEVEL_IMPORTS}): "
        "import at the top unless a heavy import or a cycle needs it here:\n" + "\n".join(found)
    )


def test_the_function_level_import_count_sees_every_form(tmp_path):
    planted = plant_module(
        tmp_path / "_planted.py",
        "from abbench.store import Store\n"
        "import json\n"
        "def f():\n    import json\n    from abbench.runner import x\n    import abbench.stats\n"
        "class C:\n    async def g(self):\n        from ._y import z\n        from pandas import DataFrame\n",
    )
    assert _function_level_imports(planted) == [(5, "abbench.runner"), (6, "abbench.stats"), (9, "._y")]

"""Guards on the code's shape that issue 13 set: SQL only in the store, run states by their enum, short functions."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from .conftest import REPO, plant_module

PACKAGE = REPO / "abbench"
SQL = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|WITH|PRAGMA|REPLACE|ALTER|DROP)\s")
RUN_STATES = {"pending", "running", "executed", "evaluating", "pass", "fail", "cancelled"}


def _modules(outside: str | None = None) -> list[Path]:
    paths = sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    return [p for p in paths if outside is None or p.relative_to(PACKAGE).parts[0] != outside]


def _strings(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            found.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):
            text = "".join(
                v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
            )
            found.append((node.lineno, text))
    return found


def test_sql_lives_only_in_the_store():
    bad = []
    for path in _modules(outside="store"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        bad += [f"{path.relative_to(REPO)}:{line}" for line, text in _strings(tree) if SQL.match(text)]
        for node in ast.walk(tree):
            # the store's query methods, its connection, or a cursor's bulk calls
            called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            if called and node.func.attr in {"query", "query_one", "executemany", "executescript"}:
                bad.append(f"{path.relative_to(REPO)}:{node.lineno}: .{node.func.attr}()")
            elif isinstance(node, ast.Attribute) and node.attr == "conn":
                bad.append(f"{path.relative_to(REPO)}:{node.lineno}: .conn")
    assert bad == []


def test_the_sql_guard_catches_a_query(tmp_path):
    planted = plant_module(
        tmp_path / "_planted.py",
        'def f(store):\n    return store.query(f"SELECT * FROM runs WHERE id={1}")\n',
    )
    tree = ast.parse(planted.read_text())
    assert {t for _, t in _strings(tree) if SQL.match(t)} == {"SELECT * FROM runs WHERE id="}


# Table definitions read best whole; everything else is cut along its named steps.
LONG_ALLOWED = {("abbench/store/_migrations.py", "_core")}


def test_functions_are_at_most_80_lines():
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                where = (str(path.relative_to(REPO)), node.name)
                if n > 80 and where not in LONG_ALLOWED:
                    long.append(f"{where[0]}:{node.lineno} {node.name} ({n} lines)")
    assert long == []


@pytest.mark.parametrize("limit", [800])
def test_modules_stay_under_800_lines(limit):
    big = [
        f"{p.relative_to(REPO)} ({n})" for p in _modules() if (n := len(p.read_text().splitlines())) > limit
    ]
    assert big == []

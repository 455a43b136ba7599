"""The runner's modules import one another without a circle, counting every import a reader sees.

`_budget`, `_control` and `_progress` used to import one another in a circle, held apart only by a
``TYPE_CHECKING`` block; the small types they share now live in modules that all of them import.
Imports inside a function or a ``TYPE_CHECKING`` block count too: moving one there hides a circle from
the interpreter, not from the reader.
"""

from __future__ import annotations

import ast
import graphlib
from pathlib import Path

import abbench.runner

RUNNER = Path(abbench.runner.__file__).parent


def imports_of(folder: Path, package: str) -> dict[str, set[str]]:
    """Module -> the sibling modules it imports anywhere in its text (the package's ``__init__`` left out)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(folder.glob("*.py")):
        if path.stem == "__init__":
            continue
        siblings: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ImportFrom):
                module = node.module or ""
                if node.level == 1 and module:  # from ._x import y
                    siblings.add(module.split(".")[0])
                elif module == package or (node.level == 1 and not module):  # from package import _x
                    siblings.update(alias.name for alias in node.names)
                elif module.startswith(package + "."):  # from package._x import y
                    siblings.add(module[len(package) + 1 :].split(".")[0])
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith(package + "."):
                        siblings.add(alias.name[len(package) + 1 :].split(".")[0])
        graph[path.stem] = siblings & {p.stem for p in folder.glob("*.py")} - {path.stem}
    return graph


def circle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import circle of `graph` (its modules in order, the first repeated at the end), or None."""
    try:
        tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as error:
        return list(reversed(error.args[1]))
    return None


def test_budget_control_and_progress_import_one_another_in_no_circle():
    graph = imports_of(RUNNER, "abbench.runner")
    three = {m: graph[m] & {"_budget", "_control", "_progress"} for m in ("_budget", "_control", "_progress")}
    assert circle(three) is None, three


def test_the_runners_modules_import_one_another_in_no_circle():
    graph = imports_of(RUNNER, "abbench.runner")
    assert len(graph) > 20  # the runner's modules were found
    assert circle(graph) is None


def test_the_guard_sees_a_circle_closed_in_a_function_or_for_type_checking_only(tmp_path):
    (tmp_path / "_a.py").write_text("from pkg._b import B\n", encoding="utf-8")
    (tmp_path / "_b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg._c import C\n", encoding="utf-8"
    )
    (tmp_path / "_c.py").write_text("def f():\n    from . import _a\n", encoding="utf-8")
    (tmp_path / "_d.py").write_text("from ._a import A\n", encoding="utf-8")
    graph = imports_of(tmp_path, "pkg")
    assert graph == {"_a": {"_b"}, "_b": {"_c"}, "_c": {"_a"}, "_d": {"_a"}}
    found = circle(graph)
    assert found is not None and found[0] == found[-1] and set(found) == {"_a", "_b", "_c"}

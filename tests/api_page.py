"""Write docs/api.md, the reference of every documented name, from the packages' ``__all__`` and docstrings.

    python -m tests.api_page          # rewrite docs/api.md
    python -m tests.api_page --check  # exit 1 when docs/api.md is not what the code says

A package's face is its ``__all__`` (abbench/_lazy.py): each name is listed with its signature and the first
paragraph of its docstring, a constant with the docstring written under it or its value as the source
spells it. tests/test_api_docs.py fails when the page is out of date, or a class or function of a face has
no docstring.
"""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
import pkgutil
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

import abbench

REPO = Path(__file__).resolve().parents[1]
PAGE = REPO / "docs" / "api.md"
ONE_TIER: set[str] = set()
"""Packages whose face is not split into the documented API and a sibling tier (none left)."""
LONGEST_VALUE = 100

HEADER = """# API reference

Every name in a package's `__all__`, with the first paragraph of its docstring: the documented API. Other
names a package exports are its *sibling tier*, for other abbench packages only (see
`abbench/_lazy.py`). Generated from the code by `python -m tests.api_page`; `tests/test_api_docs.py` fails
when this page is out of date. The guides say how the pieces fit: [architecture](ARCHITECTURE.md) ·
[running](running.md) · [datasets](datasets.md) · [analysis](analysis.md) · [reports](reports.md).
"""


def faces() -> list[str]:
    """The modules whose ``__all__`` is documented here: ``abbench``, then its packages and modules, by name."""
    found = ["abbench"]
    for info in sorted(pkgutil.iter_modules(abbench.__path__), key=lambda i: i.name):
        name = f"abbench.{info.name}"
        if (
            info.name.startswith("_")
            or name in ONE_TIER
            or (name == "abbench.widgets" and not _has_widgets())
        ):
            continue
        if hasattr(importlib.import_module(name), "__all__"):
            found.append(name)
    return found


def _has_widgets() -> bool:
    try:
        importlib.import_module("ipywidgets")
    except ImportError:  # pragma: no cover - the test extra installs it
        return False
    return True


@cache
def _origins(package: str) -> dict[str, str]:
    """Name -> the module a package's ``__init__`` imports it from (eager, ``TYPE_CHECKING`` or lazy)."""
    path = Path(importlib.import_module(package).__file__ or "")
    if path.name != "__init__.py":
        return {}
    found: dict[str, str] = {}
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.update({a.asname or a.name: node.module for a in node.names})
        elif isinstance(node, ast.Dict) and package == "abbench":  # abbench's own table: name -> package
            for k, v in zip(node.keys, node.values, strict=True):
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant):
                    found[k.value] = v.value
    return found


def _constant_source(module: str, name: str) -> tuple[str | None, str | None]:
    """(the docstring written under ``name = ...``, the value's source) in `module`, following re-exports."""
    seen: set[str] = set()
    while module not in seen:
        seen.add(module)
        path = Path(importlib.import_module(module).__file__ or "")
        body = ast.parse(path.read_text(encoding="utf-8")).body
        for i, node in enumerate(body):
            target = node.target if isinstance(node, ast.AnnAssign) else None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target = node.targets[0]
            if isinstance(target, ast.Name) and target.id == name and node.value is not None:  # type: ignore[attr-defined]
                after = body[i + 1] if i + 1 < len(body) else None
                doc = None
                if isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant):
                    doc = str(after.value.value)
                return doc, ast.unparse(node.value)  # type: ignore[attr-defined]
        module = _origins(module).get(name, module)
    return None, None


def _summary(doc: str) -> str:
    """The first paragraph of a docstring, on one line."""
    return " ".join(inspect.cleandoc(doc).split("\n\n")[0].split())


class _Shown:
    """A default as the page shows it: a set's items sorted (its own order changes with the hash seed)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text

    @classmethod
    def of(cls, value: Any) -> Any:
        if isinstance(value, (set, frozenset)):
            return cls(f"{type(value).__name__}({sorted(value)!r})")
        return value


def _signature(value: Any) -> str:
    try:
        sig = inspect.signature(value)
    except (TypeError, ValueError):
        return "(...)"
    params = [
        p.replace(annotation=inspect.Parameter.empty, default=_Shown.of(p.default))
        for p in sig.parameters.values()
        if p.name[0] != "_"
    ]
    text = str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))
    return re.sub(r" at 0x[0-9a-f]+", "", text)  # an object default's address changes from run to run


def entry(package: str, name: str) -> str:
    """One name of a face as a line of the page."""
    # from where the face takes it: ``abbench.export``, the function, is shadowed by the package of that name
    value = getattr(importlib.import_module(_origins(package).get(name, package)), name)
    if not str(getattr(value, "__module__", "abbench")).startswith("abbench"):
        value = None  # an alias of another library's type (``Part = Any``): its docstring is under it
    if inspect.isclass(value) and issubclass(value, enum.Enum):
        words = ", ".join(f"`{m.value}`" for m in value)
        return f"- **`{name}`** (enum: {words}) — {_summary(_docstring(package, name, value))}"
    if inspect.isclass(value):
        kind = "exception" if issubclass(value, BaseException) else "class"
        return f"- **`{name}`** ({kind}) — {_summary(_docstring(package, name, value))}"
    if callable(value) and (
        inspect.isfunction(value) or inspect.isbuiltin(value) or hasattr(value, "__wrapped__")
    ):
        return f"- **`{name}`**`{_signature(value)}` — {_summary(_docstring(package, name, value))}"
    doc, source = _constant_source(_origins(package).get(name, package), name)
    if doc:
        return f"- **`{name}`** — {_summary(doc)}"
    if source is None:
        source = repr(value)
    source = " ".join(source.split())
    if len(source) > LONGEST_VALUE:
        source = source[: LONGEST_VALUE - 1] + "…"
    source = source.replace("`", "'")
    return f"- **`{name}`** = `{source}`"


def _docstring(package: str, name: str, value: Any) -> str:
    doc = value.__doc__ if inspect.isclass(value) else inspect.getdoc(value)
    if not doc or (inspect.isclass(value) and doc == _inherited_doc(value)):
        raise ValueError(f"{package}.{name} has no docstring: the API page is written from it")
    return doc


def _inherited_doc(cls: type) -> str | None:
    for base in cls.__mro__[1:]:
        if base.__doc__:
            return base.__doc__
    return None


def section(package: str) -> str:
    """A face's part of the page: its docstring's first paragraph, then each documented name."""
    mod = importlib.import_module(package)
    lines = [f"## `{package}`", "", _summary(mod.__doc__ or ""), ""]
    lines += [entry(package, name) for name in mod.__all__ if not name.startswith("__")]
    return "\n".join(lines) + "\n"


def render() -> str:
    """The whole page."""
    return "\n".join([HEADER, *(section(p) for p in faces())])


def main(argv: list[str]) -> int:
    """Write the page, or with ``--check`` say whether it is up to date."""
    text = render()
    if "--check" in argv:
        if PAGE.read_text(encoding="utf-8") != text:
            sys.stderr.write("docs/api.md is out of date: run python -m tests.api_page\n")
            return 1
        return 0
    PAGE.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

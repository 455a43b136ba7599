"""Lazy re-exports for package ``__init__``s (PEP 562), so that importing a package costs nothing.

A package lists which of its private modules defines each public name; a name's module is imported
the first time the name is used, and the value is then kept on the package (later lookups are plain
attribute reads). So ``from abbench.store import Store`` loads the store's classes and not the
dataset readers, and ``abbench run`` reaches its first agent call without loading numpy, scipy or
pydantic for the statistics and definitions it does not use.

Each such ``__init__`` keeps the same names under ``if typing.TYPE_CHECKING:`` as plain imports, for type
checkers and readers; tests/cli/test_startup.py checks that both lists and ``__all__`` agree.

A package's face has two tiers. ``__all__`` is the documented API (docs/api.md, checked by
tests/test_api_docs.py): what ``dir()`` lists and ``from abbench.x import *`` gives. The sibling tier is
what only other abbench packages need (a parser, a default, a formatter): still importable by name,
imported ``as`` itself in the ``__init__`` (the explicit re-export idiom, so linters and mypy know it is
meant), and never in ``__all__`` or ``dir()``.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence
from typing import Any


def exports(
    package: str, modules: dict[str, tuple[str, ...]], *, public: Sequence[str] | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of `package`, which exports ``modules``' names lazily.

    Args:
        package: The package's ``__name__``.
        modules: Module (absolute, ``abbench.store._runs``) -> the names it defines that the package
            exports: its documented names and its sibling tier.
        public: The documented names (the package's ``__all__``): all that ``dir()`` lists. None (a
            package with one tier) lists every name of `modules`.

    Raises:
        ImportError: When `public` names what `modules` does not.
    """
    where = {name: module for module, names in modules.items() for name in names}
    missing = sorted(set(public or ()) - set(where))
    if missing:
        raise ImportError(f"{package}.__all__ names what its lazy table does not: {', '.join(missing)}")

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(where) | set(vars(sys.modules[package])))

    return __getattr__, (__dir__ if public is None else listing(public))


def listing(public: Sequence[str]) -> Callable[[], list[str]]:
    """The ``__dir__`` of a package whose documented names are `public` (its ``__all__``): its sibling
    tier, importable by name, stays out of ``dir()``, and so do its submodules and imports."""
    names = sorted(public)
    return lambda: list(names)

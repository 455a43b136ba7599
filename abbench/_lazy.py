"""Lazy re-exports for package ``__init__``s (PEP 562), so that importing a package costs nothing.

A package lists which of its private modules defines each public name; a name's module is imported
the first time the name is used, and the value is then kept on the package (later lookups are plain
attribute reads). So ``from abbench.store import Store`` loads the store's classes and not the
dataset readers, and ``abbench run`` reaches its first agent call without loading numpy, scipy or
pydantic for the statistics and definitions it does not use.

Each such ``__init__`` keeps the same names under ``if typing.TYPE_CHECKING:`` as plain imports, for type
checkers and readers; tests/cli/test_startup.py checks that both lists and ``__all__`` agree.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from typing import Any


def exports(
    package: str, modules: dict[str, tuple[str, ...]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of `package`, which exports ``modules``' names lazily.

    Args:
        package: The package's ``__name__``.
        modules: Module (absolute, ``abbench.store._runs``) -> the public names it defines.
    """
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted(set(where) | set(vars(sys.modules[package])))

    return __getattr__, __dir__

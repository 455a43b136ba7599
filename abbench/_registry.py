"""Factories found by name (agents, graders), the ones abbench ships imported only when first asked for.

A name abbench ships is listed with the module that registers it, so `names` lists it before that module is
loaded and `load` imports the module on first use: a run of `python` arms never loads the HTTP client behind
`openai`, an experiment graded by rules never loads the judges'.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator, Mapping
from typing import Generic, TypeVar

_F = TypeVar("_F", bound=Callable[..., object])


class Registry(Mapping[str, _F], Generic[_F]):
    """The factories registered so far, by name (a read-only mapping), and the shipped ones not yet loaded.

    Args:
        builtin: Each name abbench ships -> the module whose import registers it.
        registered: Factories registered from the start.
    """

    def __init__(self, builtin: Mapping[str, str], registered: Mapping[str, _F] | None = None) -> None:
        self._builtin = dict(builtin)
        self._factories: dict[str, _F] = dict(registered or {})

    def register(self, name: str) -> Callable[[_F], _F]:
        """A decorator registering its factory under `name` (a later one of the same name replaces it)."""

        def add(factory: _F) -> _F:
            self._factories[name] = factory
            return factory

        return add

    def names(self) -> list[str]:
        """Every name registered or shipped, sorted."""
        return sorted(set(self._factories) | set(self._builtin))

    def load(self, name: str) -> _F | None:
        """The factory of `name`, its module imported first when abbench ships it; None: no such name."""
        if name not in self._factories and name in self._builtin:
            importlib.import_module(self._builtin[name])  # registers it
        return self._factories.get(name)

    def __getitem__(self, name: str) -> _F:
        return self._factories[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._factories)

    def __len__(self) -> int:
        return len(self._factories)

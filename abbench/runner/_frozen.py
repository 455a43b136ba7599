"""Making the frozen dataclasses a run hands out (`Task`, `GradeContext`) without their generated `__init__`.

A frozen dataclass sets each field through ``object.__setattr__``: with fifteen fields that cost more
than the rest of a run's bookkeeping, once for the agent's task and once for the graders' context.
`make_frozen` fills the instance's ``__dict__`` at once instead — only for a plain dataclass (no
``__slots__``, no ``__post_init__``, every field given), else through the class as usual, so the
object is the one the constructor would have made.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")

_PLAIN: dict[type, frozenset[str] | None] = {}
"""Class -> its field names when `make_frozen` may fill ``__dict__`` directly, else None."""


def _plain_fields(cls: type) -> frozenset[str] | None:
    if not dataclasses.is_dataclass(cls) or "__slots__" in vars(cls) or hasattr(cls, "__post_init__"):
        return None
    fields = dataclasses.fields(cls)
    if any(not f.init for f in fields):
        return None
    return frozenset(f.name for f in fields)


def make_frozen(cls: type[T], values: dict[str, Any]) -> T:
    """``cls(**values)``, made faster for a plain frozen dataclass given every field in `values`."""
    names = _PLAIN.get(cls, False)
    if names is False:
        names = _PLAIN[cls] = _plain_fields(cls)
    if names is None or values.keys() != names:
        return cls(**values)
    obj = object.__new__(cls)
    obj.__dict__.update(values)
    return obj

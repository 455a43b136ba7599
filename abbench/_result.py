"""The base of every named result and record (statistics, metrics, progress, datasets): ``as_dict()`` for
JSON, written from the dataclass's fields in one place."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from dataclasses import Field, fields
from pathlib import Path
from typing import Any, ClassVar, TypeVar

T = TypeVar("T")

_AS_THEY_ARE = frozenset({str, int, bool, type(None)})
"""The types `plain` gives back as they are (exactly these: a subclass, such as a str enum, is checked)."""


def plain(value: Any) -> Any:
    """A JSON-ready copy of a value: results become dicts, numpy scalars Python ones, NaN and inf None."""
    kind = type(value)
    if kind in _AS_THEY_ARE:  # most values of a record: the one check they need
        return value
    if kind is tuple or kind is list:
        return [plain(v) for v in value]
    if kind is dict:
        return {str(k): plain(v) for k, v in value.items()}
    if hasattr(value, "as_dict") and callable(value.as_dict):
        return value.as_dict()
    # numpy is looked up, not imported: a value cannot be a numpy scalar before numpy is loaded, and
    # importing it here would cost every command (`abbench --help` included) half a second.
    np = sys.modules.get("numpy")
    if isinstance(value, bool) or (np is not None and isinstance(value, np.bool_)):
        return bool(value)
    if isinstance(value, int) or (np is not None and isinstance(value, np.integer)):
        return int(value)
    if isinstance(value, float) or (np is not None and isinstance(value, np.floating)):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple) or (np is not None and isinstance(value, np.ndarray)):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):  # after the common types: an ABC check is the slowest of them
        return {str(k): plain(v) for k, v in value.items()}
    return value


class Result:
    """Mixin for frozen result dataclasses: ``as_dict()`` gives their fields as plain Python values.

    Nested results become dicts, tuples lists, and a figure that could not be computed is None — never
    NaN (JSON has none), so a missing figure reads as missing rather than as a number. Fields whose
    metadata says ``export=False`` (bulky ones, such as bootstrap replicates) are left out; a field whose
    metadata says ``export="key=attribute"`` is written as that attribute, under that key, in its place.

    A record whose JSON is more than its fields says so on the class, once: `_extra_keys` names the
    properties written after the fields; `_keys` names every key in the order written (fields and
    properties; ``key=attribute`` writes an attribute under another name) where that order is not the
    fields'. Both are names apart by white space, as `collections.namedtuple` takes them. A value that
    needs more than `plain` (rounded, counted) is set by an ``as_dict`` that updates this one's dict,
    which keeps each key where it stands.
    """

    __slots__ = ()
    _keys: ClassVar[str] = ""
    _extra_keys: ClassVar[str] = ""

    def as_dict(self) -> dict[str, Any]:
        """The result's fields as plain Python values, ready for ``json.dumps``."""
        plan = _PLANS.get(type(self)) or _dict_plan(type(self))
        return {key: plain(getattr(self, name)) for key, name in plan}


_PLANS: dict[type[Result], tuple[tuple[str, str], ...]] = {}
"""The (key, attribute) pairs `Result.as_dict` writes, per class: worked out at its first call."""


def _dict_plan(cls: type[Result]) -> tuple[tuple[str, str], ...]:
    """The (key, attribute) pairs `Result.as_dict` writes for `cls` (kept in `_PLANS`)."""
    if cls._keys:
        keys = cls._keys.split()
    else:
        exported = (f for f in fields(cls) if f.metadata.get("export", True))  # type: ignore[arg-type]
        keys = [*map(_field_key, exported), *cls._extra_keys.split()]
    _PLANS[cls] = tuple((key, name or key) for key, _, name in (k.partition("=") for k in keys))
    return _PLANS[cls]


def _field_key(f: Field[Any]) -> str:
    """A field's key: its name, or the ``key=attribute`` its metadata's ``export`` says."""
    export = f.metadata.get("export", True)
    return f.name if export is True else str(export)


def read_record(cls: type[T], data: Mapping[str, Any]) -> T:
    """The record of class `cls` that `Result.as_dict` (or `plain`) wrote as `data`: the inverse of
    writing it as JSON, read from the dataclass's field types (a server's answer becomes the record the
    local API returns).

    Nested records are read by their own ``from_dict`` when the class defines one, else by this; a tuple
    comes back from a list, an enum from its value, a `pathlib.Path` from its text, and a figure `plain`
    wrote as None (NaN, inf) back as NaN where the field is a float that is never None. Keys beyond the
    fields (properties written after them) are ignored; a field left out (``export=False``) takes its
    default.

    Raises:
        TypeError: `data` is not a JSON object, or a text, number or true/false field holds another
            type (``Comparison.metrics: MetricDifference.mean_a: 'x' is not a number``): JSON that no
            record wrote, such as a broken server's, is refused here rather than failing where it is shown.
    """
    if not isinstance(data, Mapping):
        raise TypeError(f"{cls.__name__}: a JSON object is a record, not {type(data).__name__}")
    hints = _HINTS.get(cls) or _hints(cls)
    read: dict[str, Any] = {}
    for f in fields(cls):  # type: ignore[arg-type]
        if f.name in data and f.init:
            try:
                read[f.name] = _read(hints[f.name], data[f.name])
            except (TypeError, ValueError) as exc:
                raise TypeError(f"{cls.__name__}.{f.name}: {exc}") from None
    return cls(**read)


_SCALARS: dict[type, tuple[tuple[type, ...], str]] = {
    str: ((str,), "a text"),
    int: ((int,), "a whole number"),
    float: ((int, float), "a number"),
    bool: ((bool,), "true or false"),
}
"""What JSON value each scalar field type reads (a float field reads an int: JSON writes 2.0 as 2)."""


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    import typing

    _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _read(hint: Any, value: Any) -> Any:
    """`value` (plain JSON) as the type `hint` names."""
    import dataclasses
    import enum
    import types
    import typing

    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        if value is None:
            return None
        kinds = [a for a in args if a is not type(None)]
        return _read(kinds[0], value) if len(kinds) == 1 else value
    if hint is float and value is None:  # NaN or inf, written as None
        return math.nan
    if value is None or hint is Any:
        return value
    if hint in _SCALARS:  # an int read for a float stays one: written again, it reads as it did
        types_read, said = _SCALARS[hint]
        if not isinstance(value, types_read) or (hint is not bool and isinstance(value, bool)):
            raise TypeError(f"{_shown(value)} is not {said}")
        return value
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(_read(args[0], v) for v in value)
        return tuple(_read(a, v) for a, v in zip(args, value, strict=False)) if args else tuple(value)
    if origin is dict or origin is Mapping:
        return {k: _read(args[1], v) for k, v in value.items()} if args else dict(value)
    if origin is list:
        return [_read(args[0], v) for v in value] if args else list(value)
    if origin is typing.Literal or not isinstance(hint, type):
        return value
    if dataclasses.is_dataclass(hint):
        own = hint.__dict__.get("from_dict")
        return hint.from_dict(value) if own is not None else read_record(hint, value)  # type: ignore[attr-defined]
    if issubclass(hint, enum.Enum):
        return hint(value)
    if hint.__module__ == "pathlib":
        return Path(value)
    if hint.__module__ == "numpy":  # an array written as a list
        return sys.modules["numpy"].asarray(value)
    return value


def _shown(value: Any) -> str:
    """A value in a message: its repr, at most 60 characters."""
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"

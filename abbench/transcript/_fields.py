"""The checks every event's `from_dict` uses: a key of the kind it must be, or a `Bad` naming it."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, TypeVar

from abbench.types import Usage

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

_T = TypeVar("_T")

VERDICT_ROLE = "verdict"
"""The ``role`` of the entries that hold an external tool's verdicts (read by the ``recorded`` grader)."""


class _Bad(ValueError):
    """One key of an entry that is not what its kind needs (made a `TranscriptError` with its place)."""

    def __init__(self, key: str, wanted: str, value: Any):
        super().__init__(f"`{key}` must be {wanted}, not {_shown(value)}")
        self.key = key


def _shown(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= 60 else text[:57] + "..."


def _get(data: Mapping[str, Any], key: str, kinds: type | tuple[type, ...], wanted: str) -> Any:
    """`data[key]` when it is of `kinds` (None when absent or null); bool is never a number."""
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) and bool not in (kinds if isinstance(kinds, tuple) else (kinds,)):
        raise _Bad(key, wanted, value)
    if not isinstance(value, kinds):
        raise _Bad(key, wanted, value)
    return value


def _reader(kind: type[_T], wanted: str, *also: type) -> Callable[[Mapping[str, Any], str], _T | None]:
    """The check of a key that must be a `kind` (or one of `also`), None when absent or null; `wanted`
    names it in the `_Bad`. It takes the common case (absent, or exactly of its type) first: the runner
    reads every run's events when it records the run."""
    kinds = (kind, *also)

    def read(data: Mapping[str, Any], key: str) -> _T | None:
        value = data.get(key)
        if value is None or type(value) in kinds:
            return value
        checked: _T = _get(data, key, kinds, wanted)
        return checked

    return read


_text = _reader(str, "a text")
_int = _reader(int, "a whole number")
_number = _reader(float, "a number", int)
_flag = _reader(bool, "true or false")


def _fields_of(event: DataclassInstance, **first: Any) -> dict[str, Any]:
    """The JSON object of an event whose fields are all JSON values: the keys `first`, then each field
    by name, in order."""
    return {**first, **{f.name: getattr(event, f.name) for f in fields(event)}}


def _given(**values: Any) -> dict[str, Any]:
    """The keys whose value is not None, in order: an event leaves an unset optional key out."""
    return {key: value for key, value in values.items() if value is not None}


def _or(value: float | None, default: float) -> float:
    """`value`, or `default` when it is None (never `or`: 0 stays the 0 it was written as)."""
    return default if value is None else value


def _texts(data: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = _get(data, key, list, "a list of texts") or []
    if not all(isinstance(v, str) for v in value):
        raise _Bad(key, "a list of texts", value)
    return tuple(value)


def _dicts(data: Mapping[str, Any], key: str, wanted: str) -> list[dict[str, Any]] | None:
    """`data[key]` when it is a list of JSON objects (None when absent or null); `wanted` names it."""
    value: list[dict[str, Any]] | None = _get(data, key, list, wanted)
    if value is not None and not all(isinstance(v, dict) for v in value):
        raise _Bad(key, wanted, value)
    return value


def _usage(data: Mapping[str, Any], key: str) -> Usage | None:
    value = _get(data, key, dict, "{input_tokens, output_tokens}")
    if value is None:
        return None
    try:
        return Usage(_int(value, "input_tokens") or 0, _int(value, "output_tokens") or 0)
    except _Bad as exc:
        raise _Bad(f"{key}.{exc.key}", "a whole number", value) from None


def _usage_dict(usage: Usage | None) -> dict[str, int] | None:
    return (
        None if usage is None else {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens}
    )

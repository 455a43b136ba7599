"""JSON paths into a row: ``data.query``, ``input[-1].content``, ``1``, ``input[:-1]``, ``messages[?role==user]``.

Grammar (a small, predictable subset of JSONPath/JMESPath):

- ``a.b.c`` — keys; any characters but ``.`` ``[`` ``]``, so ``数据.问题`` works. A leading ``$`` or
  ``$.`` is allowed and ignored. Quote keys holding dots or brackets: ``["a.b"]`` or ``['a.b']``.
- ``[2]``, ``[-1]`` — an element of a list; a bare number as a step (``1``, ``data.0``) is the same.
- ``[1:3]``, ``[:-1]``, ``[::2]`` — a slice of a list (a list).
- ``[*]`` — every element of a list (or every value of an object).
- ``[?key==value]`` / ``[?key!=value]`` — the elements of a list whose ``key`` equals (or not) `value`.

A key applied to a list applies to each element: ``input[:-1].content`` is the list of contents.
A string that holds JSON (a CSV cell with ``{"q": ...}``) is parsed when a path goes into it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from abbench.errors import MappingError

_INT = re.compile(r"-?\d+\Z")

MAX_PATH_CHARS = 1_000
"""Longest JSON path a mapping may give: a path names a few keys, each a column or key of the row."""
MAX_PATH_STEPS = 64
"""Most steps (keys, indexes, slices, filters) a JSON path may take: rows are a few levels deep."""


class PathError(Exception):
    """Raised when a path finds nothing in a row; the message says which step failed and why."""


class MissingKey(PathError):
    """Raised when an object in the row simply lacks a key the path names (the row is not malformed)."""


@dataclass(frozen=True, slots=True)
class _Step:
    kind: str  # key | index | slice | all | filter
    text: str
    key: str | None = None
    index: int | None = None
    slice: slice | None = None
    op: str | None = None
    literal: str | None = None


@dataclass(frozen=True, slots=True)
class JsonPath:
    """A parsed path; `get(row)` walks it.

    Attributes:
        text: The path as written.
        steps: The parsed steps.
    """

    text: str
    steps: tuple[_Step, ...]

    @property
    def head(self) -> str | None:
        """The first key of the path (its column, for a table row), or None when it starts with an index."""
        first = self.steps[0] if self.steps else None
        return first.key if first is not None and first.kind == "key" else None

    def get(self, value: Any) -> Any:
        """The value the path finds in `value`.

        Raises:
            PathError: a key is missing, an index is out of range, or a step meets the wrong type.
        """
        for step in self.steps:
            value = _apply(step, value, self.text)
        return value

    def __str__(self) -> str:
        return self.text


def parse_path(text: str) -> JsonPath:
    """Parse `text` into a `JsonPath`.

    Raises:
        MappingError: the path is malformed; the message shows the column where.
    """
    if len(text) > MAX_PATH_CHARS:
        raise MappingError(
            f"the JSON path {text[:40]!r}… has {len(text):,} characters, more than the {MAX_PATH_CHARS:,} a "
            "path may have; name the key the value is under (data.query), a few levels deep"
        )
    steps: list[_Step] = []
    s = text.strip()
    i = 0
    if s.startswith("$"):
        i = 1
        if s[i : i + 1] == ".":
            i += 1
    if i >= len(s):
        raise MappingError(f"empty JSON path {text!r}; write a key such as data.query or an index such as 1")
    expect_key = True
    while i < len(s):
        if len(steps) >= MAX_PATH_STEPS:
            raise MappingError(
                f"the JSON path {_clipped(text)} takes more than {MAX_PATH_STEPS} steps (keys, indexes, "
                f"filters), past what a path may take; rows are a few levels deep: name the key the value is "
                "under (data.query), or map the value from a shallower key"
            )
        ch = s[i]
        if ch == "[":
            end = _closing(s, i, text)
            steps.append(_bracket(s[i + 1 : end], text, i))
            i = end + 1
            expect_key = False
        elif ch == ".":
            if expect_key:
                raise _syntax(text, i, "a key is missing before '.'")
            i += 1
            expect_key = True
            if i >= len(s):
                raise _syntax(text, i, "the path ends with '.'")
        elif ch == "]":
            raise _syntax(text, i, "']' without '['")
        else:
            if not expect_key:
                raise _syntax(text, i, "expected '.' or '[' here")
            j = i
            while j < len(s) and s[j] not in ".[]":
                j += 1
            name = s[i:j]
            if _INT.match(name):
                steps.append(_Step("index", name, key=name, index=int(name)))
            else:
                steps.append(_Step("key", name, key=name))
            i = j
            expect_key = False
    return JsonPath(text, tuple(steps))


def _clipped(text: str) -> str:
    """A path as a message quotes it: its first 40 characters."""
    return repr(text) if len(text) <= 40 else f"{text[:40]!r}… ({len(text):,} characters)"


def _closing(s: str, start: int, text: str) -> int:
    quote = None
    for j in range(start + 1, len(s)):
        c = s[j]
        if quote:
            if c == "\\":
                continue
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "]":
            return j
    raise _syntax(text, start, "'[' is never closed")


def _bracket(inner: str, text: str, pos: int) -> _Step:
    body = inner.strip()
    shown = f"[{inner}]"
    if body == "*":
        return _Step("all", shown)
    if _INT.match(body):
        return _Step("index", shown, index=int(body))
    if len(body) >= 2 and body[0] == body[-1] and body[0] in "'\"":
        try:
            key = (
                json.loads('"' + body[1:-1].replace('"', '\\"') + '"') if body[0] == "'" else json.loads(body)
            )
        except json.JSONDecodeError:
            raise _syntax(text, pos, f"bad quoted key {body}") from None
        return _Step("key", shown, key=key)
    if ":" in body and not body.startswith("?"):
        parts = body.split(":")
        if len(parts) > 3 or not all(p.strip() == "" or _INT.match(p.strip()) for p in parts):
            raise _syntax(
                text, pos, f"bad slice [{inner}]; write [start:stop] or [start:stop:step] with integers"
            )
        nums = [int(p) if p.strip() else None for p in parts]
        if len(nums) == 3 and nums[2] == 0:
            raise _syntax(text, pos, "a slice step cannot be 0")
        return _Step("slice", shown, slice=slice(*nums))
    if body.startswith("?"):
        m = re.fullmatch(r"\?\s*([^=!<>\s]+)\s*(==|!=|=)\s*(.*?)\s*", body)
        if not m:
            raise _syntax(text, pos, f"bad filter [{inner}]; write [?key==value] or [?key!=value]")
        key, op, literal = m.groups()
        if len(literal) >= 2 and literal[0] == literal[-1] and literal[0] in "'\"":
            literal = literal[1:-1]
        return _Step("filter", shown, key=key, op="!=" if op == "!=" else "==", literal=literal)
    raise _syntax(text, pos, f"cannot read [{inner}]; use [n], [start:stop], [*], ['key'] or [?key==value]")


def _syntax(text: str, pos: int, why: str) -> MappingError:
    return MappingError(f"bad JSON path {text!r} at column {pos + 1}: {why}")


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        s = value.lstrip()
        if s[:1] in ("{", "["):
            try:
                return json.loads(s)
            except (json.JSONDecodeError, RecursionError):
                return value
    return value


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, dict):
        keys = ", ".join(list(map(str, value))[:12])
        return f"an object with keys {keys}" if value else "an empty object"
    if isinstance(value, list):
        return f"a list of {len(value)}"
    if isinstance(value, str):
        return "a text" if value else "an empty text"
    return f"a {type(value).__name__}"


def _apply(step: _Step, value: Any, path: str) -> Any:
    value = _maybe_json(value)
    kind = step.kind
    if kind == "key":
        if isinstance(value, dict):
            try:
                return value[step.key]
            except KeyError:
                raise MissingKey(f"{path}: no key {step.key!r} in {_describe(value)}") from None
        if isinstance(value, list):
            return [_apply(step, item, path) for item in value]
        raise PathError(f"{path}: cannot take key {step.key!r} of {_describe(value)}")
    if kind == "index":
        if isinstance(value, list) and step.index is not None:
            try:
                return value[step.index]
            except IndexError:
                raise PathError(
                    f"{path}: index {step.index} is out of range for {_describe(value)}"
                ) from None
        if isinstance(value, dict) and step.key is not None and step.key in value:
            return value[step.key]
        if isinstance(value, dict) and str(step.index) in value:
            return value[str(step.index)]
        raise PathError(f"{path}: cannot take element {step.index} of {_describe(value)}")
    if kind == "slice":
        if isinstance(value, list) and step.slice is not None:
            return value[step.slice]
        raise PathError(f"{path}: cannot slice {_describe(value)}")
    if kind == "all":
        if isinstance(value, list):
            return value
        if isinstance(value, dict):
            return list(value.values())
        raise PathError(f"{path}: [*] needs a list or an object, got {_describe(value)}")
    # filter
    if not isinstance(value, list):
        raise PathError(f"{path}: {step.text} needs a list, got {_describe(value)}")
    out = []
    for item in value:
        if isinstance(item, dict) and step.key in item:
            match = _literal(item[step.key]) == step.literal
            if match == (step.op == "=="):
                out.append(item)
    return out


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    return str(value)

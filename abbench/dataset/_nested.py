"""The keys inside a column's objects that a suggestion weighs as columns: ``data.query`` in ``{rid, data: {query}}``.

A record that keeps its fields in an object (``{"rid": 1, "data": {"query": ..., "label": ...}}``, a
Parquet struct column) has its input and gold one level down. `nested_columns` lists the paths to the
values inside such objects, with those values for each sampled row, so the suggestion can score them
as it scores top-level columns. The walk is bounded, since a file is not trusted: a few levels deep, a
fixed number of keys per object and of paths in all, and of members visited; past a bound it stops and
says so, whatever the record holds (10,000 levels, 100,000 keys).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from abbench.dataset._jsonpath import parse_path
from abbench.errors import MappingError

MAX_DEPTH = 4
"""Keys below the column at most: ``data.a.b.c.d`` is looked at, one more level is not."""
MAX_PATHS = 100
"""Nested paths weighed at most, over all columns: past that the walk stops (and says so)."""
MAX_KEYS = 64
"""Keys of one object looked at: a wider object's other keys are not walked into."""
MAX_VISITS = 100_000
"""Object members visited at most while looking for paths, over all sampled rows (later rows are not
looked at for keys the first ones lack; their values are still read for the paths found)."""

_PLAIN = re.compile(r"[^.\[\]\s\"'\\$?*]+")


@dataclass
class NestedColumns:
    """The paths found inside the columns' objects (`nested_columns`).

    Attributes:
        values: Path (as a mapping writes it, ``data.query``) → its value in each sampled row (None where
            the row lacks it), in the order the paths were met.
        keys: Path → the keys leading to it, the column first.
        children: Keys leading to an object → the keys met in it, in order (what is left of an object
            when some of its keys are mapped).
        notes: Where a bound stopped the walk, in words.
    """

    values: dict[str, list[Any]] = field(default_factory=dict)
    keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    children: dict[tuple[str, ...], dict[str, None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def path(self, keys: tuple[str, ...]) -> str | None:
        """The path text of `keys` when the walk found it."""
        return next((p for p, k in self.keys.items() if k == keys), None)


def nested_columns(columns: tuple[str, ...], values: dict[str, list[Any]]) -> NestedColumns:
    """The paths to the values inside each column's objects, with their sampled values.

    Only objects are walked into (a list is a value: ``messages`` stays one column, read as chat
    messages); a path to an object is not itself a candidate, its keys are. Paths that a mapping could
    not write back exactly, or that spell a top-level column's name, are left out.

    Args:
        columns: The top-level columns (or keys), in order.
        values: Column → its value in each sampled row.
    """
    found = NestedColumns()
    walk = _Walk(found, set(columns))
    n_rows = len(values[columns[0]]) if columns else 0
    objects = [c for c in columns if any(isinstance(v, dict) for v in values[c])]
    for i in range(n_rows):  # row by row, so a bound reached leaves whole rows looked at
        for col in objects:
            value = values[col][i]
            if isinstance(value, dict):
                walk.object((col,), value)
            if walk.stopped:
                break
        if walk.stopped:
            break
        walk.rows = i + 1
        if len(walk.leaves) > walk.n_leaves:
            walk.last_new, walk.n_leaves = i + 1, len(walk.leaves)
    for path, keys in found.keys.items():
        found.values[path] = [_get(values[keys[0]][i], keys[1:]) for i in range(n_rows)]
    found.notes.extend(walk.notes())
    return found


class _Walk:
    """One bounded walk through the sampled rows' objects, recording the paths it meets."""

    def __init__(self, found: NestedColumns, top: set[str]):
        self.found = found
        self.top = top
        self.visits = 0
        self.deep: str | None = None  # a path cut at MAX_DEPTH
        self.wide: str | None = None  # an object with more than MAX_KEYS keys
        self.full = False  # MAX_PATHS reached
        self.stopped = False  # MAX_VISITS reached
        self.rows = 0  # rows whose objects were walked through
        self.last_new = 0  # the last row that showed a key not met before
        self.leaves: set[tuple[str, ...]] = set()  # every leaf met, added or not
        self.n_leaves = 0

    def object(self, keys: tuple[str, ...], obj: dict[Any, Any]) -> None:
        if len(obj) > MAX_KEYS:
            self.wide = self.wide or path_text(keys) or keys[0]
        seen = self.found.children.setdefault(keys, {})
        for key, value in islice(obj.items(), MAX_KEYS):
            self.visits += 1
            if self.visits > MAX_VISITS:
                self.stopped = True
                return
            if not isinstance(key, str):
                continue
            if key not in seen:
                if len(seen) >= MAX_KEYS:  # other rows' objects hold other keys: as wide as one object
                    self.wide = self.wide or path_text(keys) or keys[0]
                    continue
                seen[key] = None
            here = (*keys, key)
            if isinstance(value, dict):
                if len(here) - 1 >= MAX_DEPTH:
                    self.deep = self.deep or path_text(here)
                else:
                    self.object(here, value)
                    if self.stopped:
                        return
            elif here not in self.leaves:
                self.leaves.add(here)
                self.add(here)

    def add(self, keys: tuple[str, ...]) -> None:
        if len(self.found.keys) >= MAX_PATHS:
            self.full = True
            return
        path = path_text(keys)
        if path is None or path in self.top or path in self.found.keys:
            return
        self.found.keys[path] = keys

    def notes(self) -> list[str]:
        out = []
        if self.deep:
            out.append(
                f"objects nested more than {MAX_DEPTH} levels below a column (from {self.deep}) were not "
                "looked into; map a deeper value with its path yourself"
            )
        if self.wide:
            out.append(
                f"{self.wide!r} holds objects of more than {MAX_KEYS} different keys: only the first {MAX_KEYS} "
                "were looked at"
            )
        if self.full:
            out.append(
                f"only the first {len(self.found.keys)} keys inside objects were weighed; map another one with "
                "its path yourself (fields.input: data.query)"
            )
        elif self.stopped and self.last_new > 0.75 * self.rows:
            # Said only while new keys were still turning up: rows that all have the same keys lose nothing.
            out.append(
                f"keys inside objects were looked for in the first {self.rows:,} rows only; map a key only later "
                "rows have with its path yourself"
            )
        return out


def path_text(keys: tuple[str, ...]) -> str | None:
    """The path a mapping writes for `keys` (``data.query``, ``data["a.b"]``), or None when it cannot be
    written so that it reads back as exactly these keys."""
    head, *rest = keys
    if not _PLAIN.fullmatch(head):
        return None  # a column a path cannot start from plainly: the column itself is mapped instead
    parts = [head]
    for key in rest:
        if _PLAIN.fullmatch(key) and not key.lstrip("-").isdigit():
            parts.append("." + key)
        elif key and not any(ch in key for ch in '"\\') and key.isprintable():
            parts.append("[" + json.dumps(key, ensure_ascii=False) + "]")
        else:
            return None
    text = "".join(parts)
    try:
        steps = parse_path(text).steps
    except MappingError:
        return None
    read = tuple(s.key if s.key is not None else "" for s in steps)
    return text if read == keys else None


def _get(value: Any, keys: tuple[str, ...]) -> Any:
    for key in keys:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value

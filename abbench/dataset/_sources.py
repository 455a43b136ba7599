"""Compiling a profile's field sources (columns, paths, templates, lookups ...) into value getters."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from abbench._regex import compile_pattern
from abbench._text import clip
from abbench.dataset._canonical import canonical_json
from abbench.dataset._formats import RowChunk
from abbench.dataset._jsonpath import JsonPath, MissingKey, PathError, parse_path
from abbench.dataset._profile import SPECIAL_SOURCES, Lookup, SourceLike
from abbench.dataset._text import label_key
from abbench.errors import MappingError

Getter = Callable[[Any, str, Any], Any]
"""``getter(row, location, split)`` → the value; raises `PathError` when the row lacks it."""


def text_of(value: Any) -> str:
    """Any cell or JSON value as text (for templates, lookups and labels)."""
    t = type(value)
    if t is str:
        text: str = value
        return text
    if value is None:
        return ""
    if t is bool:
        return "true" if value else "false"
    if t is float and value.is_integer():
        return str(int(value))
    if t is list or t is dict:
        return canonical_json(value)
    return str(value)


def maybe_json(value: Any) -> Any:
    """`value` parsed when it is text holding a JSON object or array (a CSV cell with JSON), else as is."""
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("[", "{") and s[-1:] in ("]", "}"):
            try:
                return json.loads(s)
            except (json.JSONDecodeError, RecursionError):
                return value
    return value


class Extractor:
    """Pulls one field's raw values out of a whole chunk at once.

    `values(chunk, columns)` returns the values and the rows whose lookup failed
    (row index → `PathError`). Plain table columns are taken from the transposed chunk without a
    Python call per row — the reason this class exists.
    """

    __slots__ = ("column", "const", "getter", "special")

    def __init__(
        self,
        *,
        column: int | None = None,
        const: Any = None,
        special: str | None = None,
        getter: Getter | None = None,
    ):
        self.column = column
        self.const = const
        self.special = special
        self.getter = getter

    def values(
        self, chunk: RowChunk, columns: list[tuple[Any, ...]] | None
    ) -> tuple[list[Any] | tuple[Any, ...], dict[int, PathError]]:
        """The raw values of the field for every row of `chunk`, and the failures by row index."""
        n = len(chunk.rows)
        if self.column is not None and columns is not None:
            return columns[self.column], {}
        if self.special == "$location":
            return chunk.locations, {}
        if self.special == "$split":
            return [chunk.split] * n, {}
        if self.getter is None:
            return [self.const] * n, {}
        get = self.getter
        out: list[Any] = []
        errors: dict[int, PathError] = {}
        split = chunk.split
        for i, (row, loc) in enumerate(zip(chunk.rows, chunk.locations, strict=True)):
            try:
                out.append(get(row, loc, split))
            except PathError as exc:
                out.append(None)
                errors[i] = exc
        return out, errors


class LookupTable:
    """A compiled lookup: keys normalised once, a default or a `PathError` for missing keys."""

    def __init__(self, name: str, spec: Lookup):
        self.name = name
        table = spec.table or {}
        self.normalize = spec.normalize
        self.table = {label_key(k) if spec.normalize else k: v for k, v in table.items()}
        self.has_default = spec.has_default
        self.default = spec.default

    def get(self, key: Any) -> Any:
        """The value for `key`.

        Raises:
            PathError: (kind ``lookup_missing``) the key is not in the table and there is no default.
        """
        text = text_of(key).strip()
        k = label_key(text) if self.normalize else text
        try:
            return self.table[k]
        except KeyError:
            if self.has_default:
                return self.default
            err = PathError(
                f"lookup {self.name!r} has no entry for {text!r}; add it, or give the lookup a default"
            )
            err.kind = "lookup_missing"  # type: ignore[attr-defined]
            err.value = text  # type: ignore[attr-defined]
            raise err from None


def _matching(get: Getter, pattern: str) -> Getter:
    """`get`'s value cut to what `pattern` finds in its text: the capturing group (or the whole match),
    stripped; None stays None (a missing value is the field's own problem, or its default)."""
    compiled = compile_pattern(pattern)  # RE2: linear in the text, whatever the pattern
    search, whole = compiled.search, 1 if compiled.groups else 0

    def cut(row: Any, loc: str, split: str | None) -> Any:
        value = get(row, loc, split)
        if value is None:
            return None
        text = text_of(value)
        found = search(text)
        if found is None:
            err = PathError(f"match: the pattern `{pattern}` finds nothing in {clip(text, 60)!r}")
            err.kind = "no_match"  # type: ignore[attr-defined]
            err.value = text  # type: ignore[attr-defined]
            raise err
        return found.group(whole).strip()

    return cut


def _const(value: Any) -> Getter:
    return lambda row, loc, split: value


class SourceCompiler:
    """Compiles sources against one row stream, remembering which columns they use and which are missing."""

    def __init__(
        self,
        columns: tuple[str, ...],
        *,
        tabular: bool,
        file_name: str,
        lookups: dict[str, Lookup],
        label: str,
    ):
        self.columns = columns
        self.tabular = tabular
        self.file_name = file_name
        self.label = label
        self.index = {c: i for i, c in enumerate(columns)}
        self.referenced: set[str] = set()
        self.missing: dict[str, list[str]] = {}
        self.lookups = {name: LookupTable(name, lk) for name, lk in lookups.items()}

    def extractor(self, source: SourceLike, field: str) -> Extractor:
        """The extractor for a top-level field source."""
        if isinstance(source, str):
            if source in ("$location", "$split"):
                return Extractor(special=source)
            if self.tabular and source in self.index:
                self.referenced.add(source)
                return Extractor(column=self.index[source])
        elif source.match is not None:
            pass  # every value goes through the pattern (`compile`)
        elif source.kind == "const":
            return Extractor(const=source.const)
        elif source.kind == "column" and self.tabular and source.column in self.index:
            self.referenced.add(source.column)
            return Extractor(column=self.index[source.column])
        return Extractor(getter=self.compile(source, field))

    def compile(self, source: SourceLike, field: str) -> Getter:
        """A getter for any source."""
        if isinstance(source, str):
            return self.compile_name(source, field)
        if source.match is not None:
            return _matching(self.compile(source.model_copy(update={"match": None}), field), source.match)
        # A source's kind says which of its fields is set (validated when the profile is read).
        kind = source.kind
        if kind == "column" and source.column is not None:
            return self.column(source.column, field)
        if kind == "path" and source.path is not None:
            return self.path(source.path, field)
        if kind == "const":
            return _const(source.const)
        if kind == "template" and source.template is not None:
            return self.template(source.template, field)
        if kind == "concat" and source.concat is not None:
            getters = [(self.compile(s, field), s) for s in source.concat]
            sep = "\n" if source.sep is None else source.sep

            def concat(row: Any, loc: str, split: str | None) -> Any:
                parts = [_part_text(g(row, loc, split), s, field, "concat") for g, s in getters]
                return sep.join(p for p in parts if p.strip())

            return concat
        if kind == "join" and source.join is not None:
            return self.join(source.join, "" if source.sep is None else source.sep, field)
        if kind == "lookup" and source.lookup is not None and source.key is not None:
            table = self.lookups[source.lookup]
            key = self.compile(source.key, field)
            return lambda row, loc, split: table.get(key(row, loc, split))
        if kind == "object" and source.object is not None:
            items = [(name, self.compile(s, field)) for name, s in source.object.items()]

            def build(row: Any, loc: str, split: str | None) -> Any:
                # Absent parts are left out, so {acceptable: null} does not clutter every case; so are
                # keys a row lacks (JSON rows differ: AskUbuntu's have no 'author' now and then).
                out: dict[str, Any] = {}
                for name, g in items:
                    try:
                        value = g(row, loc, split)
                    except MissingKey:
                        continue
                    if value is not None and value != "":
                        out[name] = value
                return out

            return build
        if kind == "columns" and source.columns is not None:
            picked = [(name, self.column(name, field)) for name in source.columns]
            return lambda row, loc, split: {name: g(row, loc, split) for name, g in picked}
        return self.unmapped()

    def compile_name(self, name: str, field: str) -> Getter:
        """A getter for a source given as a string: a special name, a column, or a JSON path."""
        if name in SPECIAL_SOURCES:
            return self.special(name)
        if name.startswith("$") and not name.startswith(("$.", "$[")):
            raise MappingError(
                f"{self.label}: fields.{field}: unknown special source {name!r}; valid: {', '.join(SPECIAL_SOURCES)}"
            )
        if name in self.index and (self.tabular or any(c in name for c in ".[]$")):
            return self.column(name, field)
        return self.path(name, field)

    def special(self, name: str) -> Getter:
        """``$split``, ``$location``, ``$file`` or ``$row``."""
        if name == "$split":
            return lambda row, loc, split: split
        if name == "$location":
            return lambda row, loc, split: loc
        if name == "$file":
            file_name = self.file_name
            return lambda row, loc, split: file_name
        if self.tabular:
            columns = self.columns
            return lambda row, loc, split: dict(zip(columns, row, strict=False))
        return lambda row, loc, split: row

    def column(self, name: str, field: str) -> Getter:
        """A column of a table row, or a top-level key of a JSON row named exactly `name`."""
        self.referenced.add(name)
        if self.tabular:
            i = self.index.get(name)
            if i is None:
                self.missing.setdefault(name, []).append(field)
                return _const(None)
            return lambda row, loc, split: row[i]

        def key(row: Any, loc: str, split: str | None) -> Any:
            if isinstance(row, dict):
                try:
                    return row[name]
                except KeyError:
                    raise MissingKey(f"{name}: the row has no key {name!r}") from None
            raise PathError(f"{name}: the row is {type(row).__name__}, not an object")

        return key

    def path(self, text: str, field: str) -> Getter:
        """A JSON path; on a table row its first key names the column."""
        path = parse_path(text)
        if not self.tabular:
            if path.head is not None:
                self.referenced.add(path.head)
            return lambda row, loc, split: path.get(row)
        head = path.head
        if head is None or head not in self.index:
            missing = head if head is not None else text
            self.referenced.add(missing)
            self.missing.setdefault(missing, []).append(field)
            return _const(None)
        self.referenced.add(head)
        i = self.index[head]
        rest = JsonPath(path.text, path.steps[1:])
        if not rest.steps:
            return lambda row, loc, split: row[i]
        return lambda row, loc, split: rest.get(row[i])

    def template(self, template: str, field: str) -> Getter:
        """Text with ``{source}`` placeholders; ``{{`` and ``}}`` are literal braces."""
        parts: list[tuple[str, Getter, str]] = []
        literal: list[str] = []
        i = 0
        while i < len(template):
            ch = template[i]
            if ch in "{}" and template[i + 1 : i + 2] == ch:
                literal.append(ch)
                i += 2
            elif ch == "{":
                end = template.find("}", i)
                if end < 0:
                    raise MappingError(
                        f"{self.label}: fields.{field}: template {template!r} opens '{{' at column {i + 1} "
                        "and never closes it (write {{ for a literal brace)"
                    )
                name = template[i + 1 : end].strip()
                parts.append(("".join(literal), self.compile_name(name, field), name))
                literal = []
                i = end + 1
            else:
                literal.append(ch)
                i += 1
        tail = "".join(literal)

        def render(row: Any, loc: str, split: str | None) -> Any:
            return (
                "".join(
                    lit + _part_text(g(row, loc, split), name, field, "template") for lit, g, name in parts
                )
                + tail
            )

        return render

    def join(self, source: SourceLike, sep: str, field: str) -> Getter:
        """The items of the list `source` gives, as text joined with `sep` (blank items left out)."""
        get = self.compile(source, field)
        shown = _shown(source)

        def join(row: Any, loc: str, split: str | None) -> Any:
            value = maybe_json(get(row, loc, split))
            if value is None:
                return None
            if not isinstance(value, list):
                if isinstance(value, dict):
                    raise _not_text(
                        f"join {shown!r} gives an object, not a list; point it at a list of texts such as "
                        f"{shown}[*].text"
                    )
                return text_of(value)
            parts = []
            for k, item in enumerate(value):
                if isinstance(item, (list, dict)):
                    texts = (
                        [key for key, v in item.items() if isinstance(v, str)]
                        if isinstance(item, dict)
                        else []
                    )
                    example = f", e.g. {shown}[*].{texts[0]}" if texts and not shown.endswith("]") else ""
                    raise _not_text(
                        f"join {shown!r}: item {k} is {'a list' if isinstance(item, list) else 'an object'}, "
                        f"not text; point the path at a text inside each item{example}"
                    )
                if item is not None:
                    parts.append(text_of(item))
            return sep.join(p for p in parts if p.strip()) if sep else "".join(parts)

        return join

    def unmapped(self) -> Getter:
        """An object of the columns (or top-level keys) no other source refers to; compile it last."""
        used = set(self.referenced)
        if self.tabular:
            keep = [(c, i) for c, i in self.index.items() if c not in used]
            return lambda row, loc, split: {c: row[i] for c, i in keep if row[i] not in ("", None)}

        def rest(row: Any, loc: str, split: str | None) -> Any:
            if isinstance(row, dict):
                return {k: v for k, v in row.items() if k not in used}
            return None

        return rest


def _shown(source: SourceLike) -> str:
    if isinstance(source, str):
        return source
    return str(source.model_dump(mode="json", exclude_unset=True))


def _not_text(message: str) -> PathError:
    err = PathError(message)
    err.kind = "not_text"  # type: ignore[attr-defined]
    return err


def _part_text(value: Any, source: SourceLike, field: str, how: str) -> str:
    """A concat or template part as text; a list is refused (its JSON text is not what anyone means)."""
    if type(value) is list:
        shown = _shown(source)
        raise _not_text(
            f"{how} part {shown!r} gives a list of {len(value)}, not a text; to join a list's items "
            f'write {field}: {{join: "{shown}", sep: ""}} (or point the path at one item)'
        )
    if type(value) is dict:
        raise _not_text(
            f"{how} part {_shown(source)!r} gives an object, not a text; point it at a text inside"
        )
    return text_of(value)

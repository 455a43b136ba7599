"""A mapping profile compiled against a file's columns: turns chunks of raw rows into case records.

This is the hot path of every import, so rows are turned into flat tuples (`Record`) holding exactly
what the store writes — text fields, canonical JSON for JSON fields, the raw row as JSON — rather than
`Case` objects; `record_to_case` builds a `Case` when one is wanted.
"""

from __future__ import annotations

import difflib
import json
import operator
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring as _enc
from typing import Any

from abbench.dataset._canonical import canonical_json, case_line, generated_case_id
from abbench.dataset._formats import RowChunk
from abbench.dataset._jsonpath import JsonPath, PathError, parse_path
from abbench.dataset._profile import SPECIAL_SOURCES, Lookup, MappingProfile, Source, SourceLike
from abbench.dataset._text import label_key, normalize_text
from abbench.dataset._validate import ReportBuilder
from abbench.errors import MappingError
from abbench.types import CASE_FIELDS, Case

Record = tuple
"""One converted row: (case_id, input, expected, history_json, context_json, domain, request_id,
metadata_json, source_row_json, source_line, generated_id)."""

R_CASE_ID, R_INPUT, R_EXPECTED, R_HISTORY, R_CONTEXT, R_DOMAIN, R_REQUEST_ID, R_METADATA = range(8)
R_SOURCE_ROW, R_SOURCE_LINE, R_GENERATED = 8, 9, 10

_POS = {name: i for i, name in enumerate(CASE_FIELDS)}
_JSON_FIELDS = ("history", "context", "metadata")
_NO_DEFAULT = object()
_FAILED = object()

Getter = Callable[[Any, str, Any], Any]


class RowProblem(Exception):
    """Raised inside a row's conversion: one problem of one kind with the offending value."""

    def __init__(self, kind: str, message: str, value: Any = None):
        super().__init__(message)
        self.kind = kind
        self.value = value


def _dumps_raw(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _text(value: Any) -> str:
    """Any cell or JSON value as text (for templates, lookups, labels)."""
    t = type(value)
    if t is str:
        return value
    if value is None:
        return ""
    if t is bool:
        return "true" if value else "false"
    if t is float and value.is_integer():
        return str(int(value))
    if t is list or t is dict:
        return canonical_json(value)
    return str(value)


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        s = value.strip()
        if s[:1] in ("[", "{") and s[-1:] in ("]", "}"):
            try:
                return json.loads(s)
            except json.JSONDecodeError:
                return value
    return value


def _chat_hint(field: str, source: SourceLike | None, value: Any) -> str:
    where = source if isinstance(source, str) else "the source"
    if isinstance(value, list) and value and all(isinstance(m, dict) and "content" in m for m in value):
        return (
            f"{field} got a list of {len(value)} chat messages; map {field} to {where}[-1].content "
            f"and history to {where}[:-1]"
        )
    return f"{field} got {'a list' if isinstance(value, list) else 'an object'}, not text; point it at a text inside"


class Mapper:
    """A `MappingProfile` compiled against the columns of one row stream.

    Args:
        profile: The profile (lookup files already loaded, see `MappingProfile.with_lookups_loaded`).
        columns: The stream's columns (table) or sampled top-level keys (JSON rows).
        tabular: True when rows are lists aligned with `columns`.
        file_name: The file's name, for ``$file``.
        label: How the profile is named in messages.

    Raises:
        MappingError: the profile maps a field to a column the file lacks (and gives no default),
            or a source is malformed.
    """

    def __init__(
        self,
        profile: MappingProfile,
        columns: Iterable[str],
        *,
        tabular: bool,
        file_name: str = "",
        label: str | None = None,
    ):
        self.profile = profile
        self.columns = tuple(columns)
        self.tabular = tabular
        self.file_name = file_name
        self.label = label or profile.ref or "the mapping"
        self._index = {c: i for i, c in enumerate(self.columns)}
        self._referenced: set[str] = set()
        self._missing: dict[str, list[str]] = {}
        self.warnings: list[tuple[str, str]] = []  # (kind, message) for the report
        self._lookups = {name: _LookupTable(name, lk) for name, lk in profile.lookups.items()}

        if "input" not in profile.fields:
            raise MappingError(
                f"{self.label} does not map input (the query the agent answers); add fields.input: <column or path>"
                + (f" — columns: {', '.join(self.columns[:20])}" if self.columns else "")
            )
        compiled: list[tuple[int, str, Getter, Callable[[Any], Any], Any]] = []
        unmapped_fields = []
        for field in CASE_FIELDS:
            source = profile.fields.get(field)
            if source is None:
                continue
            if isinstance(source, Source) and source.unmapped:
                unmapped_fields.append(field)
                continue
            compiled.append(
                (_POS[field], field, self._compile(source, field), self._converter(field, source), None)
            )
        for field in unmapped_fields:
            compiled.append((_POS[field], field, self._unmapped_getter(), self._converter(field, None), None))
        for field, value in profile.defaults.items():
            if field not in profile.fields:
                compiled.append((_POS[field], field, _const(value), self._converter(field, None), None))
        compiled.sort(key=lambda c: c[0])
        self._check_missing()
        self._plan = []
        for pos, field, getter, conv, _ in compiled:
            default = _NO_DEFAULT
            if field in profile.defaults:
                raw = profile.defaults[field]
                default = None if raw is None else conv(raw)
            self._plan.append((pos, field, getter, conv, default))
        self.fields_used = tuple(CASE_FIELDS[pos] for pos, *_ in self._plan)
        self.generates_ids = "case_id" not in self.fields_used
        self._check_shape()
        if self.tabular:
            prekeys = [_enc(c) + ":" for c in self.columns]
            self._prekeys = prekeys

    # -- compiling sources ---------------------------------------------------------------------------

    def _compile(self, source: SourceLike, field: str) -> Getter:
        if isinstance(source, str):
            return self._compile_name(source, field)
        kind = source.kind
        if kind == "column":
            return self._column(source.column, field)
        if kind == "path":
            return self._path(source.path, field)
        if kind == "const":
            return _const(source.const)
        if kind == "template":
            return self._template(source.template, field)
        if kind == "concat":
            getters = [self._compile(s, field) for s in source.concat]
            sep = source.sep

            def concat(row, loc, split):
                parts = [_text(g(row, loc, split)) for g in getters]
                return sep.join(p for p in parts if p.strip())

            return concat
        if kind == "lookup":
            table = self._lookups[source.lookup]
            key = self._compile(source.key, field)
            return lambda row, loc, split: table.get(key(row, loc, split))
        if kind == "object":
            items = [(name, self._compile(s, field)) for name, s in source.object.items()]

            def build(row, loc, split):
                # Absent parts are left out, so {acceptable: null} does not clutter every case.
                out = {}
                for name, g in items:
                    value = g(row, loc, split)
                    if value is not None and value != "":
                        out[name] = value
                return out

            return build
        if kind == "columns":
            items = [(name, self._column(name, field)) for name in source.columns]
            return lambda row, loc, split: {name: g(row, loc, split) for name, g in items}
        raise MappingError(
            f"{self.label}: fields.{field}: unmapped: true builds an object of leftover columns"
        )

    def _compile_name(self, name: str, field: str) -> Getter:
        if name in SPECIAL_SOURCES:
            return self._special(name)
        if name.startswith("$") and name not in SPECIAL_SOURCES and not name.startswith(("$.", "$[")):
            raise MappingError(
                f"{self.label}: fields.{field}: unknown special source {name!r}; valid: {', '.join(SPECIAL_SOURCES)}"
            )
        if name in self._index and (self.tabular or any(c in name for c in ".[]$")):
            return self._column(name, field)
        return self._path(name, field)

    def _special(self, name: str) -> Getter:
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

    def _column(self, name: str, field: str) -> Getter:
        self._referenced.add(name)
        if self.tabular:
            i = self._index.get(name)
            if i is None:
                self._missing.setdefault(name, []).append(field)
                return _const(None)
            return lambda row, loc, split: row[i]

        def key(row, loc, split):
            if isinstance(row, dict):
                try:
                    return row[name]
                except KeyError:
                    raise PathError(f"{name}: the row has no key {name!r}") from None
            raise PathError(f"{name}: the row is {type(row).__name__}, not an object")

        return key

    def _path(self, text: str, field: str) -> Getter:
        path = parse_path(text)
        if not self.tabular:
            if path.head is not None:
                self._referenced.add(path.head)
            return lambda row, loc, split: path.get(row)
        head = path.head
        if head is None or head not in self._index:
            missing = head if head is not None else text
            self._referenced.add(missing)
            self._missing.setdefault(missing, []).append(field)
            return _const(None)
        self._referenced.add(head)
        i = self._index[head]
        rest = JsonPath(path.text, path.steps[1:])
        if not rest.steps:
            return lambda row, loc, split: row[i]
        return lambda row, loc, split: rest.get(row[i])

    def _template(self, template: str, field: str) -> Getter:
        parts: list[tuple[str, Getter | None]] = []
        literal = []
        i = 0
        while i < len(template):
            ch = template[i]
            if ch == "{" and template[i + 1 : i + 2] == "{":
                literal.append("{")
                i += 2
            elif ch == "}" and template[i + 1 : i + 2] == "}":
                literal.append("}")
                i += 2
            elif ch == "{":
                end = template.find("}", i)
                if end < 0:
                    raise MappingError(
                        f"{self.label}: fields.{field}: template {template!r} opens '{{' at column {i + 1} "
                        "and never closes it (write {{ for a literal brace)"
                    )
                parts.append(("".join(literal), self._compile_name(template[i + 1 : end].strip(), field)))
                literal = []
                i = end + 1
            else:
                literal.append(ch)
                i += 1
        tail = "".join(literal)

        def render(row, loc, split):
            return "".join(lit + _text(g(row, loc, split)) for lit, g in parts) + tail

        return render

    def _unmapped_getter(self) -> Getter:
        used = set(self._referenced)
        if self.tabular:
            keep = [(c, i) for c, i in self._index.items() if c not in used]
            return lambda row, loc, split: {c: row[i] for c, i in keep if row[i] not in ("", None)}

        def rest(row, loc, split):
            if isinstance(row, dict):
                return {k: v for k, v in row.items() if k not in used}
            return None

        return rest

    def _check_missing(self) -> None:
        if not self._missing:
            return
        fatal = {c: f for c, f in self._missing.items() if any(x not in self.profile.defaults for x in f)}
        for column, fields in self._missing.items():
            if column not in fatal:
                self.warnings.append(
                    ("shape", f"column {column!r} is missing; {', '.join(fields)} take their default")
                )
        if fatal:
            parts = []
            for column, fields in fatal.items():
                close = difflib.get_close_matches(column, self.columns, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                parts.append(f"{column!r} for {', '.join(dict.fromkeys(fields))}{hint}")
            raise MappingError(
                f"{self.file_name or 'the file'} does not fit {self.label}: missing columns: {'; '.join(parts)}. "
                f"The file has: {', '.join(self.columns) or 'no columns'}"
            )

    def _check_shape(self) -> None:
        shape = self.profile.shape
        if shape is None or not shape.columns or not self.tabular:
            return
        gone = [c for c in shape.columns if c not in self._index and c not in self._missing]
        new = [c for c in self.columns if c not in shape.columns]
        if gone:
            self.warnings.append(
                (
                    "shape",
                    f"columns the profile's file had are missing here (not mapped, so no harm): {', '.join(gone)}",
                )
            )
        if new:
            self.warnings.append(
                (
                    "shape",
                    f"new columns not in the profile's file (kept in source_row only): {', '.join(new)}",
                )
            )

    # -- converting values ---------------------------------------------------------------------------

    def _converter(self, field: str, source: SourceLike | None) -> Callable[[Any], Any]:
        if field == "input":
            normalize = self.profile.normalize_input

            def to_input(value):
                t = type(value)
                if t is str:
                    text = normalize_text(value) if normalize else value.strip()
                    return text or None
                if value is None:
                    return None
                if t is list or t is dict:
                    raise RowProblem("not_text", _chat_hint("input", source, value), value)
                return _text(value)

            return to_input
        if field == "expected":
            return self._label_converter(source)
        if field in _JSON_FIELDS:
            as_object = field == "metadata"
            wrap_key = source if isinstance(source, str) else "value"

            def to_json(value):
                value = _maybe_json(value)
                if value is None or value == "" or value == [] or value == {}:
                    return None
                if as_object and not isinstance(value, dict):
                    value = {wrap_key: value}
                return canonical_json(value)

            return to_json

        def to_text(value):
            t = type(value)
            if t is str:
                return value.strip() or None
            if value is None:
                return None
            if t is list or t is dict:
                raise RowProblem(
                    "not_text", f"{field} got {'a list' if t is list else 'an object'}, not text", value
                )
            return _text(value)

        return to_text

    def _label_converter(self, source: SourceLike | None) -> Callable[[Any], Any]:
        profile = self.profile
        norm_map = {label_key(k): v for k, v in profile.label_map.items()}
        label_set = profile.label_set
        norm_set = {label_key(v): v for v in label_set} if label_set else {}
        allowed = ", ".join(label_set or ())

        def to_label(value):
            t = type(value)
            if t is list or t is dict:
                raise RowProblem(
                    "not_text", f"expected got {'a list' if t is list else 'an object'}, not text", value
                )
            text = (value.strip() if t is str else _text(value)) if value is not None else ""
            if not text:
                return None
            if norm_map or norm_set:
                key = label_key(text)
                mapped = norm_map.get(key)
                if mapped is not None:
                    return mapped
                if norm_set:
                    canonical = norm_set.get(key)
                    if canonical is None:
                        raise RowProblem(
                            "label_not_in_set",
                            f"label {text!r} is not in the label set ({allowed}); add it to label_map or label_set",
                            text,
                        )
                    return canonical
            return text

        return to_label

    # -- the hot loop --------------------------------------------------------------------------------

    def convert(self, chunk: RowChunk, report: ReportBuilder) -> list[Record]:
        """The valid rows of `chunk` as records; problems go to `report` (``n_rows``/``n_invalid`` too).

        Duplicate case ids are not checked here (see `resolve_duplicates`): that needs every earlier row.
        """
        add = report.add
        for location, message, raw in chunk.bad:
            add("unreadable_row", location, None, raw, message)
        report.n_rows += len(chunk.rows) + len(chunk.bad)
        report.n_invalid += len(chunk.bad)
        plan = self._plan
        split = chunk.split
        gen = self.generates_ids
        need_expected = self.profile.label_set is not None
        source_json = self._source_json() if chunk.raw is None else _dumps_raw
        raws = chunk.raw if chunk.raw is not None else chunk.rows
        out: list[Record] = []
        append = out.append
        for row, loc, raw in zip(chunk.rows, chunk.locations, raws, strict=True):
            vals: list[Any] = [None] * 8
            bad = False
            for pos, field, get, conv, default in plan:
                try:
                    value = conv(get(row, loc, split))
                except PathError as exc:
                    if default is not _NO_DEFAULT:
                        vals[pos] = default
                        continue
                    kind = getattr(exc, "kind", "path_failed")
                    add(kind, loc, field, getattr(exc, "value", None), str(exc))
                    vals[pos] = _FAILED
                    bad = True
                    continue
                except RowProblem as exc:
                    add(exc.kind, loc, field, exc.value, str(exc))
                    vals[pos] = _FAILED
                    bad = True
                    continue
                if value is None and default is not _NO_DEFAULT:
                    value = default
                vals[pos] = value
            if vals[1] is None:
                add("empty_input", loc, "input", None, "the input is empty; fill it or leave the row out")
                bad = True
            if need_expected and vals[2] is None:
                add(
                    "missing_expected",
                    loc,
                    "expected",
                    None,
                    "no expected label, but the profile declares a label set; fill it in or skip the row",
                )
                bad = True
            if not gen and vals[0] is None:
                add(
                    "empty_case_id",
                    loc,
                    "case_id",
                    None,
                    "the case id is empty; fill it or stop mapping case_id",
                )
                bad = True
            if bad:
                report.n_invalid += 1
                continue
            if gen:
                vals[0] = generated_case_id(vals[1], vals[3], vals[4])
            vals.append(source_json(raw))
            vals.append(loc)
            vals.append(gen)
            append(tuple(vals))
        return out

    def _source_json(self) -> Callable[[Any], str]:
        if not self.tabular:
            return _dumps_raw
        prekeys = self._prekeys
        add = operator.add

        def table_row(row):
            try:
                return "{" + ",".join(map(add, prekeys, map(_enc, row))) + "}"
            except TypeError:  # a workbook row: numbers, booleans, None beside text
                return (
                    "{"
                    + ",".join(
                        k + (_enc(v) if type(v) is str else _dumps_raw(v))
                        for k, v in zip(prekeys, row, strict=False)
                    )
                    + "}"
                )

        return table_row


class _LookupTable:
    def __init__(self, name: str, spec: Lookup):
        self.name = name
        table = spec.table or {}
        self.normalize = spec.normalize
        self.table = {label_key(k) if spec.normalize else k: v for k, v in table.items()}
        self.has_default = spec.has_default
        self.default = spec.default

    def get(self, key: Any) -> Any:
        text = _text(key).strip()
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


def _const(value: Any) -> Getter:
    return lambda row, loc, split: value


# -- after conversion ------------------------------------------------------------------------------


def resolve_duplicates(
    records: list[Record], claim: Callable[[str, Record], str | None], report: ReportBuilder
) -> list[Record]:
    """Give every record a unique case id, in file order; drop rows whose file id was already used.

    `claim(case_id, record)` takes the id and returns None, or returns the location of the earlier
    row holding it. A generated id that is taken (identical content) gets ``-2``, ``-3``, ... so it
    stays stable across re-imports; a duplicate id from the file is a ``duplicate_case_id`` problem.
    """
    out: list[Record] = []
    for rec in records:
        case_id = rec[R_CASE_ID]
        earlier = claim(case_id, rec)
        if earlier is None:
            out.append(rec)
            continue
        if rec[R_GENERATED]:
            n = 2
            while True:
                candidate = f"{case_id}-{n}"
                if claim(candidate, rec) is None:
                    out.append((candidate, *rec[1:]))
                    break
                n += 1
            continue
        report.add(
            "duplicate_case_id",
            rec[R_SOURCE_LINE],
            "case_id",
            case_id,
            f"case id {case_id!r} is already used at {earlier}; case ids must be unique",
        )
        report.n_invalid += 1
    return out


class MemoryIds:
    """The case ids taken so far, in memory (previews and store-less conversion)."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def claim(self, case_id: str, record: Record) -> str | None:
        """Take `case_id` for `record`; return the earlier holder's location when it is taken."""
        earlier = self.seen.get(case_id)
        if earlier is not None:
            return earlier
        self.seen[case_id] = record[R_SOURCE_LINE]
        return None


def record_line(rec: Record) -> str:
    """The canonical line (see `case_line`) of a record."""
    return case_line(rec[0], rec[1], rec[2], rec[3], rec[4], rec[5], rec[6], rec[7])


def record_to_case(rec: Record) -> Case:
    """The `Case` a record stands for."""
    loads = json.loads
    return Case(
        case_id=rec[0],
        input=rec[1],
        expected=rec[2],
        history=loads(rec[3]) if rec[3] is not None else None,
        context=loads(rec[4]) if rec[4] is not None else None,
        domain=rec[5],
        request_id=rec[6],
        metadata=loads(rec[7]) if rec[7] is not None else None,
        source_row=loads(rec[8]) if rec[8] is not None else None,
        source_line=rec[9],
    )

"""A mapping profile compiled against a file's columns: turns chunks of raw rows into case rows.

This is the hot path of every import, so it works a chunk at a time and a column at a time: a table
chunk is transposed once, each field's column is converted by converting its *distinct* values and
mapping the column through the result (labels, domains and repeated inputs cost one conversion
each), and rows come out as the tuples the store inserts, with their canonical lines beside them.
Per row, almost nothing runs in Python bytecode.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring as _enc
from operator import is_
from typing import Any

from abbench.dataset._canonical import canonical_json, generated_case_id, hash_json, unpack_source_row
from abbench.dataset._formats import RowChunk
from abbench.dataset._jsonpath import PathError
from abbench.dataset._profile import MappingProfile, Source, SourceLike
from abbench.dataset._roles import chat_role, turn_speaker, turn_text, unknown_speaker_hint
from abbench.dataset._sources import Extractor, SourceCompiler, maybe_json, text_of
from abbench.dataset._text import label_key, normalize_text, normalize_texts, strip_texts
from abbench.dataset._validate import ReportBuilder
from abbench.errors import MappingError
from abbench.types import CASE_FIELDS, NO_SKILL, Case

_JSON_FIELDS = frozenset(("history", "context", "metadata"))
_NO_DEFAULT = object()
_FAILED = object()
_CANONICAL_ORDER = tuple(sorted(CASE_FIELDS))
_OMITTED_WHEN_NULL = "expected_skill"  # left out of a case's canonical line when absent (see case_line)

_PLACEHOLDER = re.compile(r"\{[^{}]+\}")
"""A ``{column}`` placeholder: a plain string holding one meant a template."""


class RowProblem(Exception):
    """Raised by a value converter: one problem of one kind with the offending value."""

    def __init__(self, kind: str, message: str, value: Any = None):
        super().__init__(message)
        self.kind = kind
        self.value = value


def dumps_raw(value: Any) -> str:
    """A raw row as compact JSON, key order kept, non-ASCII readable."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _chat_hint(field: str, source: SourceLike | None, value: Any) -> str:
    where = source if isinstance(source, str) else "the source"
    if isinstance(value, list) and value and all(isinstance(m, dict) and "content" in m for m in value):
        return (
            f"{field} got a list of {len(value)} chat messages; map {field} to {where}[-1].content "
            f"and history to {where}[:-1]"
        )
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return (
            f"{field} got a list of {len(value)} texts; to join them write "
            f'{field}: {{join: "{where}", sep: " "}} (sep: "" for chunks that carry their own spaces)'
        )
    if isinstance(value, list) and value and all(isinstance(v, dict) and "text" in v for v in value):
        return (
            f"{field} got a list of {len(value)} chunks with a text each; to join them write "
            f'{field}: {{join: "{where}[*].text", sep: ""}}'
        )
    return f"{field} got {'a list' if isinstance(value, list) else 'an object'}, not text; point it at a text inside"


@dataclass(frozen=True, slots=True)
class _Field:
    name: str
    extractor: Extractor
    convert: Callable[[Any], Any]
    default: Any
    strings: Callable[[Sequence[str]], list[str]] | None = (
        None  # whole-column converter when all cells are text
    )


@dataclass(frozen=True, slots=True)
class Converted:
    """A chunk's valid rows, ready for the store.

    Attributes:
        rows: One tuple per case, laid out as `Mapper.columns` (``idx`` first).
        lines: The canonical line of each case (see `abbench.dataset.case_line`), same order.
        hashed: The lines as the content hash reads them (`abbench.dataset.ContentHasher.add_lines`),
            when a JSON field holds a number or boolean; None when they are `lines`.
    """

    rows: list[tuple[Any, ...]]
    lines: list[str]
    hashed: list[str] | None = None


class Mapper:
    """A `MappingProfile` compiled against the columns of one row stream.

    Args:
        profile: The profile (lookup files already loaded, see `MappingProfile.with_lookups_loaded`).
        columns: The stream's columns (table) or sampled top-level keys (JSON rows).
        tabular: True when rows are lists aligned with `columns`.
        file_name: The file's name, for ``$file``.
        label: How the profile is named in messages.

    Attributes:
        fields: The case fields each row holds: ``case_id``, ``input``, then every other field the
            profile fills, in `CASE_FIELDS` order. Fields never filled are left out.
        columns: The layout of output rows: ``idx``, the `fields`, ``source_row``, ``source_line``.
        generates_ids: True when case ids are generated from the content (the profile maps none).
        warnings: ``(kind, message)`` about the file as a whole, for the validation report.

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
        self.tabular = tabular
        self.label = label or profile.ref or "the mapping"
        self.file_name = file_name
        self._stream_columns = tuple(columns)
        self.warnings: list[tuple[str, str]] = []
        if "input" not in profile.fields:
            raise MappingError(
                f"{self.label} does not map input (the query the agent answers); add fields.input: <column or path>"
                + (f" — columns: {', '.join(self._stream_columns[:20])}" if self._stream_columns else "")
            )
        sources = SourceCompiler(
            self._stream_columns,
            tabular=tabular,
            file_name=file_name,
            lookups=profile.lookups,
            label=self.label,
        )
        extractors: dict[str, Extractor] = {}
        later = []
        for name in CASE_FIELDS:
            source = profile.fields.get(name)
            if source is None:
                if name in profile.defaults:
                    extractors[name] = Extractor(const=profile.defaults[name])
                continue
            if isinstance(source, Source) and source.unmapped:
                later.append(name)  # needs to know every column the other fields use
                continue
            extractors[name] = sources.extractor(source, name)
        for name in later:
            extractors[name] = Extractor(getter=sources.unmapped())
        self._missing_columns(sources)
        self.generates_ids = "case_id" not in extractors
        self.fields = tuple(f for f in CASE_FIELDS if f in extractors or f == "case_id")
        self.columns = ("idx", *self.fields, "source_row", "source_line")
        self._plan: list[_Field] = []
        for name in CASE_FIELDS:
            if name not in extractors:
                continue
            conv = self._converter(name, profile.fields.get(name))
            default = _NO_DEFAULT
            if name in profile.defaults:
                raw = profile.defaults[name]
                default = None if raw is None else conv(raw)
            strings = None
            if name == "input":
                strings = normalize_texts if profile.normalize_input else strip_texts
            elif name in ("case_id", "domain", "request_id"):
                strings = strip_texts
            self._plan.append(_Field(name, extractors[name], conv, default, strings))
        self._line_template, self._line_fields = _line_template(self.fields)
        self._check_shape(sources)
        # A table row is stored as the JSON array of its cells; the column names are kept once, with
        # the dataset (`source_columns`), instead of repeated in every row — a fifth of the bytes an
        # import writes. `to_case` and the store rebuild the dict.
        self.source_columns = self._stream_columns if tabular else None
        self._row_template = "[" + ",".join(["%s"] * len(self._stream_columns)) + "]" if tabular else ""

    # -- checks against the file ---------------------------------------------------------------------

    def _missing_columns(self, sources: SourceCompiler) -> None:
        if not sources.missing:
            return
        defaults = self.profile.defaults
        fatal = {c: f for c, f in sources.missing.items() if any(x not in defaults for x in f)}
        for column, fields in sources.missing.items():
            if column not in fatal:
                self.warnings.append(
                    ("shape", f"column {column!r} is missing; {', '.join(fields)} take their default")
                )
        if fatal:
            parts = []
            for column, fields in fatal.items():
                close = difflib.get_close_matches(column, self._stream_columns, n=1, cutoff=0.6)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                if _PLACEHOLDER.search(column):
                    hint = f' (a template is written {{template: "{column}"}})'
                parts.append(f"{column!r} for {', '.join(dict.fromkeys(fields))}{hint}")
            raise MappingError(
                f"{self.file_name or 'the file'} does not fit {self.label}: missing columns: {'; '.join(parts)}. "
                f"The file has: {', '.join(self._stream_columns) or 'no columns'}"
            )

    def _check_shape(self, sources: SourceCompiler) -> None:
        shape = self.profile.shape
        if shape is None or not shape.columns or not self.tabular:
            return
        have, had = set(self._stream_columns), set(shape.columns)  # sets: a wide file is not quadratic
        gone = [c for c in shape.columns if c not in have and c not in sources.missing]
        new = [c for c in self._stream_columns if c not in had]
        if gone:
            self.warnings.append(
                (
                    "shape",
                    f"columns the profile's file had are missing here (none is mapped): {', '.join(gone)}",
                )
            )
        if new:
            self.warnings.append(
                (
                    "shape",
                    f"new columns not in the profile's file (kept in source_row only): {', '.join(new)}",
                )
            )

    # -- value converters ----------------------------------------------------------------------------

    def _converter(self, field: str, source: SourceLike | None) -> Callable[[Any], Any]:
        if field == "input":
            normalize = self.profile.normalize_input

            def to_input(value: Any) -> Any:
                t = type(value)
                if t is str:
                    text = normalize_text(value) if normalize else value.strip()
                    return text or None
                if value is None:
                    return None
                if t is list or t is dict:
                    raise RowProblem("not_text", _chat_hint("input", source, value), value)
                return text_of(value)

            return to_input
        if field == "expected":
            return self._label_converter()
        if field == "expected_skill":
            return _skill_name
        if field == "history":
            return _history_converter(self.profile.roles)
        if field in _JSON_FIELDS:
            as_object = field == "metadata"
            wrap_key = source if isinstance(source, str) else "value"

            def to_json(value: Any) -> Any:
                value = maybe_json(value)
                if value is None or value == "" or value == [] or value == {}:
                    return None
                if as_object and not isinstance(value, dict):
                    value = {wrap_key: value}
                return canonical_json(value)

            return to_json

        def to_text(value: Any) -> Any:
            t = type(value)
            if t is str:
                return value.strip() or None
            if value is None:
                return None
            if t is list or t is dict:
                raise RowProblem(
                    "not_text", f"{field} got {'a list' if t is list else 'an object'}, not text", value
                )
            return text_of(value)

        return to_text

    def _label_converter(self) -> Callable[[Any], Any]:
        profile = self.profile
        norm_map = {label_key(k): v for k, v in profile.label_map.items()}
        label_set = profile.label_set
        norm_set = {label_key(v): v for v in label_set} if label_set else {}

        def to_label(value: Any) -> Any:
            t = type(value)
            if t is list or t is dict:
                raise RowProblem(
                    "not_text", f"expected got {'a list' if t is list else 'an object'}, not text", value
                )
            text = (value.strip() if t is str else text_of(value)) if value is not None else ""
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
                        close = difflib.get_close_matches(key, list(norm_set), n=3, cutoff=0.6)
                        hint = (
                            f" (did you mean {' or '.join(repr(norm_set[c]) for c in close)}?)"
                            if close
                            else ""
                        )
                        raise RowProblem(
                            "label_not_in_set",
                            f"label {text!r} is not in the label set{hint}; fix it, or add it to label_map or label_set",
                            text,
                        )
                    return canonical
            return text

        return to_label

    # -- the hot path --------------------------------------------------------------------------------

    def convert(self, chunk: RowChunk, report: ReportBuilder, start: int = 0) -> Converted:
        """The valid rows of `chunk` (numbered from `start`) and their canonical lines.

        Problems go to `report`, with ``n_rows`` and ``n_invalid``. Duplicate case ids are not
        checked here (see `resolve_duplicates`): that needs every earlier row.
        """
        for location, message, raw in chunk.bad:
            report.add("unreadable_row", location, None, raw, message)
        for kind, location, name, value, message in chunk.problems:
            report.add(kind, location, name, value, message)
        report.notes.extend(chunk.notes)
        n = len(chunk.rows)
        refused = len(chunk.bad) + len({p[1] for p in chunk.problems})  # a row's problems share its location
        report.n_rows += n + refused
        report.n_invalid += refused
        if n == 0:
            return Converted([], [])
        table_columns = list(zip(*chunk.rows, strict=True)) if self.tabular else None
        problems: list[tuple[int, int, str, str, Any, str]] = []
        values: dict[str, list[Any]] = {}
        for order, fld in enumerate(self._plan):
            raw, errors = fld.extractor.values(chunk, table_columns)
            text_only = chunk.text_only and fld.extractor.column is not None
            values[fld.name] = _convert_column(raw, fld, errors, order, problems, text_only)
        self._check_required(values, problems)
        locations = chunk.locations
        reuse: dict[str, list[str]] = {}
        if table_columns is not None:  # a table
            encoded = _encode_columns(table_columns)
            sources = (
                list(map(self._row_template.__mod__, zip(*encoded, strict=True))) if encoded else ["[]"] * n
            )
            if not problems:
                # A field whose values are the very cells read (nothing stripped or mapped) has its
                # JSON encoding already: the canonical line reuses it.
                for fld in self._plan:
                    j = fld.extractor.column
                    if (
                        j is not None
                        and fld.name not in _JSON_FIELDS
                        and fld.name != _OMITTED_WHEN_NULL
                        and all(map(is_, values[fld.name], table_columns[j]))
                    ):
                        reuse[fld.name] = encoded[j]
        else:
            sources = list(map(dumps_raw, chunk.raw if chunk.raw is not None else chunk.rows))
        if problems:
            problems.sort(key=lambda p: (p[0], p[1]))
            bad = set()
            ids = values.get("case_id")
            for i, _, kind, name, value, message in problems:
                case_id = ids[i] if ids is not None and type(ids[i]) is str else None
                report.add(kind, locations[i], name, value, message, case_id=case_id)
                bad.add(i)
            report.n_invalid += len(bad)
            good = [i for i in range(n) if i not in bad]
            values = {k: [v[i] for i in good] for k, v in values.items()}
            sources = [sources[i] for i in good]
            locations = [locations[i] for i in good]
            n = len(good)
        if self.generates_ids:
            none = [None] * n
            values["case_id"] = list(
                map(
                    generated_case_id,
                    values["input"],
                    values.get("history", none),
                    values.get("context", none),
                )
            )
        cols = [values[f] for f in self.fields]
        rows = list(zip(range(start, start + n), *cols, sources, locations, strict=True))
        return Converted(rows, self._lines(values, n, reuse), self._hashed_lines(values, n, reuse))

    def _hashed_lines(
        self, values: dict[str, list[Any]], n: int, reuse: dict[str, list[str]]
    ) -> list[str] | None:
        """The lines as the content hash reads them (`hash_json` on the metadata, and on a context or
        history that is one number or boolean), or None when none changes: a field's text alone is
        rewritten, never the whole line parsed."""
        changed = {}
        for name in _JSON_FIELDS.intersection(values):
            col = values[name]
            if name == "metadata":
                hashed = [v if v is None else hash_json(v) for v in col]
            else:  # a container is shown to the agent as it is; a bare number or boolean as its text
                hashed = [v if v is None or v[0] in '{["n' else hash_json(v) for v in col]
            if hashed != col:
                changed[name] = hashed
        return self._lines({**values, **changed}, n, reuse) if changed else None

    def _check_required(
        self, values: dict[str, list[Any]], problems: list[tuple[int, int, str, str, Any, str]]
    ) -> None:
        def flag(rows: Iterable[int], order: int, kind: str, column: str, message: str) -> None:
            problems.extend((i, order, kind, column, None, message) for i in rows)

        # `all(column)` is the fast "no None here" test: converted text columns never hold "" (it
        # becomes None), and `None in column` compares every string with None the slow way.
        inputs = values["input"]
        if not all(inputs):
            flag(
                _nones(inputs), 90, "empty_input", "input", "the input is empty; fill it or leave the row out"
            )
        if self.profile.label_set is not None:
            expected = values.get("expected")
            if expected is None or not all(expected):
                flag(
                    range(len(inputs)) if expected is None else _nones(expected),
                    91,
                    "missing_expected",
                    "expected",
                    "no expected label, but the profile declares a label set; fill it in or skip the row",
                )
        ids = values.get("case_id")
        if ids is not None and not all(ids):
            flag(
                _nones(ids),
                92,
                "empty_case_id",
                "case_id",
                "the case id is empty; fill it or stop mapping case_id",
            )

    def _lines(
        self, values: dict[str, list[Any]], n: int, reuse: dict[str, list[str]] | None = None
    ) -> list[str]:
        if n == 0:
            return []
        encoded = []
        for name in self._line_fields:
            col = values[name]
            if reuse and name in reuse:
                encoded.append(reuse[name])
            elif name == _OMITTED_WHEN_NULL:
                key = f',"{name}":'
                encoded.append(["" if v is None else key + _enc(v) for v in col])
            elif name in _JSON_FIELDS:
                encoded.append(col if all(col) else ["null" if v is None else v for v in col])
            elif all(col):
                encoded.append(list(map(_enc, col)))
            else:
                encoded.append(["null" if v is None else _enc(v) for v in col])
        return list(map(self._line_template.__mod__, zip(*encoded, strict=True)))

    # -- rows back to cases ----------------------------------------------------------------------------

    def line(self, row: tuple[Any, ...]) -> str:
        """The canonical line of one output row."""
        values = {f: [row[i + 1]] for i, f in enumerate(self.fields)}
        return self._lines(values, 1)[0]

    def to_case(self, row: tuple[Any, ...]) -> Case:
        """The `Case` an output row stands for."""
        data = dict(zip(self.columns, row, strict=True))
        loads = json.loads
        return Case(
            case_id=data["case_id"],
            input=data["input"],
            expected=data.get("expected"),
            history=loads(data["history"]) if data.get("history") is not None else None,
            context=loads(data["context"]) if data.get("context") is not None else None,
            domain=data.get("domain"),
            request_id=data.get("request_id"),
            metadata=loads(data["metadata"]) if data.get("metadata") is not None else None,
            source_row=unpack_source_row(loads(data["source_row"]), self.source_columns),
            source_line=data["source_line"],
            expected_skill=data.get("expected_skill"),
        )


def _nones(column: list[Any]) -> list[int]:
    """The rows whose value in `column` is None."""
    return [i for i, v in enumerate(column) if v is None]


def _history_converter(roles: dict[str, str]) -> Callable[[Any], Any]:
    """History as canonical JSON, each turn's speaker read as a chat role: a speaker neither the
    mapping's `roles` nor `SPEAKER_ROLES` knows is a problem on its row. With `roles`, turns are stored
    as ``{role, content}``, so what an agent is sent is what the mapping said."""

    def to_history(value: Any) -> Any:
        value = maybe_json(value)
        if value is None or value == "" or value == [] or value == {}:
            return None
        turns = value.get("messages") if isinstance(value, dict) else value
        if isinstance(turns, list):
            chat = []
            for i, turn in enumerate(turns):
                if not isinstance(turn, dict):
                    chat.append(turn)
                    continue
                who = turn_speaker(turn)
                role = chat_role(who, roles) if who is not None else None
                if who is not None and role is None:
                    raise RowProblem(
                        "unknown_speaker",
                        f"history turn {i} has speaker {who!r}, which is no chat role abbench knows; "
                        + unknown_speaker_hint(who),
                        who,
                    )
                chat.append({"role": role, "content": text_of(turn_text(turn))} if role else turn)
            if roles:
                value = chat
        return canonical_json(value)

    return to_history


def _skill_name(value: Any) -> Any:
    """An `expected_skill` cell as a skill name: trimmed text, and ``none`` (in any case) as `NO_SKILL`."""
    if value is None:
        return None
    if isinstance(value, (list, dict)):
        raise RowProblem("not_text", "expected_skill got a list or an object, not a skill name", value)
    text = text_of(value).strip() if not isinstance(value, str) else value.strip()
    if not text:
        return None
    return NO_SKILL if text.casefold() == NO_SKILL else text


def _line_template(fields: tuple[str, ...]) -> tuple[str, tuple[str, ...]]:
    parts: list[str] = []
    used = []
    for name in _CANONICAL_ORDER:
        if name == _OMITTED_WHEN_NULL:
            if name in fields:  # its key and value, or nothing (see `_lines`), glued to the field before
                parts[-1] += "%s"
                used.append(name)
        elif name in fields:
            parts.append(f'"{name}":%s')
            used.append(name)
        else:
            parts.append(f'"{name}":null')
    return "{" + ",".join(parts) + "}", tuple(used)


def _convert_column(
    raw: Sequence[Any],
    fld: _Field,
    errors: dict[int, PathError],
    order: int,
    problems: list[tuple[int, int, str, str, Any, str]],
    text_only: bool = False,
) -> list[Any]:
    """Convert one field's raw column; failures become problems and leave `_FAILED` in the column.

    `text_only` says every value is a str (a CSV column), which spares checking their types.
    """
    conv = fld.convert
    out: list[Any] | None = None
    types = {str} if text_only else set(map(type, raw))
    if fld.strings is not None and types == {str}:
        out = fld.strings(raw)
        if not all(out):
            out = [v or None for v in out]
        return _apply_errors(out, fld, errors, order, problems)
    # Distinct values are converted once when they hash safely: strings and numbers, but not
    # booleans beside numbers (True == 1 would share a conversion) and never lists or dicts.
    if types <= {str, type(None), int, float} or types <= {str, type(None), bool}:
        memo: dict[Any, Any] = {}
        failed: dict[Any, RowProblem] = {}
        for v in set(raw):
            try:
                memo[v] = conv(v)
            except RowProblem as exc:
                memo[v] = _FAILED
                failed[v] = exc
        out = list(map(memo.__getitem__, raw))
        if failed:
            for i, v in enumerate(raw):
                if v in failed and i not in errors:
                    problem = failed[v]
                    problems.append((i, order, problem.kind, fld.name, problem.value, str(problem)))
    else:
        out = []
        for i, v in enumerate(raw):
            try:
                out.append(conv(v))
            except RowProblem as exc:
                out.append(_FAILED)
                if i not in errors:
                    problems.append((i, order, exc.kind, fld.name, exc.value, str(exc)))
    return _apply_errors(out, fld, errors, order, problems)


def _apply_errors(
    out: list[Any],
    fld: _Field,
    errors: dict[int, PathError],
    order: int,
    problems: list[tuple[int, int, str, str, Any, str]],
) -> list[Any]:
    default = fld.default
    for i, exc in errors.items():
        # A default stands in for a value the row lacks, not for one the mapping cannot use.
        if default is not _NO_DEFAULT and getattr(exc, "kind", None) not in ("not_text", "no_match"):
            out[i] = default
        else:
            out[i] = _FAILED
            problems.append(
                (
                    i,
                    order,
                    getattr(exc, "kind", "path_failed"),
                    fld.name,
                    getattr(exc, "value", None),
                    str(exc),
                )
            )
    if default is not _NO_DEFAULT and default is not None and not all(v is not None for v in out):
        out = [default if v is None else v for v in out]
    return out


def _encode_columns(columns: list[tuple[Any, ...]]) -> list[list[str]]:
    """Each cell of each table column as JSON text (text cells through the C string encoder)."""
    try:
        return [list(map(_enc, col)) for col in columns]
    except TypeError:  # a workbook row: numbers, booleans or None beside text
        return [[_enc(v) if type(v) is str else dumps_raw(v) for v in col] for col in columns]


# -- after conversion ------------------------------------------------------------------------------


def resolve_duplicates(
    mapper: Mapper,
    rows: list[tuple[Any, ...]],
    claim: Callable[[str, tuple[Any, ...]], str | None],
    report: ReportBuilder,
) -> list[tuple[Any, ...]]:
    """Give every row a unique case id, in file order; drop rows whose file id was already used.

    `claim(case_id, row)` takes the id for the row and returns None, or returns the location of the
    earlier row holding it. A generated id that is taken (identical content) gets ``-2``, ``-3``, ...
    so it stays stable across re-imports; a repeated id from the file is a ``duplicate_case_id``.
    """
    out: list[tuple[Any, ...]] = []
    for row in rows:
        case_id = row[1]
        earlier = claim(case_id, row)
        if earlier is None:
            out.append(row)
            continue
        if mapper.generates_ids:
            k = 2
            while claim(f"{case_id}-{k}", row) is not None:
                k += 1
            out.append((row[0], f"{case_id}-{k}", *row[2:]))
            continue
        report.add(
            "duplicate_case_id",
            row[-1],
            "case_id",
            case_id,
            f"case id {case_id!r} is already used at {earlier}; case ids must be unique",
            case_id=case_id,
        )
        report.n_invalid += 1
    return out


class MemoryIds:
    """The case ids taken so far, in memory (previews and store-less conversion)."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}

    def claim(self, case_id: str, row: tuple[Any, ...]) -> str | None:
        """Take `case_id` for `row`; return the earlier holder's location when it is taken."""
        earlier = self.seen.get(case_id)
        if earlier is not None:
            return earlier
        self.seen[case_id] = row[-1]
        return None

    def take(self, mapper: Mapper, converted: Converted, report: ReportBuilder) -> Converted:
        """`converted` with duplicate ids renamed or dropped (see `resolve_duplicates`)."""
        ids = [r[1] for r in converted.rows]
        if len(set(ids)) == len(ids) and self.seen.keys().isdisjoint(ids):
            self.seen.update((r[1], r[-1]) for r in converted.rows)
            return converted
        rows = resolve_duplicates(mapper, converted.rows, self.claim, report)
        return Converted(rows, [mapper.line(r) for r in rows])

"""The mapping profile (字段映射): how a file's columns become case fields, validated and saved as JSON/YAML.

A profile in YAML reads like this::

    name: clinc150
    fields:
      input: "0"                          # a column name, or a JSON path into the row
      expected: "1"
      domain: {lookup: domains, key: "1"} # intent -> domain, from domains.json
      metadata: {object: {split: $split}} # remember which split each case came from
    lookups:
      domains: {file: domains.json, default: oos}
    splits: [test]

A field's source is a string (a column, else a JSON path such as ``data.query`` or
``input[-1].content``; ``$split``, ``$location``, ``$row`` and ``$file`` name the split, the row's
location, the whole raw row and the file name) or an object with exactly one of ``column``, ``path``,
``const``, ``template``, ``concat``, ``join``, ``lookup`` (with ``key``), ``object``, ``columns`` or
``unmapped``, and optionally ``match``: a regular expression whose first group (or whole match)
is kept, e.g. ``expected: {column: answer, match: "####\\s*(.+)$"}`` for GSM8K's final answers.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal, TypedDict, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from abbench._regex import PatternError, compile_pattern
from abbench._text import control_character
from abbench._utf8 import read_utf8
from abbench._yaml import compose_yaml, error_at, error_problem, load_yaml
from abbench.dataset._canonical import canonical_json
from abbench.dataset._jsonpath import parse_path
from abbench.dataset._roles import CHAT_ROLES
from abbench.dataset._text import label_key
from abbench.errors import MappingError, UnknownName, UsageError
from abbench.types import CASE_FIELDS

SPECIAL_SOURCES = ("$split", "$location", "$row", "$file")
"""Names a source string may use for what is not in the row itself."""

_KINDS = ("column", "path", "const", "template", "concat", "join", "lookup", "object", "columns", "unmapped")


def _label_text(value: Any) -> str:
    # YAML turns `0: fast` into an int key and `true: yes` into a bool; labels are text.
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


class Source(BaseModel):
    """Where one case field's value comes from; exactly one kind is given.

    Attributes:
        column: A column (or top-level key) named exactly so, dots and all.
        path: A JSON path into the row (see `abbench.dataset.parse_path`).
        const: The same value for every row.
        template: Text with ``{source}`` placeholders, e.g. ``"{title}\\n{body}"`` (``{{`` for a brace).
        concat: Several sources joined with `sep`, empty ones left out.
        join: One source that gives a list (``data[*].text``), its items joined with `sep`: an
            utterance stored as chunks (SNIPS's ``{"data": [{"text": "book a "}, {"text": "table"}]}``).
        sep: The separator for `concat` (default a newline) or `join` (default nothing: chunks
            carry their own spaces).
        lookup: The name of a table in the profile's ``lookups``; `key` gives the value looked up.
        key: The source of the lookup key.
        object: A JSON object built from named sources (for ``metadata`` or ``context``).
        columns: A JSON object of these columns, by their names.
        unmapped: A JSON object of every column no other field uses (for ``metadata``).
        match: A regular expression searched in the value's text: its capturing group (or, without
            one, the whole match) is the value, stripped. A row it finds nothing in is a ``no_match``
            problem (a default does not stand in: the row has a value the mapping cannot use). GSM8K
            keeps its final answer after ``####`` at the end of a worked solution:
            ``{column: answer, match: "####\\s*(.+)$"}``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    column: str | None = None
    path: str | None = None
    const: Any = None
    template: str | None = None
    concat: list[SourceLike] | None = None
    join: SourceLike | None = None
    sep: str | None = None
    lookup: str | None = None
    key: SourceLike | None = None
    object: dict[str, SourceLike] | None = None
    columns: list[str] | None = None
    unmapped: bool | None = None
    match: str | None = None

    @field_validator("match")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is None:
            return value
        try:
            groups = compile_pattern(value).groups
        except PatternError as exc:
            raise ValueError(f"match: {exc}") from None
        if groups > 1:
            raise ValueError(
                f"match: {value!r} has {groups} capturing groups; keep one, and write the others as (?:...)"
            )
        return value

    @model_validator(mode="after")
    def _one_kind(self) -> Source:
        given = [
            k for k in _KINDS if k in self.model_fields_set and (k == "const" or getattr(self, k) is not None)
        ]
        if len(given) != 1:
            got = f"got {' and '.join(given)}" if given else "got none"
            raise ValueError(f"give exactly one of {', '.join(_KINDS)} ({got})")
        if self.lookup is not None and self.key is None:
            raise ValueError(
                "a lookup needs a key: the source of the value to look up, e.g. {lookup: domains, key: intent}"
            )
        if self.key is not None and self.lookup is None:
            raise ValueError("key is only used with lookup")
        if "sep" in self.model_fields_set and self.concat is None and self.join is None:
            raise ValueError("sep is only used with concat or join")
        if self.unmapped is False:
            raise ValueError("unmapped: true is the only value it takes")
        return self

    @property
    def kind(self) -> str:
        """Which kind of source this is."""
        for k in _KINDS:
            if k in self.model_fields_set and (k == "const" or getattr(self, k) is not None):
                return k
        return "const"  # pragma: no cover - the validator guarantees one


SourceLike = Union[str, Source]  # noqa: UP007 - pydantic needs the runtime Union for the recursive alias
Source.model_rebuild()


class Lookup(BaseModel):
    """A lookup table: a key (an intent, say) maps to a value (its domain).

    Attributes:
        file: A JSON or YAML file holding the table (relative to the profile file). A table whose
            values are lists — CLINC150's ``domains.json``, domain → [intents] — is inverted, so each
            listed item maps to its key.
        table: The table itself (what a saved profile keeps, so it works after the file moves).
        default: The value for keys not in the table; without one, a missing key is a problem.
        normalize: Compare keys case- and whitespace-insensitively.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    file: str | None = None
    table: dict[str, Any] | None = None
    default: Any = None
    normalize: bool = True

    @model_validator(mode="after")
    def _has_table(self) -> Lookup:
        if self.file is None and self.table is None:
            raise ValueError("a lookup needs a file (JSON/YAML) or an inline table")
        return self

    @property
    def has_default(self) -> bool:
        """Whether `default` was given (it may be given as null)."""
        return "default" in self.model_fields_set


Quoting = Literal["csv", "none"]
"""How a CSV/TSV file's quotes are read: ``csv`` as RFC 4180 quoting, ``none`` as part of the text."""

QUOTINGS: tuple[Quoting, ...] = ("csv", "none")


class ReadOptions(TypedDict, total=False):
    """The read options, given one by one (``read_table(path, delimiter=";")``); a `ReadSpec` field each.

    Left out, an option is detected from the file. The functions that read a file (`read_table`,
    `plan_import`, `preview_import`, `suggest_mapping`, ``store.datasets.import_file``) take them as
    keyword arguments.
    """

    format: str | None
    """``csv``, ``xlsx``, ``jsonl`` or ``json``, to override the file's suffix."""
    sheet: str | int | None
    """Excel sheet name, or 0-based index (default: the first worksheet)."""
    header_row: int | None
    """The 1-based row holding the column names (as Excel numbers rows); 0 when there is none."""
    encoding: str | None
    """Text encoding of CSV/JSON files (default: detected: a BOM, UTF-8, else GB18030/GBK)."""
    delimiter: str | None
    """CSV delimiter (default: sniffed among ``,`` tab ``;`` ``|``)."""
    quoting: Quoting | None
    """``csv``: quotes around a cell are RFC 4180 quoting (``""`` inside is one quote); ``none``: quotes
    are part of the text. Default: ``csv``, unless the file's first 64 KiB only read as text."""


class ReadSpec(BaseModel):
    """How files of this profile's shape are read; empty fields are detected.

    Attributes:
        format: ``csv``, ``xlsx``, ``jsonl`` or ``json``.
        sheet: Excel sheet name or 0-based index.
        header_row: 1-based header row (0: none).
        encoding: Text encoding.
        delimiter: CSV delimiter.
        quoting: ``csv`` (quotes quote cells, RFC 4180) or ``none`` (quotes are text) for CSV files.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str | None = None
    sheet: str | int | None = None
    header_row: int | None = Field(default=None, ge=0)
    encoding: str | None = None
    delimiter: str | None = None
    quoting: Quoting | None = None

    def updated(self, options: Mapping[str, Any] | ReadSpec | None = None, /, **more: Any) -> ReadSpec:
        """These options with those given that are set (not None) taking their place.

        Layers of read options stack this way: a recipe's, then a profile's ``read``, then the
        caller's (``ReadSpec().updated(recipe.read).updated(profile.read).updated(format=...)``).

        Raises:
            ValueError: an option that is no read option (a caller's are checked first: `check_read_options`).
            UsageError: an option's value is not of its kind (a header row below 0).
        """
        given = options.model_dump() if isinstance(options, ReadSpec) else dict(options or {})
        given.update(more)
        changes = {k: v for k, v in given.items() if v is not None}
        unknown = set(changes) - set(type(self).model_fields)
        if unknown:
            raise ValueError(f"not a read option: {', '.join(sorted(unknown))}")
        if not changes:
            return self
        try:  # checked as a profile's ``read`` is: `model_copy` alone would take a header row of -1
            return type(self).model_validate({**self.model_dump(), **changes})
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise UsageError(f"read option {problems} (got {changes!r})") from None


def check_read_options(options: Mapping[str, Any]) -> None:
    """The read options a caller gave by name (`ReadOptions`): one that is no read option is refused.

    Raises:
        UnknownName: the first unknown one, with "did you mean" and the read options.
    """
    unknown = sorted(set(options) - set(ReadSpec.model_fields))
    if unknown:
        raise UnknownName("read option", unknown[0], ReadSpec.model_fields)


class Conversation(BaseModel):
    """How a file of dialogues becomes one case per user turn (the ``conversations`` recipe); a field
    left out is detected from the file.

    Attributes:
        turns: Where a dialogue keeps its list of turns: a key or JSON path (``turns``, ``messages``,
            ``log``). Left out for a table (CSV, sheet) of one turn per row.
        speaker: The key of a turn (for a table, the column) naming who speaks; ``$order`` when turns
            name no speaker and alternate user, assistant, user … (MultiWOZ 2.1's ``log``).
        text: The key of a turn (for a table, the column) holding what was said.
        id: The dialogue's id: a key or JSON path of the dialogue (``dialogue_id``), ``$key`` for the
            name of the object it is stored under (CrossWOZ's ``{"2303": {...}}``), or for a table the
            column whose consecutive equal values make one dialogue. Left out: its position (1, 2 …),
            which moves when dialogues are added or removed above it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    turns: str | None = None
    speaker: str | None = None
    text: str | None = None
    id: str | None = None

    @field_validator("turns")
    @classmethod
    def _turns_path(cls, value: str | None) -> str | None:
        # Read once here, bounded (`MAX_PATH_STEPS`), rather than at every dialogue of the file.
        if value is not None:
            try:
                parse_path(value)
            except MappingError as exc:
                raise ValueError(
                    f"{exc} (turns: the key of each dialogue's list of turns, e.g. turns, messages, log)"
                ) from None
        return value


def _roles_table(value: Any) -> Any:
    """Speaker → chat role, each role ``user`` or ``assistant``: a dataset's turn is never a system message."""
    if not isinstance(value, dict):
        return value
    out: dict[str, str] = {}
    for speaker, role in value.items():
        name, target = _label_text(speaker), str(role).strip().casefold() if role is not None else ""
        if target == "system":
            raise ValueError(
                f"{name!r} → system: a dataset's turn is never sent as the chat's system message (its "
                "text would outrank the instructions); map the bot's side to assistant"
            )
        if target not in CHAT_ROLES:
            raise ValueError(f"{name!r} → {role!r}; a speaker's role is user or assistant")
        out[name] = target
    return out


class Shape(BaseModel):
    """The columns (or keys) and splits of the file a profile was made for."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    format: str | None = None
    columns: list[str] = []
    splits: list[str] = []


class MappingProfile(BaseModel):
    """How a file's rows become cases: a source per case field, label normalisation, splits, defaults.

    Attributes:
        name: The name it is saved under (字段映射 name); versions count up per name.
        version: Set by the store when saved.
        description: What the profile is for.
        recipe: A recipe that reshapes rows first (``intent-blocks``, ``skill-creator`` ...).
        read: How to read files of this shape (sheet, header row, encoding ...).
        fields: Case field → source. ``input`` is required (unless the recipe maps it).
        defaults: Case field → value used when its source is missing or empty in a row.
        label_map: Gold value → label (``快: fast``, ``0: fast``); keys match ignoring case,
            width and surrounding whitespace.
        label_set: The allowed labels; ``expected`` is then required and checked against it.
        expected_kind: ``label`` when the gold values are classes (a value map, per-class figures and
            a confusion matrix follow), ``answer`` when they are free-text reference answers; left out,
            the values decide (see `abbench.dataset.gold_kind`). A label set implies ``label``.
        normalize_input: Tidy the whitespace of inputs (NBSP, tabs, runs of spaces); the raw
            row is kept either way.
        splits: For JSON objects of named splits: the splits to import (default all).
        roles: Speaker name → chat role (``user`` or ``assistant``) for history turns and dialogues
            whose speakers are not among the names every import knows (`abbench.dataset.SPEAKER_ROLES`:
            ``usr``/``sys``, ``USER``/``SYSTEM``, ``用户``/``客服`` …); names compare ignoring case and
            width. A turn whose speaker neither knows is refused with its row.
        conversation: How dialogues become one case per user turn (recipe ``conversations``).
        lookups: Named lookup tables used by ``{lookup: name, key: ...}`` sources.
        shape: The columns of the file the profile was made for, to warn when the next file differs.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str | None = None
    version: int | None = None
    description: str | None = None
    recipe: str | None = None
    read: ReadSpec = ReadSpec()
    fields: dict[str, SourceLike] = {}
    defaults: dict[str, Any] = {}
    label_map: dict[str, str] = {}
    label_set: list[str] | None = None
    expected_kind: Literal["label", "answer"] | None = None
    normalize_input: bool = True
    splits: list[str] | None = None
    roles: dict[str, str] = {}
    conversation: Conversation | None = None
    lookups: dict[str, Lookup] = {}
    shape: Shape | None = None

    @field_validator("roles", mode="before")
    @classmethod
    def _roles(cls, value: Any) -> Any:
        return _roles_table(value)

    @model_validator(mode="before")
    @classmethod
    def _conversation_recipe(cls, data: Any) -> Any:
        # `conversation:` alone says the recipe: a profile need not name it twice.
        if isinstance(data, dict) and data.get("conversation") is not None and not data.get("recipe"):
            return {**data, "recipe": "conversations"}
        return data

    @field_validator("fields", "defaults")
    @classmethod
    def _case_fields(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = [k for k in value if k not in CASE_FIELDS]
        if unknown:
            raise ValueError(
                f"unknown case field {', '.join(map(repr, unknown))}; valid: {', '.join(CASE_FIELDS)}"
            )
        return value

    @field_validator("label_map", mode="before")
    @classmethod
    def _label_map_text(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {_label_text(k): _label_text(v) for k, v in value.items()}
        return value

    @field_validator("label_set", mode="before")
    @classmethod
    def _label_set_text(cls, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            return [_label_text(v) for v in value]
        return value

    @field_validator("name")
    @classmethod
    def _name(cls, value: str | None) -> str | None:
        if value is not None:
            value = value.strip()
            if not value or "@" in value or "/" in value:
                raise ValueError(
                    "a profile name is non-empty text without '@' or '/' (the version goes after '@')"
                )
            bad = control_character(value)
            if bad is not None:
                raise ValueError(f"the profile name {value!r} holds {bad}; a name is one line of text")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> MappingProfile:
        _no_twins(self.label_map, self.label_set)
        if self.conversation is not None and self.recipe not in (None, "conversations"):
            raise ValueError(
                f"conversation: is read by the recipe conversations, not by recipe {self.recipe}; drop one of them"
            )
        if self.label_set is not None:
            if not self.label_set:
                raise ValueError("label_set is empty; list the allowed labels or leave it out")
            if self.expected_kind == "answer":
                raise ValueError(
                    "expected_kind: answer says the gold values are free text, but label_set lists labels; "
                    "keep one of them (expected_kind: label, or no label_set)"
                )
            outside = sorted({v for v in self.label_map.values() if v not in self.label_set})
            if outside:
                raise ValueError(
                    f"label_map maps to {', '.join(map(repr, outside))}, which label_set does not hold; "
                    f"label_set: {', '.join(self.label_set)}"
                )
        for field, source in self.fields.items():
            for name in _lookups_used(source):
                if name not in self.lookups:
                    known = ", ".join(self.lookups) or "none defined"
                    raise ValueError(
                        f"fields.{field} uses lookup {name!r}, which lookups does not define ({known})"
                    )
        return self

    # -- identity and (de)serialisation --------------------------------------------------------------

    @property
    def ref(self) -> str | None:
        """``name@version`` once saved, else the name (or None)."""
        if self.name and self.version:
            return f"{self.name}@{self.version}"
        return self.name

    def spec(self) -> dict[str, Any]:
        """The profile as a JSON-ready dict, leaving out what was not set, in the order of the fields."""
        data = self.model_dump(mode="json", exclude_defaults=True, exclude={"fields"})
        if self.fields:
            # Sources keep exactly the keys that were given: `{const: null}` must survive a round trip.
            data["fields"] = {
                k: v if isinstance(v, str) else v.model_dump(mode="json", exclude_unset=True)
                for k, v in self.fields.items()
            }
        return {k: data[k] for k in type(self).model_fields if k in data}

    def identity(self) -> str:
        """Canonical JSON of what a person wrote: everything but the version and the recorded shape."""
        data = self.spec()
        for key in ("version", "shape"):
            data.pop(key, None)
        return canonical_json(data)

    def to_json(self) -> str:
        """The profile as indented JSON."""
        return json.dumps(self.spec(), ensure_ascii=False, indent=2)

    def to_yaml(self) -> str:
        """The profile as YAML (non-ASCII kept readable)."""
        return yaml.safe_dump(self.spec(), allow_unicode=True, sort_keys=False)

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the profile to a ``.json`` or ``.yaml`` file; return its path."""
        p = Path(path)
        p.write_text(self.to_json() if p.suffix.lower() == ".json" else self.to_yaml(), encoding="utf-8")
        return p

    @classmethod
    def from_dict(
        cls, data: Any, *, where: str = "mapping profile", text: str | None = None
    ) -> MappingProfile:
        """Validate a dict, turning pydantic's errors into one readable `MappingError`."""
        if not isinstance(data, dict):
            raise MappingError(
                f"{where}: expected a mapping of keys (name, fields, ...), got {type(data).__name__}"
            )
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise MappingError(_explain(exc, where, text)) from None

    @classmethod
    def from_text(cls, text: str, *, where: str = "mapping profile") -> MappingProfile:
        """A profile from JSON or YAML text."""
        try:
            data = load_yaml(text)
        except yaml.YAMLError as exc:
            at = error_at(exc, ", line {line}, column {column}")
            raise MappingError(f"{where}{at}: not valid YAML/JSON ({error_problem(exc)})") from None
        return cls.from_dict(data, where=where, text=text)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> MappingProfile:
        """A profile from a ``.json``/``.yaml`` file; lookup files are read relative to it and kept inline."""
        p = Path(path).expanduser()
        try:
            text = read_utf8(p, MappingError)
        except OSError as exc:
            raise MappingError(f"cannot read mapping profile {p}: {exc.strerror or exc}") from None
        profile = cls.from_text(text, where=str(p))
        return profile.with_lookups_loaded(p.parent)

    def with_lookups_loaded(self, base: str | os.PathLike[str] | None = None) -> MappingProfile:
        """The same profile with every lookup file read into its inline table (relative to `base`)."""
        from abbench.dataset._readers import load_json_file  # _readers imports this module (ReadSpec)

        if not any(lk.table is None for lk in self.lookups.values()):
            return self
        lookups = {}
        for name, lk in self.lookups.items():
            if lk.table is None:
                assert lk.file is not None  # validated: a lookup has its table or names its file
                file = Path(lk.file).expanduser()
                if not file.is_absolute() and base is not None:
                    file = Path(base) / file
                data = load_json_file(file)
                if not isinstance(data, dict):
                    raise MappingError(
                        f"lookup {name!r}: {file} holds a {type(data).__name__}, not an object of key → value"
                    )
                lk = lk.model_copy(update={"table": invert_lookup(data)})
            lookups[name] = lk
        return self.model_copy(update={"lookups": lookups})

    def evolve(self, **changes: Any) -> MappingProfile:
        """A validated copy with `changes` applied."""
        data = self.spec()
        data.update(changes)
        return MappingProfile.from_dict(data)


def invert_lookup(data: dict[str, Any]) -> dict[str, Any]:
    """A lookup table from a file: values that are lists are inverted (item → key), others kept."""
    out: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, list):
            for item in value:
                out[_label_text(item)] = key
        else:
            out[_label_text(key)] = value
    return out


_SAME = "the same after normalisation (case, full-width forms and spaces are ignored)"


def _no_twins(label_map: dict[str, str], label_set: list[str] | None) -> None:
    """Refuse label_map keys that read as one but map to different labels, and label_set entries that
    read as one: either would silently rewrite the gold or count a label twice."""
    seen: dict[str, str] = {}
    for key, target in label_map.items():
        first = seen.setdefault(label_key(key), key)
        if first != key and label_key(label_map[first]) != label_key(target):
            raise ValueError(
                f"label_map: the keys {first!r} and {key!r} are {_SAME} but map to {label_map[first]!r} and "
                f"{target!r}; keep one of them"
            )
    labels: dict[str, str] = {}
    for label in label_set or ():
        key = label_key(label)
        if key in labels:
            first = labels[key]
            twins = f"lists {label!r} twice" if first == label else f"lists {first!r} and {label!r}, {_SAME}"
            raise ValueError(f"label_set {twins}: one label; keep one of them")
        labels[key] = label


def _lookups_used(source: SourceLike) -> list[str]:
    if isinstance(source, str):
        return []
    names = [source.lookup] if source.lookup else []
    for sub in [
        *(source.concat or []),
        *([source.join] if source.join is not None else []),
        *((source.object or {}).values()),
        *([source.key] if source.key else []),
    ]:
        names += _lookups_used(sub)
    return names


def _explain(exc: ValidationError, where: str, text: str | None) -> str:
    lines = [f"{where} is not a valid mapping profile:"]
    for err in exc.errors():
        if err["type"] == "string_type" and isinstance(err.get("input"), dict):
            continue  # the `str` branch of a source: the object branch's error says what is wrong
        loc = [
            p
            for p in err["loc"]
            if not (isinstance(p, str) and p in ("str", "Source", "function-after[_one_kind(), Source]"))
        ]
        dotted = ".".join(
            str(p) for p in loc if not str(p).startswith(("function-", "union[", "json-or-python"))
        )
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown key; " + _known_keys(loc)
        line = _line_of(text, [p for p in loc if not str(p).startswith(("function-",))]) if text else None
        at = f" (line {line})" if line else ""
        lines.append(f"  {dotted or '(top)'}{at}: {msg}")
    lines += _object_hints(exc, text)
    return "\n".join(dict.fromkeys(lines))


def _object_hints(exc: ValidationError, text: str | None) -> list[str]:
    """A field written as ``{name: source, ...}`` (none of a source's keys) meant an object of named parts."""
    named = {
        err["loc"][1]
        for err in exc.errors()
        if err["type"] == "extra_forbidden" and len(err["loc"]) >= 2 and err["loc"][0] == "fields"
    }
    try:
        fields = (load_yaml(text) or {}).get("fields") if text else None
    except (yaml.YAMLError, AttributeError):
        return []
    hints = []
    for name in sorted(str(n) for n in named):
        given = fields.get(name) if isinstance(fields, dict) else None
        if isinstance(given, dict) and given and not set(given) & set(Source.model_fields):
            parts = ", ".join(f"{k}: {v}" for k, v in list(given.items())[:3])
            hints.append(
                f"  fields.{name}: to build an object of named parts, write {name}: {{object: {{{parts}}}}}"
            )
    return hints


def _known_keys(loc: list[Any]) -> str:
    model: type[BaseModel] = MappingProfile
    if len(loc) >= 2 and loc[0] == "fields":
        model = Source
    elif loc and loc[0] in ("read",):
        model = ReadSpec
    elif loc and loc[0] == "lookups":
        model = Lookup
    elif loc and loc[0] == "shape":
        model = Shape
    elif loc and loc[0] == "conversation":
        model = Conversation
    return f"valid keys: {', '.join(model.model_fields)}"


def _line_of(text: str, loc: list[Any]) -> int | None:
    """The 1-based line of the YAML/JSON node at `loc`, for error messages."""
    try:
        node = compose_yaml(text)
    except yaml.YAMLError:
        return None
    line = None
    for part in loc:
        if isinstance(node, yaml.MappingNode):
            for k, v in node.value:
                if str(k.value) == str(part):
                    line = k.start_mark.line + 1
                    node = v
                    break
            else:
                return line
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
            node = node.value[part]
            line = node.start_mark.line + 1
        else:
            return line
    return line

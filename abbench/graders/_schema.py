"""JSON Schema validation for the `json_schema` grader: `jsonschema` when installed, else a small built-in subset.

abbench does not depend on `jsonschema` (it comes with the Jupyter extras, not with the core), so the
built-in validator covers what answer schemas use in practice: ``type``, ``enum``, ``const``,
``properties``/``required``/``additionalProperties``/``patternProperties``, ``items``/``prefixItems``,
length and range limits, ``pattern``, ``multipleOf``, ``uniqueItems``, ``allOf``/``anyOf``/``oneOf``/``not``,
and local ``$ref`` (``#/$defs/x``, ``#/definitions/x``). Keywords it does not know are ignored, as the
JSON Schema specification says validators must do with unknown keywords.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from abbench._regex import compile_pattern
from abbench._text import clip
from abbench.errors import UsageError
from abbench.graders._schema_re2 import check_patterns, re2_validator

ENGINES = ("auto", "jsonschema", "builtin")
"""Which validator `validate_json` uses: ``auto`` prefers `jsonschema` when it is installed."""

_JSON_TYPES: dict[str, Callable[[Any], bool]] = {
    "null": lambda x: x is None,
    "boolean": lambda x: isinstance(x, bool),
    "integer": lambda x: (
        (isinstance(x, int) and not isinstance(x, bool)) or (isinstance(x, float) and x.is_integer())
    ),
    "number": lambda x: isinstance(x, (int, float)) and not isinstance(x, bool),
    "string": lambda x: isinstance(x, str),
    "array": lambda x: isinstance(x, list),
    "object": lambda x: isinstance(x, dict),
}
"""JSON Schema's ``type`` names, each with its test of a parsed JSON value."""


def has_jsonschema() -> bool:
    """Whether the `jsonschema` package can be imported here."""
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        return False
    return True


def check_schema(schema: Any, engine: str = "auto") -> None:
    """Refuse a schema that cannot be used, with a message that says where it is wrong.

    Raises:
        UsageError: the schema is not an object (or boolean), or `jsonschema` finds it invalid.
    """
    if engine not in ENGINES:
        raise UsageError(f"json_schema engine {engine!r} is unknown; choose one of: {', '.join(ENGINES)}")
    if not isinstance(schema, (Mapping, bool)):
        raise UsageError(f"a JSON schema must be an object, not {type(schema).__name__}: {schema!r:.100}")
    check_patterns(schema)  # on RE2, as they will be matched; refused now, not met while grading
    if _engine(engine) == "jsonschema":
        from jsonschema import exceptions, validators

        try:
            validators.validator_for(schema).check_schema(schema)
        except exceptions.SchemaError as exc:
            where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
            raise UsageError(f"the JSON schema is invalid at {where}: {exc.message}") from None
        return
    _check_builtin(schema, "#")


def validate_json(instance: Any, schema: Any, *, engine: str = "auto", limit: int = 20) -> list[str]:
    """Every way `instance` breaks `schema`, as ``"$.path: message"`` lines (empty when it is valid).

    Args:
        instance: The parsed JSON value.
        schema: The schema (a dict, or True/False).
        engine: ``auto``, ``jsonschema`` or ``builtin``.
        limit: At most this many problems are returned.
    """
    if _engine(engine) == "jsonschema":
        cls = re2_validator(schema)
        errors = sorted(cls(schema).iter_errors(instance), key=lambda e: list(e.absolute_path))
        return [f"{_path(e.absolute_path)}: {e.message}" for e in errors[:limit]]
    problems: list[str] = []
    _Builtin(schema, problems, limit).check(instance, schema, [])
    return problems


def _engine(engine: str) -> str:
    if engine == "auto":
        return "jsonschema" if has_jsonschema() else "builtin"
    if engine == "jsonschema" and not has_jsonschema():
        raise UsageError(
            "json_schema engine 'jsonschema' needs the jsonschema package: pip install jsonschema"
        )
    return engine


def _path(parts: list[str | int]) -> str:
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def _check_builtin(schema: Any, where: str) -> None:
    if isinstance(schema, bool):
        return
    if not isinstance(schema, Mapping):
        raise UsageError(f"the JSON schema is invalid at {where}: a schema must be an object or a boolean")
    types = schema.get("type")
    for t in [types] if isinstance(types, str) else types or []:
        if t not in _JSON_TYPES:
            raise UsageError(
                f"the JSON schema is invalid at {where}/type: {t!r} is not one of {', '.join(sorted(_JSON_TYPES))}"
            )
    for key in ("properties", "patternProperties", "$defs", "definitions"):
        for name, sub in (schema.get(key) or {}).items():
            _check_builtin(sub, f"{where}/{key}/{name}")
    for key in ("items", "additionalProperties", "not"):
        if isinstance(schema.get(key), Mapping):
            _check_builtin(schema[key], f"{where}/{key}")
    for key in ("allOf", "anyOf", "oneOf", "prefixItems"):
        for i, sub in enumerate(schema.get(key) or []):
            _check_builtin(sub, f"{where}/{key}/{i}")


class _Builtin:
    """The built-in subset; problems are collected, not raised, so a grader can list them all."""

    def __init__(self, root: Any, problems: list[str], limit: int):
        self.root = root
        self.problems = problems
        self.limit = limit

    def add(self, path: list[str | int], message: str) -> None:
        if len(self.problems) < self.limit:
            self.problems.append(f"{_path(path)}: {message}")

    def valid(self, instance: Any, schema: Any) -> bool:
        """Whether `instance` fits `schema`, without recording problems (for anyOf/oneOf/not)."""
        probe = _Builtin(self.root, [], 1)
        probe.check(instance, schema, [])
        return not probe.problems

    def resolve(self, ref: str) -> Any:
        if not ref.startswith("#"):
            raise UsageError(
                f"the built-in JSON schema validator only follows local $ref (#/...), not {ref!r}"
            )
        node = self.root
        for part in [p for p in ref[1:].split("/") if p]:
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                raise UsageError(f"$ref {ref!r} points at nothing in the schema")
            node = node[part]
        return node

    def check(self, x: Any, s: Any, path: list[str | int]) -> None:
        if s is True or s == {}:
            return
        if s is False:
            self.add(path, "no value is allowed here")
            return
        if "$ref" in s:
            self.check(x, self.resolve(s["$ref"]), path)
        if "type" in s:
            types = [s["type"]] if isinstance(s["type"], str) else list(s["type"])
            if not any(_is_type(x, t) for t in types):
                self.add(path, f"{_show(x)} is not of type {' or '.join(types)}")
                return
        if "const" in s and not _equal(x, s["const"]):
            self.add(path, f"{_show(x)} is not {_show(s['const'])}")
        if "enum" in s and not any(_equal(x, v) for v in s["enum"]):
            self.add(path, f"{_show(x)} is not one of {_show(list(s['enum']))}")
        if isinstance(x, str):
            self._string(x, s, path)
        elif _is_type(x, "number"):
            self._number(x, s, path)
        elif isinstance(x, list):
            self._array(x, s, path)
        elif isinstance(x, dict):
            self._object(x, s, path)
        for sub in s.get("allOf") or []:
            self.check(x, sub, path)
        if "anyOf" in s and not any(self.valid(x, sub) for sub in s["anyOf"]):
            self.add(path, f"{_show(x)} fits none of the anyOf alternatives")
        if "oneOf" in s:
            n = sum(self.valid(x, sub) for sub in s["oneOf"])
            if n != 1:
                self.add(path, f"{_show(x)} fits {n} of the oneOf alternatives, not exactly one")
        if "not" in s and self.valid(x, s["not"]):
            self.add(path, f"{_show(x)} must not fit {_show(s['not'])}")

    def _string(self, x: str, s: Mapping[str, Any], path: list[str | int]) -> None:
        if "minLength" in s and len(x) < s["minLength"]:
            self.add(path, f"{_show(x)} is shorter than {s['minLength']} characters")
        if "maxLength" in s and len(x) > s["maxLength"]:
            self.add(path, f"{_show(x)} is longer than {s['maxLength']} characters")
        if "pattern" in s and not compile_pattern(s["pattern"]).search(x):
            self.add(path, f"{_show(x)} does not match {s['pattern']!r}")

    def _number(self, x: float, s: Mapping[str, Any], path: list[str | int]) -> None:
        if "minimum" in s and x < s["minimum"]:
            self.add(path, f"{x} is less than the minimum of {s['minimum']}")
        if "maximum" in s and x > s["maximum"]:
            self.add(path, f"{x} is greater than the maximum of {s['maximum']}")
        if "exclusiveMinimum" in s and x <= s["exclusiveMinimum"]:
            self.add(path, f"{x} is not greater than {s['exclusiveMinimum']}")
        if "exclusiveMaximum" in s and x >= s["exclusiveMaximum"]:
            self.add(path, f"{x} is not less than {s['exclusiveMaximum']}")
        if "multipleOf" in s:
            q = x / s["multipleOf"]
            if not math.isclose(q, round(q), abs_tol=1e-9):
                self.add(path, f"{x} is not a multiple of {s['multipleOf']}")

    def _array(self, x: list[Any], s: Mapping[str, Any], path: list[str | int]) -> None:
        if "minItems" in s and len(x) < s["minItems"]:
            self.add(path, f"has {len(x)} items, fewer than {s['minItems']}")
        if "maxItems" in s and len(x) > s["maxItems"]:
            self.add(path, f"has {len(x)} items, more than {s['maxItems']}")
        if s.get("uniqueItems"):
            seen: list[str] = []
            for item in x:
                key = json.dumps(item, sort_keys=True)
                if key in seen:
                    self.add(path, f"has the item {_show(item)} more than once")
                    break
                seen.append(key)
        prefix = list(s.get("prefixItems") or [])
        for i, sub in enumerate(prefix[: len(x)]):
            self.check(x[i], sub, [*path, i])
        items = s.get("items")
        if isinstance(items, list):  # draft 4-7 tuple form
            for i, sub in enumerate(items[: len(x)]):
                self.check(x[i], sub, [*path, i])
        elif items is not None:
            for i in range(len(prefix), len(x)):
                self.check(x[i], items, [*path, i])

    def _object(self, x: dict[str, Any], s: Mapping[str, Any], path: list[str | int]) -> None:
        for name in s.get("required") or []:
            if name not in x:
                self.add(path, f"{name!r} is a required property")
        if "minProperties" in s and len(x) < s["minProperties"]:
            self.add(path, f"has {len(x)} properties, fewer than {s['minProperties']}")
        if "maxProperties" in s and len(x) > s["maxProperties"]:
            self.add(path, f"has {len(x)} properties, more than {s['maxProperties']}")
        props = s.get("properties") or {}
        patterns = s.get("patternProperties") or {}
        extra = s.get("additionalProperties", True)
        for key, value in x.items():
            matched = False
            if key in props:
                matched = True
                self.check(value, props[key], [*path, key])
            for pattern, sub in patterns.items():
                if compile_pattern(pattern).search(key):
                    matched = True
                    self.check(value, sub, [*path, key])
            if not matched:
                if extra is False:
                    self.add(path, f"additional property {key!r} is not allowed")
                elif isinstance(extra, Mapping):
                    self.check(value, extra, [*path, key])


def _is_type(x: Any, t: str) -> bool:
    test = _JSON_TYPES.get(t)
    return test is not None and test(x)


def _equal(a: Any, b: Any) -> bool:
    # JSON equality: 1 == 1.0, but True is not 1
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and bool(a == b)
    return bool(a == b)


def _show(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return clip(text, 60)

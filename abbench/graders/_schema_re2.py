"""The `jsonschema` package with its pattern keywords on RE2 (`abbench._regex`): ``pattern``,
``patternProperties`` and ``additionalProperties`` (which reads ``patternProperties``) search with
Python's `re` there, and a schema's pattern could backtrack for hours on an agent's output."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from abbench._regex import PatternError, compile_pattern
from abbench.errors import UsageError


def schema_patterns(schema: Any) -> Iterator[tuple[str, Any]]:
    """Every regular expression in a schema, with where it is: ``pattern`` values and
    ``patternProperties`` keys, at any depth."""
    stack: list[tuple[str, Any]] = [("#", schema)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, Mapping):
            if isinstance(node.get("pattern"), str):
                yield f"{where}/pattern", node["pattern"]
            if isinstance(node.get("patternProperties"), Mapping):
                yield from ((f"{where}/patternProperties", k) for k in node["patternProperties"])
            stack.extend((f"{where}/{k}", v) for k, v in node.items() if isinstance(v, (Mapping, list)))
        elif isinstance(node, list):
            stack.extend((f"{where}/{i}", v) for i, v in enumerate(node))


def check_patterns(schema: Any) -> None:
    """Refuse a schema holding a pattern RE2 cannot run, saying where.

    Raises:
        UsageError: the first such pattern, with its place in the schema.
    """
    for where, pattern in schema_patterns(schema):
        try:
            compile_pattern(pattern)
        except PatternError as exc:
            raise UsageError(f"the JSON schema is invalid at {where}: {exc}") from None
    keys = _keys(schema)
    if "unevaluatedProperties" in keys and "patternProperties" in keys:
        raise UsageError(
            "the JSON schema uses unevaluatedProperties with patternProperties, which jsonschema matches "
            "with a backtracking engine; use additionalProperties instead"
        )


def _keys(schema: Any) -> set[str]:
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            found.update(str(k) for k in node)
            stack.extend(v for v in node.values() if isinstance(v, (Mapping, list)))
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _matches(pattern: str, text: str) -> bool:
    return compile_pattern(pattern).search(text) is not None


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _matches(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, sub in patterns.items():
        for key, value in instance.items():
            if _matches(pattern, key):
                yield from validator.descend(value, sub, path=key, schema_path=pattern)


def _additional_properties(validator: Any, extra: Any, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    named = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in named and not any(_matches(p, k) for p in patterns)]
    if validator.is_type(extra, "object"):
        for key in extras:
            yield from validator.descend(instance[key], extra, path=key)
    elif not extra and extras:
        joined = ", ".join(repr(k) for k in sorted(extras, key=str))
        if patterns:
            verb = "does" if len(extras) == 1 else "do"
            yield ValidationError(
                f"{joined} {verb} not match any of the regexes: {', '.join(map(repr, sorted(patterns)))}"
            )
        else:
            verb = "was" if len(extras) == 1 else "were"
            yield ValidationError(f"Additional properties are not allowed ({joined} {verb} unexpected)")


def re2_validator(schema: Any) -> Any:
    """The `jsonschema` validator class for `schema`, its pattern keywords on RE2."""
    from jsonschema import validators

    return validators.extend(
        validators.validator_for(schema),
        {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
        },
    )

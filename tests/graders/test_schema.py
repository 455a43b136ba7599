"""The built-in JSON Schema subset agrees with the `jsonschema` package on what answer schemas use."""

from __future__ import annotations

import pytest

from abbench.errors import UsageError
from abbench.graders._schema import check_schema, has_jsonschema, validate_json

DEFS = {
    "$defs": {"label": {"type": "string", "enum": ["fast", "slow"]}},
    "type": "object",
    "properties": {"prediction": {"$ref": "#/$defs/label"}},
}

CASES = [
    ({"type": "integer"}, 3, True),
    ({"type": "integer"}, 3.0, True),
    ({"type": "integer"}, 3.5, False),
    ({"type": "integer"}, True, False),
    ({"type": "number"}, False, False),
    ({"type": ["string", "null"]}, None, True),
    ({"const": 1}, True, False),
    ({"enum": [1, "a"]}, 1.0, True),
    ({"type": "string", "minLength": 2, "maxLength": 3}, "快慢", True),
    ({"type": "string", "maxLength": 3}, "快慢快慢", False),
    ({"type": "string", "pattern": "^c[0-9]+$"}, "c12", True),
    ({"type": "string", "pattern": "^c[0-9]+$"}, "x12", False),
    ({"minimum": 0, "exclusiveMaximum": 1}, 1, False),
    ({"multipleOf": 0.5}, 1.5, True),
    ({"multipleOf": 0.5}, 1.2, False),
    ({"type": "array", "items": {"type": "string"}, "minItems": 1}, [], False),
    ({"type": "array", "items": {"type": "string"}}, ["a", 1], False),
    ({"type": "array", "uniqueItems": True}, [1, 2, 1], False),
    ({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "number"}}, ["a", 1, 2], True),
    ({"type": "array", "prefixItems": [{"type": "string"}], "items": {"type": "number"}}, ["a", "b"], False),
    ({"type": "object", "required": ["a"]}, {"b": 1}, False),
    ({"type": "object", "additionalProperties": False, "properties": {"a": {}}}, {"a": 1, "b": 2}, False),
    ({"type": "object", "additionalProperties": {"type": "number"}}, {"a": 1, "b": "x"}, False),
    ({"type": "object", "patternProperties": {"^s_": {"type": "number"}}}, {"s_x": "1"}, False),
    ({"type": "object", "maxProperties": 1}, {"a": 1, "b": 2}, False),
    ({"anyOf": [{"type": "string"}, {"type": "number"}]}, None, False),
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, 1, False),
    ({"oneOf": [{"type": "number"}, {"type": "integer"}]}, 1.5, True),
    ({"allOf": [{"minimum": 1}, {"maximum": 2}]}, 3, False),
    ({"not": {"type": "null"}}, None, False),
    (DEFS, {"prediction": "fast"}, True),
    (DEFS, {"prediction": "medium"}, False),
    (True, {"anything": 1}, True),
    (False, 1, False),
]


@pytest.mark.parametrize(("schema", "instance", "valid"), CASES)
def test_builtin_validator(schema, instance, valid):
    assert (validate_json(instance, schema, engine="builtin") == []) is valid


@pytest.mark.parametrize(("schema", "instance", "valid"), CASES)
def test_jsonschema_agrees(schema, instance, valid):
    # jsonschema is in the test extra: a missing one is a broken install, not a reason to skip
    assert has_jsonschema()
    assert (validate_json(instance, schema, engine="jsonschema") == []) is valid


def test_problems_name_the_path():
    schema = {
        "type": "object",
        "properties": {"items": {"type": "array", "items": {"type": "object", "required": ["id"]}}},
    }
    assert validate_json({"items": [{"id": 1}, {}]}, schema, engine="builtin") == [
        "$.items[1]: 'id' is a required property"
    ]


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ([1, 2], "a JSON schema must be an object"),
        ({"type": "strng"}, "'strng' is not one of"),
        ({"properties": {"a": {"pattern": "("}}}, "#/properties/a/pattern"),
    ],
)
def test_invalid_schemas_are_refused(schema, message):
    with pytest.raises(UsageError, match="JSON schema"):
        check_schema(schema, "builtin")
    with pytest.raises(UsageError) as info:
        check_schema(schema, "builtin")
    assert message in str(info.value)

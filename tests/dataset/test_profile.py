"""Mapping profiles: validation with readable messages, JSON/YAML round trips, identity."""

from __future__ import annotations

import json

import pytest

from abbench.dataset import MappingProfile, Shape
from abbench.errors import ImportFailed, MappingError

YAML = """\
name: routing
description: 车机 fast/slow 路由
fields:
  case_id: id
  input: 用户query
  expected: 人工标签
  domain: {lookup: domains, key: intent}
  history: {path: "messages[:-1]"}
  context: {const: null}
  metadata: {object: {split: $split, source: {template: "{file}/{id}"}}}
lookups:
  domains: {table: {weather: 天气}, default: 其他}
label_map: {快: fast, 0: fast, 1: slow}
label_set: [fast, slow]
splits: [test]
"""


def test_yaml_and_json_round_trip(tmp_path):
    profile = MappingProfile.from_text(YAML)
    assert profile.label_map == {"快": "fast", "0": "fast", "1": "slow"}  # YAML's int keys become text
    for suffix in (".yaml", ".json"):
        path = profile.save(tmp_path / f"p{suffix}")
        again = MappingProfile.from_file(path)
        assert again == profile
        assert again.identity() == profile.identity()
    assert json.loads(profile.to_json())["fields"]["context"] == {"const": None}


def test_yaml_booleans_become_label_text():
    profile = MappingProfile.from_text(
        "fields: {input: q}\nlabel_map: {true: 是, no: 否}\nlabel_set: [是, 否]"
    )
    assert profile.label_map == {"true": "是", "false": "否"}


def test_identity_ignores_version_and_shape():
    profile = MappingProfile.from_text(YAML)
    same = profile.model_copy(update={"version": 3, "shape": Shape(format="csv", columns=["a"])})
    assert same.identity() == profile.identity()
    assert profile.evolve(label_set=["fast", "slow", "unsure"]).identity() != profile.identity()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "fields: {inptu: q}",
            r"fields \(line 1\): unknown case field 'inptu'; valid: case_id, input, expected",
        ),
        ("fieldz: {input: q}", r"fieldz \(line 1\): unknown key; valid keys: name, version"),
        (
            "fields:\n  input: {colum: q}",
            r"fields.input.colum \(line 2\): unknown key; valid keys: column, path",
        ),
        (
            "fields:\n  input: {column: a, path: b}",
            "give exactly one of column, path, .* \\(got column and path\\)",
        ),
        ("fields:\n  input: {lookup: x}", "a lookup needs a key"),
        ("fields: {input: {lookup: x, key: a}}", "uses lookup 'x', which lookups does not define"),
        (
            "label_set: [fast]\nlabel_map: {快: quick}",
            "label_map maps to 'quick', which label_set does not hold",
        ),
        ("label_set: []", "label_set is empty"),
        ("name: a@b", "without '@'"),
        ("read: {header_row: -1}", r"read.header_row"),
        ("fields: [input]", "fields"),
        ("fields: {input: q", "not valid YAML/JSON"),
        ("- just a list", "expected a mapping of keys"),
    ],
)
def test_invalid_profiles_say_where_and_what(text, message):
    with pytest.raises(MappingError, match=message):
        MappingProfile.from_text(text, where="p.yaml")


def test_lookup_file_is_inverted_and_kept_inline(tmp_path):
    (tmp_path / "domains.json").write_text(
        json.dumps({"banking": ["balance", "transfer"], "travel": ["book_flight"]})
    )
    (tmp_path / "p.yaml").write_text(
        "fields:\n  input: text\n  domain: {lookup: d, key: intent}\nlookups:\n  d: {file: domains.json}\n"
    )
    profile = MappingProfile.from_file(tmp_path / "p.yaml")
    assert profile.lookups["d"].table == {
        "balance": "banking",
        "transfer": "banking",
        "book_flight": "travel",
    }


def test_a_lookup_file_nested_too_deep_is_refused_with_its_name(tmp_path):
    # json.loads gives up with a RecursionError; the import says which file, never a traceback
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "p.yaml").write_text(
        "fields:\n  input: text\n  domain: {lookup: d, key: intent}\nlookups:\n  d: {file: deep.json}\n"
    )
    with pytest.raises(ImportFailed, match=r"deep\.json: the JSON is nested 100,000 levels deep"):
        MappingProfile.from_file(tmp_path / "p.yaml")


def test_missing_profile_file(tmp_path):
    with pytest.raises(MappingError, match="cannot read mapping profile"):
        MappingProfile.from_file(tmp_path / "nope.yaml")


def test_read_options_stack_set_values_over_earlier_ones():
    from abbench.dataset import ReadSpec

    recipe = {"header_row": 0, "format": "xlsx"}
    spec = ReadSpec().updated(recipe).updated(ReadSpec(sheet="标注")).updated(format=None, encoding="gbk")
    assert spec == ReadSpec(format="xlsx", sheet="标注", header_row=0, encoding="gbk")
    assert ReadSpec(sheet=1).updated(sheet=None) == ReadSpec(sheet=1)  # None leaves a value as it was
    with pytest.raises(ValueError, match="not a read option: sheets"):
        ReadSpec().updated(sheets=["a"])


def test_read_table_takes_a_read_spec_and_options_given_one_by_one_win(tmp_path):
    from abbench.dataset import ReadSpec, read_table

    path = tmp_path / "cases.csv"
    path.write_text("title row;;\nid;query;label\n1;hi;fast\n", encoding="utf-8")
    table = read_table(path, read=ReadSpec(delimiter=";", header_row=1))
    assert table.columns == ("title row",)  # trailing blank header cells are no columns
    table = read_table(path, read=ReadSpec(delimiter=";", header_row=1), header_row=2)
    assert table.columns == ("id", "query", "label")
    assert table.options["delimiter"] == ";" and table.options["header_row"] == 2

"""The canonical encoding, content hash and fingerprint of a dataset."""

from __future__ import annotations

import json

from hypothesis import given, strategies as st

from abbench.dataset import (
    canonical_json,
    case_line,
    content_hash,
    convert_file,
    fingerprint,
    generated_case_id,
)
from abbench.types import Case

text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=20)
json_value = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**6), 10**6) | text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)


@given(
    case_id=text,
    input=text,
    expected=st.none() | text,
    history=json_value,
    context=json_value,
    domain=st.none() | text,
    request_id=st.none() | text,
    metadata=st.none() | st.dictionaries(text, json_value, max_size=3),
)
def test_case_line_is_the_canonical_json_of_the_case(
    case_id, input, expected, history, context, domain, request_id, metadata
):
    case = Case(case_id, input, expected, history, context, domain, request_id, metadata)
    as_json = lambda v: None if v is None else canonical_json(v)  # noqa: E731
    line = case_line(
        case_id, input, expected, as_json(history), as_json(context), domain, request_id, as_json(metadata)
    )
    assert line == canonical_json(case.canonical())
    assert json.loads(line) == json.loads(canonical_json(case.canonical()))


def test_canonical_json_is_sorted_compact_and_keeps_utf8():
    assert (
        canonical_json({"b": 1, "a": ["快", {"d": None, "c": True}]})
        == '{"a":["快",{"c":true,"d":null}],"b":1}'
    )


CSV = "id,query,label,domain\n1,导航去公司,fast,地图导航\n2,打开空调,fast,车控\n3,到目的地电量够不够,slow,地图导航\n"
CSV_PROFILE = {"fields": {"case_id": "id", "input": "query", "expected": "label", "domain": "domain"}}


def test_same_cases_from_csv_and_xlsx_with_other_column_names_hash_the_same(write, write_xlsx):
    csv = convert_file(write("a.csv", CSV), CSV_PROFILE, name="demo")
    rows = [
        ["编号", "用户query", "人工标签", "垂域"],
        [1, "导航去公司", "fast", "地图导航"],
        [2, "打开空调", "fast", "车控"],
        [3, "到目的地电量够不够", "slow", "地图导航"],
    ]
    xlsx_profile = {
        "fields": {"case_id": "编号", "input": "用户query", "expected": "人工标签", "domain": "垂域"}
    }
    xlsx = convert_file(write_xlsx("b.xlsx", {"标注": rows}), xlsx_profile, name="demo")
    assert csv.content_hash == xlsx.content_hash and csv.fingerprint == xlsx.fingerprint
    assert csv.cases[0].source_row != xlsx.cases[0].source_row  # kept, but not hashed


def test_one_changed_character_changes_the_hash(write):
    base = convert_file(write("a.csv", CSV), CSV_PROFILE)
    changed = convert_file(write("b.csv", CSV.replace("打开空调", "打开空濶")), CSV_PROFILE)
    reordered_columns = "label,domain,query,id\nfast,地图导航,导航去公司,1\nfast,车控,打开空调,2\nslow,地图导航,到目的地电量够不够,3\n"
    same = convert_file(write("c.csv", reordered_columns), CSV_PROFILE)
    assert base.content_hash != changed.content_hash
    assert base.content_hash == same.content_hash
    assert base.content_hash == content_hash(base.cases)


def test_case_order_is_part_of_the_content(write):
    lines = CSV.splitlines()
    swapped = "\n".join([lines[0], lines[2], lines[1], lines[3]]) + "\n"
    assert (
        convert_file(write("a.csv", CSV), CSV_PROFILE).content_hash
        != convert_file(write("b.csv", swapped), CSV_PROFILE).content_hash
    )


def test_fingerprint_format():
    assert fingerprint("routing", "ab" * 32) == "routing@" + "ab" * 6


def test_generated_id_depends_on_what_the_agent_sees():
    assert generated_case_id("打开空调") == generated_case_id("打开空调")
    assert generated_case_id("打开空调") != generated_case_id("打开空调", '[{"role":"user","content":"hi"}]')
    assert len(generated_case_id("x")) == 12

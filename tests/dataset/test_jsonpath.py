"""JSON paths into rows."""

from __future__ import annotations

import pytest

from abbench.dataset import PathError, parse_path
from abbench.errors import MappingError

ROW = {
    "data": {"query": "导航去公司", "a.b": 1, "list": [10, 20, 30]},
    "input": [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "content": "到目的地电量够不够"},
    ],
    "数据": {"问题": "打开空调"},
    "cell": '{"q": "from a CSV cell"}',
    "ok": True,
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("data.query", "导航去公司"),
        ("$.data.query", "导航去公司"),
        ("$data.query", "导航去公司"),
        ('data["a.b"]', 1),
        ("data['a.b']", 1),
        ("data.list[0]", 10),
        ("data.list.1", 20),
        ("data.list[-1]", 30),
        ("data.list[1:]", [20, 30]),
        ("data.list[::2]", [10, 30]),
        ("input[-1].content", "到目的地电量够不够"),
        ("input[:-1]", ROW["input"][:-1]),
        ("input[:-1].role", ["system", "user", "assistant"]),
        ("input[*].content", ["be brief", "hi", "hello", "到目的地电量够不够"]),
        ("input[?role==user].content", ["hi", "到目的地电量够不够"]),
        ("input[?role=='system'][0].content", "be brief"),
        ("input[?role!=user].role", ["system", "assistant"]),
        ("数据.问题", "打开空调"),
        ("cell.q", "from a CSV cell"),
        ("ok", True),
    ],
)
def test_paths_find_values(path, value):
    assert parse_path(path).get(ROW) == value


@pytest.mark.parametrize(("path", "value"), [("1", "intent"), ("0", "text"), ("[-1]", "intent")])
def test_paths_into_array_rows(path, value):
    assert parse_path(path).get(["text", "intent"]) == value


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("data.missing", "no key 'missing' in an object with keys query, a.b, list"),
        ("data.list[7]", "index 7 is out of range for a list of 3"),
        ("data.query.x", "cannot take key 'x' of a text"),
        ("ok[0]", "cannot take element 0 of a bool"),
        ("data[1:2]", "cannot slice an object"),
    ],
)
def test_failing_paths_say_why(path, message):
    with pytest.raises(PathError, match=message):
        parse_path(path).get(ROW)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "empty JSON path"),
        ("a..b", "column 3: a key is missing before '.'"),
        ("a[0", "never closed"),
        ("a]", r"'\]' without '\['"),
        ("a[1:2:0]", "step cannot be 0"),
        ("a[x:y]", "bad slice"),
        ("a[?x]", "bad filter"),
        ("a.", "ends with '.'"),
    ],
)
def test_malformed_paths_are_mapping_errors(path, message):
    with pytest.raises(MappingError, match=message):
        parse_path(path)

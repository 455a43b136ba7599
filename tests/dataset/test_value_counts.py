"""`Table.value_counts` (what the label editor lists) and `sheet_names` (what the sheet picker offers)."""

from __future__ import annotations

import json

import pytest

from abbench.dataset import read_table, sheet_names
from abbench.errors import ImportFailed, MappingError
from tests.conftest import DEMO


def test_gold_spellings_are_counted_as_written():
    counts = read_table(DEMO / "cases.xlsx").value_counts("人工标签")
    assert counts.counts == {"快": 224, "慢": 171, "快 ": 6}
    assert (counts.n_rows, counts.blank, counts.complete) == (401, 0, True)
    csv = read_table(DEMO / "cases.csv").value_counts("route")
    assert sum(csv.counts.values()) == 401 and csv.counts["SLOW"] == 3 and csv.counts[" fast"] == 2


def test_json_paths_blank_values_and_the_row_limit(tmp_path):
    path = tmp_path / "rows.jsonl"
    rows = [{"data": {"label": v}} for v in ["a", "b", "a", None, " ", 3, 3.0, True, ["x"]]] + [{"other": 1}]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    table = read_table(path)
    counts = table.value_counts("data.label")
    assert counts.counts == {"3": 2, "a": 2, '["x"]': 1, "b": 1, "true": 1}
    assert (counts.n_rows, counts.blank) == (10, 3)  # None, a blank, and the row without the path
    first = table.value_counts("data.label", limit=3)
    assert first.counts == {"a": 2, "b": 1} and not first.complete and first.n_rows == 3
    with pytest.raises(MappingError):
        table.value_counts("data[")


def test_sheet_names(tmp_path):
    assert sheet_names(DEMO / "cases.xlsx") == ["评测集", "标注说明"]
    assert sheet_names(DEMO / "cases.csv") == []
    with pytest.raises(ImportFailed, match="no such file"):
        sheet_names(tmp_path / "missing.xlsx")
    fake = tmp_path / "fake.xlsx"
    fake.write_text("not a workbook", encoding="utf-8")
    with pytest.raises(ImportFailed, match="cannot open as a workbook"):
        sheet_names(fake)

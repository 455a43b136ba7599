"""MappingWidget: suggestion, label map, live preview, validation report, save and import, errors."""

from __future__ import annotations

import datetime as dt
import html
import json
from collections import Counter

import pytest

from abbench.dataset import MappingProfile, label_key
from abbench.widgets import MappingWidget
from abbench.widgets import _mapping as mapping_module
from tests.conftest import DEMO

XLSX = DEMO / "cases.xlsx"
CSV = DEMO / "cases.csv"


@pytest.fixture
def xlsx(store):
    widget = MappingWidget(store, path=XLSX)
    assert widget.errors.message is None
    return widget


def test_the_xlsx_opens_on_its_data_sheet_with_every_field_suggested_and_explained(xlsx):
    assert xlsx.sheet.value == "评测集" and xlsx.sheet.values == ["评测集", "标注说明"]
    sources = {name: row.source for name, row in xlsx.fields.items()}
    assert sources == {
        "case_id": "用例ID",
        "input": "用户query",
        "expected": "人工标签",
        "history": "历史对话",
        "context": "车辆状态",
        "domain": "垂域",
        "request_id": "请求ID",
        "metadata": None,
    }
    assert "人工标签" in xlsx.reasons["expected"] and "suggested" in xlsx.reasons["expected"]
    # header and sample rows: the header row under the merged title, and the first data row
    assert "用户query" in xlsx.sample_html.value and "FS-0001" in xlsx.sample_html.value


def test_the_label_editor_counts_each_gold_value_with_its_spellings(xlsx):
    rows = {row.key: (row.variants, row.count) for row in xlsx.label_rows}
    assert rows == {"快": ({"快": 224, "快 ": 6}, 230), "慢": ({"慢": 171}, 171)}
    assert "230" not in xlsx.labels_note.value and "2 values" in xlsx.labels_note.value


def test_mapping_the_xlsx_labels_gives_the_same_dataset_as_the_csv_profile(store, xlsx):
    xlsx.set_label("快", "fast")
    xlsx.set_label("慢", "slow")
    xlsx.label_set.value = "fast， slow"  # a Chinese comma works too
    assert xlsx.errors.message is None
    assert [c.expected for c in xlsx.preview.cases][:3] == ["slow", "fast", "slow"]
    assert xlsx.report.ok and xlsx.profile.label_map == {"快": "fast", "慢": "slow"}

    xlsx.profile_name.value = "demo-xlsx"
    xlsx.save_button.click()
    assert xlsx.errors.message is None
    saved = store.get_profile("demo-xlsx")
    assert saved.version == 1 and saved.label_set == ["fast", "slow"] and saved.read.sheet == "评测集"
    assert "saved mapping profile demo-xlsx@1" in xlsx.result_html.value
    assert "saved profile demo-xlsx@1" in xlsx.start_from.labels

    xlsx.dataset_name.value = "demo"
    xlsx.import_button.click()
    assert xlsx.errors.message is None
    csv = store.import_dataset(CSV, DEMO / "mapping-csv.yaml", name="demo")
    assert xlsx.dataset.fingerprint == csv.fingerprint == "demo@e9b7386ce4aa"
    assert csv.reused  # the XLSX import stored these very cases first
    assert "demo@e9b7386ce4aa" in xlsx.result_html.value and "401 cases" in xlsx.result_html.value


def test_bad_labels_are_reported_inline_with_their_rows(xlsx):
    xlsx.set_label("快", "fast")
    xlsx.label_set.value = "fast"  # 慢 is mapped to nothing and is not in the set
    problems = [p for p in xlsx.report.problems if p.kind == "label_not_in_set"]
    assert problems and problems[0].location.startswith("评测集!row ")
    assert "label_not_in_set" in xlsx.report_html.value and "评测集!row 3" in xlsx.report_html.value
    report = xlsx.check()  # the whole file: every 慢 row
    assert report.complete and report.counts["label_not_in_set"] == 171 and report.n_valid == 230
    assert "would import 230 cases" in xlsx.report_html.value


def test_the_same_problem_on_many_rows_is_one_line_with_its_count(xlsx):
    xlsx.label_set.value = "fast, slow"  # neither 快 nor 慢 is mapped yet: every row is invalid
    xlsx.check_button.click()
    assert xlsx.errors.message is None  # no valid row is the check's answer, not an error
    report = xlsx.report
    assert report.complete and report.counts["label_not_in_set"] == 401
    html = xlsx.report_html.value
    body = html.split("<tbody>")[1]
    assert body.count("<tr>") == 2  # one line per gold value, not one per row
    assert '<td class="abbench-n">230</td>' in body and '<td class="abbench-n">171</td>' in body
    assert "评测集!row 3, 评测集!row 5, 评测集!row 6 …" in body  # the first rows holding 慢
    assert "type the label it stands for beside it under Gold labels" in html


def test_a_preview_without_cases_says_why_instead_of_an_empty_table(xlsx):
    xlsx.label_set.value = "fast, slow"
    assert xlsx.preview.cases == () or not xlsx.preview.cases
    assert "no row of those read became a case" in xlsx.preview_html.value


def test_duplicate_ids_and_a_missing_input_are_reported(xlsx):
    xlsx.set_field("case_id", "垂域")
    assert xlsx.report.counts.get("duplicate_case_id", 0) > 0
    assert "duplicate_case_id" in xlsx.report_html.value
    xlsx.set_field("input", None)
    assert xlsx.errors.message is not None and "input" in xlsx.errors.message


def test_json_paths_map_nested_fields(store, tmp_path):
    path = tmp_path / "nested.jsonl"
    rows = [
        {"id": i, "data": {"query": f"q{i}", "label": "A" if i % 2 else "B"}, "turns": [{"content": "x"}]}
        for i in range(6)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    widget = MappingWidget(store, path=path)
    widget.set_field("input", "data.query")
    widget.set_field("expected", "data.label")
    assert widget.errors.message is None
    assert widget.fields["input"].choice.value == "path" and widget.fields["input"].path.value == "data.query"
    assert [c.input for c in widget.preview.cases] == [f"q{i}" for i in range(6)]
    assert {row.key: row.count for row in widget.label_rows} == {"a": 3, "b": 3}
    widget.set_label("A", "alpha")
    assert {c.expected for c in widget.preview.cases} == {"alpha", "B"}


def test_an_uploaded_file_is_opened(store):
    content = CSV.read_bytes()
    widget = MappingWidget(store)
    widget.upload.value = (
        {
            "name": "cases.csv",
            "type": "text/csv",
            "size": len(content),
            "content": memoryview(content),
            "last_modified": dt.datetime.now(dt.UTC),
        },
    )
    assert widget.errors.message is None
    assert widget.path.name == "cases.csv" and widget.fields["input"].source == "query"
    assert widget.sheet.widget.layout.display == "none"  # a CSV has no sheets


def test_starting_from_a_saved_profile_fills_the_form_from_it(store):
    store.save_profile(store.resolve_profile(DEMO / "mapping-xlsx.yaml"))
    widget = MappingWidget(store, profile="demo-routing-xlsx", path=XLSX)
    assert widget.errors.message is None
    assert widget.start_from.value == "demo-routing-xlsx@1"
    assert widget.label_set.value == "fast, slow"
    assert {r.key: r.label.value for r in widget.label_rows} == {"快": "fast", "慢": "slow"}
    assert "from profile demo-routing-xlsx@1" in widget.reasons["input"]
    assert widget.report.ok


def test_a_profile_file_can_be_the_starting_point(store):
    widget = MappingWidget(store, profile=DEMO / "mapping-csv.yaml", path=CSV)
    assert widget.errors.message is None and widget.start_from.value == "given"
    assert {c.expected for c in widget.preview.cases} <= {"fast", "slow"}


def test_the_sheet_choice_survives_a_header_row_change(xlsx):
    xlsx.sheet.select("标注说明")
    assert xlsx.table.options["sheet"] == "标注说明"
    xlsx.header_row.value = "1"
    assert xlsx.sheet.value == "标注说明" and xlsx.table.options["sheet"] == "标注说明"


def test_errors_show_in_the_widget_instead_of_raising(store, tmp_path):
    widget = MappingWidget(store)
    widget.file.value = str(tmp_path / "missing.csv")
    widget.open_button.click()
    assert "no such file" in widget.errors.message
    widget.save_button.click()
    assert "give the profile a name" in widget.errors.message
    widget.import_button.click()
    assert "open a file first" in widget.errors.message


def test_an_invalid_file_is_refused_with_its_report_then_imported_when_skipping(store, tmp_path):
    path = tmp_path / "gaps.csv"
    path.write_text("id,question,label\n1,hello,a\n2,,b\n3,bye,a\n", encoding="utf-8")
    widget = MappingWidget(store, path=path)
    widget.import_button.click()
    assert "was not imported" in widget.errors.message
    assert "empty_input" in widget.report_html.value and "line 3" in widget.report_html.value
    widget.skip_invalid.value = True
    widget.import_button.click()
    assert widget.errors.message is None and widget.dataset.n_cases == 2
    assert store.get_dataset(widget.dataset.fingerprint).validation.n_skipped == 1


def test_text_from_the_file_is_escaped(store, tmp_path):
    path = tmp_path / "xss.csv"
    path.write_text('question,label\n"<script>alert(1)</script>",<b>x</b>\n', encoding="utf-8")
    widget = MappingWidget(store, path=path)
    shown = (
        widget.sample_html.value + widget.preview_html.value + widget.labels_box.children[0].children[0].value
    )
    assert "<script>" not in shown and "&lt;script&gt;" in shown and "<b>x</b>" not in shown


def test_a_detected_sheet_gives_way_to_the_profile_chosen_later(store, tmp_path):
    import openpyxl

    path = tmp_path / "two.xlsx"
    book = openpyxl.Workbook()
    book.active.title = "notes"
    book.active.append(["just a note"])
    data = book.create_sheet("data")
    data.append(["question", "label"])
    data.append(["hello", "a"])
    book.save(path)
    store.save_profile(
        MappingProfile.from_dict(
            {"name": "on-data", "read": {"sheet": "data"}, "fields": {"input": "question"}}
        )
    )
    widget = MappingWidget(store, path=path)
    assert widget.sheet.value == "notes" and widget.sheet.intended is None  # detected, not chosen
    widget.start_from.select("on-data@1")
    assert widget.errors.message is None
    assert widget.sheet.value == "data" and [c.input for c in widget.preview.cases] == ["hello"]


def test_the_gold_panel_counts_the_labels_of_array_rows(store, realdata):
    # CLINC150 rows are [text, intent]: the gold column "1" is an index, as the importer reads it
    # (it said "0 values, 23,700 blank" although every row has an intent).
    path = realdata / "clinc150" / "data_full.json"
    widget = MappingWidget(store, path=path)
    assert widget.errors.message is None
    widget.set_field("expected", "1")
    assert widget.errors.message is None
    counts = widget.counts
    rows = [row for part in json.loads(path.read_text(encoding="utf-8")).values() for row in part]
    read = counts.n_rows
    assert counts.blank == 0 and read == min(len(rows), mapping_module.LABEL_COUNT_ROWS)
    expected = Counter(intent for _text, intent in rows[:read])
    assert dict(counts.counts) == dict(expected)
    # 151 intents over 23,700 rows are labels: every one gets its row in the value map editor
    assert widget.kind.is_label and len(widget.label_rows) == len(expected) == 151
    assert "151 values in '1', 0 blank" in html.unescape(widget.labels_note.value)
    assert {row.key: row.count for row in widget.label_rows} == {label_key(k): n for k, n in expected.items()}


def test_the_gold_panel_lists_77_banking_intents_as_labels_and_follows_the_declared_kind(store, realdata):
    # It said "77 distinct values in 'category': reference answers rather than labels" (a fixed 60).
    widget = MappingWidget(store, path=realdata / "banking77" / "test.csv")
    assert widget.fields["expected"].source == "category"
    assert widget.kind.is_label and not widget.kind.declared and len(widget.label_rows) == 77
    assert "77 values in 'category'" in html.unescape(widget.labels_note.value)
    assert "reference answers" not in widget.labels_note.value
    widget.expected_kind.value = "answer"  # the person says otherwise: no value map, and the profile says so
    assert widget.label_rows == [] and "expected_kind: answer" in widget.labels_note.value
    assert widget.profile.expected_kind == "answer"
    widget.expected_kind.value = "label"
    assert len(widget.label_rows) == 77 and widget.profile.expected_kind == "label"
    widget.dataset_name.value = "banking77"
    widget.do_import()
    assert widget.errors.message is None
    info = store.get_dataset("banking77")
    assert info.expected_kind.kind == "label" and info.expected_kind.declared

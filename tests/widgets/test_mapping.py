"""MappingWidget: suggestion, label map, live preview, validation report, save and import, errors."""

from __future__ import annotations

import datetime as dt
import html
import json
import re
from collections import Counter
from html import unescape

import pytest

from abbench.dataset import MappingProfile, label_key
from abbench.widgets import MappingWidget, _mapping as mapping_module
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
        "expected_skill": None,
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
    saved = store.profiles.get("demo-xlsx")
    assert saved.version == 1 and saved.label_set == ["fast", "slow"] and saved.read.sheet == "评测集"
    assert "saved mapping profile demo-xlsx@1" in xlsx.result_html.value
    assert "saved profile demo-xlsx@1 · matches this file" in xlsx.start_from.labels

    xlsx.dataset_name.value = "demo"
    xlsx.import_button.click()
    assert xlsx.errors.message is None
    csv = store.datasets.import_file(CSV, DEMO / "mapping-csv.yaml", name="demo")
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
    # the check tells what Import would do now: refuse (it used to promise "would import 230 cases")
    html = xlsx.report_html.value
    assert "import refused: 171 errors in 1 kind on 171 of 401 rows; nothing stored" in html
    assert "would import" not in html
    xlsx.skip_invalid.value = True  # the outcome follows the box at once
    assert "would import 230 cases, 171 skipped (skip invalid rows)" in xlsx.report_html.value
    xlsx.check()
    assert "would import 230 cases, 171 skipped" in xlsx.report_html.value
    assert "the dataset would be cases@" in xlsx.report_html.value
    xlsx.import_button.click()
    assert xlsx.errors.message is None and xlsx.dataset.n_cases == 230  # what was promised


def test_the_same_problem_on_many_rows_is_one_line_with_its_count(xlsx):
    xlsx.label_set.value = "fast, slow"  # neither 快 nor 慢 is mapped yet: every row is invalid
    xlsx.check_button.click()
    assert xlsx.errors.message is None  # no valid row is the check's answer, not an error
    report = xlsx.report
    assert report.complete and report.counts["label_not_in_set"] == 401
    html = xlsx.report_html.value
    table, folded = html.split("<tbody>")[1].split("</tbody>")
    assert table.count("<tr>") == 1  # one line per kind of problem, not one per row or per value
    assert '<td class="abbench-n">401</td>' in table and "快 ×230, 慢 ×171" in table
    assert "评测集!row 3, 4, 5, 6, 7 … (+396 more)" in table  # the first rows, compactly
    assert "ids FS-0001, FS-0002, FS-0003 … (+398)" in table
    assert "type the label each value stands for under Gold labels" in table
    # every row and each value's own rows are under the fold, in a box of bounded height
    assert "<details><summary>show all (401 problems kept, by kind)</summary>" in folded
    assert "慢 ×171 at 评测集!row 3, 5, 6, 10, 12 …" in folded and "FS-0401" in folded
    assert "max-height:320px" in folded


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
    # keys inside objects are offered like columns (issue 41, item 3); any other path is typed
    assert (
        widget.fields["input"].choice.value == "col:data.query"
        and widget.fields["input"].source == "data.query"
    )
    widget.set_field("context", "turns[0].content")
    assert (
        widget.fields["context"].choice.value == "path"
        and widget.fields["context"].path.value == "turns[0].content"
    )
    assert [c.context for c in widget.preview.cases] == ["x"] * 6
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
    store.profiles.save(store.profiles.resolve(DEMO / "mapping-xlsx.yaml"))
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
    assert store.datasets.get(widget.dataset.fingerprint).validation.n_skipped == 1


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
    book.active.title = "first"  # one short cell, not named as notes: the detected sheet (a README gives way)
    book.active.append(["just a value"])
    data = book.create_sheet("data")
    data.append(["question", "label"])
    data.append(["hello", "a"])
    book.save(path)
    store.profiles.save(
        MappingProfile.from_dict(
            {"name": "on-data", "read": {"sheet": "data"}, "fields": {"input": "question"}}
        )
    )
    widget = MappingWidget(store, path=path)
    assert widget.errors.message is None
    # the saved profile reads sheet "data", which this workbook has: it is proposed, and says so
    assert widget.start_from.value == "on-data@1"
    assert "proposed profile 'on-data@1' matches: columns question on sheet 'data'" in unescape(
        widget.match_html.value
    )
    assert widget.sheet.value == "data" and [c.input for c in widget.preview.cases] == ["hello"]
    widget.start_from.select("suggested")
    assert widget.sheet.value == "first" and widget.sheet.intended is None  # detected, not chosen
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
    # How 151 intents are shown (labels or free text) is decided elsewhere; the panel counts them all.
    assert f"{len(expected)} distinct values" in widget.labels_note.value or (
        f"{len(expected)} values in" in widget.labels_note.value
    )


# -- profiles proposed only when they fit the file (issue 12, item 12) ------------------------------------


def _said(widget: MappingWidget) -> str:
    """What the widget says about the profile it starts from, as text."""
    return unescape(re.sub(r"<[^>]+>", "", widget.match_html.value))


def _save_as(widget: MappingWidget, name: str) -> None:
    widget.profile_name.value = name
    widget.save_button.click()
    assert widget.errors.message is None


@pytest.mark.slow  # reads CLINC150's 23,700 rows
def test_a_profile_chosen_for_one_file_is_not_applied_to_the_next_unrelated_one(store, realdata):
    # The trial: a profile chosen for AskUbuntu's JSON rows stayed on for CLINC150's [text, intent]
    # rows and gave 71,100 errors (23,700 rows × three fields that find nothing).
    widget = MappingWidget(store, path=realdata / "nlu_corpora" / "AskUbuntuCorpus.json")
    _save_as(widget, "askubuntu")
    widget.start_from.select("askubuntu@1")
    assert widget.errors.message is None and widget.report.ok
    widget.open_file(realdata / "clinc150" / "data_full.json")
    assert widget.errors.message is None
    assert widget.start_from.value == "suggested" and widget.fields["input"].source == "0"
    said = _said(widget)
    assert (
        "askubuntu@1 was not kept for this file: profile 'askubuntu@1' needs columns 'text', 'intent'" in said
    )
    assert "which this file lacks (it has 0, 1)" in said
    assert not widget.report.counts.get("path_failed")
    assert "saved profile askubuntu@1 · lacks text, intent …" in widget.start_from.labels
    # back on a file of AskUbuntu's shape, the profile is proposed again
    widget.open_file(realdata / "nlu_corpora" / "AskUbuntuCorpus.json")
    assert widget.start_from.value == "askubuntu@1"
    assert "proposed profile 'askubuntu@1' matches: columns text, intent" in _said(widget)


def test_a_file_of_the_same_shape_as_a_saved_profile_is_matched_to_it(store, realdata, tmp_path):
    test_csv = realdata / "banking77" / "test.csv"
    widget = MappingWidget(store, path=test_csv)
    widget.label_set.value = ""
    _save_as(widget, "banking77")
    # another banking77 file: the first 200 lines of the test split, under another name
    other = tmp_path / "banking77-sample.csv"
    other.write_text("".join(test_csv.read_text(encoding="utf-8").splitlines(True)[:200]), encoding="utf-8")
    fresh = MappingWidget(store, path=other)  # a new notebook, same store
    assert fresh.errors.message is None
    assert fresh.start_from.value == "banking77@1"
    assert _said(fresh) == (
        "proposed profile 'banking77@1' matches: columns text, category (the same columns as the file it "
        "was made for); choose 'suggested mapping' under Start from to ignore it"
    )
    assert "from profile banking77@1" in fresh.reasons["input"]
    assert "saved profile banking77@1 · matches this file" in fresh.start_from.labels
    assert store.profiles.get("banking77").shape.columns == ["text", "category"]


def test_when_no_saved_profile_fits_the_widget_says_why_the_closest_does_not(store, realdata):
    widget = MappingWidget(store, path=realdata / "banking77" / "test.csv")
    _save_as(widget, "banking77")
    widget.open_file(realdata / "xlsx" / "botfuel_customerservice_intents.xlsx")
    assert widget.errors.message is None and widget.start_from.value == "suggested"
    assert _said(widget).startswith(
        "no saved profile matches: the closest, profile 'banking77@1' needs columns 'text', 'category', "
        "which this file lacks"
    )


# -- a mapping YAML with lookups and templates (issue 12, item 8) ------------------------------------------


def _cli_import(cli, tmp_path, path, mapping, name):
    result = cli("import", path, "--mapping", mapping, "--name", name, "--json", store=tmp_path / "cli-store")
    assert result.exit_code == 0, result.output
    fingerprint = json.loads(result.output)["fingerprint"]
    from abbench.store import open_store

    with open_store(tmp_path / "cli-store") as other:
        return fingerprint, other.datasets.load_cases(fingerprint)


def test_the_demo_mapping_yaml_loads_and_imports_what_the_cli_imports(store, cli, tmp_path):
    widget = MappingWidget(store, path=XLSX)
    assert {r.key: r.label.value for r in widget.label_rows} == {"快": "快", "慢": "慢"}  # the suggestion
    widget.mapping_file.value = str(DEMO / "mapping-xlsx.yaml")
    widget.load_button.click()
    assert widget.errors.message is None
    assert {r.key: r.label.value for r in widget.label_rows} == {"快": "fast", "慢": "slow"}
    assert widget.label_set.value == "fast, slow" and widget.profile_name.value == "demo-routing-xlsx"
    assert widget.start_from.value == "given" and "mapping file mapping-xlsx.yaml" in widget.start_from.labels
    assert "from mapping file mapping-xlsx.yaml" in widget.reasons["input"]
    assert "loaded mapping-xlsx.yaml: profile 'demo-routing-xlsx' matches" in _said(widget)
    assert widget.report.ok
    widget.dataset_name.value = "demo"
    widget.import_button.click()
    assert widget.errors.message is None
    fingerprint, cases = _cli_import(cli, tmp_path, XLSX, DEMO / "mapping-xlsx.yaml", "demo")
    assert widget.dataset.fingerprint == fingerprint == "demo@e9b7386ce4aa"
    assert store.datasets.load_cases(widget.dataset) == cases


def test_a_mapping_with_lookups_and_templates_is_shown_and_imported_as_the_cli_does(store, cli, tmp_path):
    folder = tmp_path / "mappings"
    folder.mkdir()
    english = {"车控": "vehicle", "地图导航": "navigation", "媒体": "media", "电话": "phone"}
    (folder / "domains_en.json").write_text(json.dumps(english, ensure_ascii=False), encoding="utf-8")
    mapping = folder / "routing-en.yaml"
    mapping.write_text(
        """name: routing-en
read: {sheet: 评测集, header_row: 2}
fields:
  case_id: 用例ID
  input: {template: "[{垂域}] {用户query}"}
  expected: 人工标签
  domain: {lookup: domains_en, key: 垂域}
  metadata: {object: {request: 请求ID, row: $location}}
lookups:
  domains_en: {file: domains_en.json, default: other}
label_map: {快: fast, 慢: slow}
label_set: [fast, slow]
""",
        encoding="utf-8",
    )
    widget = MappingWidget(store, path=XLSX)
    widget.load_mapping(mapping)
    assert widget.errors.message is None
    # the form shows what it cannot edit, read-only, and keeps it
    assert widget.fields["input"].choice.value == "keep" and widget.fields["domain"].choice.value == "keep"
    kept = unescape(widget.kept_html.value)
    assert "kept as mapping file routing-en.yaml gives them" in kept
    assert "[{垂域}] {用户query}" in kept and "lookup domains_en" in kept
    assert "4 keys from domains_en.json; default 'other'; e.g. 车控 → vehicle" in kept
    first = widget.preview.cases[0]
    assert first.input.startswith("[") and first.domain in {*english.values(), "other"}
    assert first.metadata["row"].startswith("评测集!row ")
    widget.dataset_name.value = "routing"
    widget.import_button.click()
    assert widget.errors.message is None
    fingerprint, cases = _cli_import(cli, tmp_path, XLSX, mapping, "routing")
    assert widget.dataset.fingerprint == fingerprint
    assert store.datasets.load_cases(widget.dataset) == cases
    assert Counter(c.domain for c in cases)["navigation"] == 66


def test_a_missing_or_invalid_mapping_file_is_an_error_in_the_widget(store, tmp_path):
    widget = MappingWidget(store, path=XLSX)
    widget.load_button.click()
    assert "give the path of a mapping profile: a YAML or JSON file" in widget.errors.message
    widget.mapping_file.value = str(tmp_path / "nope.yaml")
    widget.load_button.click()
    assert "no mapping profile file" in widget.errors.message
    bad = tmp_path / "bad.yaml"
    bad.write_text("fields:\n  input: 用户query\n  answer: 人工标签\n", encoding="utf-8")
    widget.mapping_file.value = str(bad)
    widget.load_button.click()
    assert "unknown case field 'answer'" in widget.errors.message
    assert widget.start_from.value == "suggested"  # nothing half-loaded


# -- the grouped report on a real file (issue 12, item 11) --------------------------------------------------


def test_a_real_file_with_many_problems_reports_one_row_per_kind_and_the_real_outcome(store, realdata):
    path = realdata / "banking77" / "test.csv"
    widget = MappingWidget(store, path=path)
    labels = sorted(widget.counts.counts)
    assert len(labels) == 77
    widget.label_set.value = ", ".join(labels[:70])  # seven intents outside the set
    report = widget.check()
    n_bad = report.n_invalid
    assert n_bad == report.counts["label_not_in_set"] > 0
    table = widget.report_html.value.split("<tbody>")[1].split("</tbody>")[0]
    assert table.count("<tr>") == 1 and "(+3 more values)" in table
    refused = f"import refused: {n_bad} errors in 1 kind on {n_bad} of 3,080 rows; nothing stored"
    assert refused in widget.report_html.value
    widget.import_button.click()
    message = widget.errors.message
    assert f"test.csv was not imported: {refused}" in message and len(message.splitlines()) == 1
    widget.skip_invalid.value = True
    promised = f"would import {3080 - n_bad:,} cases, {n_bad} skipped (skip invalid rows)"
    assert promised in widget.report_html.value
    widget.import_button.click()
    assert widget.errors.message is None and widget.dataset.n_cases == 3080 - n_bad


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
    info = store.datasets.get("banking77")
    assert info.expected_kind.kind == "label" and info.expected_kind.declared


def test_a_suggested_pattern_is_kept_by_the_form_and_imported(store, realdata):
    # GSM8K's answers end in '#### 18': the form keeps the suggested {column, match} whole, never the
    # bare column (which would store the worked solutions as the gold).
    widget = MappingWidget(store, path=realdata / "gsm8k" / "test_head60.jsonl")
    row = widget.fields["expected"]
    assert row.choice.value == "keep" and row.source.match is not None and row.source.column == "answer"
    assert row.choice.label.startswith("as in the suggestion: ")
    info = widget.do_import()
    cases = list(store.datasets.iter_cases(info.id))
    assert len(cases) == 60 and [c.expected for c in cases[:3]] == ["18", "3", "70000"]


def test_an_import_shows_its_notes_as_the_cli_does(store, realdata):
    # AngryTweets' labels are suggested but not declared: the import says how to declare them
    widget = MappingWidget(store, path=realdata / "angry_tweets" / "angry_tweets_test.parquet")
    widget.dataset_name.value = "angry"
    info = widget.do_import()
    shown = html.unescape(widget.result_html.value)
    assert f"imported {info.fingerprint}: 1,047 cases" in shown
    assert (
        "the mapping declares no label set" in shown
        and 'label_set: ["negativ", "neutral", "positiv"]' in shown
    )
    assert len(info.validation.notes) >= 1 and all(n in shown for n in info.validation.notes)

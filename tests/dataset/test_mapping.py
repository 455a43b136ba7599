"""Mapping rows to cases: sources, label maps and sets, defaults, generated ids, validation problems."""

from __future__ import annotations

import json
import re

import pytest

from abbench.dataset import MappingProfile, convert_file, preview_import
from abbench.errors import ImportFailed, MappingError
from tests.conftest import refused_file

ROUTING = 'id,问题,标签,垂域,history\n1,导航去公司,快,地图导航,\n2,打开空调,0,车控,\n3,到目的地电量够不够,Slow ,地图导航,"[{""role"":""user"",""content"":""你好""}]"\n'
PROFILE = {
    "name": "routing",
    "fields": {"case_id": "id", "input": "问题", "expected": "标签", "domain": "垂域", "history": "history"},
    "label_map": {"快": "fast", "0": "fast"},
    "label_set": ["fast", "slow"],
}


def test_columns_label_map_label_set_and_json_cells(write):
    result = convert_file(write("r.csv", ROUTING), PROFILE, name="routing")
    cases = result.cases
    assert [(c.case_id, c.input, c.expected, c.domain) for c in cases] == [
        ("1", "导航去公司", "fast", "地图导航"),
        ("2", "打开空调", "fast", "车控"),
        ("3", "到目的地电量够不够", "slow", "地图导航"),  # 'Slow ' matched the label set
    ]
    assert cases[2].history == [{"role": "user", "content": "你好"}]
    assert cases[0].history is None
    assert cases[0].source_row == {
        "id": "1",
        "问题": "导航去公司",
        "标签": "快",
        "垂域": "地图导航",
        "history": "",
    }
    assert cases[0].source_line == "line 2"
    assert result.fingerprint.startswith("routing@") and len(result.fingerprint) == len("routing@") + 12


def test_validation_lists_every_problem_with_its_row(write):
    text = "id,问题,标签\n1,导航去公司,快\n2,,慢\n3,播放音乐,medium\n3,打开空调,快\n,关闭车窗,快\n"
    with pytest.raises(ImportFailed) as err:
        convert_file(
            write("bad.csv", text),
            {
                **PROFILE,
                "fields": {"case_id": "id", "input": "问题", "expected": "标签"},
                "label_map": {"快": "fast", "慢": "slow"},
            },
        )
    report = err.value.report
    assert [(p.kind, p.location, p.field) for p in report.errors] == [
        ("empty_input", "line 3", "input"),
        ("label_not_in_set", "line 4", "expected"),
        ("empty_case_id", "line 6", "case_id"),
    ]
    assert report.n_rows == 5 and report.n_invalid == 3 and report.n_valid == 2
    assert report.counts == {"empty_input": 1, "label_not_in_set": 1, "empty_case_id": 1}
    assert "medium" in str(report.errors[1]) and report.label_set == ("fast", "slow")
    assert "label set (2): fast, slow" in str(err.value)  # the set, once, in the message
    assert "line 3: input" in str(err.value) and "skip_invalid" in str(err.value)


def test_duplicate_case_ids_are_reported_with_the_first_row(write):
    text = "id,q\na,one\nb,two\na,three\n"
    with pytest.raises(ImportFailed) as err:
        convert_file(write("d.csv", text), {"fields": {"case_id": "id", "input": "q"}})
    (problem,) = err.value.report.errors
    assert (problem.kind, problem.location, problem.value) == ("duplicate_case_id", "line 4", "a")
    assert "already used at line 2" in problem.message


def test_skip_invalid_keeps_valid_rows_and_the_report(write):
    text = "q,label\nfine,fast\n,slow\nalso fine,quick\n"
    result = convert_file(
        write("s.csv", text),
        {"fields": {"input": "q", "expected": "label"}, "label_set": ["fast", "slow"]},
        skip_invalid=True,
    )
    assert [c.input for c in result.cases] == ["fine"]
    assert result.report.n_skipped == 2 and not result.report.ok


def test_missing_expected_when_a_label_set_is_declared(write):
    with pytest.raises(ImportFailed) as err:
        convert_file(
            write("m.csv", "q,label\na,fast\nb,\n"),
            {"fields": {"input": "q", "expected": "label"}, "label_set": ["fast"]},
        )
    assert [(p.kind, p.location) for p in err.value.report.errors] == [("missing_expected", "line 3")]


def test_generated_ids_are_stable_and_duplicates_numbered(write):
    text = "q,label\n打开空调,fast\n导航去公司,slow\n打开空调,fast\n打开空调,slow\n"
    path = write("g.csv", text)
    first = convert_file(path, {"fields": {"input": "q", "expected": "label"}})
    again = convert_file(path, {"fields": {"input": "q", "expected": "label"}})
    ids = [c.case_id for c in first.cases]
    assert ids == [c.case_id for c in again.cases]
    assert ids[2] == ids[0] + "-2" and ids[3] == ids[0] + "-3" and ids[1] != ids[0]
    # The id follows the content, not the position: moving a row keeps its id.
    moved = convert_file(
        write("g2.csv", "q,label\n导航去公司,slow\n打开空调,fast\n"),
        {"fields": {"input": "q", "expected": "label"}},
    )
    assert {c.input: c.case_id for c in moved.cases} == {"导航去公司": ids[1], "打开空调": ids[0]}


def test_conflicting_labels_are_not_an_error_here_but_ids_stay_unique(write):
    result = convert_file(
        write("c.csv", "q,label\nx,a\nx,b\n"), {"fields": {"input": "q", "expected": "label"}}
    )
    assert len({c.case_id for c in result.cases}) == 2


def test_template_concat_const_object_and_unmapped(write):
    text = "title,body,intent,annotator,note\nWeather,明天下雨吗,weather,amy,\n"
    profile = {
        "fields": {
            "input": {"template": "{title}: {body} {{raw}}"},
            "context": {"concat": ["title", "note", "body"], "sep": " | "},
            "expected": "intent",
            "request_id": {"const": "r-1"},
            "metadata": {"unmapped": True},
            "domain": {"lookup": "d", "key": "intent"},
        },
        "lookups": {"d": {"table": {"WEATHER": "天气"}}},
    }
    (case,) = convert_file(write("t.csv", text), profile).cases
    assert case.input == "Weather: 明天下雨吗 {raw}"
    assert case.context == "Weather | 明天下雨吗"
    assert case.request_id == "r-1"
    assert case.metadata == {"annotator": "amy"}  # note is empty, so left out
    assert case.domain == "天气"  # lookup keys compare case-insensitively


def test_lookup_without_default_reports_missing_keys(write):
    profile = {
        "fields": {"input": "q", "domain": {"lookup": "d", "key": "intent"}},
        "lookups": {"d": {"table": {"a": "A"}}},
    }
    with pytest.raises(ImportFailed) as err:
        convert_file(write("l.csv", "q,intent\nx,a\ny,zzz\n"), profile)
    (problem,) = err.value.report.errors
    assert (problem.kind, problem.location, problem.value) == ("lookup_missing", "line 3", "zzz")
    with_default = {**profile, "lookups": {"d": {"table": {"a": "A"}, "default": None}}}
    assert [
        c.domain for c in convert_file(write("l2.csv", "q,intent\nx,a\ny,zzz\n"), with_default).cases
    ] == ["A", None]


def test_json_rows_paths_defaults_and_failures(write_jsonl):
    rows = [
        {
            "id": 7,
            "messages": [{"role": "user", "content": "hi"}, {"role": "user", "content": "导航去公司"}],
            "gold": "fast",
        },
        {"id": 8, "messages": [{"role": "user", "content": "打开空调"}], "gold": "fast", "meta": {"k": 1}},
        {"id": 9, "gold": "slow"},
    ]
    profile = {
        "fields": {
            "case_id": "id",
            "input": "messages[-1].content",
            "history": "messages[:-1]",
            "expected": "gold",
            "metadata": "meta",
        },
        "defaults": {"metadata": None},
    }
    path = write_jsonl("j.jsonl", rows)
    with pytest.raises(ImportFailed) as err:
        convert_file(path, profile)
    problems = err.value.report.errors
    assert [(p.kind, p.location, p.field) for p in problems] == [
        ("path_failed", "line 3", "input"),
        ("path_failed", "line 3", "history"),
    ]
    assert "no key 'messages'" in problems[0].message
    ok = convert_file(path, profile, skip_invalid=True).cases
    assert [(c.case_id, c.input, c.history, c.metadata) for c in ok] == [
        ("7", "导航去公司", [{"role": "user", "content": "hi"}], None),
        ("8", "打开空调", None, {"k": 1}),
    ]


def test_chat_list_as_input_gets_a_hint(write_jsonl):
    path = write_jsonl("c.jsonl", [{"input": [{"role": "user", "content": "hi"}]}])
    with pytest.raises(ImportFailed) as err:
        convert_file(path, {"fields": {"input": "input"}})
    assert "map input to input[-1].content and history to input[:-1]" in err.value.report.errors[0].message


def test_special_sources(write):
    path = write("d.json", '{"train": [["a", "x"]], "test": [["b", "y"]]}')
    profile = {
        "fields": {
            "input": "0",
            "expected": "1",
            "metadata": {"object": {"split": "$split", "at": "$location", "file": "$file"}},
        }
    }
    cases = convert_file(path, profile).cases
    assert [c.metadata for c in cases] == [
        {"split": "train", "at": "split train #1", "file": "d.json"},
        {"split": "test", "at": "split test #1", "file": "d.json"},
    ]
    only = convert_file(path, {**profile, "splits": ["test"]}).cases
    assert [c.input for c in only] == ["b"]


def test_missing_columns_are_named_with_a_close_match(write):
    with pytest.raises(
        MappingError, match=r"missing columns: 'questoin' for input \(did you mean 'question'\?\)"
    ):
        convert_file(write("x.csv", "question,label\na,b\n"), {"name": "p", "fields": {"input": "questoin"}})


def test_shape_differences_are_warned(write):
    profile = {"fields": {"input": "q"}, "shape": {"format": "csv", "columns": ["q", "old"]}}
    result = convert_file(write("x.csv", "q,new\na,b\n"), profile)
    messages = [p.message for p in result.report.warnings]
    assert any("missing here" in m and "old" in m for m in messages)
    assert any("new columns" in m and "new" in m for m in messages)


def test_unnormalized_input_when_asked(write):
    result = convert_file(
        write("x.csv", "q\nMadrid\xa0?\n"), {"fields": {"input": "q"}, "normalize_input": False}
    )
    assert result.cases[0].input == "Madrid\xa0?"


def test_xlsx_numbers_and_label_map(write_xlsx):
    path = write_xlsx("x.xlsx", {"s": [["id", "q", "label"], [1, "a", 0], [2, "b", 1]]})
    cases = convert_file(
        path,
        {
            "fields": {"case_id": "id", "input": "q", "expected": "label"},
            "label_map": {"0": "fast", "1": "slow"},
        },
    ).cases
    assert [(c.case_id, c.expected) for c in cases] == [("1", "fast"), ("2", "slow")]
    assert cases[0].source_row == {"id": 1, "q": "a", "label": 0}


def test_preview_converts_the_first_cases_only(write):
    text = "q,label\n" + "".join(f"q{i},{'x' if i != 3 else ''}\n" for i in range(500))
    preview = preview_import(
        write("p.csv", text), {"fields": {"input": "q", "expected": "label"}, "label_set": ["x"]}, n=5
    )
    assert [c.input for c in preview.cases] == ["q0", "q1", "q2", "q4", "q5"]
    assert not preview.report.complete and preview.report.n_rows < 500
    assert [(p.kind, p.location) for p in preview.report.errors] == [("missing_expected", "line 5")]


def test_profile_object_and_file_are_accepted(write, tmp_path):
    path = write("x.csv", "q\na\n")
    profile = MappingProfile.from_dict({"fields": {"input": "q"}})
    saved = profile.save(tmp_path / "p.yaml")
    assert convert_file(path, profile).content_hash == convert_file(path, saved).content_hash
    assert json.loads(profile.to_json()) == {"fields": {"input": "q"}}


def test_a_braced_string_that_is_no_column_is_shown_as_a_template(write):
    """HWU64's labels are scenario_intent: `expected: "{scenario}_{intent}"` (no `template:`) named a column
    that does not exist; the error says how a template is written."""
    path = write("h.csv", "scenario;intent;text\nalarm;query;when is my alarm\n")
    with pytest.raises(MappingError) as caught:
        convert_file(path, {"name": "p", "fields": {"input": "text", "expected": "{scenario}_{intent}"}})
    assert (
        "'{scenario}_{intent}' for expected (a template is written {template: \"{scenario}_{intent}\"})"
        in str(caught.value)
    )
    cases = convert_file(
        path, {"name": "p", "fields": {"input": "text", "expected": {"template": "{scenario}_{intent}"}}}
    ).cases
    assert [c.expected for c in cases] == ["alarm_query"]


def test_named_parts_without_object_get_the_object_form(tmp_path):
    """`metadata: {annotation: col, said: col}` is none of a source's keys: the error writes it with object."""
    from abbench.dataset import load_profile

    profile = "name: p\nfields:\n  input: text\n  metadata:\n    annotation: answer_annotation\n    said: answer_from_user\n"
    text = refused_file(load_profile, tmp_path / "p.yaml", profile, MappingError)
    assert "fields.metadata.annotation (line 5): unknown key" in text
    assert (
        "fields.metadata: to build an object of named parts, write "
        "metadata: {object: {annotation: answer_annotation, said: answer_from_user}}" in text
    )


def test_match_keeps_gsm8k_final_answer_as_the_gold(realdata, tmp_path):
    """On GSM8K's own test file, `match` stores what lm-eval's `#### (-?[0-9.,]+)` reads as the answer."""
    path = realdata / "gsm8k" / "test_head60.jsonl"
    profile = {"fields": {"input": "question", "expected": {"column": "answer", "match": r"####\s*(.+)$"}}}
    cases = convert_file(path, profile).cases
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert len(cases) == len(rows) == 60
    for case, row in zip(cases, rows, strict=True):
        assert case.expected == re.search(r"#### (\-?[0-9\.\,]+)", row["answer"]).group(1)
        assert case.input.split() == row["question"].split()  # (the input's spaces are normalised)
    saved = MappingProfile.model_validate(profile)
    assert MappingProfile.model_validate(saved.spec()).fields == saved.fields  # saved and read back


def test_match_on_paths_and_templates_without_a_group_and_its_problems(write):
    text = (
        '{"id": "a", "q": "Q1", "sol": {"text": "so  #### 1,200 "}}\n'
        '{"id": "b", "q": "Q2", "sol": {"text": "no final mark"}}\n'
        '{"id": "c", "q": "Q3", "sol": {"text": "so #### 7"}}\n'
        '{"id": "d", "q": "Q4", "sol": {"text": "and #### x"}}\n'
    )
    profile = {
        "fields": {
            "case_id": "id",
            "input": {"template": "{q} ({id})", "match": r"Q\d"},  # no group: the whole match
            "expected": {"path": "sol.text", "match": r"####\s*(\d[\d,]*)"},
        },
        "defaults": {"expected": "never used for a value the pattern cannot read"},
    }
    with pytest.raises(ImportFailed) as err:
        convert_file(write("s.jsonl", text), profile)
    report = err.value.report
    assert [(p.kind, p.location, p.field, p.value) for p in report.errors] == [
        ("no_match", "line 2", "expected", "no final mark"),
        ("no_match", "line 4", "expected", "and #### x"),
    ]
    assert (
        report.errors[0].message == r"match: the pattern `####\s*(\d[\d,]*)` finds nothing in 'no final mark'"
    )
    good = convert_file(write("g.jsonl", text.splitlines()[0] + "\n"), profile).cases
    assert [(c.input, c.expected) for c in good] == [("Q1", "1,200")]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("#### (", "is not a valid regular expression"),
        (r"(\d+)\.(\d+)", "has 2 capturing groups; keep one, and write the others as (?:...)"),
    ],
)
def test_a_bad_match_pattern_is_refused_when_the_profile_is_read(pattern, message):
    with pytest.raises((MappingError, ValueError), match=re.escape(message)):
        MappingProfile.model_validate(
            {"fields": {"input": "q", "expected": {"column": "a", "match": pattern}}}
        )

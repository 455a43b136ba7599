"""Suggesting a mapping from column names and sample values, in English and Chinese."""

from __future__ import annotations

import pytest

from abbench.dataset import convert_file, suggest_mapping
from abbench.dataset._suggest import FINAL_ANSWER
from abbench.errors import ImportFailed


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            "query,label,domain,id",
            {"input": "query", "expected": "label", "domain": "domain", "case_id": "id"},
        ),
        ("Question,Gold,Category,case_id", {"input": "Question", "expected": "Gold", "case_id": "case_id"}),
        ("prompt,expected,rid", {"input": "prompt", "expected": "expected", "request_id": "rid"}),
        ("问题,标签,垂域", {"input": "问题", "expected": "标签", "domain": "垂域"}),
        (
            "用户query,人工标签,领域,id,rid",
            {
                "input": "用户query",
                "expected": "人工标签",
                "domain": "领域",
                "case_id": "id",
                "request_id": "rid",
            },
        ),
        ("用户问题描述,标注结果,领域", {"input": "用户问题描述", "expected": "标注结果", "domain": "领域"}),
        ("user_text,gold_label", {"input": "user_text", "expected": "gold_label"}),
    ],
)
def test_names_in_english_and_chinese(write, header, expected):
    n = len(header.split(","))
    rows = "".join(
        ",".join([f"text {i} 打开空调", "fast" if i % 2 else "slow", "车控", str(i), f"r{i}"][:n]) + "\n"
        for i in range(6)
    )
    suggestion = suggest_mapping(write("s.csv", header + "\n" + rows))
    fields = suggestion.profile.fields
    for field, column in expected.items():
        assert fields[field] == column, (field, suggestion.reasons)
        assert column in suggestion.reasons[field]


def test_values_decide_when_names_do_not(write):
    rows = "".join(f"{'abc'[i % 3]},这是一个比较长的用户问题 number {i}\n" for i in range(30))
    suggestion = suggest_mapping(write("s.csv", "c1,c2\n" + rows))
    assert suggestion.profile.fields["input"] == "c2"
    assert suggestion.profile.fields["expected"] == "c1"
    assert "reads most like natural language" in suggestion.reasons["input"]
    assert "labels" in suggestion.reasons["expected"]


def test_a_column_named_id_whose_values_repeat_is_mapped_so_the_import_lists_the_repeats(write):
    path = write("s.csv", "id,query\n1,a\n2,b\n1,c\n")
    suggestion = suggest_mapping(path)
    assert suggestion.profile.fields["case_id"] == "id"
    assert "values repeat" in suggestion.reasons["case_id"]
    with pytest.raises(ImportFailed) as info:
        convert_file(path)
    report = info.value.report
    assert report.counts == {"duplicate_case_id": 1}
    assert report.problems[0].location == "line 4" and "already used at line 2" in report.problems[0].message


def test_a_name_that_only_holds_an_id_word_is_not_forced(write):
    suggestion = suggest_mapping(write("s.csv", "answer_id,query\n1,a\n1,b\n"))
    assert "case_id" not in suggestion.profile.fields
    assert "expected" not in suggestion.profile.fields  # 'answer' in answer_id names an id, not a gold answer
    assert any("'answer_id' is named like case_id but its values repeat" in n for n in suggestion.notes)


def test_label_variants_get_a_label_map(write):
    labels = ["fast", "Fast ", "FAST", "fast", "slow", "慢", "slow", "快"]
    rows = "".join(f"q{i},{label}\n" for i, label in enumerate(labels))
    suggestion = suggest_mapping(write("s.csv", "query,label\n" + rows))
    assert suggestion.profile.label_map == {"Fast": "fast", "FAST": "fast", "快": "fast", "慢": "slow"}
    assert suggestion.labels["fast"] == 2


def test_chat_messages_become_input_and_history(write_jsonl):
    rows = [
        {"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": f"q{i}"}], "ideal": "A"}
        for i in range(3)
    ]
    suggestion = suggest_mapping(write_jsonl("c.jsonl", rows))
    assert suggestion.profile.fields["input"] == "messages[-1].content"
    assert suggestion.profile.fields["history"] == "messages[:-1]"
    assert suggestion.profile.fields["expected"] == "ideal"


def test_json_rows_with_optional_keys_get_null_defaults_and_leftovers_as_metadata(write_jsonl):
    rows = [{"question": "a", "answer": "x", "source": "faq"}, {"question": "b", "answer": "y"}]
    profile = suggest_mapping(write_jsonl("o.jsonl", rows)).profile
    assert profile.fields["metadata"].object == {"source": "source"}
    assert profile.defaults == {}
    rows = [{"question": "a", "domain": "d"}, {"question": "b"}]
    assert suggest_mapping(write_jsonl("p.jsonl", rows)).profile.defaults == {"domain": None}


def test_no_input_is_said_plainly(write_jsonl):
    suggestion = suggest_mapping(write_jsonl("n.jsonl", [{"n": 1}, {"n": 2}]))
    assert not suggestion.has_input
    assert any("no column looks like the input" in n for n in suggestion.notes)


def test_single_column_sheet_points_at_the_block_recipes(write_xlsx):
    suggestion = suggest_mapping(
        write_xlsx("b.xlsx", {"s": [["trip"], ["I need a flight"], [None], ["greetings"], ["hi"]]})
    )
    assert any("intent-blocks" in n for n in suggestion.notes)


def test_known_layouts_get_their_recipe(write):
    promptfoo = suggest_mapping(write("t.csv", "question,__expected\nhi,contains: hello\n"))
    assert promptfoo.profile.recipe == "promptfoo"
    evals = suggest_mapping(write("evals.json", '{"skill_name": "x", "evals": [{"id": 1, "prompt": "p"}]}'))
    assert evals.profile.recipe == "skill-creator"
    triggers = suggest_mapping(write("t.json", '[{"query": "q", "should_trigger": true}]'))
    assert triggers.profile.recipe == "skill-creator-triggers"


def test_a_first_row_of_data_is_said_to_be_no_header_and_header_row_0_reads_it_as_a_case(write):
    """GLUE's CoLA TSVs (and their translations, e.g. PLUE) have no header row: line 1 is a case whose
    source code and label recur below. The suggestion says so instead of naming columns after it."""
    rows = [
        ("gj04", "1", "", "Os marinheiros cavalgaram a brisa."),
        ("gj04", "0", "*", "A boneca soltou-se mecânica."),
    ]
    rows += [("ks08", str(i % 2), "", f"Frase número {i} sobre o tempo.") for i in range(8)]
    path = write("cola.tsv", "".join("\t".join(r) + "\n" for r in rows))
    notes = suggest_mapping(path).notes
    said = [n for n in notes if "reads like data" in n]
    assert said and "'gj04', '1'" in said[0] and "--header-row 0" in said[0], notes
    headerless = suggest_mapping(path, header_row=0)
    assert headerless.profile.fields["input"] == "D" and not any(
        "reads like data" in n for n in headerless.notes
    )
    named = write("named.tsv", "source\tlabel\tmark\tsentence\n" + "".join("\t".join(r) + "\n" for r in rows))
    assert not any("reads like data" in n for n in suggest_mapping(named).notes)


def test_a_headerless_file_of_a_label_and_a_sentence_is_said_to_be_one(write):
    """GLUE's SST-2 TSVs as many repositories keep them: ``label<TAB>sentence``, no header row. Line 1
    is a case (its label recurs below, its text is a sentence), not the columns' names."""
    rows = [("1", "a stirring , funny and finally transporting re-imagining of beauty and the beast")]
    rows += [
        (str(i % 2), f"review number {i} says the film is good or bad , as reviews do") for i in range(39)
    ]
    path = write("sst2.tsv", "".join("\t".join(r) + "\n" for r in rows))
    said = [n for n in suggest_mapping(path).notes if "reads like data" in n]
    assert said and "--header-row 0" in said[0]
    headerless = suggest_mapping(path, header_row=0)
    assert headerless.profile.fields["input"] == "B" and not any(
        "reads like data" in n for n in headerless.notes
    )
    named = write("named.tsv", "label\tsentence\n" + "".join("\t".join(r) + "\n" for r in rows))
    assert not any("reads like data" in n for n in suggest_mapping(named).notes)
    # a header of a few plain names over numbers is no sentence
    plain = write("plain.csv", "id,score\n" + "".join(f"{i},{i / 10}\n" for i in range(5)))
    assert not any("reads like data" in n for n in suggest_mapping(plain).notes)


def test_describe_lists_fields_and_notes(write):
    text = suggest_mapping(write("s.csv", "query,label\na,x\nb,y\n")).describe()
    assert "input" in text and "'query'" in text and "expected" in text


@pytest.mark.parametrize(
    ("counts", "labels"),
    [
        ({"fast": 2, "slow": 2}, True),
        ({"False": 68, "True": 42}, True),
        ({"a": 1, "b": 1}, True),  # two values: a pair of labels, however few cases
        ({"card_arrival": 3, "pin_blocked": 2, "exchange_rate": 1}, True),
        ({f"answer number {i}": 1 for i in range(6)}, False),  # one case per value
        ({"The Red Woman, Home, Oathbreaker, Book of the Stranger, The Door": 2, "x" * 80: 2}, False),
        ({None: 5, "": 3}, False),
    ],
)
def test_gold_values_read_as_labels_or_as_answers(counts, labels):
    from abbench.dataset import looks_like_labels

    assert looks_like_labels(counts) is labels


def test_value_counts_say_when_they_come_from_the_first_rows_only(write):
    """A file longer than the sample: the counts are of the rows looked at, and the reason says so."""
    rows = "".join(f"question {i},{'fast' if i % 3 else 'slow'}\n" for i in range(2500))
    long = suggest_mapping(write("long.csv", "query,label\n" + rows))
    assert "values in the 2,000 rows looked at: fast (1333), slow (667)" in long.reasons["expected"]
    short = suggest_mapping(write("short.csv", "query,label\n" + rows[: rows.index("question 30,")]))
    assert "values: fast (20), slow (10)" in short.reasons["expected"]


def test_splits_whose_records_have_no_input_are_left_out(write, tmp_path):
    """Rasa's JSON keeps regex features and synonyms beside the examples: only the examples are cases."""
    import json

    from abbench.store import import_dataset

    examples = [
        {"text": f"find me food {i}", "intent": "search" if i % 2 else "greet", "entities": []}
        for i in range(6)
    ]
    data = {
        "rasa_nlu_data": {
            "regex_features": [{"name": "zipcode", "pattern": "[0-9]{5}"}],
            "entity_synonyms": [{"value": "chinese", "synonyms": ["chines"]}],
            "common_examples": examples,
        }
    }
    path = write("nlu.json", json.dumps(data))
    s = suggest_mapping(path)
    assert s.profile.fields["input"] == "text" and s.profile.fields["expected"] == "intent"
    assert s.profile.splits == ["rasa_nlu_data.common_examples"]
    assert any(
        "left out the splits rasa_nlu_data.regex_features (1), rasa_nlu_data.entity_synonyms (1)" in n
        for n in s.notes
    )
    assert "pattern" not in str(s.profile.fields.get("metadata"))  # a left-out split's keys are not metadata
    info = import_dataset(path, s.profile, name="nlu", store=tmp_path / "store")
    assert info.n_cases == 6


def test_worked_solutions_ending_in_a_final_answer_are_suggested_with_match(realdata, write):
    """GSM8K's answers end in '#### 18': the suggestion keeps the final answer as the gold, and a file
    where one value lacks the mark keeps the whole texts (a pattern would refuse that row)."""
    path = realdata / "gsm8k" / "test_head60.jsonl"
    s = suggest_mapping(path)
    assert s.profile.fields["expected"].model_dump(exclude_unset=True) == {
        "column": "answer",
        "match": FINAL_ANSWER,
    }
    assert "every value ends in '#### <answer>'" in s.reasons["expected"]
    cases = convert_file(path, s.profile).cases
    assert [c.expected for c in cases[:3]] == ["18", "3", "70000"]
    lines = path.read_text(encoding="utf-8").splitlines()
    mixed = write("mixed.jsonl", "\n".join([*lines[:5], '{"question": "q", "answer": "no mark"}']) + "\n")
    assert suggest_mapping(mixed).profile.fields["expected"] == "answer"

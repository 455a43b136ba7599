"""Files in the style of public intent datasets: SNIPS chunks, MASSIVE/ATIS slot markup beside plain text."""

from __future__ import annotations

import json

import pytest

from abbench.dataset import convert_file, suggest_mapping
from abbench.dataset._names import name_words
from abbench.dataset._prose import prose_score
from abbench.errors import ImportFailed

# SNIPS (github.com/snipsco/nlu-benchmark, 2017-06-custom-intent-engines): one file per intent,
# {"Intent": [{"data": [{"text": ...}, {"text": ..., "entity": ..., "slot_name": ...}]}]}.
SNIPS = {
    "BookRestaurant": [
        {
            "data": [
                {"text": "book a table at "},
                {"text": "Le Cinq", "entity": "restaurant_name", "slot_name": "restaurant_name"},
                {"text": " for "},
                {"text": "two", "entity": "snips/number", "slot_name": "party_size_number"},
            ]
        },
        {"data": [{"text": "reserve a spot for "}, {"text": "tomorrow", "entity": "snips/datetime"}]},
        {"data": [{"text": "I want to eat out"}]},
    ]
}

# MASSIVE (github.com/alexa/massive): `utt` plain, `annot_utt` with slots written into the text.
MASSIVE_UTTERANCES = [
    ("wake me up at nine am on friday", "wake me up at [time : nine am] on [date : friday]", "alarm_set"),
    ("set an alarm for two hours from now", "set an alarm for [time : two hours from now]", "alarm_set"),
    ("olly quiet", "olly quiet", "audio_volume_mute"),
    ("what alarms do i have today", "what alarms do i have [date : today]", "alarm_query"),
    ("remind me in ten minutes", "remind me in [time : ten minutes]", "alarm_set"),
    ("play the song by queen", "play the song by [artist_name : queen]", "play_music"),
]


def test_join_reads_an_utterance_split_into_chunks(tmp_path):
    path = tmp_path / "BookRestaurant.json"
    path.write_text(json.dumps(SNIPS), encoding="utf-8")
    conv = convert_file(
        path, {"fields": {"input": {"join": "data[*].text", "sep": ""}, "expected": "$split"}}
    )
    assert [c.input for c in conv.cases] == [
        "book a table at Le Cinq for two",
        "reserve a spot for tomorrow",
        "I want to eat out",
    ]
    assert {c.expected for c in conv.cases} == {"BookRestaurant"}


def test_join_sep_and_a_list_of_texts(write_jsonl):
    path = write_jsonl("t.jsonl", [{"tokens": ["turn", "on", "the", "light"], "label": "on"}])
    conv = convert_file(path, {"fields": {"input": {"join": "tokens", "sep": " "}, "expected": "label"}})
    assert conv.cases[0].input == "turn on the light"


def test_the_suggestion_joins_chunks_itself(tmp_path):
    path = tmp_path / "BookRestaurant.json"
    path.write_text(json.dumps(SNIPS), encoding="utf-8")
    suggestion = suggest_mapping(path)
    assert suggestion.profile.fields["input"].model_dump(exclude_unset=True) == {
        "join": "data[*].text",
        "sep": "",
    }
    conv = convert_file(path, suggestion.profile)
    assert conv.cases[0].input == "book a table at Le Cinq for two"


def test_the_suggestion_takes_the_split_names_as_labels_when_they_read_as_labels(tmp_path, realdata):
    # SNIPS: the intent is the split's name; the suggestion said nothing of a gold label before.
    merged = {**SNIPS, "PlayMusic": [{"data": [{"text": "play "}, {"text": "queen", "entity": "artist"}]}]}
    path = tmp_path / "snips.json"
    path.write_text(json.dumps(merged), encoding="utf-8")
    suggestion = suggest_mapping(path)
    assert suggestion.profile.fields["expected"] == "$split"
    assert "split names read as labels" in suggestion.reasons["expected"]
    conv = convert_file(path, suggestion.profile)
    assert [c.expected for c in conv.cases] == ["BookRestaurant"] * 3 + ["PlayMusic"]
    one = tmp_path / "BookRestaurant.json"
    one.write_text(json.dumps(SNIPS), encoding="utf-8")
    assert "one split, so every case gets that label" in suggest_mapping(one).reasons["expected"]
    # CLINC150's splits are partitions (train, val, test, oos_train …): the gold label is a column.
    clinc = suggest_mapping(realdata / "clinc150" / "data_full.json")
    assert clinc.profile.fields["expected"] == "1"


@pytest.mark.parametrize(
    "source",
    [
        {"concat": ["data[*].text"], "sep": ""},
        {"template": "{data[*].text}"},
    ],
    ids=["concat", "template"],
)
def test_concat_or_template_over_a_list_is_refused_and_points_at_join(tmp_path, source):
    path = tmp_path / "BookRestaurant.json"
    path.write_text(json.dumps(SNIPS), encoding="utf-8")
    with pytest.raises(ImportFailed) as info:
        convert_file(path, {"fields": {"input": source, "expected": "$split"}})
    report = info.value.report
    assert report.counts == {"not_text": 3} and report.n_valid == 0
    first = report.problems[0]
    assert first.location == "split BookRestaurant #1" and first.field == "input"
    assert "gives a list of 4" in first.message and '{join: "data[*].text", sep: ""}' in first.message


def test_a_path_to_chunks_says_how_to_join_them(tmp_path):
    path = tmp_path / "BookRestaurant.json"
    path.write_text(json.dumps(SNIPS), encoding="utf-8")
    with pytest.raises(ImportFailed) as info:
        convert_file(path, {"fields": {"input": "data", "expected": "$split"}})
    assert '{join: "data[*].text", sep: ""}' in info.value.report.problems[0].message


def test_join_over_objects_says_which_item(tmp_path):
    path = tmp_path / "BookRestaurant.json"
    path.write_text(json.dumps(SNIPS), encoding="utf-8")
    with pytest.raises(ImportFailed) as info:
        convert_file(path, {"fields": {"input": {"join": "data"}, "expected": "$split"}})
    assert "item 0 is an object" in info.value.report.problems[0].message
    assert "data[*].text" in info.value.report.problems[0].message


def test_sep_without_concat_or_join_is_a_mapping_error():
    from abbench.dataset import MappingProfile
    from abbench.errors import MappingError

    with pytest.raises(MappingError, match="sep is only used with concat or join"):
        MappingProfile.from_dict({"fields": {"input": {"path": "q", "sep": " "}}})


def test_massive_style_rows_take_the_plain_utterance_not_the_annotated_one(write_jsonl):
    rows = [
        {
            "id": str(i),
            "locale": "en-US",
            "partition": "test",
            "scenario": intent.split("_")[0],
            "intent": intent,
            "annot_utt": annotated,
            "utt": plain,
            "judgments": [{"worker_id": "8", "intent_score": 1, "slots_score": 1}],
        }
        for i, (plain, annotated, intent) in enumerate(MASSIVE_UTTERANCES)
    ]
    path = write_jsonl("en-US.jsonl", rows)
    suggestion = suggest_mapping(path)
    fields = suggestion.profile.fields
    assert (fields["input"], fields["expected"], fields["case_id"], fields["domain"]) == (
        "utt",
        "intent",
        "id",
        "scenario",
    )
    conv = convert_file(path, suggestion.profile)
    assert conv.cases[0].input == "wake me up at nine am on friday"


@pytest.mark.parametrize("annotated_column", ["text", "query", "sentence"])
def test_an_annotated_column_named_like_the_input_yields_to_the_plain_text_beside_it(write, annotated_column):
    lines = [f"{annotated_column},plain,intent"] + [
        f'"{a}","{p}",{intent}' for p, a, intent in MASSIVE_UTTERANCES
    ]
    suggestion = suggest_mapping(write("atis.csv", "\n".join(lines) + "\n"))
    assert suggestion.profile.fields["input"] == "plain"
    assert any(
        f"{annotated_column!r} is named like input" in n and "[date : today]" in n for n in suggestion.notes
    )


def test_a_column_of_json_objects_yields_to_the_plain_text_beside_it(write):
    lines = ["query,utterance_text,intent"] + [
        '"' + json.dumps({"text": p, "slots": []}).replace('"', '""') + f'","{p}",{intent}'
        for p, _, intent in MASSIVE_UTTERANCES
    ]
    suggestion = suggest_mapping(write("j.csv", "\n".join(lines) + "\n"))
    assert suggestion.profile.fields["input"] == "utterance_text"
    assert any("'query' is named like input" in n and "JSON" in n for n in suggestion.notes)


def test_a_name_is_matched_on_whole_words_not_inside_a_word(write):
    rows = "".join(f"{i % 3},{p},{i}\n" for i, (p, _, _) in enumerate(MASSIVE_UTTERANCES))
    suggestion = suggest_mapping(write("faq.csv", "answerid,question,grid\n" + rows))
    fields = suggestion.profile.fields
    assert "request_id" not in fields  # 'rid' is inside answerid and grid, not a word of them
    assert fields["input"] == "question"
    camel = suggest_mapping(
        write("c.csv", "requestId,userQuery\n" + "".join(f"r{i},q {i}\n" for i in range(4)))
    )
    assert camel.profile.fields["request_id"] == "requestId"
    assert camel.profile.fields["input"] == "userQuery"


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("answerid", ["answerid"]),
        ("answerId", ["answer", "id"]),
        ("user_query_text", ["user", "query", "text"]),
        ("Gold-Label 2", ["gold", "label", "2"]),
        ("HTTPStatus", ["http", "status"]),
        ("用户query", ["用户", "query"]),
        ("annot_utt", ["annot", "utt"]),
    ],
)
def test_name_words(name, words):
    assert name_words(name) == words


def test_prose_score_ranks_plain_text_over_markup_json_labels_and_numbers():
    plain = prose_score([p for p, _, _ in MASSIVE_UTTERANCES])
    annotated = prose_score([a for _, a, _ in MASSIVE_UTTERANCES])
    as_json = prose_score([json.dumps({"text": p}) for p, _, _ in MASSIVE_UTTERANCES])
    labels = prose_score([i for _, _, i in MASSIVE_UTTERANCES])
    numbers = prose_score(["12.5", "3", "44", "0.1"])
    chinese = prose_score(["帮我把空调调到二十六度", "明天早上七点叫我起床"])
    assert plain.score > 0.8 and chinese.score > 0.8
    assert annotated.markup == pytest.approx(5 / 6) and annotated.score < 0.2
    assert as_json.json == 1.0 and as_json.score == 0.0
    assert labels.score < 0.5 and numbers.score == 0.0


ROWS = [
    ("book a table for two tonight", "book_restaurant", "restaurant", "ann"),
    ("what is the weather in paris", "get_weather", "weather", "bob"),
    ("play some jazz", "play_music", "music", "ann"),
    ("wake me up at seven", "set_alarm", "alarm", "bob"),
]


def _two_header_xlsx(path):
    from openpyxl import Workbook

    wb = Workbook()
    ws = wb.active
    ws.title = "标注"
    ws.append(["utterance", "annotation", None, "reviewer"])
    ws.append([None, "intent", "domain", None])
    ws.merge_cells("A1:A2")
    ws.merge_cells("B1:C1")
    ws.merge_cells("D1:D2")
    for row in ROWS:
        ws.append(list(row))
    wb.save(path)
    return path


def test_two_header_rows_over_merged_cells_are_read_as_one_header(tmp_path):
    path = _two_header_xlsx(tmp_path / "two.xlsx")
    suggestion = suggest_mapping(path)
    fields = suggestion.profile.fields
    assert (fields["input"], fields["expected"], fields["domain"]) == ("utterance", "intent", "domain")
    assert any("row 2 looks like a second header" in n and "--header-row 2" in n for n in suggestion.notes)
    conv = convert_file(path)
    assert [c.input for c in conv.cases] == [r[0] for r in ROWS]  # no case from the second header row
    assert conv.cases[0].source_line == "标注!row 3"
    assert not conv.report.warnings and "rows 1–2 are read as the header" in conv.report.notes[0]


def test_header_row_given_reads_the_second_row_as_a_case(tmp_path):
    path = _two_header_xlsx(tmp_path / "two.xlsx")
    conv = convert_file(path, {"fields": {"input": "utterance"}}, header_row=1, skip_invalid=True)
    assert conv.report.counts.get("empty_input") == 1  # row 2, read as asked


def test_a_second_header_row_in_a_csv(write):
    text = "utterance,annotation,,reviewer\n,intent,domain,\n" + "".join(",".join(r) + "\n" for r in ROWS)
    path = write("two.csv", text)
    suggestion = suggest_mapping(path)
    assert suggestion.profile.fields["expected"] == "intent"
    conv = convert_file(path)
    assert len(conv.cases) == 4 and conv.cases[0].source_line == "line 3"


def test_a_data_row_under_a_blank_header_cell_is_not_a_header(write):
    # Short texts under a nameless column, but the labels repeat below: data, not a header.
    text = "id,,label\n" + "".join(f"a{i},hello there,{'fast' if i % 2 else 'slow'}\n" for i in range(6))
    conv = convert_file(
        write("blank.csv", text), {"fields": {"case_id": "id", "input": "B", "expected": "label"}}
    )
    assert len(conv.cases) == 6 and conv.cases[0].source_line == "line 2"


def _banking77(realdata, n=400):
    import csv

    with (realdata / "banking77" / "test.csv").open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))[:n]


def test_banking77_split_into_snips_chunks_imports_to_the_same_cases_as_the_csv(realdata, tmp_path):
    rows = _banking77(realdata)
    chunked = []
    for row in rows:
        words = row["text"].split(" ")
        # chunks as SNIPS writes them: the spaces stay inside the chunks, an entity every third word
        chunks = [
            {"text": w + (" " if k < len(words) - 1 else ""), **({"entity": "x"} if k % 3 == 1 else {})}
            for k, w in enumerate(words)
        ]
        chunked.append({"data": chunks, "intent": row["category"]})
    path = tmp_path / "banking77_chunks.json"
    path.write_text(json.dumps(chunked), encoding="utf-8")
    suggestion = suggest_mapping(path)
    assert suggestion.profile.fields["expected"] == "intent"
    from_chunks = convert_file(path, suggestion.profile, name="b77")
    import csv

    head = tmp_path / "banking77_head.csv"
    with head.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, ["text", "category"])
        w.writeheader()
        w.writerows(rows)
    from_csv = convert_file(head, {"fields": {"input": "text", "expected": "category"}}, name="b77")
    assert [c.input for c in from_chunks.cases] == [c.input for c in from_csv.cases]
    assert from_chunks.content_hash == from_csv.content_hash  # the very same cases, ids included
    assert from_chunks.fingerprint == from_csv.fingerprint


def test_banking77_beside_an_annotated_and_a_json_copy_keeps_the_plain_text_as_input(realdata, write):
    import csv
    import io

    rows = _banking77(realdata, 300)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["text", "query", "sentence", "category"])
    for row in rows:
        words = row["text"].split(" ")
        words[-1] = f"[thing : {words[-1]}]"
        w.writerow([" ".join(words), json.dumps({"text": row["text"]}), row["text"], row["category"]])
    suggestion = suggest_mapping(write("b77_three.csv", buf.getvalue()))
    assert suggestion.profile.fields["input"] == "sentence"
    assert suggestion.profile.fields["expected"] == "category"
    notes = " ".join(suggestion.notes)
    assert "'text' is named like input" in notes and "'query' is named like input" in notes

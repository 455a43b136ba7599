"""Keys inside objects are suggested like columns (issue 41, item 3): ``input ← data.query`` in ``{rid, data}``."""

from __future__ import annotations

import json

import pytest

from abbench.dataset import parse_path, read_table, suggest_mapping


def _records(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_a_real_routing_log_with_its_fields_in_an_object_is_suggested_and_imported(store, realdata):
    # Mintaka's questions in the shape of the trial's log: {rid, data: {query, label, vertical, ...}}.
    # Before, the suggestion mapped rid and said "no column looks like the input".
    path = realdata / "mintaka" / "routing_nested.jsonl"
    suggestion = suggest_mapping(path)
    fields = suggestion.profile.fields
    assert suggestion.has_input
    assert fields["input"] == "data.query" and fields["expected"] == "data.label"
    assert fields["domain"] == "data.vertical" and fields["request_id"] == "rid"
    assert suggestion.reasons["input"] == "'data.query': its name matches 'query'"
    # the object's other keys are kept by their paths (the object itself is not, or the query would be twice)
    assert fields["metadata"].object == {
        "data.translations": "data.translations",
        "data.answer": "data.answer",
    }
    assert not any("no column looks like the input" in n for n in suggestion.notes)
    # `import` without a mapping uses the suggestion: the cases are the file's, read independently here
    info = store.datasets.import_file(path)
    cases = store.datasets.load_cases(info.fingerprint)
    records = _records(path)
    assert [c.input for c in cases] == [r["data"]["query"] for r in records]
    assert [c.expected for c in cases] == [r["data"]["label"] for r in records]
    assert [c.domain for c in cases] == [r["data"]["vertical"] for r in records]
    assert [c.request_id for c in cases] == [r["rid"] for r in records]
    assert cases[0].metadata["data.translations"] == records[0]["data"]["translations"]
    assert sorted(set(c.expected for c in cases)) == sorted(info.label_set)


def test_mintakas_own_records_keep_the_top_level_question_over_its_nested_translations(realdata):
    # The raw Mintaka rows hold eight translations of each question one level down, all prose: the
    # column named like the input still wins, and unused objects stay whole in the metadata.
    suggestion = suggest_mapping(realdata / "mintaka" / "mintaka_dev_every40.jsonl")
    fields = suggestion.profile.fields
    assert fields["input"] == "question" and fields["expected"] == "category" and fields["case_id"] == "id"
    kept = fields["metadata"].object
    assert set(kept) == {"translations", "questionEntity", "answer", "complexityType"}
    assert "translations.de" in suggestion.columns  # weighed, not chosen


def test_a_nested_key_named_like_the_input_yields_to_the_one_that_reads_as_language(write_jsonl):
    # One rule for every depth: a name never beats the values.
    sentences = [
        "The food was good, but the service was slow.",
        "Waiter took our drink order and then vanished for 15 minutes.",
        "Prices are fair for the portion size.",
        "The terrace is lovely on a summer evening.",
    ]
    rows = [
        {"pair": f"t{i}", "data": {"query": f"Q{i}", "body": s, "polarity": ("positive", "negative")[i % 2]}}
        for i, s in enumerate(sentences)
    ]
    suggestion = suggest_mapping(write_jsonl("reviews.jsonl", rows))
    fields = suggestion.profile.fields
    assert fields["input"] == "data.body" and fields["expected"] == "data.polarity"
    assert any(
        n.startswith("'data.query' is named like input but its values read little") for n in suggestion.notes
    )


def test_a_parquet_struct_column_is_looked_into_like_a_json_object(store, tmp_path):
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    rows = [
        {"rid": f"r{i}", "data": {"query": f"please turn the heating up by {i} degrees", "label": "fast"}}
        for i in range(6)
    ]
    path = tmp_path / "log.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    suggestion = suggest_mapping(path)
    assert suggestion.profile.fields["input"] == "data.query"
    assert suggestion.profile.fields["expected"] == "data.label"
    info = store.datasets.import_file(path)
    assert [c.input for c in store.datasets.load_cases(info.fingerprint)] == [
        r["data"]["query"] for r in rows
    ]


def test_cli_suggest_proposes_the_nested_paths(cli, realdata):
    result = cli("import", realdata / "mintaka" / "routing_nested.jsonl", "--suggest")
    assert result.exit_code == 0, result.output
    assert "input      ← 'data.query'" in result.output and "domain     ← 'data.vertical'" in result.output
    assert "no input column found" not in result.output


# -- the walk is bounded: a record is not trusted ----------------------------------------------------------

MAX_DEPTH, MAX_KEYS, MAX_PATHS = (
    4,
    64,
    100,
)  # abbench.dataset._nested's bounds, as docs/datasets.md states them


def nested_columns(columns, values):
    from abbench.dataset._nested import nested_columns as walk

    return walk(columns, values)


def test_nesting_ten_thousand_levels_deep_is_cut_at_the_depth_bound():
    deep: dict = {}
    node = deep
    for _ in range(10_000):
        node["k"] = {}
        node = node["k"]
    node["query"] = "how deep does this go"
    found = nested_columns(("data",), {"data": [deep] * 2000})
    assert not found.keys and max(map(len, found.children)) <= MAX_DEPTH
    assert found.notes == [
        f"objects nested more than {MAX_DEPTH} levels below a column (from data.k.k.k.k) were not looked "
        "into; map a deeper value with its path yourself"
    ]


@pytest.mark.slow  # reading 2 rows of 100,000 keys takes seconds (the walk itself does not)
def test_an_object_of_100k_keys_is_weighed_by_its_first_keys_only(write_jsonl):
    wide = {f"k{i}": f"value number {i} of a very wide object" for i in range(100_000)}
    path = write_jsonl("wide.jsonl", [{"text": "what is the weather like today", "data": wide}] * 2)
    suggestion = suggest_mapping(path)
    nested = [c for c in suggestion.columns if c.startswith("data.")]
    assert nested == [f"data.k{i}" for i in range(MAX_KEYS)]
    assert suggestion.profile.fields["input"] == "text"
    assert (
        f"'data' holds objects of more than {MAX_KEYS} different keys: only the first {MAX_KEYS} were looked at"
        in (suggestion.notes)
    )


def test_other_keys_in_every_row_do_not_grow_the_walk():
    # 2,000 rows of 64 keys each, no two rows alike: the keys recorded per object stay bounded.
    rows = [{f"r{j}_{i}": "x y z" for i in range(64)} for j in range(2000)]
    found = nested_columns(("data",), {"data": rows, "other": [None] * 2000})
    assert len(found.keys) <= MAX_PATHS and all(len(keys) <= MAX_KEYS for keys in found.children.values())
    assert any("more than 64 different keys" in n for n in found.notes)


def test_a_64_way_tree_stops_at_the_visit_bound_and_says_whole_rows_were_read():
    leaf: object = "leaf text here"
    for _ in range(4):
        leaf = {f"k{i}": leaf for i in range(64)}  # 64**4 = 16.7 million leaves, shared
    found = nested_columns(("data",), {"data": [leaf] * 10})
    assert 0 < len(found.keys) <= MAX_PATHS
    assert any("only the first 100 keys inside objects were weighed" in n for n in found.notes)


def test_keys_a_path_must_quote_are_written_so_they_read_back_exactly(write_jsonl):
    data = {
        "a.b": "dotted key text",
        "x]y": "bracket",
        "0": "digit key",
        " sp ": "spaced",
        'q"t': "quote",
        "": "e",
    }
    row = {"text": "what is the weather like today", "data": data, "$x": {"k": "dollar column"}}
    path = write_jsonl("keys.jsonl", [row, row])
    suggestion = suggest_mapping(path)
    nested = [c for c in suggestion.columns if c not in ("text", "data", "$x")]
    assert nested == ['data["a.b"]', 'data["x]y"]', 'data["0"]', 'data[" sp "]']  # the rest cannot be spelled
    for p in nested:
        assert parse_path(p).get(row) == data[json.loads(p[len("data[") : -1])]
    assert read_table(path).columns[:2] == ("text", "data")


def test_the_bounds_named_here_are_the_walks_own():
    from abbench.dataset import _nested

    assert (_nested.MAX_DEPTH, _nested.MAX_KEYS, _nested.MAX_PATHS) == (MAX_DEPTH, MAX_KEYS, MAX_PATHS)

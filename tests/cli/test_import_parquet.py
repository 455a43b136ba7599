"""`abbench import` on a Parquet file (issue 41, item 2): suggestion, preview and import as for a CSV."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyarrow")


def test_suggest_preview_and_import_a_parquet_file(cli, realdata):
    path = realdata / "parquet" / "banking77_test.parquet"
    out = cli("import", path, "--suggest")
    assert out.exit_code == 0, out.output
    assert "input      ← 'text'" in out.output and "expected   ← 'category'" in out.output
    assert "format: parquet" in out.output
    preview = cli("import", path, "--preview", "2")
    assert preview.exit_code == 0, preview.output
    assert "How do I locate my card?" in preview.output and "row 1" in preview.output
    done = cli("import", path, "--name", "b77")
    assert done.exit_code == 0, done.output
    assert "3,080 rows: 3,080 valid, 0 invalid" in done.output
    again = json.loads(cli("import", realdata / "banking77" / "test.csv", "--name", "b77", "--json").output)
    assert again["reused"] is True and again["read_options"]["format"] == "parquet"  # the Parquet import's


def test_a_profile_saved_from_the_suggestion_declares_the_labels_of_the_whole_file(cli, realdata, tmp_path):
    # DDSC's AngryTweets test split as Hugging Face serves it (parquet-cpp-arrow 5.0.0, format 1.0): suggest,
    # save, import with the saved profile gives the labels an import with no mapping declares
    path = realdata / "angry_tweets" / "angry_tweets_test.parquet"
    suggested = cli("import", path, "--suggest", "--save-profile", "angry")
    assert suggested.exit_code == 0, suggested.output
    assert (
        "label set declared from the gold values of all 1,047 rows: negativ, neutral, positiv"
        in suggested.output
    )
    done = cli("import", path, "--mapping", "angry", "--name", "angry", "--json")
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["label_set"] == ["negativ", "neutral", "positiv"]
    notes = report["validation"]["notes"]
    assert not any("declares no label set" in n for n in notes), notes
    bare = cli("import", path, "--suggest")  # only a saved profile is read through to the end
    assert "label set declared" not in bare.output and "label_set" not in bare.output


def test_the_label_set_note_can_be_followed_on_a_parquet_file_written_elsewhere(cli, realdata, tmp_path):
    # a mapping the analyst wrote, declaring no labels: the note says how, and its advice works as written
    path = realdata / "angry_tweets" / "angry_tweets_test.parquet"
    mapping = tmp_path / "angry.yaml"
    mapping.write_text("fields:\n  input: text\n  expected: label\n", encoding="utf-8")
    first = cli("import", path, "--mapping", mapping, "--name", "angry")
    assert first.exit_code == 0, first.output
    assert "1,047 rows: 1,047 valid, 0 invalid" in first.output
    # the note's advice, followed as written, gives the labels: the same name would keep the old dataset
    assert 'label_set: ["negativ", "neutral", "positiv"]' in first.output
    assert "then import under another name (--name angry-labelled)" in first.output
    mapping.write_text(mapping.read_text(encoding="utf-8") + "label_set: [negativ, neutral, positiv]\n")
    second = cli("import", path, "--mapping", mapping, "--name", "angry-labelled", "--json")
    assert second.exit_code == 0, second.output
    assert sorted(json.loads(second.output)["label_set"]) == ["negativ", "neutral", "positiv"]

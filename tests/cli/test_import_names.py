"""`abbench import` says what became of a dataset's name: a second version of it, the name not given to
cases already stored under another, an older version imported again; and the label conflicts of MAMS."""

from __future__ import annotations

import json

MAPPING = "fields: {case_id: pair_id, input: review_sentence, context: aspect_category, expected: polarity}\n"


def _files(realdata, tmp_path):
    text = (realdata / "mams" / "mams_acsa_test_head.tsv").read_text(encoding="utf-8")
    first = tmp_path / "reviews.tsv"
    first.write_text(text, encoding="utf-8")
    relabelled = tmp_path / "reviews_fixed.tsv"  # one gold label corrected: other cases
    relabelled.write_text(text.replace("\tneutral\n", "\tpositive\n", 1), encoding="utf-8")
    mapping = tmp_path / "mams.yaml"
    mapping.write_text(MAPPING, encoding="utf-8")
    return first, relabelled, mapping


def test_a_second_import_under_a_name_says_it_is_a_second_version(cli, realdata, tmp_path):
    first, relabelled, mapping = _files(realdata, tmp_path)
    v1 = json.loads(cli("import", first, "-m", mapping, "--name", "reviews", "--json").output)
    assert v1["name_versions"] == [v1["fingerprint"]] and v1["version"] == 1
    out = cli("import", relabelled, "-m", mapping, "--name", "reviews")
    v2 = json.loads(cli("datasets", "reviews", "--json").output)["fingerprint"]
    assert v2 != v1["fingerprint"]
    assert f"imported {v2}  (183 cases from reviews_fixed.tsv)" in out.output
    assert (
        f"  name        'reviews' already named other cases: this is version 2 of 'reviews', and the name alone "
        f"now means it; earlier: {v1['fingerprint']} (version 1) — refer to each by its fingerprint"
    ) in out.output
    # the first file again: its dataset, which the name no longer means
    again = cli("import", first, "-m", mapping, "--name", "reviews")
    assert f"already imported: {v1['fingerprint']} holds the same 183 cases; no case stored" in again.output
    assert (
        f"  name        these cases are version 1 of 'reviews', but the name alone means {v2} (version 2, "
        f"imported later): refer to these as {v1['fingerprint']}"
    ) in again.output
    as_json = json.loads(cli("import", first, "-m", mapping, "--name", "reviews", "--json").output)
    assert (as_json["reused"], as_json["version"], as_json["name_versions"]) == (
        True,
        1,
        [v1["fingerprint"], v2],
    )


def test_the_same_cases_under_a_new_name_say_the_name_is_not_given(cli, realdata, tmp_path):
    first, _, mapping = _files(realdata, tmp_path)
    stored = json.loads(cli("import", first, "-m", mapping, "--json").output)["fingerprint"]
    copy = tmp_path / "reviews_copy.tsv"
    copy.write_bytes(first.read_bytes())
    out = cli("import", copy, "-m", mapping)
    assert f"already imported: {stored} holds the same 183 cases; no case stored" in out.output
    short = stored.split("@")[1]
    assert (
        f"  name        'reviews_copy' is not given to these cases, stored before as {stored}: refer to them as "
        f"{stored} (--name reviews_copy stores a copy under that name, reviews_copy@{short}: experiments on "
        f"the copy and on {stored} are not compared with each other)"
    ) in out.output
    as_json = json.loads(cli("import", copy, "-m", mapping, "--json").output)
    assert (as_json["reused"], as_json["requested_name"], as_json["fingerprint"]) == (
        True,
        "reviews_copy",
        stored,
    )
    assert cli("datasets", stored).exit_code == 0


def test_conflicts_name_both_rows_and_say_a_hidden_difference_once(cli, realdata, tmp_path):
    mapping = tmp_path / "aspect-in-metadata.yaml"  # the aspect left to metadata, which no prompt shows
    mapping.write_text(
        MAPPING.replace("context: aspect_category,", "metadata: {unmapped: true},"), encoding="utf-8"
    )
    out = cli("import", realdata / "mams" / "mams_acsa_test_head.tsv", "-m", mapping)
    assert (
        "conflicts   80 inputs, with the same history and context, have different expected labels"
        in out.output
    )
    assert (
        "~ line 2: We went again and sat at the bar this… — 'neutral' at line 2 (case s1-place); 'negative' at "
        "line 3 (case s1-food) of mams_acsa_test_head.tsv\n"
    ) in out.output
    assert out.output.count("differ only in metadata") == 1
    assert "    all of them differ only in metadata 'aspect_category', which the agent's prompt" in out.output

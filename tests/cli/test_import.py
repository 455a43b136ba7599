"""abbench import / datasets / profiles: human output, --json, exit codes, help with examples."""

from __future__ import annotations

import json

import pytest

from abbench.store import open_store
from tests.conftest import run_abbench

CSV = "id,问题,标签,垂域\n1,导航去公司,快,地图导航\n2,打开空调,快,车控\n3,到目的地电量够不够,慢,地图导航\n"
PROFILE_YAML = """\
name: routing
fields: {case_id: id, input: 问题, expected: 标签, domain: 垂域}
label_map: {快: fast, 慢: slow}
label_set: [fast, slow]
"""


@pytest.fixture
def files(tmp_path):
    (tmp_path / "routing.csv").write_text(CSV, encoding="utf-8")
    (tmp_path / "bad.csv").write_text(CSV + "4,,快,车控\n5,播放音乐,medium,媒体\n", encoding="utf-8")
    (tmp_path / "routing.yaml").write_text(PROFILE_YAML, encoding="utf-8")
    return tmp_path


def test_import_counts_have_thousands_separators(cli, tmp_path):
    """The SMS walkthrough's import (01 and the CLI) read "5572 rows: 5572 valid" beside "5,572 cases"."""
    rows = "".join(f"{i},text {i},{'fast' if i % 2 else 'slow'},d\n" for i in range(1, 1202))
    (tmp_path / "big.csv").write_text("id,问题,标签,垂域\n" + rows + "1201,again,fast,d\n", encoding="utf-8")
    (tmp_path / "routing.yaml").write_text(PROFILE_YAML.replace("label_map: {快: fast, 慢: slow}\n", ""))
    result = cli("import", tmp_path / "big.csv", "--mapping", tmp_path / "routing.yaml", "--skip-invalid")
    assert result.exit_code == 0, result.output
    assert "(1,201 cases from big.csv)" in result.output
    assert "1,202 rows: 1,201 valid, 1 invalid, 1 skipped; duplicate_case_id ×1" in result.output


def test_import_prints_fingerprint_counts_labels_and_validation(cli, files):
    result = cli("import", files / "routing.csv", "--mapping", files / "routing.yaml", "--name", "routing")
    assert result.exit_code == 0, result.output
    out = result.output
    assert out.startswith("imported routing@") and "(3 cases from routing.csv)" in out
    assert "mapping     routing@1" in out
    assert "labels      fast 2 · slow 1" in out
    assert "domains     地图导航 2 · 车控 1" in out
    assert "3 rows: 3 valid, 0 invalid" in out
    again = cli("import", files / "routing.csv", "--mapping", "routing", "--name", "routing")
    assert again.exit_code == 0 and again.output.startswith("already imported: routing@")


def test_save_profile_on_an_already_imported_file_saves_it_and_says_so(cli, files):
    assert cli("import", files / "routing.csv", "--mapping", files / "routing.yaml").exit_code == 0
    again = cli(
        "import", files / "routing.csv", "--mapping", files / "routing.yaml", "--save-profile", "mine"
    )
    assert again.exit_code == 0, again.output
    assert "holds the same 3 cases; no case stored" in again.output
    assert "saved the mapping as profile mine@1" in again.output
    with open_store(cli.store_dir) as store:
        assert store.profiles.get("mine").fields == store.profiles.get("routing").fields
        assert len(store.datasets.all()) == 1


def test_the_same_cases_from_a_file_of_another_name_say_which_name_they_keep(cli, files):
    assert cli("import", files / "routing.csv", "--mapping", files / "routing.yaml").exit_code == 0
    (files / "copy.csv").write_bytes((files / "routing.csv").read_bytes())
    again = cli("import", files / "copy.csv", "--mapping", files / "routing.yaml")
    fingerprint = again.output.split()[2]
    assert fingerprint.startswith("routing@") and "no case stored" in again.output
    assert (
        f"  name        'copy' is not given to these cases, stored before as {fingerprint}: refer to them as "
        f"{fingerprint} (--name copy stores a copy under that name"
    ) in again.output
    named = cli("import", files / "copy.csv", "--mapping", files / "routing.yaml", "--name", "copy")
    assert named.output.startswith("imported copy@")  # as it says
    assert [line.split()[0].split("@")[0] for line in cli("datasets").output.splitlines()[1:]] == [
        "routing",
        "copy",
    ]


def test_import_shows_label_conflicts(cli, tmp_path):
    (tmp_path / "c.csv").write_text("q,label\n打开空调,fast\n打开空调,slow\n", encoding="utf-8")
    result = cli("import", tmp_path / "c.csv")
    assert (
        "conflicts   1 inputs, with the same history and context, have different expected labels"
        in result.output
    )
    assert "~ line 2: 打开空调" in result.output


def test_import_json(cli, files):
    result = cli("import", files / "routing.csv", "-m", files / "routing.yaml", "--json")
    data = json.loads(result.output)
    assert data["n_cases"] == 3 and data["labels"] == {"fast": 2, "slow": 1}
    assert data["fingerprint"] == f"routing@{data['content_hash'][:12]}"
    assert data["validation"]["n_valid"] == 3 and data["read_options"]["delimiter"] == ","


def test_invalid_file_exits_2_with_the_problems_and_their_rows(cli, files):
    result = cli("import", files / "bad.csv", "-m", files / "routing.yaml")
    assert result.exit_code == 2
    err = result.stderr
    assert "was not imported (nothing was written)" in err
    assert "line 5: input: the input is empty" in err
    assert "line 6: expected: label 'medium' is not in the label set; fix it" in err
    assert "label set (2): fast, slow" in err
    assert "--skip-invalid" in err
    assert json.loads(cli("datasets", "--json").output) == []
    as_json = cli("import", files / "bad.csv", "-m", files / "routing.yaml", "--json")
    assert as_json.exit_code == 2
    report = json.loads(as_json.stdout)["report"]
    assert report["counts"] == {"empty_input": 1, "label_not_in_set": 1}


def test_skip_invalid_imports_the_rest(cli, files):
    result = cli("import", files / "bad.csv", "-m", files / "routing.yaml", "--skip-invalid")
    assert result.exit_code == 0
    assert "5 rows: 3 valid, 2 invalid, 2 skipped" in result.output
    assert "! line 5: input" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--mapping", "nope"], "no saved mapping profile 'nope'"),
        (["--mapping", "nope.yaml"], "no mapping profile file"),
        (["--mapping", "x", "--suggest"], "do not go together"),
        (["--sheet", "1"], "sheet= applies to Excel"),
        (["--encoding", "klingon"], "unknown encoding 'klingon'"),
        (["--recipe", "nope"], "unknown recipe 'nope'; recipes: intent-blocks"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(cli, files, args, message):
    result = cli("import", files / "routing.csv", *args)
    assert result.exit_code == 2
    assert message in result.stderr


def test_missing_file_exits_2(cli, files):
    result = cli("import", files / "nope.csv")
    assert result.exit_code == 2 and "no such file" in result.stderr


def test_suggest_shows_reasons_and_saves_the_profile(cli, files):
    result = cli("import", files / "routing.csv", "--suggest", "--save-profile", "auto")
    assert result.exit_code == 0
    out = result.output
    assert "input      ← '问题': its name matches '问题'" in out
    assert "expected   ← '标签'" in out and "saved as auto@1" in out
    assert "fields:" in out  # the profile as YAML, ready to edit
    assert json.loads(cli("datasets", "--json").output) == []  # nothing imported
    shown = cli("profiles", "auto")
    assert shown.output.startswith("# auto@1") and "input: 问题" in shown.output


def test_suggest_names_a_saved_profile_only_when_its_columns_fit(cli, files, realdata):
    assert cli("import", files / "routing.csv", "--mapping", files / "routing.yaml").exit_code == 0
    (files / "more.csv").write_text(CSV.replace("1,导航", "7,导航"), encoding="utf-8")  # same columns
    out = cli("import", files / "more.csv", "--suggest").output
    assert "a saved profile fits this file: profile 'routing@1' matches" in out
    assert "import with --mapping routing@1" in out
    data = json.loads(cli("import", files / "more.csv", "--suggest", "--json").output)
    assert data["saved_profile"]["fits"] and data["saved_profile"]["ref"] == "routing@1"
    # banking77 has other columns: the profile is not proposed, and the note says which column is missing.
    out = cli("import", realdata / "banking77" / "test.csv", "--suggest").output
    assert "fits this file" not in out
    assert "no saved profile matches: the closest, profile 'routing@1' needs column" in out and "问题" in out


def test_preview_shows_cases_and_imports_nothing(cli, files):
    result = cli("import", files / "routing.csv", "-m", files / "routing.yaml", "--preview", "2")
    assert result.exit_code == 0
    out = result.output
    assert "preview of routing.csv" in out and "导航去公司" in out and "打开空调" in out
    assert "到目的地电量够不够" not in out
    assert "(preview: first rows only)" in out
    data = json.loads(cli("import", files / "routing.csv", "--preview", "1", "--json").output)
    assert len(data["cases"]) == 1 and data["cases"][0]["source_line"] == "line 2"
    assert json.loads(cli("datasets", "--json").output) == []


def test_datasets_list_and_show(cli, files):
    cli("import", files / "routing.csv", "-m", files / "routing.yaml", "--name", "routing")
    listing = cli("datasets")
    assert listing.exit_code == 0 and "routing@" in listing.output and "routing@1" in listing.output
    shown = cli("datasets", "routing", "--cases", "2")
    assert "labels      fast 2 · slow 1" in shown.output
    assert "导航去公司" in shown.output and "line 3" in shown.output and "line 4" not in shown.output
    data = json.loads(cli("datasets", "routing", "--json").output)
    assert (
        data["n_cases"] == 3
        and len(data["cases"]) == 3
        and data["cases"][0]["source_row"]["问题"] == "导航去公司"
    )
    missing = cli("datasets", "routnig")
    assert missing.exit_code == 2 and "did you mean routing@" in missing.stderr


def test_profiles_list_show_export(cli, files, tmp_path):
    assert "no saved profiles" in cli("profiles").output
    cli("import", files / "routing.csv", "-m", files / "routing.yaml")
    listing = cli("profiles")
    assert "routing@1" in listing.output
    exported = cli("profiles", "routing@1", "--export", tmp_path / "out.yaml")
    assert exported.exit_code == 0
    assert "label_set:" in (tmp_path / "out.yaml").read_text(encoding="utf-8")
    assert json.loads(cli("profiles", "--json").output)[0]["ref"] == "routing@1"
    assert "intent-blocks" in cli("profiles", "--recipes").output


def test_recipe_and_split_options(cli, tmp_path):
    (tmp_path / "d.json").write_text(
        '{"train": [["a", "x"]], "test": [["b", "y"], ["c", "y"]]}', encoding="utf-8"
    )
    result = cli("import", tmp_path / "d.json", "--split", "test", "--json")
    data = json.loads(result.output)
    assert data["n_cases"] == 2 and data["read_options"]["splits"] == ["test"]


def test_in_a_child_process(files, tmp_path):
    store = tmp_path / "child-store"
    result = run_abbench(
        "--store", store, "import", files / "routing.csv", "-m", files / "routing.yaml", "--json"
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["n_cases"] == 3
    bad = run_abbench("--store", store, "import", files / "bad.csv", "-m", files / "routing.yaml")
    assert bad.returncode == 2 and "line 5" in bad.stderr


def test_free_text_gold_answers_are_not_listed_as_labels(cli, realdata):
    result = cli("import", realdata / "eval_formats" / "inspect_ai" / "wikipedia.jsonl")
    assert result.exit_code == 0, result.output
    assert "gold        3 free-text answers, each different: «" in result.output
    assert "labels      " not in result.output  # three paragraphs printed whole read as a label set
    assert "gold kind   answers (from the values: 3 distinct values averaging" in result.output
    assert max(len(line) for line in result.output.splitlines()) < 300


def test_77_intents_without_a_label_set_are_labels_not_answers(cli, realdata, tmp_path):
    # banking77 mapped without label_set: it said "reference answers" (more than a fixed 50 values)
    mapping = tmp_path / "banking.yaml"
    mapping.write_text("fields: {input: text, expected: category}\n", encoding="utf-8")
    result = cli("import", realdata / "banking77" / "test.csv", "-m", mapping, "--name", "banking77")
    assert result.exit_code == 0, result.output
    assert "gold kind   labels (from the values: 77 distinct short values over 3,080 cases" in result.output
    assert "\n  labels      " in result.output
    assert "free-text" not in result.output and "reference answers" not in result.output


def test_a_label_outside_a_large_set_is_one_grouped_line_with_did_you_mean(cli, tmp_path, realdata):
    """banking77's 77 intents as the label set; one misspelt intent on 19 rows, another on 2."""
    import csv

    categories = json.loads((realdata / "banking77" / "categories.json").read_text(encoding="utf-8"))
    with (realdata / "banking77" / "test.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))[:300]
    typo_rows = []
    for i, row in enumerate(rows):
        if row["category"] == "card_arrival" and len(typo_rows) < 19:
            row["category"] = "card_arival"
            typo_rows.append(i + 2)  # line numbers: header is line 1
    others = [row for row in rows[::-1] if row["category"] != "card_arival"][:2]
    for row in others:
        row["category"] = "zzz"
    path = tmp_path / "b77.csv"
    with path.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, ["text", "category"])
        w.writeheader()
        w.writerows(rows)
    profile = tmp_path / "b77.yaml"
    profile.write_text(
        json.dumps({"fields": {"input": "text", "expected": "category"}, "label_set": categories}),
        encoding="utf-8",
    )
    result = cli("import", path, "-m", profile)
    assert result.exit_code == 2
    err = result.stderr
    lines = err.splitlines()
    typo = [ln for ln in lines if "'card_arival'" in ln]
    assert len(typo) == 1, err  # one line for 19 rows
    first = ", ".join(str(n) for n in typo_rows[:5])
    assert f"line {first}, … (19×): expected:" in typo[0]
    assert "did you mean 'card_arrival'?" in typo[0]
    assert (
        len([ln for ln in lines if "'zzz'" in ln]) == 1
        and "(2×)" in err
        and "did you mean" not in (next(ln for ln in lines if "'zzz'" in ln))
    )
    set_lines = [ln for ln in lines if "label set (" in ln and "did you mean" not in ln]
    assert len(set_lines) == 1 and f"label set ({len(categories)}):" in set_lines[0]
    assert sum(ln.count("card_arrival") for ln in lines) == 2  # the hint and the set, never per row
    assert sum(ln.count("verify_my_identity") for ln in lines) == 1
    store_report = json.loads(cli("import", path, "-m", profile, "--json").stdout)["report"]
    assert store_report["counts"]["label_not_in_set"] == 21 and store_report["label_set"] == categories


def test_a_dialogue_import_writes_its_fields_as_a_profile_would(cli, realdata):
    out = cli("import", realdata / "dialogues" / "sgd_dev_001_head20.json", "--recipe", "conversations")
    assert out.exit_code == 0, out.output
    assert 'metadata ← object {"dialogue": "dialogue_id", "turn": "turn_index"}' in out.output, out.output
    assert "{'" not in out.output  # no Python repr of a dict

"""store.datasets.import_file and friends: one transaction, content-addressed uploads, refs, profiles."""

from __future__ import annotations

import json
import sqlite3

import pytest

from abbench.dataset import MappingProfile
from abbench.errors import ImportFailed, MappingError, NotFoundError, UsageError

CSV = "id,问题,标签,垂域\n1,导航去公司,快,地图导航\n2,打开空调,快,车控\n3,到目的地电量够不够,慢,地图导航\n"
PROFILE = {
    "name": "routing",
    "fields": {"case_id": "id", "input": "问题", "expected": "标签", "domain": "垂域"},
    "label_map": {"快": "fast", "慢": "slow"},
    "label_set": ["fast", "slow"],
}


@pytest.fixture
def csv_file(tmp_path):
    path = tmp_path / "routing.csv"
    path.write_text(CSV, encoding="utf-8")
    return path


def _counts(store) -> dict[str, int]:
    tables = ("datasets", "cases", "mapping_profiles")
    counts = {t: store.query_one(f"SELECT COUNT(*) FROM {t}")[0] for t in tables}
    counts["uploads"] = len(list((store.path / "uploads").iterdir()))
    return counts


def test_import_stores_cases_profile_and_the_file(store, csv_file):
    info = store.datasets.import_file(csv_file, PROFILE, name="routing")
    assert info.fingerprint == f"routing@{info.content_hash[:12]}" and info.short == info.content_hash[:12]
    assert (info.n_cases, info.label_set, info.label_map) == (
        3,
        ("fast", "slow"),
        {"快": "fast", "慢": "slow"},
    )
    assert info.profile_ref == "routing@1" and not info.reused
    assert info.source_file == "routing.csv" and info.created_by
    assert (store.path / info.upload_path).read_bytes() == csv_file.read_bytes()
    assert info.upload_path == f"uploads/{info.source_sha256}.csv"
    assert info.read_options["encoding"] == "utf-8" and info.read_options["delimiter"] == ","
    assert info.validation.ok and info.validation.n_valid == 3
    cases = store.datasets.load_cases("routing")
    assert [(c.case_id, c.expected) for c in cases] == [("1", "fast"), ("2", "fast"), ("3", "slow")]
    assert cases[0].source_row == {"id": "1", "问题": "导航去公司", "标签": "快", "垂域": "地图导航"}
    assert store.datasets.value_counts(info) == {"fast": 2, "slow": 1}
    assert store.datasets.value_counts(info, "domain") == {"地图导航": 2, "车控": 1}


def test_invalid_file_is_refused_and_leaves_nothing(store, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(CSV + "4,,快,车控\n5,播放音乐,medium,媒体\n", encoding="utf-8")
    before = _counts(store)
    with pytest.raises(ImportFailed) as err:
        store.datasets.import_file(path, PROFILE)
    assert [(p.kind, p.location) for p in err.value.report.errors] == [
        ("empty_input", "line 5"),
        ("label_not_in_set", "line 6"),
    ]
    assert _counts(store) == before == {"datasets": 0, "cases": 0, "mapping_profiles": 0, "uploads": 0}


def test_failure_half_way_leaves_nothing(store, tmp_path):
    # 6,000 good rows (more than one chunk is written), then a quote never closed: a 17 MiB cell.
    path = tmp_path / "half.csv"
    rows = "".join(f"query {i}\n" for i in range(6000))
    path.write_text("q\n" + rows + '"never closed\n' + "x" * (17 << 20) + "\n", encoding="utf-8")
    with pytest.raises(ImportFailed, match="quote that is never closed"):
        store.datasets.import_file(path, {"fields": {"input": "q"}})
    assert _counts(store) == {"datasets": 0, "cases": 0, "mapping_profiles": 0, "uploads": 0}


def test_long_cells_are_read(store, tmp_path):
    path = tmp_path / "long.csv"
    passage = "长文本" * 100_000  # 300,000 characters, past the csv module's default limit
    path.write_text(f'q,context\nwhat does it say?,"{passage}"\n', encoding="utf-8")
    info = store.datasets.import_file(path, {"fields": {"input": "q", "context": "context"}})
    assert store.datasets.load_cases(info)[0].context == passage


def test_skip_invalid_imports_the_valid_rows_and_keeps_the_report(store, tmp_path):
    path = tmp_path / "bad.csv"
    path.write_text(CSV + "4,,快,车控\n", encoding="utf-8")
    info = store.datasets.import_file(path, PROFILE, skip_invalid=True)
    assert info.n_cases == 3
    stored = store.datasets.get(info.fingerprint).validation
    assert (stored.n_rows, stored.n_skipped, stored.counts) == (4, 1, {"empty_input": 1})
    assert stored.errors[0].location == "line 5"


def test_identical_content_is_not_stored_twice(store, csv_file, tmp_path):
    first = store.datasets.import_file(csv_file, PROFILE, name="routing")
    again = store.datasets.import_file(csv_file, PROFILE, name="routing")
    assert again.reused and again.fingerprint == first.fingerprint and again.id == first.id
    # The same cases under another file name and without a name: the stored dataset is returned.
    copy = tmp_path / "copy.csv"
    copy.write_bytes(csv_file.read_bytes())
    assert store.datasets.import_file(copy, PROFILE).fingerprint == first.fingerprint
    # Asked for under another name, the same cases become a dataset of that name.
    other = store.datasets.import_file(copy, PROFILE, name="routing-copy")
    assert (
        not other.reused
        and other.content_hash == first.content_hash
        and other.fingerprint.startswith("routing-copy@")
    )
    assert _counts(store) == {"datasets": 2, "cases": 6, "mapping_profiles": 1, "uploads": 1}


def test_file_case_ids_must_be_unique(store, tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("id,q\n" + "".join(f"{i},q{i}\n" for i in range(7000)) + "12,again\n", encoding="utf-8")
    with pytest.raises(ImportFailed) as err:
        store.datasets.import_file(path, {"fields": {"case_id": "id", "input": "q"}})
    (problem,) = err.value.report.errors
    assert (problem.kind, problem.location, problem.value) == ("duplicate_case_id", "line 7002", "12")
    assert "already used at line 14" in problem.message
    info = store.datasets.import_file(path, {"fields": {"case_id": "id", "input": "q"}}, skip_invalid=True)
    assert info.n_cases == 7000


def test_generated_ids_match_the_store_less_conversion(store, tmp_path):
    from abbench.dataset import convert_file

    path = tmp_path / "gen.csv"
    lines = [f"q{i % 4000}" for i in range(9000)]  # repeats across chunks
    path.write_text("q\n" + "\n".join(lines) + "\n", encoding="utf-8")
    info = store.datasets.import_file(path, {"fields": {"input": "q"}})
    cases = store.datasets.load_cases(info)
    assert len({c.case_id for c in cases}) == 9000
    assert cases[4000].case_id == cases[0].case_id + "-2" and cases[8000].case_id == cases[0].case_id + "-3"
    memory = convert_file(path, {"fields": {"input": "q"}})
    assert [c.case_id for c in memory.cases] == [c.case_id for c in cases]
    assert memory.content_hash == info.content_hash


def test_dataset_refs(store, csv_file, tmp_path):
    info = store.datasets.import_file(csv_file, PROFILE, name="routing")
    for ref in (
        info.fingerprint,
        "routing",
        info.short,
        info.content_hash[:8],
        info.id,
        str(info.id),
        info,
        f"routing@{info.short[:6]}",
    ):
        assert store.datasets.get(ref).id == info.id
    newer_file = tmp_path / "v2.csv"
    newer_file.write_text(CSV.replace("打开空调", "关闭空调"), encoding="utf-8")
    newer = store.datasets.import_file(newer_file, PROFILE, name="routing")
    assert store.datasets.get("routing").id == newer.id  # a name means its latest import
    assert store.datasets.get(info.fingerprint).id == info.id
    with pytest.raises(NotFoundError, match="did you mean routing@"):
        store.datasets.get("routng")
    with pytest.raises(NotFoundError, match="no dataset with id 99"):
        store.datasets.get(99)


def test_empty_store_says_how_to_start(store):
    with pytest.raises(NotFoundError, match="no datasets yet; import one"):
        store.datasets.get("x")


def test_reading_cases(store, csv_file):
    info = store.datasets.import_file(csv_file, PROFILE)
    assert [c.case_id for c in store.datasets.iter_cases(info, batch=2)] == ["1", "2", "3"]
    assert store.datasets.get_case(info, "2").input == "打开空调"
    assert store.datasets.load_cases(info, source_rows=False)[0].source_row is None
    with pytest.raises(NotFoundError, match="has no case '9'"):
        store.datasets.get_case(info, "9")
    assert [i.fingerprint for i in store.datasets.all()] == [info.fingerprint]


def test_profiles_are_versioned(store):
    profile = MappingProfile.from_dict(PROFILE)
    v1 = store.profiles.save(profile)
    assert v1.version == 1 and v1.ref == "routing@1"
    assert store.profiles.save(profile).version == 1  # identical: reused
    assert store.profiles.save(profile.evolve(description="只改描述也算新版本")).version == 2
    v3 = store.profiles.save(profile.evolve(label_set=["fast", "slow", "unsure"]))
    assert v3.version == 3
    assert store.profiles.get("routing").version == 3
    assert store.profiles.get("routing@1").label_set == ["fast", "slow"]
    assert store.profiles.get("routing", 2).description == "只改描述也算新版本"
    assert [(i.ref, i.n_versions) for i in store.profiles.all()] == [("routing@3", 3)]
    assert len(store.profiles.all(all_versions=True)) == 3
    with pytest.raises(NotFoundError, match=r"no version 9; versions: \[1, 2, 3\]"):
        store.profiles.get("routing@9")
    with pytest.raises(NotFoundError, match="did you mean routing"):
        store.profiles.get("routin")
    with pytest.raises(UsageError, match="needs a name"):
        store.profiles.save(MappingProfile.from_dict({"fields": {"input": "q"}}))


def test_saved_profile_is_reused_on_the_next_file_of_the_same_shape(store, csv_file, tmp_path):
    store.datasets.import_file(csv_file, PROFILE, name="week1")
    week2 = tmp_path / "week2.csv"
    week2.write_text(CSV.replace("导航去公司", "导航回家"), encoding="utf-8")
    info = store.datasets.import_file(week2, "routing", name="week2")
    assert info.profile_ref == "routing@1" and info.n_cases == 3
    # A file missing a mapped column is refused with the column named; an extra column is a warning.
    renamed = tmp_path / "week3.csv"
    renamed.write_text(CSV.replace("垂域", "领域"), encoding="utf-8")
    with pytest.raises(
        MappingError, match=r"missing columns: '垂域' for domain.*The file has: id, 问题, 标签, 领域"
    ):
        store.datasets.import_file(renamed, "routing@1")
    extra = tmp_path / "week4.csv"
    extra.write_text(CSV.replace("垂域\n", "垂域,备注\n"), encoding="utf-8")
    warned = store.datasets.import_file(extra, "routing", name="week4")
    assert any("new columns" in p.message and "备注" in p.message for p in warned.validation.warnings)


def test_profile_given_as_a_file_or_a_missing_name(store, csv_file, tmp_path):
    (tmp_path / "p.yaml").write_text(MappingProfile.from_dict(PROFILE).to_yaml(), encoding="utf-8")
    assert store.datasets.import_file(csv_file, tmp_path / "p.yaml").profile_ref == "routing@1"
    with pytest.raises(MappingError, match="no mapping profile file"):
        store.datasets.import_file(csv_file, tmp_path / "nope.yaml")
    with pytest.raises(NotFoundError, match="no saved mapping profile 'nope'"):
        store.datasets.import_file(csv_file, "nope")


def test_suggested_profile_is_saved_under_the_dataset_name(store, csv_file):
    info = store.datasets.import_file(csv_file, name="routing-auto")
    assert info.profile_ref == "routing-auto@1"
    assert store.profiles.get("routing-auto").fields["input"] == "问题"


def test_file_without_an_input_column_is_refused_clearly(store, tmp_path):
    path = tmp_path / "n.jsonl"
    path.write_text('{"n": 1}\n{"n": 2}\n')
    with pytest.raises(ImportFailed, match=r"none could be suggested.*--mapping"):
        store.datasets.import_file(path)


def test_bad_names(store, csv_file):
    with pytest.raises(UsageError, match="without '@'"):
        store.datasets.import_file(csv_file, PROFILE, name="a@b")


def test_validation_report_round_trips_through_the_store(store, tmp_path):
    path = tmp_path / "s.csv"
    path.write_text("q,label\nx,a\n,b\ny,a\n", encoding="utf-8")
    info = store.datasets.import_file(
        path, {"fields": {"input": "q", "expected": "label"}}, skip_invalid=True
    )
    (error,) = store.datasets.get(info.id).validation.errors
    assert (error.kind, error.location) == ("empty_input", "line 3")
    raw = store.query_one("SELECT validation FROM datasets WHERE id = ?", (info.id,))[0]
    assert json.loads(raw)["counts"] == {"empty_input": 1}


def test_label_conflicts(store, tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("q,label\nx,a\nz,c\nx,b\ny,a\nz,c\n", encoding="utf-8")
    info = store.datasets.import_file(path, {"fields": {"input": "q", "expected": "label"}})
    (warning,) = store.datasets.label_conflicts(info)
    assert (warning.kind, warning.location, warning.value, warning.severity) == (
        "conflicting_labels",
        "line 2",
        "x",
        "warning",
    )
    assert (
        "'a' at line 2 (case 0a7651f82b16); 'b' at line 4 (case 0a7651f82b16-2) of c.csv" in warning.message
    )


def test_concurrent_reader_sees_nothing_until_commit(store, csv_file):
    other = sqlite3.connect(store.db_path)
    store.datasets.import_file(csv_file, PROFILE)
    assert other.execute("SELECT COUNT(*) FROM cases").fetchone()[0] == 3
    assert (
        other.execute("SELECT COUNT(*) FROM datasets WHERE fingerprint LIKE '%pending%'").fetchone()[0] == 0
    )
    other.close()


def test_public_functions_open_and_close_a_store(tmp_path, csv_file, monkeypatch):
    import abbench

    monkeypatch.setenv("ABBENCH_STORE", str(tmp_path / "s"))
    info = abbench.import_dataset(csv_file, PROFILE, name="routing")
    dataset = abbench.load_dataset("routing")
    assert (
        dataset.fingerprint == info.fingerprint and len(dataset) == 3 and dataset.get("2").input == "打开空调"
    )
    assert [c.case_id for c in abbench.load_cases(info.fingerprint, store=tmp_path / "s")] == ["1", "2", "3"]
    assert list(dataset.to_pandas()["expected"]) == ["fast", "fast", "slow"]


def test_foreign_keys_are_on_again_after_an_import(store, csv_file, tmp_path):
    store.datasets.import_file(csv_file, PROFILE)
    assert store.query_one("PRAGMA foreign_keys")[0] == 1
    bad = tmp_path / "bad.csv"
    bad.write_text("id,问题,标签,垂域\n1,,快,x\n", encoding="utf-8")
    with pytest.raises(ImportFailed):
        store.datasets.import_file(bad, PROFILE)
    assert store.query_one("PRAGMA foreign_keys")[0] == 1
    fk = store.query("PRAGMA foreign_key_check(cases)")
    assert fk == []


def test_a_reimport_whose_mapping_declares_other_labels_says_they_are_not_applied(store, csv_file, caplog):
    unlabelled = {k: v for k, v in PROFILE.items() if k != "label_set"}
    first = store.datasets.import_file(csv_file, unlabelled, name="routing")
    assert first.label_set is None
    with caplog.at_level("WARNING"):
        again = store.datasets.import_file(csv_file, PROFILE, name="routing")
    assert again.reused and again.label_set is None  # a stored dataset never changes
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert (
        len(warned) == 1
        and "label set is not applied" in warned[0]
        and "--name routing-labelled" in warned[0]
    )
    caplog.clear()
    with caplog.at_level("WARNING"):
        store.datasets.import_file(csv_file, unlabelled, name="routing")  # the same mapping: nothing to say
    assert not [r for r in caplog.records if r.levelname == "WARNING"]
    labelled = store.datasets.import_file(csv_file, PROFILE, name="routing-labelled")
    assert not labelled.reused and labelled.label_set == ("fast", "slow")


def test_a_reimport_with_only_another_label_map_is_noted_not_warned(store, csv_file, caplog):
    first = store.datasets.import_file(csv_file, PROFILE, name="routing")
    remapped = {**PROFILE, "label_map": {"快": "fast", "慢": "slow", "quick": "fast"}}
    with caplog.at_level("INFO"):
        again = store.datasets.import_file(csv_file, remapped, name="routing")
    assert again.reused and again.fingerprint == first.fingerprint
    said = [(r.levelname, r.getMessage()) for r in caplog.records if "is not applied" in r.getMessage()]
    assert [level for level, _ in said] == ["INFO"] and "label map is not applied" in said[0][1]


def test_the_same_cases_saved_at_once_from_two_threads_are_stored_once(store):
    import threading

    from abbench.types import Case

    for attempt in range(15):
        cases = [Case(case_id=f"c{i}", input=f"question {i}", expected="fast") for i in range(50)]
        gate, results, errors = threading.Barrier(2), [], []

        def save(cases=cases, gate=gate, results=results, errors=errors, attempt=attempt):
            gate.wait()
            try:
                results.append(store.datasets.save(f"race{attempt}", cases))
            except Exception as exc:  # what the race used to raise: a unique-constraint error
                errors.append(exc)

        threads = [threading.Thread(target=save) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [], errors
        assert len({r.fingerprint for r in results}) == 1 and sorted(r.reused for r in results) == [
            False,
            True,
        ]
    assert store.query_one("SELECT COUNT(*) FROM datasets")[0] == 15


def test_import_refuses_a_misspelt_or_impossible_read_option_in_the_error_tree(store):
    from abbench.errors import UnknownName
    from tests.conftest import DEMO

    with pytest.raises(UnknownName, match=r"unknown read option 'delimeter' \(did you mean 'delimiter'\?\)"):
        store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", delimeter=";")  # type: ignore[call-arg]
    with pytest.raises(UsageError, match=r"read option header_row: .*greater than or equal to 0"):
        store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", header_row=-1)
    assert store.datasets.all() == []  # nothing half-imported

"""The demo data's CSV and XLSX, with their mapping profiles, import to the same dataset."""

from __future__ import annotations

from collections import Counter

from tests.conftest import DEMO


def test_csv_and_xlsx_import_to_the_same_fingerprint(store):
    csv = store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
    xlsx = store.datasets.import_file(DEMO / "cases.xlsx", DEMO / "mapping-xlsx.yaml", name="demo")
    assert xlsx.fingerprint == csv.fingerprint and xlsx.reused
    assert csv.validation.ok and csv.n_cases == 401
    assert store.datasets.value_counts(csv) == {"fast": 230, "slow": 171}
    cases = store.datasets.load_cases(csv)
    assert sum(c.history is not None for c in cases) == 20
    assert sum(c.context is not None for c in cases) == 94
    assert Counter(c.domain for c in cases)["车控"] == 72
    assert cases[0].case_id == "FS-0001" and cases[0].source_line == "line 2"


def test_the_xlsx_title_row_is_found_without_being_told(store):
    info = store.datasets.import_file(DEMO / "cases.xlsx", name="demo-xlsx")  # the suggested mapping
    assert info.read_options["header_row"] == 2 and info.read_options["sheet"] == "评测集"
    profile = store.profiles.get(info.profile_name, info.profile_version)
    assert profile.fields["input"] == "用户query" and profile.fields["expected"] == "人工标签"
    assert profile.fields["case_id"] == "用例ID" and profile.fields["context"] == "车辆状态"

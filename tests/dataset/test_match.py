"""`match_profiles`: a saved profile is proposed for a file only when the columns it reads are there."""

from __future__ import annotations

import pytest

from abbench.dataset import MappingProfile, Shape, match_profile, match_profiles, read_table, suggest_mapping
from tests.conftest import DEMO


def saved(table, name: str, **changes) -> MappingProfile:
    """The suggestion for `table`, as a saved profile made from that file (version 1, shape recorded)."""
    profile = suggest_mapping(table).profile.evolve(name=name, **changes)
    return profile.model_copy(update={"version": 1, "shape": Shape(**table.shape)})


@pytest.fixture(scope="module")
def tables(realdata):
    return {
        "banking77": read_table(realdata / "banking77" / "test.csv"),
        "clinc150": read_table(realdata / "clinc150" / "data_full.json"),
        "askubuntu": read_table(realdata / "nlu_corpora" / "AskUbuntuCorpus.json"),
        "botfuel": read_table(realdata / "xlsx" / "botfuel_tripplanner_intents.xlsx"),
        "demo-xlsx": read_table(DEMO / "cases.xlsx"),
        "demo-csv": read_table(DEMO / "cases.csv"),
    }


@pytest.fixture(scope="module")
def profiles(tables):
    made = [saved(t, name) for name, t in tables.items()]
    return [*made, MappingProfile.from_file(DEMO / "mapping-xlsx.yaml").model_copy(update={"version": 1})]


@pytest.mark.parametrize("name", ["banking77", "clinc150", "askubuntu", "botfuel", "demo-xlsx", "demo-csv"])
def test_each_real_file_is_matched_to_the_profile_made_from_a_file_of_its_shape(tables, profiles, name):
    matches = match_profiles(tables[name], profiles)
    assert matches.best is not None and matches.best.profile.name == name
    assert matches.best.same_shape
    assert "(the same columns as the file it was made for)" in matches.explain()


def test_the_reason_names_the_columns_that_match(tables, profiles):
    matches = match_profiles(tables["banking77"], profiles)
    assert matches.explain() == (
        "profile 'banking77@1' matches: columns text, category (the same columns as the file it was made for)"
    )
    assert [m.profile.name for m in matches.fitting] == ["banking77"]


def test_a_profile_whose_columns_are_missing_is_never_proposed_and_the_closest_says_why(tables, profiles):
    # The 71,100 errors: a JSON-rows profile (text, intent, ...) applied to CLINC150's [text, intent] rows.
    others = [p for p in profiles if p.name != "clinc150"]
    matches = match_profiles(tables["clinc150"], others)
    assert matches.best is None and matches.fitting == ()
    closest = matches.matches[0]
    assert not closest.fits and closest.missing
    assert matches.explain().startswith("no saved profile matches: the closest, profile ")
    assert "which this file lacks (it has 0, 1)" in matches.explain()
    askubuntu = matches.get("askubuntu@1")
    assert askubuntu is not None and askubuntu.missing[:2] == ("text", "intent")


def test_a_profile_that_reads_a_sheet_the_workbook_lacks_does_not_fit(tables):
    demo = MappingProfile.from_file(DEMO / "mapping-xlsx.yaml")
    fit = match_profile(tables["botfuel"], demo)
    assert (
        not fit.fits
        and "reads sheet '评测集', which this file lacks (sheets: sample-tripplanner)" in fit.reason
    )
    on_demo = match_profile(tables["demo-xlsx"], demo)
    assert on_demo.fits and not on_demo.same_shape  # the YAML records no shape: it fits by its columns
    assert on_demo.reason.startswith(
        "profile 'demo-routing-xlsx' matches: columns 用例ID, 用户query, 人工标签"
    )
    assert on_demo.reason.endswith("on sheet '评测集'")


def test_the_csv_profile_does_not_fit_the_xlsx_of_the_same_cases(tables):
    # Same cases, other column names: nothing is guessed from the content.
    csv = MappingProfile.from_file(DEMO / "mapping-csv.yaml")
    fit = match_profile(tables["demo-xlsx"], csv)
    assert not fit.fits
    assert fit.missing == ("case_id", "query", "route", "domain", "history", "vehicle_state", "request_id")
    assert (
        "needs columns 'case_id', 'query', 'route', 'domain' and 3 more, which this file lacks" in fit.reason
    )


def test_templates_lookups_and_paths_count_the_columns_they_read(tables, write):
    profile = MappingProfile.from_dict(
        {
            "name": "routing",
            "fields": {
                "input": {"template": "{用户query}（{垂域}）"},
                "expected": "人工标签",
                "domain": {"lookup": "en", "key": "垂域"},
                "context": "车辆状态.speed",
                "metadata": {"object": {"req": "请求ID", "split": "$split"}},
            },
            "lookups": {"en": {"table": {"导航": "navigation"}, "default": "other"}},
        }
    )
    fit = match_profile(tables["demo-xlsx"], profile)
    assert fit.fits and fit.reads == ("用户query", "垂域", "人工标签", "车辆状态", "请求ID")
    lacking = profile.evolve(fields={**profile.spec()["fields"], "input": {"template": "{问题} {垂域}"}})
    fit = match_profile(tables["demo-xlsx"], lacking)
    assert not fit.fits and fit.missing == ("问题",)


def test_a_column_only_a_field_with_a_default_reads_is_not_needed(write):
    path = write("q.csv", "question\nhello\n")
    profile = MappingProfile.from_dict(
        {"name": "p", "fields": {"input": "question", "domain": "area"}, "defaults": {"domain": "general"}}
    )
    fit = match_profile(read_table(path), profile)
    assert fit.fits and fit.missing == () and fit.reads == ("question", "area")


def test_json_array_rows_are_read_by_index(tables):
    clinc = MappingProfile.from_dict({"name": "c", "fields": {"input": "0", "expected": "1"}})
    assert match_profile(tables["clinc150"], clinc).fits
    # the same profile on a table without columns "0" and "1"
    fit = match_profile(tables["banking77"], clinc)
    assert not fit.fits and fit.missing == ("0", "1")


def test_no_saved_profile_says_so(tables):
    matches = match_profiles(tables["banking77"], [])
    assert matches.best is None and matches.explain() == "no saved profile to compare with"

"""CasesWidget (the All-cases view): filters, sort and paging through its Python API, the case drawer, the export."""

from __future__ import annotations

import csv

import pandas as pd
import pytest

from abbench.review import add_review, case_page, disagreements
from abbench.runner import create_experiment, run_experiment
from abbench.types import Case
from abbench.widgets import CasesWidget
from abbench.widgets._cases import PAGE_SIZE
from tests.widgets.conftest import python_arm

DOMAINS = ("导航", "车控", "媒体")
N = 130


@pytest.fixture
def exp(store):
    """130 cases × 2 rounds × 2 arms: b wrong on c010–c029, flaky on c030–c039; both wrong on ids ending in 7."""
    cases = [
        Case(f"c{i:03d}", f"query {i} {'STRASSE' if i % 5 == 0 else 'Straße'}", "fast" if i % 3 else "slow",
             domain=DOMAINS[i % 3])
        for i in range(N)
    ]  # fmt: skip
    ds = store.datasets.save("cases", cases, label_set=["fast", "slow"])
    spec = {
        "name": "every-case",
        "dataset": ds.fingerprint,
        "rounds": 2,
        "arms": {
            "a": python_arm(),
            "b": python_arm(
                wrong=[f"c{i:03d}" for i in range(10, 30)], flaky=[f"c{i:03d}" for i in range(30, 40)]
            ),
        },
    }
    exp = create_experiment(spec, store=store)
    run_experiment(exp.id, store=store)
    return store.experiments.get(exp.id)


@pytest.fixture
def widget(store, exp, tmp_path):
    w = CasesWidget(store, experiment="every-case", exports_dir=str(tmp_path / "exports"))
    assert w.errors.message is None
    return w


def _walk(widget) -> list[str]:
    """Every case id the list holds, page by page through the Next page button."""
    widget.go_to_page(1)
    ids = [r.case_id for r in widget.rows]
    while not widget.next_page_button.disabled:
        widget.next_page_button.click()
        ids += [r.case_id for r in widget.rows]
    return ids


def test_it_opens_on_every_case_a_page_at_a_time_with_each_arms_rounds(widget):
    assert widget.page.total == N and widget.page.cases == N and len(widget.rows) == PAGE_SIZE
    assert "page 1 of 3 · cases 1–50 of 130" in widget.page_html.value
    assert widget.previous_page_button.disabled and not widget.next_page_button.disabled
    head = widget.table_html.value
    for column in ("a · round 1", "a · round 2", "b · round 1", "b · round 2", "review"):
        assert f">{column}</th>" in head
    assert len(widget.cases.values) == PAGE_SIZE
    assert _walk(widget) == [f"c{i:03d}" for i in range(N)]
    assert "page 3 of 3 · cases 101–130 of 130" in widget.page_html.value and widget.next_page_button.disabled


def test_each_filter_lists_what_the_core_query_lists_and_says_of_how_many(widget, store, exp):
    widget.outcome.value, widget.arm.value = "fail", "b"
    expected = {f"c{i:03d}" for i in range(10, 40)} | {f"c{i:03d}" for i in range(N) if i % 10 == 7}
    assert set(_walk(widget)) == expected
    assert f"of {len(expected):,} (of 130 in the experiment)" in widget.page_html.value
    widget.outcome.value, widget.arm.value = "\x00any", "\x00any"
    widget.domain.value = "车控"
    assert _walk(widget) == [f"c{i:03d}" for i in range(N) if i % 3 == 1]
    assert ("车控 · 43", "车控") in widget.domain.options  # each domain with its cases
    widget.gold.value = "slow"
    assert _walk(widget) == []  # 车控 cases are all "fast"
    assert "no case matches these filters (of 130 cases)" in widget.page_html.value
    widget.domain.value, widget.gold.value = "\x00any", "slow"
    assert _walk(widget) == [f"c{i:03d}" for i in range(N) if i % 3 == 0]
    widget.gold.value = "\x00any"
    widget.kind.value = "flaky"
    assert _walk(widget) == [d.case_id for d in disagreements(exp.id, "flaky", store=store)]
    widget.kind.value = "\x00any"
    widget.search.value = "strasse"  # casefolded: finds STRASSE and Straße alike
    assert len(_walk(widget)) == N
    widget.search.value = "STRASSE c01"
    assert _walk(widget) == []
    widget.search.value = "c01"
    assert _walk(widget) == [f"c{i:03d}" for i in range(10, 20)]


def test_sort_and_reverse_start_at_page_1_and_a_filter_keeps_the_sort(widget, store, exp):
    widget.go_to_page(3)
    widget.sort.value = "wrong"
    assert widget.page.page == 1
    ids = _walk(widget)
    assert ids == [r.case_id for r in case_page(exp.id, store=store, sort="wrong", limit=N).rows]
    wrong = {
        r: sum(x.outcome == "fail" for rs in row.runs.values() for x in rs)
        for row in case_page(exp.id, store=store, limit=N).rows
        for r in [row.case_id]
    }
    assert [wrong[i] for i in ids] == sorted(wrong.values(), reverse=True)
    widget.descending.value = True
    assert _walk(widget)[:3] != ids[:3] and widget.errors.message is None
    widget.sort.value, widget.descending.value = "case_id", True
    assert _walk(widget) == [f"c{i:03d}" for i in reversed(range(N))]
    widget.go_to_page(99)  # clamped to the last page
    assert widget.page.page == 3


def test_choosing_a_case_opens_it_in_the_drawer_on_any_page(widget):
    widget.next_page()
    case_id = widget.rows[4].case_id
    widget.cases.select(case_id)
    assert widget.detail.case_id == case_id and widget.drawer.selected_index == 0
    assert widget.drawer.titles == (f"Case {case_id}",)
    widget.open_case("c000")  # not on this page: opened all the same
    assert widget.detail.case_id == "c000" and widget.page.page == 2


def test_a_row_shows_the_latest_review(widget, store, exp):
    add_review(exp.id, "c002", "model_correct", store=store)
    widget.reload()
    assert widget.rows[2].review == "model_correct" and "model_correct" in widget.table_html.value


@pytest.mark.parametrize("fmt", ["csv", "xlsx"])
def test_export_this_view_writes_exactly_the_filtered_rows_every_page(widget, store, exp, tmp_path, fmt):
    widget.outcome.value, widget.arm.value, widget.sort.value = "pass", "b", "wrong"
    listed = _walk(widget)
    assert len(listed) > PAGE_SIZE  # more than the page shown
    widget.export_format.value = fmt
    widget.export_button.click()
    assert widget.errors.message is None
    out = widget.exported
    assert (
        out == tmp_path / "exports" / f"every-case-cases.{fmt}"
        and f"wrote {len(listed):,} cases" in widget.export_html.value
    )
    frame = pd.read_csv(out, encoding="utf-8-sig") if fmt == "csv" else pd.read_excel(out, engine="openpyxl")
    assert list(frame["case_id"]) == listed
    assert set(frame["b round 1"]) | set(frame["b round 2"]) == {"right", "wrong"}  # flaky ones: both
    flaky = [f"c{i:03d}" for i in range(30, 40) if i != 37]  # c037 is wrong in every round: not listed
    assert listed[:9] == flaky  # the flaky cases, wrong once, first


def test_a_bad_export_path_is_said_in_the_widget(widget, tmp_path):
    widget.export_path.value = str(tmp_path / "cases.txt")
    widget.export_button.click()
    assert "cannot export as 'txt'; choose one of csv, xlsx" in widget.errors.message
    widget.export_path.value = str(tmp_path / "mine.csv")
    widget.export_button.click()
    with (tmp_path / "mine.csv").open(encoding="utf-8-sig", newline="") as f:
        assert sum(1 for _ in csv.DictReader(f)) == N

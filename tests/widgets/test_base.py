"""What every widget relies on: kept selections, the error area, escaping, and finding the notebook's store."""

from __future__ import annotations

import ipywidgets as w
import pytest

from abbench import formatting as fm
from abbench.errors import NotFoundError, StoreError
from abbench.widgets import Choice, ErrorArea, View, escape, html_table, notebook_store
from abbench.widgets._base import STYLE


def test_a_choice_keeps_its_selection_when_the_options_are_reloaded():
    picked = []
    choice = Choice("x", on_select=picked.append)
    choice.set_options([("a", 1), ("b", 2), ("c", 3)])
    assert choice.value is None  # nothing chosen yet: no silent first item
    choice.widget.value = 2  # the person picks b
    assert picked == [2] and choice.intended == 2
    assert not choice.set_options([("new", 4), ("a", 1), ("b", 2), ("c", 3)])  # a newer item arrives first
    assert choice.value == 2 and picked == [2]  # kept, and the owner is not told of a change


def test_a_choice_that_disappears_is_not_replaced_by_another_and_comes_back():
    choice = Choice()
    choice.set_options([("a", 1), ("b", 2)])
    choice.select(2)
    choice.set_options([("a", 1)])
    assert choice.value is None and choice.missing == 2  # never falls back to a
    choice.set_options([("a", 1), ("b", 2)])
    assert choice.value == 2 and choice.missing is None


def test_a_list_widget_works_the_same_way():
    choice = Choice(kind=w.Select)
    choice.set_options([("a", "a"), ("b", "b")])
    choice.select("b")
    choice.set_options([("b", "b"), ("a", "a")])
    assert isinstance(choice.widget, w.Select) and choice.value == "b"


def test_selecting_a_value_not_offered_waits_for_it():
    choice = Choice()
    choice.set_options([("a", 1)])
    choice.select(9)
    assert choice.value is None and choice.missing == 9
    choice.set_options([("a", 1), ("z", 9)])
    assert choice.value == 9


def test_the_error_area_shows_abbench_errors_plainly_and_others_with_a_folded_traceback():
    area = ErrorArea()
    area.show(NotFoundError("no experiment <b>x</b>"), "Open")
    assert area.message == "Open failed: no experiment <b>x</b>"
    assert (
        "&lt;b&gt;x&lt;/b&gt;" in area.value
        and "<b>x</b>" not in area.value
        and "traceback" not in area.value
    )
    try:
        {}["k"]
    except KeyError as exc:
        area.show(exc)
    assert area.message == "KeyError: 'k'" and "<details><summary>traceback</summary>" in area.value
    area.clear()
    assert area.message is None and area.value == "" and len(area.messages) == 2


def test_guarded_callbacks_show_errors_and_clear_them_on_the_next_action(store):
    view = View(store)

    def boom():
        raise ValueError("bad <input>")

    button = view.button("Go", boom)
    button.click()
    assert view.errors.message == "Go failed: ValueError: bad <input>"
    ok = view.button("Fine", lambda: None)
    ok.click()
    assert view.errors.message is None


def test_escape_and_tables():
    assert escape(None) == "—" and escape('<a href="x">') == "&lt;a href=&quot;x&quot;&gt;"
    table = html_table(["a", "<b>"], [["<i>1</i>", "<u>2</u>"]], raw=(1,))
    assert "&lt;i&gt;1&lt;/i&gt;" in table and "<u>2</u>" in table and "&lt;b&gt;" in table


def test_tables_scroll_in_their_own_box_and_keep_long_text_readable():
    table = html_table(
        ["arm", "n", "reason", "where"],
        [["a", 3, "a long reason", "Sheet1!row 3"]],
        wide=(2,),
        numeric=(1,),
        nowrap=(3,),
    )
    assert table.startswith('<div class="abbench-scroll">')
    assert '<td class="abbench-wide">a long reason</td>' in table
    assert '<td class="abbench-n">3</td>' in table and '<td class="abbench-nowrap">Sheet1!row 3</td>' in table
    # A word is never cut in two to squeeze a column (overflow-wrap: anywhere did that); the box scrolls.
    assert "anywhere" not in STYLE and ".widget-html-content:has(.abbench-scroll) {min-width:0}" in STYLE


@pytest.mark.parametrize(
    ("fmt", "value", "text"),
    [
        (fm.pct, 0.9036, "90.4%"),
        (fm.pct, None, "—"),
        (fm.points, 0.175, "+17.5 pts"),
        (fm.points, -0.02, "-2.0 pts"),
        (fm.money, 12.4, "$12.40"),
        (fm.money, 0.0615, "$0.0615"),
        (fm.money, 0.000051, "$0.000051"),
        (fm.money, 0.0000005, "$0.00000050"),
        (fm.money, 0, "$0"),
        (fm.ms, 7.838, "7.8 ms"),
        (fm.ms, 63.41, "63 ms"),
        (fm.ms, 2400, "2.4 s"),
        (fm.ms, float("nan"), "—"),
    ],
)
def test_numbers_are_shown_in_the_units_people_read(fmt, value, text):
    assert fmt(value) == text


def test_notebook_store_finds_the_store_above_the_working_folder(tmp_path, monkeypatch, store):
    monkeypatch.delenv("ABBENCH_STORE", raising=False)
    top = tmp_path / "checkout"
    (top / "notebooks").mkdir(parents=True)
    monkeypatch.chdir(top / "notebooks")
    with pytest.raises(StoreError, match="make demo"):
        notebook_store()
    made = notebook_store(top / ".abbench")
    found = notebook_store("")
    assert found.path == made.path == (top / ".abbench").resolve()
    made.close()
    found.close()
    monkeypatch.setenv("ABBENCH_STORE", str(store.path))
    assert notebook_store().path == store.path
    assert notebook_store(store) is store


def test_only_the_widgets_package_imports_ipywidgets():
    import re

    from tests.conftest import REPO

    pattern = re.compile(r"^\s*(import|from)\s+ipywidgets\b", re.M)
    offenders = [
        str(p.relative_to(REPO))
        for p in (REPO / "abbench").rglob("*.py")
        if "widgets" not in p.relative_to(REPO / "abbench").parts
        and pattern.search(p.read_text(encoding="utf-8"))
    ]
    assert offenders == []

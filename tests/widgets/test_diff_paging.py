"""DiffWidget's case lists past 2,000 cases: every moved case is listed a page at a time and can be opened."""

from __future__ import annotations

import pytest

from abbench.runner import create_experiment, run_experiment
from abbench.store import open_store
from abbench.types import Case
from abbench.widgets import DiffWidget
from abbench.widgets._diff import LIST_PAGE
from tests.widgets.conftest import python_arm

CASES = 2_600
# 2,400 regressed, more than the old 2,000 cap (ids never end in 7: the test agent errs on those in both arms)
REGRESSED = [f"r{i:04d}a" for i in range(CASES) if i % 13]


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """2,600 cases; arm b wrong on 2,400 of them where arm a is right."""
    store = open_store(tmp_path_factory.mktemp("diff-paging") / "store")
    cases = [Case(f"r{i:04d}a", f"ask {i} 空调", "fast", domain="导航") for i in range(CASES)]
    ds = store.datasets.save("big", cases, label_set=["fast", "slow"])
    spec = {
        "name": "big",
        "dataset": ds.fingerprint,
        "concurrency": 64,
        "arms": {"a": python_arm(), "b": python_arm(wrong=REGRESSED)},
    }
    exp = create_experiment(spec, store=store)
    run_experiment(exp.id, store=store)
    yield store
    store.close()


@pytest.fixture
def widget(big):
    w = DiffWidget(big, a="big")
    assert w.errors.message is None
    return w


def test_a_list_past_2000_cases_is_paged_and_says_how_many(widget):
    regressed = [x.case_id for x in widget.comparison.regressed]
    assert regressed == REGRESSED and len(regressed) == 2_400
    assert widget.lists["regressed"] == regressed
    assert widget.list_tabs.titles[1] == "regressed (2,400)"
    widget.list_tabs.selected_index = 1
    assert widget.case_lists["regressed"].values == regressed[:LIST_PAGE]
    assert "page 1 of 24 · cases 1–100 of 2,400" in widget.list_page_html.value
    assert widget.list_previous_button.disabled and not widget.list_next_button.disabled
    walked = list(widget.case_lists["regressed"].values)
    for _ in range(23):
        widget.list_next_button.click()
        walked += widget.case_lists["regressed"].values
    assert walked == regressed  # every case, once, in order
    assert "page 24 of 24 · cases 2,301–2,400 of 2,400" in widget.list_page_html.value
    assert widget.list_next_button.disabled
    labels = widget.case_lists["regressed"].labels
    assert labels[-1].startswith(f"{regressed[-1]} · ask 2599 空调 · 导航")  # the page's inputs are read too


def test_a_case_past_2000_opens_on_its_page_and_stays_chosen_on_a_reload(widget):
    last = REGRESSED[-1]
    widget.open_case("regressed", last)
    assert widget.list_page("regressed") == 24 and widget.case_lists["regressed"].value == last
    assert widget.detail.case_id == last and widget.errors.message is None
    widget.go_to_list_page(1, "regressed")
    assert widget.case_lists["regressed"].value is None  # on another page now
    widget.reload()  # the chosen case comes back, on its page
    assert widget.list_page("regressed") == 24 and widget.case_lists["regressed"].value == last


def test_each_tab_keeps_its_own_page(widget):
    widget.list_tabs.selected_index = 1
    widget.go_to_list_page(5)
    widget.list_tabs.selected_index = 0  # fixed: no case, no pager text
    assert widget.list_page_html.value == "" and widget.list_next_button.disabled
    widget.list_tabs.selected_index = 1
    assert "page 5 of 24" in widget.list_page_html.value

"""The case drawer shows a case's earlier turns in its summary, and the review list says which inputs answer
earlier turns; the results and diff widgets mark a draft skill version wherever they name one."""

from __future__ import annotations

import html
import re

import pytest

from abbench.store import open_store
from abbench.widgets import CaseDetailView, DiffWidget, ResultsWidget, ReviewWidget
from abbench.widgets._case import OPEN_HISTORY_CHARS, SUMMARY_TURNS
from tests.multiturn import build_multiturn_store, conversation
from tests.widgets.conftest import without_errors


@pytest.fixture(scope="module")
def multiturn(tmp_path_factory):
    """`tests.multiturn`'s store, open (read, never changed)."""
    with open_store(build_multiturn_store(tmp_path_factory.mktemp("multiturn") / "store")) as store:
        yield store


def _turns(value: str) -> list[tuple[str, str]]:
    """The (role, text) of each turn shown in an HTML value."""
    found = re.findall(r"<b>(user|assistant):</b> (.*?)(?: <span|</div>)", value)
    return [(role, html.unescape(text)) for role, text in found]


def test_the_summary_shows_a_short_history_unfolded_above_the_input(multiturn):
    view = CaseDetailView(multiturn)
    view.show([(multiturn.experiments.get("routing"), None)], "FS-0017")
    summary = view.summary_html.value
    assert '<details class="abbench-history" open' in summary and "after 2 earlier turns" in summary
    assert _turns(summary)[0] == ("user", "附近有什么停车场") and _turns(summary)[1][0] == "assistant"
    assert summary.index("附近有什么停车场") < summary.index("导航去第三个")  # oldest first, then the input
    assert _turns(view.case_html.value) == _turns(summary)  # and in the case in full, by role


def test_a_long_history_is_folded_with_its_latest_turns_and_the_full_one_below(multiturn):
    long = multiturn.experiments.get("long")
    case = next(c for c in multiturn.datasets.load_cases(long.dataset_id) if c.input.startswith("so,"))
    view = CaseDetailView(multiturn)
    view.show([(long, None)], case.case_id)
    summary = view.summary_html.value
    assert len(conversation()) - 1 > SUMMARY_TURNS
    assert '<details class="abbench-history" style' in summary  # folded
    assert f"{12 - SUMMARY_TURNS} earlier turns not shown here" in summary
    assert len(_turns(summary)) == SUMMARY_TURNS
    assert len(_turns(view.case_html.value)) == 12  # the case in full shows every turn


def test_a_long_turn_folds_the_history(multiturn):
    """The real eval's system message (over 900 characters) is one turn, but too long to show unfolded."""
    long = multiturn.experiments.get("long")
    case = next(c for c in multiturn.datasets.load_cases(long.dataset_id) if not c.input.startswith("so,"))
    assert len(case.history) == 1 and len(case.history[0]["content"]) > OPEN_HISTORY_CHARS
    view = CaseDetailView(multiturn)
    view.show([(long, None)], case.case_id)
    summary = view.summary_html.value
    assert '<details class="abbench-history" style' in summary and "after 1 earlier turn<" in summary
    assert _turns(summary)[0][1].startswith("You are now an emotionally intelligent AI.")


def test_the_drawer_of_other_widgets_shows_the_history_too(multiturn):
    diff = without_errors(DiffWidget(multiturn, a="routing", arm_a="a", arm_b="b"))
    diff.detail.show([(multiturn.experiments.get("routing"), ["a"])], "FS-0015")
    assert _turns(diff.detail.summary_html.value)[0] == ("user", "打电话给李经理")


def test_the_review_list_says_which_inputs_answer_earlier_turns(multiturn):
    widget = without_errors(ReviewWidget(multiturn, experiment="routing"))
    labels = {value: label for label, value in widget.cases.widget.options}
    assert labels["FS-0017"].endswith("after 2 turns: 导航去第三个")
    assert "turns:" not in "".join(label for case, label in labels.items() if case == "FS-0002")


# -- draft skill versions ---------------------------------------------------------------------------------


def test_results_and_diff_name_a_draft_skill_version_marked(store, ab):
    """Arm b of `ab` runs a skill folder outside git: a draft."""
    b = ab.arm("b")
    snap = store.snapshots.get(b.snapshot)
    assert snap.draft
    results = without_errors(ResultsWidget(store, experiment="ab"))
    assert f"skill {snap.label}" in html.unescape(results.arms_html.value)
    assert snap.label.endswith(" (draft)")
    diff = without_errors(DiffWidget(store, a="ab"))
    assert f"B = b (python, skill {snap.label})" in html.unescape(diff.verdict_html.value)
    assert "A = a (python, no skill)" in html.unescape(diff.verdict_html.value)


def test_the_all_cases_rows_say_which_inputs_answer_earlier_turns(multiturn):
    """Each All-cases row of a case with a history says so, in the CLI's words, from `CaseRow.turns`
    (the same turns as the case's `CaseView.turns`); a single-turn case's row says nothing."""
    from abbench.review import case_detail, case_page
    from abbench.widgets import CasesWidget

    page = case_page("routing", store=multiturn, limit=1000)
    rows = {r.case_id: r for r in page.rows}
    for case_id in ("FS-0015", "FS-0017", "FS-0002"):
        assert rows[case_id].turns == case_detail("routing", case_id, store=multiturn).case.turns
    assert len(rows["FS-0017"].turns) == 2 and rows["FS-0002"].turns == ()
    widget = without_errors(CasesWidget(multiturn, experiment="routing"))
    labels = {value: label for label, value in widget.cases.widget.options}
    assert "(after 2 earlier turns) 导航去第三个" in labels["FS-0017"]
    assert "earlier turn" not in labels["FS-0002"]
    table = html.unescape(widget.table_html.value)
    assert "(after 2 earlier turns) 导航去第三个" in table
    on_first_page = sum(1 for r in page.rows[: len(widget.rows)] if r.turns)  # the widget shows page 1
    assert len(re.findall(r"\(after \d+ earlier turns?\)", table)) == on_first_page > 0

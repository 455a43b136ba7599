"""ReviewWidget: kinds, filters, search, the case detail, reviews saved at once and shown again, kept choices."""

from __future__ import annotations

import pytest

from abbench.review import add_review, disagreements, reviews
from abbench.runner import create_experiment, run_experiment
from abbench.widgets import ReviewWidget
from tests.widgets.conftest import without_errors
from tests.widgets.demo import ARMS


@pytest.fixture
def widget(store, ab):
    return without_errors(ReviewWidget(store, experiment="ab"))


def ids(w):
    return [d.case_id for d in w.shown]


def test_gold_disagreements_are_listed_first_with_a_count_per_kind(widget):
    assert widget.kind.value == "gold"
    assert ids(widget) == ["c01", "c02", "c03", "c04", "c07", "c17"]
    labels = dict((k, label) for label, k in widget.kind.options)
    assert labels["gold"] == "gold ≠ answer (6)" and labels["flaky"] == "flaky rounds (1)"
    assert labels["all"] == "all (9)"
    assert "6 of 9 cases listed (gold ≠ answer)" in widget.count_html.value
    assert widget.cases.value is None and widget.detail.case_id is None  # nothing opened by itself


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("low_confidence", ["c05", "c15"]),
        ("no_evidence", ["c06"]),
        ("flaky", ["c04"]),
        ("arms", ["c01", "c03", "c04"]),
        ("all", ["c01", "c02", "c03", "c04", "c05", "c06", "c07", "c15", "c17"]),
    ],
)
def test_each_kind_lists_its_cases(widget, kind, expected):
    widget.kind.value = kind
    assert ids(widget) == expected


def test_search_sort_and_arm_filters(widget):
    widget.kind.value = "all"
    widget.search.value = "query 17"
    assert ids(widget) == ["c17"]
    widget.search.value = "c0"
    assert ids(widget) == ["c01", "c02", "c03", "c04", "c05", "c06", "c07"]
    widget.search.value = ""
    widget.arm.select("a")
    assert "c06" not in ids(widget)  # only arm b failed to cite evidence there
    widget.arm.select("")
    widget.sort.value = "confidence"
    assert ids(widget)[:2] == ["c05", "c15"]
    widget.sort.value = "wrong"
    assert ids(widget)[0] in ("c02", "c07", "c17")  # wrong in every run of both arms


def test_the_case_detail_shows_every_run_with_evidence_resolved_and_text_escaped(widget):
    widget.cases.select("c04")
    assert widget.errors.message is None and widget.detail.case_id == "c04"
    case = widget.detail.case_html.value
    assert "query 4 &lt;i&gt;4&lt;/i&gt;" in case and "<i>4</i>" not in case
    assert "flaky" in case and "raw row" in case
    runs = widget.detail.runs_html.value
    assert runs.count("<tr>") == 1 + 4  # header + 2 arms × 2 rounds
    assert "because &lt;b&gt;" in runs and "✓ SKILL.md#规则" in runs
    # Six columns, the reason kept readable (it was squeezed to a few characters among eleven).
    assert runs.count("</th>") == 6 and '<td class="abbench-wide">because &lt;b&gt;' in runs
    evidence = widget.detail.evidence_html.value
    assert "Evidence cited by b" in evidence and "快系统能做的" in evidence
    accordion = widget.detail.transcripts.children[1]
    assert accordion.selected_index is None  # folded until opened


def test_a_review_is_saved_at_once_and_shown_again_on_reload(store, ab, widget):
    widget.advance.value = False  # stay on the case (the next test moves on)
    widget.cases.select("c01")
    widget.review_arm.value = "b"
    widget.note.value = "b is right: <b>two</b> steps"
    widget.verdict_buttons["model_correct"].click()
    assert widget.errors.message is None
    (saved,) = reviews(ab.id, store=store)
    assert (saved.case_id, saved.arm, saved.verdict, saved.note) == (
        "c01",
        "b",
        "model_correct",
        "b is right: <b>two</b> steps",
    )
    assert widget.note.value == "" and widget.cases.value == "c01"
    assert "b=model_correct" in widget.cases.labels[0]
    assert "saved: b → model_correct — b is right: &lt;b&gt;two&lt;/b&gt; steps" in widget.saved_html.value

    again = ReviewWidget(store, experiment=ab.id, case="c01")
    assert again.cases.value == "c01" and "b=model_correct" in again.cases.labels[0]
    assert "reviewed b: model_correct" in again.detail.case_html.value
    again.state.value = "open"
    assert "c01" not in ids(again)
    again.state.value = "done"
    assert ids(again) == ["c01"]


def test_a_second_verdict_is_appended_and_the_latest_is_shown(store, ab, widget):
    widget.advance.value = False
    widget.cases.select("c02")
    widget.verdict_buttons["unsure"].click()
    widget.verdict_buttons["gold_correct"].click()
    assert [r.verdict for r in reviews(ab.id, store=store, latest=False)] == ["unsure", "gold_correct"]
    assert "case=gold_correct" in widget.cases.labels[1] and "unsure" not in widget.cases.labels[1]


def test_the_chosen_case_survives_reloads_and_comes_back_after_a_filter(store, ab, small, widget):
    widget.cases.select("c03")
    widget.sort.value = "wrong"
    assert widget.cases.value == "c03"
    create_experiment(
        {"name": "later", "dataset": small.fingerprint, "arms": {"x": {"agent": "builtin"}}}, store=store
    )
    widget.reload_button.click()
    assert widget.chooser.value == ab.id and widget.cases.value == "c03"  # not the newer experiment
    widget.kind.value = "low_confidence"
    assert widget.cases.value is None and widget.cases.missing == "c03"
    assert (
        widget.detail.case_id is None and "c03 (your choice) is not in this list" in widget.count_html.value
    )
    assert widget.verdict_buttons["unsure"].disabled  # no review of a case nobody sees
    widget.kind.value = "gold"
    assert widget.cases.value == "c03" and widget.detail.case_id == "c03"


def test_next_case_walks_the_list(widget):
    widget.cases.select("c03")
    widget.next_button.click()
    assert widget.cases.value == "c04"


def test_errors_show_in_the_widget(store, ab):
    w = ReviewWidget(store)
    assert w.experiment is None and w.items == []
    w.verdict_buttons["unsure"].click()  # disabled in the page, but a click from code must not raise
    assert "choose a case" in w.errors.message
    w2 = ReviewWidget(store, experiment="nope")
    assert (
        w2.errors.message
        == "choosing an experiment failed: no experiment named 'nope'; `abbench.list_experiments()` lists them"
    )


def test_the_transcript_of_a_builtin_run_opens_folded(store, demo):
    exp = create_experiment(
        {"name": "t", "dataset": "demo", "arms": {"v2": ARMS["v2"]}, "cases": {"limit": 40}}, store=store
    )
    run_experiment(exp.id, store=store)
    w = ReviewWidget(store, experiment="t", kind="all")
    w.cases.select(w.cases.values[0])
    accordion = w.detail.transcripts.children[1]
    pane = accordion.children[0]
    assert pane.value == ""
    accordion.selected_index = 0
    assert "message · system" in pane.value and "skill" in pane.value.lower()


@pytest.fixture
def paged(store, ab, monkeypatch):
    """The review widget with pages of two cases: the six gold cases make three pages."""
    monkeypatch.setattr("abbench.widgets._review.PAGE_SIZE", 2)
    return without_errors(ReviewWidget(store, experiment="ab"))


def test_the_list_is_read_a_page_at_a_time_and_the_pager_walks_it(store, ab, paged):
    whole = [d.case_id for d in disagreements(ab.id, "gold", store=store)]
    assert whole == ["c01", "c02", "c03", "c04", "c07", "c17"]
    seen = []
    for number in (1, 2, 3):
        assert paged.page_number == number and f"page {number} of 3" in paged.page_html.value
        assert paged.cases.values == ids(paged) and len(ids(paged)) == 2
        assert paged.previous_page_button.disabled == (number == 1)
        assert paged.next_page_button.disabled == (number == 3)
        seen += ids(paged)
        paged.next_page_button.click()
    assert seen == whole and paged.page_number == 3  # the last page stays
    assert "6 of 9 cases listed (gold ≠ answer)" in paged.count_html.value
    assert "cases 5–6 of 6" in paged.page_html.value
    paged.previous_page_button.click()
    assert ids(paged) == ["c03", "c04"]


def test_walking_past_a_page_turns_it_and_a_case_opens_on_its_page(paged):
    paged.select_case("c17")  # on page 3
    assert paged.page_number == 3 and paged.cases.value == "c17" and paged.detail.case_id == "c17"
    paged.shortcuts.press("k")
    assert paged.cases.value == "c07" and paged.page_number == 3
    paged.shortcuts.press("k")
    assert paged.cases.value == "c04" and paged.page_number == 2 and paged.detail.case_id == "c04"
    paged.go_to_page(1)
    assert ids(paged) == ["c01", "c02"] and paged.cases.missing == "c04"
    assert "is not in this list" not in paged.count_html.value  # it is listed, on another page
    paged.next_case()  # from a case on another page: the one after it
    assert paged.cases.value == "c07" and paged.page_number == 3


def test_filters_are_applied_by_the_store_and_a_verdict_opens_the_next_case_on_the_next_page(
    store, ab, paged
):
    paged.search.value = "QUERY 17"
    assert ids(paged) == ["c17"] and "page 1 of 1" in paged.page_html.value
    paged.search.value = ""
    paged.select_case("c02")
    paged.shortcuts.press("1")  # a verdict on the last case of page 1
    assert reviews(ab.id, store=store, case_id="c02")[-1].verdict == "gold_correct"
    assert paged.cases.value == "c03" and paged.page_number == 2
    paged.state.value = "done"
    assert ids(paged) == ["c02"] and "1 of 6 reviewed" in paged.progress_html.value
    paged.state.value = "open"
    assert paged.page.total == 5 and "page 1 of 3" in paged.page_html.value


def _message(widget, key, **fields):
    """A key press as the browser sends it: a custom message on the KeyCatcher's comm, with the text
    fields' values as the page shows them."""
    widget.shortcuts._handle_custom_msg({"key": key, "fields": fields}, [])


def test_a_key_saves_the_note_the_page_shows_even_if_its_last_edits_had_not_synced(store, ab, widget):
    """ipywidgets holds a text box's edits back while the kernel is busy; the verdict key's message
    overtook them and the note lost its end ("gold says fa"). The key carries the box's text."""
    widget.cases.select("c01")
    widget.note.value = "gold says fa"  # what had reached the kernel
    _message(widget, "1", n="gold says fast: 两个任务")
    assert widget.errors.message is None
    assert reviews(ab.id, store=store, case_id="c01")[-1].note == "gold says fast: 两个任务"
    _message(widget, "2", n="", other="ignored")  # an empty box is no note; unknown fields do nothing
    assert reviews(ab.id, store=store, case_id="c02")[-1].note is None


def test_keys_1_to_5_give_the_verdicts_and_open_the_next_case_not_reviewed(store, ab, widget):
    assert widget.shortcuts.catch == ["1", "2", "3", "4", "5", "u", "j", "k"]
    assert widget.shortcuts.fields == {"n": ".abbench-review-note textarea"}
    assert "0 of 6 reviewed" in widget.progress_html.value
    add_review(ab.id, "c03", "unsure", store=store)  # reviewed before: skipped by the advance
    widget.reload()
    assert "1 of 6 reviewed" in widget.progress_html.value
    widget.cases.select("c01")
    for key, (expected_case, verdict) in zip(
        "12345",
        [("c01", "gold_correct"), ("c02", "model_correct"), ("c04", "ambiguous_standard")],
        strict=False,
    ):
        assert widget.cases.value == expected_case and widget.detail.case_id == expected_case
        _message(widget, key)
        assert widget.errors.message is None
        assert reviews(ab.id, store=store, case_id=expected_case)[-1].verdict == verdict
    assert widget.cases.value == "c07" and "4 of 6 reviewed" in widget.progress_html.value
    widget.shortcuts.press("4")
    assert widget.cases.value == "c17"
    widget.shortcuts.press("5")
    # every listed case is reviewed: it stays on the last one and says so
    assert widget.cases.value == "c17" and "6 of 6 reviewed</b> · all done" in widget.progress_html.value
    assert "every listed case is reviewed" in widget.saved_html.value
    latest = {r.case_id: r.verdict for r in reviews(ab.id, store=store)}
    assert latest == {
        "c01": "gold_correct",
        "c02": "model_correct",
        "c03": "unsure",
        "c04": "ambiguous_standard",
        "c07": "missing_capability_info",
        "c17": "unsure",
    }
    widget.shortcuts.press("k")
    assert widget.cases.value == "c07"
    widget.shortcuts.press("j")
    assert widget.cases.value == "c17"


def test_the_counter_follows_the_kind_and_arm_not_the_review_filter(store, ab, widget):
    widget.cases.select("c01")
    widget.shortcuts.press("1")
    widget.state.value = "open"
    assert (
        ids(widget) == ["c02", "c03", "c04", "c07", "c17"] and "1 of 6 reviewed" in widget.progress_html.value
    )
    assert widget.cases.value == "c02"  # advanced before the reviewed case left the list
    widget.kind.value = "flaky"
    assert "0 of 1 reviewed" in widget.progress_html.value


def test_undo_takes_back_the_last_verdict_and_goes_back_to_its_case(store, ab, widget):
    widget.cases.select("c01")
    widget.review_arm.value = "b"
    widget.note.value = "b is right"
    widget.shortcuts.press("2")
    widget.shortcuts.press("1")  # on c02, the case as a whole (the arm stays chosen: b)
    assert widget.cases.value == "c03" and len(reviews(ab.id, store=store)) == 2
    assert not widget.undo_button.disabled
    _message(widget, "u")
    assert widget.errors.message is None and widget.cases.value == "c02"
    assert [(r.case_id, r.verdict) for r in reviews(ab.id, store=store, latest=False)] == [
        ("c01", "model_correct")
    ]
    assert "undone: c02 b → gold_correct" in widget.saved_html.value
    widget.undo_button.click()
    assert widget.cases.value == "c01" and reviews(ab.id, store=store, latest=False) == []
    assert widget.note.value == "b is right" and widget.review_arm.value == "b"  # to give it again
    assert widget.undo_button.disabled and "0 of 6 reviewed" in widget.progress_html.value
    widget.shortcuts.press("u")
    assert "nothing to undo" in widget.errors.message


def test_undo_refuses_when_someone_reviewed_the_case_since(store, ab, widget):
    widget.cases.select("c01")
    widget.shortcuts.press("1")
    add_review(ab.id, "c01", "unsure", store=store, reviewer="another person")
    widget.shortcuts.press("u")
    assert "was reviewed again after review" in widget.errors.message
    assert [r.verdict for r in reviews(ab.id, store=store, latest=False)] == ["gold_correct", "unsure"]


def test_the_summary_marks_wrong_answers_and_open_sections_stay_open_after_saving(widget):
    widget.advance.value = False
    widget.cases.select("c04")  # arm b is wrong in round 1 only
    summary = widget.detail.summary_html.value
    assert summary.startswith("<b>Case c04</b>") and "query 4 &lt;i&gt;4&lt;/i&gt;" in summary
    assert "<b>gold:</b> <code>fast</code>" in summary and "round 2</th>" in summary
    rows = summary.split("<tr>")[2:]
    assert [row.count('class="abbench-wrong"') for row in rows] == [0, 1]  # a: right twice; b: once wrong
    assert "✗ slow" in rows[1] and "✓ fast" in rows[1]
    # the long parts are folded below the buttons; what the reviewer opens stays open
    assert all(a.selected_index is None for a in widget.detail.sections.values())
    widget.detail.sections["runs"].selected_index = 0
    transcripts = widget.detail.transcripts.children[1]
    transcripts.selected_index = 2
    title = transcripts.titles[2]
    widget.shortcuts.press("5")
    assert widget.detail.case_id == "c04" and widget.detail.sections["runs"].selected_index == 0
    again = widget.detail.transcripts.children[1]
    assert again.titles[again.selected_index] == title and again.children[again.selected_index].value


def test_a_held_back_edit_of_the_note_arriving_after_the_verdict_does_not_come_back(store, ab, widget):
    """Under load the browser sent the note's last edit after the verdict key that saved it: the kernel
    put the saved note back in the box (cleared by the verdict) and the next verdict saved it again."""
    widget.cases.select("c01")
    widget.note.set_state({"value": "gold"})  # the first edit reached the kernel; the rest was held back
    _message(widget, "1", n="gold says fast")
    assert reviews(ab.id, store=store, case_id="c01")[-1].note == "gold says fast"
    assert widget.note.value == ""
    widget.note.set_state({"value": "gold says fast"})  # the held-back edit, late
    assert widget.note.value == ""
    _message(widget, "2", n="gold says fast")  # the page had not shown the cleared box yet
    assert reviews(ab.id, store=store, case_id="c02")[-1].note is None
    widget.note.set_state({"value": "g"})  # typed anew, even the same words: a note again
    widget.note.set_state({"value": "gold says fast"})
    _message(widget, "3", n="gold says fast")
    assert reviews(ab.id, store=store, case_id="c03")[-1].note == "gold says fast"

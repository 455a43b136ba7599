"""store.datasets.label_conflicts: cases an agent is shown alike (input, history, context) with other gold
labels, each conflict naming its rows; on MAMS, where one sentence has a label per aspect by design."""

from __future__ import annotations

import json

import pytest

MAMS = {"case_id": "pair_id", "input": "review_sentence", "expected": "polarity"}


@pytest.fixture
def mams(realdata):
    return realdata / "mams" / "mams_acsa_test_head.tsv"


def test_a_sentence_with_a_label_per_aspect_in_its_context_is_no_conflict(store, mams):
    info = store.datasets.import_file(mams, {"fields": {**MAMS, "context": "aspect_category"}})
    assert info.n_cases == 183
    # 80 sentences, nearly all with two polarities: keyed on the input alone, each was a conflict
    assert store.datasets.label_conflicts(info) == []


def test_the_aspect_kept_in_metadata_is_a_conflict_that_says_the_prompt_cannot_tell_them_apart(store, mams):
    info = store.datasets.import_file(mams, {"fields": {**MAMS, "metadata": {"unmapped": True}}})
    conflicts = store.datasets.label_conflicts(info)
    assert len(conflicts) == 80  # MAMS: every sentence has aspects of two polarities or more
    first = conflicts[0]
    assert (first.location, first.case_id, first.severity) == ("line 2", "s1-place", "warning")
    assert first.value.startswith("We went again and sat at the bar")
    # both rows, with their lines and case ids, and the file they sit in
    assert (
        "'neutral' at line 2 (case s1-place); 'negative' at line 3 (case s1-food) of mams_acsa_test_head.tsv"
        in first.message
    )
    assert (
        "differ only in metadata 'aspect_category', which the agent's prompt does not show" in first.message
    )
    assert "map it to context" in first.message


def test_a_real_conflict_names_both_rows(store, mams, tmp_path):
    lines = mams.read_text(encoding="utf-8").splitlines()
    # s2-service (line 5) again, further down, with another polarity: the same sentence and aspect
    again = lines[4].replace("s2-service", "s2-service-again").replace("\tnegative", "\tpositive")
    path = tmp_path / "mams_conflict.tsv"
    path.write_text("\n".join([*lines, again]) + "\n", encoding="utf-8")
    info = store.datasets.import_file(path, {"fields": {**MAMS, "context": "aspect_category"}})
    (conflict,) = store.datasets.label_conflicts(info)
    assert (conflict.location, conflict.case_id) == ("line 5", "s2-service")
    assert conflict.message == (
        "the same input, history and context have different expected labels: 'negative' at line 5 (case "
        "s2-service); 'positive' at line 185 (case s2-service-again) of mams_conflict.tsv; review the gold labels"
    )


def test_the_same_short_reply_after_other_histories_is_no_conflict(store, tmp_path):
    def row(reply, asked, label):
        history = [{"role": "assistant", "content": asked}]
        return json.dumps({"history": history, "input": reply, "label": label})

    path = tmp_path / "turns.jsonl"
    rows = [
        row("yes", "Shall I book the table for 7pm?", "confirm_booking"),
        row("yes", "Do you want to cancel your order?", "cancel_order"),
        row("no", "Anything else?", "end"),
        row("yes", "Do you want to cancel your order?", "confirm_booking"),  # a real conflict with row 2
    ]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    fields = {"input": "input", "history": "history", "expected": "label"}
    info = store.datasets.import_file(path, {"fields": fields})
    (conflict,) = store.datasets.label_conflicts(info)
    assert conflict.location == "line 2"
    assert "'cancel_order' at line 2 (case " in conflict.message
    assert "'confirm_booking' at line 4 (case " in conflict.message
    assert "differ only" not in conflict.message


def test_a_repeated_conflict_is_counted_not_listed(store, tmp_path):
    path = tmp_path / "many.csv"
    rows = ["x,a"] * 5 + ["x,b", "x,c", "x,d", "x,e", "x,f", "y,a"]
    path.write_text("id,q,label\n" + "".join(f"r{i},{r}\n" for i, r in enumerate(rows)), encoding="utf-8")
    info = store.datasets.import_file(path, {"fields": {"case_id": "id", "input": "q", "expected": "label"}})
    (conflict,) = store.datasets.label_conflicts(info)
    assert conflict.message.startswith(
        "the same input, history and context have different expected labels: 'a' at line 2 (case r0), "
        "line 3 (case r1), line 4 (case r2) and 2 more rows; 'b' at line 7 (case r5); 'c' at line 8 (case r6); "
        "'d' at line 9 (case r7); and 2 more labels of many.csv"
    )


def test_the_limit_counts_conflicts_not_rows(store, tmp_path):
    path = tmp_path / "limit.csv"
    body = "".join(f"q{i},a\nq{i},b\nq{i},b\n" for i in range(30))
    path.write_text("q,label\n" + body, encoding="utf-8")
    info = store.datasets.import_file(path, {"fields": {"input": "q", "expected": "label"}})
    assert len(store.datasets.label_conflicts(info)) == 30
    found = store.datasets.label_conflicts(info, limit=7)
    assert [c.value for c in found] == [f"q{i}" for i in range(7)]
    assert "'b' at line 3 (case " in found[0].message and "line 4 (case " in found[0].message

"""undo_review: a verdict given by mistake is taken back; every other review stays as it was."""

from __future__ import annotations

import sqlite3

import pytest

from abbench.errors import NotFoundError, UsageError
from abbench.review import add_review, judge_agreement, review_history, reviews, undo_review
from tests.results import cases_of, make_experiment


@pytest.fixture
def exp(store):
    return make_experiment(
        store,
        "undo",
        cases_of(3),
        {"a": [[True], [False], [True]], "b": [[False], [True], [True]]},
    )


def _rows(store):
    with sqlite3.connect(store.path / "abbench.db") as conn:
        return conn.execute("SELECT id, case_id, arm, verdict, note FROM reviews ORDER BY id").fetchall()


def test_undo_removes_only_the_latest_review_it_added_and_the_one_before_is_in_force(store, exp):
    first = add_review(exp.id, "c001", "gold_correct", arm="a", store=store, note="considered")
    other = add_review(exp.id, "c000", "model_correct", arm="b", store=store)
    whole = add_review(exp.id, "c001", "unsure", store=store)  # the case as a whole: its own key
    slip = add_review(exp.id, "c001", "model_correct", arm="a", store=store)
    # c001's arm a failed: the slip (model_correct) disagrees with the grader, as does c000's review of b
    assert judge_agreement(exp.id, store=store).agreement == 0.0
    before = _rows(store)

    assert undo_review(slip, store=store) == first
    after = _rows(store)
    assert after == [row for row in before if row[0] != slip.id] and len(after) == 3
    assert [r.id for r in reviews(exp.id, store=store)] == [first.id, other.id, whole.id]
    assert [r.verdict for r in review_history(exp.id, "c001", "a", store=store)] == ["gold_correct"]
    # judge agreement reads the verdict in force again: gold_correct on the failed run agrees
    agreement = judge_agreement(exp.id, store=store)
    assert agreement.n == 2 and agreement.agreement == 0.5

    assert undo_review(other, store=store) is None  # nothing before it
    with pytest.raises(NotFoundError):
        undo_review(other, store=store)  # already undone


def test_undo_refuses_an_earlier_review_or_one_that_changed(store, exp):
    earlier = add_review(exp.id, "c002", "gold_correct", arm="b", store=store)
    later = add_review(exp.id, "c002", "unsure", arm="b", store=store)
    with pytest.raises(UsageError, match=r"reviewed again after review \d+ \(review \d+: unsure\)"):
        undo_review(earlier, store=store)
    with sqlite3.connect(store.path / "abbench.db") as conn:
        conn.execute("UPDATE reviews SET note='edited elsewhere' WHERE id=?", (later.id,))
    with pytest.raises(UsageError, match="reads differently in the store now"):
        undo_review(later, store=store)
    assert [r.verdict for r in review_history(exp.id, "c002", "b", store=store)] == ["gold_correct", "unsure"]

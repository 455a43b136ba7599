"""Position bias and the Wilson interval, from recorded pairwise judgements."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from abbench.graders import Judgement, PairJudgement, describe_bias, measure_position_bias


@pytest.mark.parametrize(
    ("first", "second", "low", "high"),
    [(10, 0, 0.7225, 1.0), (5, 5, 0.2366, 0.7634), (0, 20, 0.0, 0.1611), (81, 19, 0.7222, 0.8749)],
)
def test_the_first_slot_win_rate_has_a_wilson_interval(first, second, low, high):
    rows = [grade([("a", "b")], [1]) for _ in range(first)] + [
        grade([("a", "b")], [2]) for _ in range(second)
    ]
    ci = measure_position_bias(rows).first_win_interval
    assert (ci.low, ci.high, ci.confidence) == (
        pytest.approx(low, abs=1e-4),
        pytest.approx(high, abs=1e-4),
        0.95,
    )
    assert measure_position_bias(rows, confidence=0.99).first_win_interval.width > ci.width


def grade(slots, winner_slots, status="ok"):
    """A pairwise grade, read from the details `pairwise_judge` records, with one judgement per
    (slot order, winner slot)."""
    judgements = []
    for order, w in zip(slots, winner_slots, strict=True):
        judgements.append(
            {"slots": list(order), "winner_slot": w, "winner": "tie" if w is None else order[w - 1]}
        )
    winners = {j["winner"] for j in judgements}
    details = {"judgements": judgements, "arms": ["control", "treatment"]}
    verdict = winners.pop() if len(winners) == 1 else "tie"
    return PairJudgement.from_details(details, verdict=verdict, status=status)


def test_judgements_read_from_grade_details_are_typed():
    g = grade([("b", "a")], [1])
    assert g == PairJudgement((Judgement(("b", "a"), 1, "b"),), "b", ("control", "treatment"), True)
    assert not grade([("a", "b")], [1], status="error").ok


def test_a_judge_that_always_picks_slot_one_is_biased():
    rows = [grade([("a", "b") if i % 2 else ("b", "a")], [1]) for i in range(30)]
    bias = measure_position_bias(rows, "pairwise")
    assert bias.first_win_rate == 1.0 and bias.first_wins == 30 and bias.pairs == 30
    assert bias.first_win_interval.low > 0.5 and bias.biased is True
    assert bias.verdicts == {"a": 15, "b": 15, "tie": 0}
    assert bias.both_orders == 0 and bias.flip_rate is None
    assert "biased towards a slot" in describe_bias(bias)


def test_a_fair_judge_is_not_flagged():
    # the better arm (b) wins wherever it sits
    rows = [grade([("a", "b")], [2]) if i % 2 else grade([("b", "a")], [1]) for i in range(30)]
    bias = measure_position_bias(rows)
    assert bias.first_win_rate == 0.5 and bias.biased is False
    assert bias.verdicts["b"] == 30


def test_both_orders_give_the_flip_rate():
    flipped = grade([("a", "b"), ("b", "a")], [1, 1])  # slot 1 wins twice: a, then b
    steady = grade([("a", "b"), ("b", "a")], [2, 1])  # b both times
    half = grade([("a", "b"), ("b", "a")], [None, 1])  # tie, then b: inconsistent but no swap
    bias = measure_position_bias([flipped, steady, half, grade([("a", "b")], [1], status="error")])
    assert (bias.pairs, bias.judgements, bias.both_orders) == (3, 6, 3)
    assert (bias.flips, bias.inconsistent) == (1, 2)
    assert bias.flip_rate == pytest.approx(1 / 3) and bias.inconsistency_rate == pytest.approx(2 / 3)
    assert bias.verdicts == {"a": 0, "b": 1, "tie": 2}
    assert bias.ties == 1 and bias.first_wins == 4 and bias.second_wins == 1


def test_no_pairs_no_claims():
    bias = measure_position_bias([])
    assert bias.first_win_rate is None and bias.biased is None and bias.first_win_interval is None
    assert "no decisive judgement" in describe_bias(bias)


@given(st.lists(st.sampled_from([1, 2, None]), max_size=60))
def test_counts_add_up_and_the_interval_holds_the_rate(winners):
    rows = [grade([("a", "b")], [w]) for w in winners]
    bias = measure_position_bias(rows)
    assert bias.first_wins + bias.second_wins + bias.ties == bias.judgements == len(winners)
    if bias.decisive:
        assert bias.first_win_interval.low <= bias.first_win_rate <= bias.first_win_interval.high
    assert sum(bias.verdicts.values()) == bias.pairs

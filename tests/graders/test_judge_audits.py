"""The judge audits catch the biases scripted into a judge over real HTTP (issue 42, item 5)."""

from __future__ import annotations

import pytest
from statsmodels.stats.proportion import proportion_confint

from abbench import report as report_section
from abbench.graders import Judgement, PairJudgement, describe_verbosity, measure_verbosity_bias
from abbench.metrics import judge_report, position_bias, verbosity_bias
from tests.judged_pairs import judged_experiment, prefers_first, prefers_longer


def test_a_judge_that_always_prefers_the_longer_answer_is_flagged(store, cli):
    exp = judged_experiment(store, prefers_longer, name="longer")
    (verbose,) = verbosity_bias(exp.id, store=store)
    assert verbose.pairs == 30 and verbose.judgements == 60 and verbose.unmeasured == 0
    assert (verbose.longer_wins, verbose.shorter_wins, verbose.longer_win_rate) == (60, 0, 1.0)
    assert verbose.biased is True and verbose.prefers == "longer"
    # the longer answer won in whichever slot it sat
    assert verbose.longer_first_wins == verbose.longer_first_decisive == 30
    assert verbose.longer_second_wins == verbose.longer_second_decisive == 30
    low, high = proportion_confint(60, 60, alpha=0.05, method="wilson")
    assert (verbose.longer_win_interval.low, verbose.longer_win_interval.high) == (
        pytest.approx(low),
        pytest.approx(high),
    )
    # its position audit is clean: the longer answer sat in each slot equally
    (slot,) = position_bias(exp.id, store=store)
    assert slot.first_win_rate == 0.5 and slot.biased is False
    report = judge_report(exp.id, store=store)
    assert report.verbosity_bias == (verbose,)
    assert report.as_dict()["verbosity_bias"][0]["prefers"] == "longer"
    assert "prefers the longer answer" in describe_verbosity(verbose)
    # flagged in the report as position bias is, and in `abbench judge-report`
    html = "".join(p for p in report_section.pairwise_section([], [slot], [verbose]) if isinstance(p, str))
    assert "Verbosity bias" in html and "prefers the longer answer" in html and 'class="warn"' in html
    out = cli("judge-report", "longer").output
    assert "verbosity bias" in out and "longer-answer win rate 1.00 [" in out and "prefers the longer" in out


def test_a_judge_that_follows_position_only_is_flagged_for_position_not_length(store):
    exp = judged_experiment(store, prefers_first, name="first")
    (slot,) = position_bias(exp.id, store=store)
    assert slot.first_win_rate == 1.0 and slot.biased is True and slot.flip_rate == 1.0
    (verbose,) = verbosity_bias(exp.id, store=store)
    assert verbose.longer_win_rate == 0.5 and verbose.biased is False and verbose.prefers is None
    # by slot, the pattern of a position judge: the longer answer wins in slot 1, loses in slot 2
    assert (verbose.longer_first_wins, verbose.longer_first_decisive) == (30, 30)
    assert (verbose.longer_second_wins, verbose.longer_second_decisive) == (0, 30)
    low, high = proportion_confint(30, 60, alpha=0.05, method="wilson")
    assert verbose.longer_win_interval.low == pytest.approx(low)
    assert verbose.longer_win_interval.high == pytest.approx(high)


def grade(la, lb, slots_winners):
    judgements = tuple(Judgement(tuple(s), w, None if w is None else s[w - 1]) for s, w in slots_winners)
    return PairJudgement(judgements, lengths=(la, lb))


def test_pairs_of_similar_length_and_without_lengths_are_left_out():
    rows = [
        grade(100, 90, [(("a", "b"), 1)]),  # 10% apart
        grade(100, 50, [(("a", "b"), 2)]),  # b shorter, won
        grade(50, 100, [(("b", "a"), None)]),  # a tie
        PairJudgement((Judgement(("a", "b"), 1, "a"),)),  # no lengths recorded
    ]
    v = measure_verbosity_bias(rows)
    assert (v.pairs, v.similar, v.unmeasured, v.judgements) == (2, 1, 1, 2)
    assert (v.longer_wins, v.shorter_wins, v.ties) == (0, 1, 1)
    assert measure_verbosity_bias(rows, min_difference=0.05).pairs == 3
    with pytest.raises(ValueError, match="relative difference"):
        measure_verbosity_bias(rows, min_difference=1.5)


def test_lengths_are_read_from_a_grades_details():
    g = PairJudgement.from_details({"judgements": [], "lengths": {"a": 3, "b": 40}})
    assert g.lengths == (3, 40)
    assert PairJudgement.from_details({"lengths": {"a": "x"}}).lengths is None

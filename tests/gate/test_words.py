"""The gate's words are StrEnums that read, print and serialise as the plain words they replace."""

from __future__ import annotations

import json

from abbench.gate import OUTCOMES, SEVERITIES, STATUSES, Conclusion, GateOutcome, RuleStatus, Severity


def test_the_tuples_keep_their_words_in_order() -> None:
    assert STATUSES == ("pass", "fail", "missing", "inconclusive")
    assert OUTCOMES == ("pass", "pass with warnings", "block", "incomplete", "inconclusive")
    assert SEVERITIES == ("block", "warn")


def test_a_member_is_its_word_in_comparisons_text_and_json() -> None:
    assert GateOutcome.PASS_WITH_WARNINGS == "pass with warnings"
    assert f"{RuleStatus.MISSING}|{Conclusion.NOT_ASSESSED:<14}|" == "missing|not assessed  |"
    assert json.dumps({"outcome": GateOutcome.BLOCK, "severity": Severity.WARN}) == (
        '{"outcome": "block", "severity": "warn"}'
    )
    assert GateOutcome.INCOMPLETE.upper() == "INCOMPLETE"

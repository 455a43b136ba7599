"""The gate's words: a rule's status and severity, a dimension's conclusion and the gate's outcome.

Each is a `StrEnum`, so a member equals its word (``RuleStatus.PASS == "pass"``), formats as it in
f-strings and ``json.dumps``, and compares with the plain strings a gate file or ``as_dict()`` holds.
"""

from __future__ import annotations

from enum import StrEnum


class RuleStatus(StrEnum):
    """A rule's status: its condition holds, does not hold, its metric has no value, or the evidence does
    not settle it (``non_inferior`` or ``capability_pass`` with an interval straddling the margin)."""

    PASS = "pass"
    FAIL = "fail"
    MISSING = "missing"
    INCONCLUSIVE = "inconclusive"


class GateOutcome(StrEnum):
    """A gate's outcome (see `abbench.gate.OUTCOMES`); only `PASS` and `PASS_WITH_WARNINGS` are a pass."""

    PASS = "pass"
    PASS_WITH_WARNINGS = "pass with warnings"
    BLOCK = "block"
    INCOMPLETE = "incomplete"
    INCONCLUSIVE = "inconclusive"


class Severity(StrEnum):
    """A rule's severity: `BLOCK` fails the gate; `WARN` is reported and never blocks."""

    BLOCK = "block"
    WARN = "warn"


class Conclusion(StrEnum):
    """What the decision concludes: a dimension is `PASS`, `WARN` (it does not block, but a reader should
    look: the candidate's mean cost per case is shown to rise more than `abbench.gate.COST_WARN_SHARE` while
    it pays for itself by being better), `BLOCK`, `INCONCLUSIVE` (the evidence does not settle it: capability
    with an interval straddling the margin) or `NOT_ASSESSED` (the data could not speak to it); the overall
    decision is `PASS`, `BLOCK` or `INCONCLUSIVE` (a dimension inconclusive and none blocking, or no dimension
    assessed) — a warning dimension never blocks, so it passes overall."""

    PASS = "pass"
    WARN = "warn"
    BLOCK = "block"
    NOT_ASSESSED = "not assessed"
    INCONCLUSIVE = "inconclusive"

"""Scripted banking77 runs for comparison tests: many labels, a case subset, reasons and evidence that
change between arms (and between rounds), execution and grading failures, unfinished runs, and an arm
whose rounds differ in number from the others (its text is compared case by case)."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from abbench.graders import normalise_label
from abbench.runner import record_runs
from abbench.store import Store
from tests.banking import one_arm_on, record_on_subset

SUBSET = ["card_arrival", "exchange_rate", "age_limit", "terminate_account", "top_up_failed", "pin_blocked"]
OTHER = ["card_linking", "lost_or_stolen_card"]
REASONS = [
    "routing rule 3",
    "  routing   rule 3 ",
    "the amount is large",
    "asked about a card",
    None,
    "",
    "   ",
]
REFS = [["SKILL.md#routing"], ["SKILL.md#cards", "SKILL.md#routing"], [], None, ["SKILL.md#limits"]]


def _h(*parts: object) -> int:
    return int(hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest(), 16) % 1000


def outcome(case: Any, arm: str, rnd: int) -> dict[str, Any] | None:
    """One recorded outcome (None: not recorded, the run stays unfinished), scripted by a hash."""
    h = _h(case.case_id, arm, rnd)
    same = _h(case.case_id, rnd)  # shared by the arms: most answers, reasons and evidence agree
    if h < 30 or (arm == "c" and rnd == 3 and h < 400):
        return None
    base = {"case_id": case.case_id, "arm": arm, "round": rnd, "latency_ms": 100.0 + h / 7}
    if h < 60:
        return {**base, "error": "scripted failure", "failure_type": "timeout" if h % 2 else "agent_error"}
    key = same if h % 4 else h
    if key < 90:
        prediction = "I am not sure"
    elif key < (250 if arm == "a" else 150):
        prediction = (SUBSET + OTHER)[key % 8]
    else:
        prediction = case.expected if key % 5 else f"  {str(case.expected).upper()} "
    out: dict[str, Any] = {**base, "prediction": prediction, "confidence": (h % 100) / 100}
    reason = REASONS[(same if h % 3 else h) % len(REASONS)]
    if reason is not None:
        out["reason"] = reason
    refs = REFS[(same if h % 5 else h) % len(REFS)]
    if refs is not None:
        out["evidence_refs"] = refs
    if h % 3:
        out["cost"] = 0.001 * (h % 17)
        out["usage"] = {"input_tokens": 100 + h, "output_tokens": h % 40}
    if h % 9 != 0:  # no verdict from the external tool: grading fails
        right = normalise_label(prediction, {}) == normalise_label(case.expected, {})
        out["grades"] = {"ext": {"passed": right, "score": (h % 7) / 6 if right else 0.0}}
    return out


def build(store: Store, realdata: Path) -> dict[str, Any]:
    """Import banking77 and record experiment ``cmp`` (arms a, b, c; 3 rounds) and ``cmp2`` (arm d, 2 rounds)."""
    graders = ["label_match", {"type": "recorded", "name": "ext"}]
    info, cases, exp = record_on_subset(store, realdata, "cmp", SUBSET, outcome, graders)
    other = one_arm_on(store, info, "cmp2", cases[:300], "d", graders)
    record_runs(store, other, [o for c in cases[:300] for r in (1, 2) if (o := outcome(c, "d", r))])
    return {"exp": exp, "other": other}

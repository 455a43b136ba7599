"""What changed in the answers' words between two arms: same answer with a new reason, evidence that came or went,
cases that became or stopped being "no evidence"."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from abbench.graders import normalise_label
from abbench.metrics import Result
from abbench.store import Store


@dataclass(frozen=True)
class ReasonChange(Result):
    """A case both arms answer the same way, for a reason B never gave in A.

    Attributes:
        case_id: The case.
        prediction: The answer both arms give most often.
        reason_a: A's reason for it (from its earliest round giving that answer).
        reason_b: B's reason for it.
    """

    case_id: str
    prediction: str | None
    reason_a: str | None
    reason_b: str | None


@dataclass(frozen=True)
class EvidenceChange(Result):
    """Skill references one arm cited for a case and the other never did (over all rounds).

    Attributes:
        case_id: The case.
        appeared: Cited by B, never by A.
        disappeared: Cited by A, never by B.
    """

    case_id: str
    appeared: tuple[str, ...]
    disappeared: tuple[str, ...]


@dataclass(frozen=True)
class TextChanges(Result):
    """Reason and evidence changes between two arms.

    A case is *no evidence* in an arm with a skill when one of its answered runs cites no skill reference (as
    the review's ``no_evidence`` kind and the ``no_evidence_rate`` metric count it); an arm without a skill has
    nothing to cite, so the status is compared only when both arms have one (`no_evidence_reason` says why not).

    Attributes:
        reason_changed: Cases with the same (most common) answer in both arms and no reason in common.
        evidence: Cases whose cited references differ, with what appeared and disappeared.
        checked: Cases compared.
        became_no_evidence: Cases that cite a reference in every answered run of A and not in some run of B.
        stopped_no_evidence: Cases no evidence in A that cite a reference in every answered run of B.
        no_evidence_reason: Why the no-evidence status was not compared (None when it was).
    """

    reason_changed: tuple[ReasonChange, ...]
    evidence: tuple[EvidenceChange, ...]
    checked: int
    became_no_evidence: tuple[str, ...] = ()
    stopped_no_evidence: tuple[str, ...] = ()
    no_evidence_reason: str | None = None

    @property
    def evidence_appeared(self) -> tuple[EvidenceChange, ...]:
        """Cases where B cites a reference A never cited."""
        return tuple(e for e in self.evidence if e.appeared)

    @property
    def evidence_disappeared(self) -> tuple[EvidenceChange, ...]:
        """Cases where A cites a reference B never cites."""
        return tuple(e for e in self.evidence if e.disappeared)


def _normal_reason(text: str | None) -> str:
    return " ".join(str(text).split()) if text else ""


def _refs(text: str | None) -> list[str]:
    if not text:
        return []
    try:
        values = json.loads(text)
    except ValueError:
        return [text]
    return [str(v).strip() for v in values or () if str(v).strip()]


def candidate_cases(
    store: Store, exp_a: int, arm_a: int, exp_b: int, arm_b: int, same_rounds: bool
) -> list[int] | None:
    """Case positions whose answers' words may differ between the arms; None means "check every case".

    The join pairs each run of A with B's run of the same case and round and keeps the pairs whose
    prediction, reason or evidence differ. When every round pair is identical, so are the sets over
    rounds, so the other cases need no look; that is only sound when both arms have the same rounds.
    """
    if not same_rounds:
        return None
    return store.analysis.differing_answer_cases(exp_a, arm_a, exp_b, arm_b)


def _answers(
    store: Store, exp_id: int, arm_id: int, cases: list[int] | None
) -> dict[int, list[tuple[Any, ...]]]:
    out: dict[int, list[tuple[Any, ...]]] = {}
    for r in store.analysis.answered_runs(exp_id, arm_id, cases):
        out.setdefault(r[0], []).append(r)
    return out


class _Normaliser:
    """Normalises each distinct prediction, reason and evidence list once (answers repeat a lot)."""

    def __init__(self, label_map: dict[str, str] | None):
        self.label_map = label_map
        self.labels: dict[Any, Any] = {}
        self.reasons: dict[Any, str] = {}
        self.refs: dict[Any, list[str]] = {}

    def label(self, value: Any) -> Any:
        if value not in self.labels:
            self.labels[value] = normalise_label(value, self.label_map)
        return self.labels[value]

    def reason(self, value: Any) -> str:
        if value not in self.reasons:
            self.reasons[value] = _normal_reason(value)
        return self.reasons[value]

    def evidence(self, value: Any) -> list[str]:
        if value not in self.refs:
            self.refs[value] = _refs(value)
        return self.refs[value]


def _mode(runs: list[tuple[Any, ...]], norm: _Normaliser) -> tuple[Any, Any]:
    """The most common normalised answer (ties: the earliest round's) and the raw answer it came from."""
    normal = [norm.label(r[2]) for r in runs]
    if len(set(normal)) == 1:
        return normal[0], runs[0][2]
    counts = Counter(normal)
    best = max(counts.values())
    for value, run in zip(normal, runs, strict=True):
        if counts[value] == best:
            return value, run[2]
    return None, None


def text_changes(
    store: Store,
    exp_a: int,
    arm_a: int,
    exp_b: int,
    arm_b: int,
    cases: dict[int, str],
    label_map: dict[str, str] | None,
    same_rounds: bool,
    skills: tuple[bool, bool] = (True, True),
) -> TextChanges:
    """Reason and evidence changes from arm A to arm B over the given cases.

    Args:
        store: The store.
        exp_a: A's experiment id.
        arm_a: A's arm id.
        exp_b: B's experiment id.
        arm_b: B's arm id.
        cases: The cases to compare: dataset position -> case id.
        label_map: The dataset's label map (answers compare as `label_match` compares them).
        same_rounds: Whether both arms ran the same rounds (then only differing cases are read).
        skills: Whether A and B have a skill (the no-evidence status is compared only when both do).
    """
    missing = [name for name, has in zip("AB", skills, strict=True) if not has]
    why_not = (
        f"{' and '.join(missing)} {'has' if len(missing) == 1 else 'have'} no skill to cite"
        if missing
        else None
    )
    if not (store.analysis.arm_gives_text(exp_a, arm_a) or store.analysis.arm_gives_text(exp_b, arm_b)):
        # No reason anywhere (every normalised reason is "", which both arms share) and no reference
        # cited: nothing can have changed, whatever the answers did. Label-only agents are read no further.
        return TextChanges((), (), len(cases), no_evidence_reason=why_not)
    candidates = candidate_cases(store, exp_a, arm_a, exp_b, arm_b, same_rounds)
    if candidates is not None:
        candidates = sorted(c for c in candidates if c in cases)
    runs_a = _answers(store, exp_a, arm_a, candidates)
    runs_b = _answers(store, exp_b, arm_b, candidates)
    reasons, evidence, became, stopped = [], [], [], []
    norm = _Normaliser(label_map)
    for idx in candidates if candidates is not None else sorted(cases):
        if idx not in cases:
            continue
        a, b = runs_a.get(idx), runs_b.get(idx)
        if not a or not b:
            continue
        mode_a, raw_a = _mode(a, norm)
        mode_b, _ = _mode(b, norm)
        if mode_a is not None and mode_a == mode_b:
            why_a = [r[3] for r in a if norm.label(r[2]) == mode_a]
            why_b = [r[3] for r in b if norm.label(r[2]) == mode_b]
            if not ({norm.reason(x) for x in why_a} & {norm.reason(x) for x in why_b}):
                reasons.append(ReasonChange(cases[idx], raw_a, why_a[0], why_b[0]))
        # In round order, not a set's: the lists of what appeared and disappeared read the same every run.
        raw_a_refs, raw_b_refs = dict.fromkeys(r[4] for r in a), dict.fromkeys(r[4] for r in b)
        if raw_a_refs.keys() == raw_b_refs.keys():
            continue  # the same evidence lists, word for word: the same no-evidence status too
        if why_not is None:
            bare_a = any(not norm.evidence(text) for text in raw_a_refs)
            bare_b = any(not norm.evidence(text) for text in raw_b_refs)
            if bare_b and not bare_a:
                became.append(cases[idx])
            elif bare_a and not bare_b:
                stopped.append(cases[idx])
        cited_a = dict.fromkeys(ref for text in raw_a_refs for ref in norm.evidence(text))
        cited_b = dict.fromkeys(ref for text in raw_b_refs for ref in norm.evidence(text))
        appeared = tuple(ref for ref in cited_b if ref not in cited_a)
        gone = tuple(ref for ref in cited_a if ref not in cited_b)
        if appeared or gone:
            evidence.append(EvidenceChange(cases[idx], appeared, gone))
    return TextChanges(tuple(reasons), tuple(evidence), len(cases), tuple(became), tuple(stopped), why_not)

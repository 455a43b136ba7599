"""Cases worth a person's look (disagreements) and everything a case detail view shows about one case."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from abbench import _actions as do
from abbench.errors import AbbenchError, NotFoundError, UsageError
from abbench.graders import normalise_label
from abbench.metrics import Result, dataset_labels
from abbench.review._threshold import low_confidence_threshold
from abbench.review._turns import earlier_turns, history_excerpt
from abbench.store import (
    FAILED,
    OUTCOMES,
    PASSED,
    UNFINISHED,
    Arm,
    CachedCalls,
    Experiment,
    Grade,
    Review,
    Store,
    StoreLike,
    loads,
    open_store,
)
from abbench.transcript import read_transcript, trajectory_of
from abbench.types import RunOutcome, RunState, run_outcome

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

log = logging.getLogger(__name__)

DISAGREEMENT_KINDS = ("gold", "low_confidence", "no_evidence", "flaky", "arms")
"""Why a case is listed for review:

- ``gold``: a run's answer was graded wrong (the prediction disagrees with the gold or the judge);
- ``low_confidence``: an answer's confidence is below the threshold;
- ``no_evidence``: an arm with a skill answered without citing any of it;
- ``flaky``: an arm passed the case in some rounds and failed it in others;
- ``arms``: the arms give different answers (most common per arm), or one passes where another fails.
"""


_V = TypeVar("_V", bound="DataclassInstance")


def _view_of(view: type[_V], record: Any, **given: Any) -> _V:
    """A `view` of a stored `record`: each of its fields as `given`, else the record's field of that name."""
    return view(
        **{f.name: given[f.name] if f.name in given else getattr(record, f.name) for f in fields(view)}
    )


@dataclass(frozen=True)
class CaseView(Result):
    """A case as the dataset holds it: the unified fields and the raw row they came from.

    Attributes:
        case_id: The case id.
        input: The query the agent answered.
        expected: The gold label or reference answer.
        domain: The domain.
        history: Earlier conversation turns.
        context: Extra context.
        request_id: The production request it came from.
        metadata: Free-form metadata.
        source_row: The raw row as read from the file.
        source_line: Where the row sits in its file.
    """

    case_id: str
    input: str
    expected: str | None
    domain: str | None
    history: Any
    context: Any
    request_id: str | None
    metadata: Any
    source_row: Any
    source_line: str | None
    turns = property(earlier_turns)
    history_excerpt = history_excerpt


@dataclass(frozen=True)
class Evidence(Result):
    """A skill reference an answer cited, resolved to the snapshot's text.

    Attributes:
        ref: The reference as cited (``path#heading``).
        found: Whether the arm's snapshot has it.
        resolved: The reference it resolved to (forgiving matching may correct case or form).
        heading: The section's heading.
        text: The section's text.
    """

    ref: str
    found: bool
    resolved: str | None = None
    heading: str | None = None
    text: str | None = None


@dataclass(frozen=True)
class ToolCall(Result):
    """One tool call of a session, from its transcript.

    Attributes:
        name: The tool.
        arguments: Its arguments.
        ok: Whether it succeeded (None when the transcript does not say).
        result_chars: Size of its result.
        turn: The model turn that made it.
    """

    name: str
    arguments: Any
    ok: bool | None = None
    result_chars: int | None = None
    turn: int | None = None


@dataclass(frozen=True)
class GradeView(Result):
    """One grader's latest grade of a run, as a case detail view shows it (`abbench.store.Grade` in
    part: what a person reads, without the raw reply, the judge's spend or the bookkeeping).

    Attributes:
        kind: ``rule``, ``judge`` or ``pairwise``.
        status: ``ok``, or ``error`` when the grader could not reach a verdict.
        passed: The verdict; None when the grader gives a score only (or failed).
        score: The score, when the grader gives one.
        verdict: A pairwise verdict: ``a``, ``b`` or ``tie``.
        comment: The grader's explanation.
        error: Why grading failed (status ``error``).
        dimensions: A judge's score per dimension.
    """

    kind: str
    status: str
    passed: bool | None
    score: float | None
    verdict: str | None
    comment: str | None
    error: str | None
    dimensions: dict[str, Any] | None

    @classmethod
    def of(cls, grade: Grade) -> GradeView:
        """The view of a stored grade."""
        return _view_of(cls, grade)


@dataclass(frozen=True)
class AttemptView(Result, CachedCalls):
    """One execution attempt of a run, failed ones included, with what it spent.

    Attributes:
        attempt: Its number (1 for the first execution; re-runs go on counting).
        outcome: An `abbench.types.AttemptOutcome`: ``executed``, ``failed`` or ``cancelled``.
        failure_type: Why it failed (``max_turns``, ``bad_output``, ``timeout``, ...); None otherwise.
        error: The failure, in words.
        model: The model that answered its last call.
        cost: What it spent (None: unknown); calls answered from the response cache spent nothing.
        tokens: Input plus output tokens (None: not reported).
        latency_ms: Its wall time.
        model_calls: Model calls it made, when the adapter counts them.
        tool_calls: The tool calls of its transcript.
        files_read: Skill files it opened.
        sections_read: Skill sections it opened.
        transcript_path: Its transcript file, when it wrote one.
        cached_calls: Of `model_calls`, those the response cache answered (None: none).
        cost_saved: What those would have cost.
    """

    attempt: int
    outcome: str
    failure_type: str | None
    error: str | None
    model: str | None
    cost: float | None
    tokens: int | None
    latency_ms: float | None
    model_calls: int | None
    tool_calls: tuple[ToolCall, ...]
    files_read: tuple[str, ...]
    sections_read: tuple[str, ...]
    transcript_path: str | None
    cached_calls: int | None = None
    cost_saved: float | None = None

    @property
    def summary(self) -> str:
        """One line for people: how the attempt ended and what it spent."""
        how = self.outcome if self.failure_type is None else f"{self.outcome} ({self.failure_type})"
        read = self.sections_read or self.files_read
        spent = [
            f"{self.model_calls} model calls" if self.model_calls else None,
            (
                f"{self.cached_calls} from the cache (saved {self.cost_saved or 0:.4g})"
                if self.cached_calls
                else None
            ),
            f"{len(self.tool_calls)} tool calls" if self.tool_calls else None,
            f"tokens {self.tokens:,}" if self.tokens is not None else "tokens not reported",
            f"cost {self.cost:.4g}" if self.cost is not None else "cost not reported",
            f"{self.latency_ms:,.0f} ms" if self.latency_ms is not None else None,
            f"read {', '.join(read)}" if read else None,
        ]
        return f"attempt {self.attempt} {how}: " + ", ".join(x for x in spent if x)


@dataclass(frozen=True)
class RunView(Result):
    """One run of a case as a review view shows it.

    Attributes:
        run_id: The run.
        arm: Its arm.
        round: Its round (0-based).
        state: Its state.
        outcome: One of `abbench.store.OUTCOMES`.
        failure_type: For execution failures, the kind.
        error: The error message, if any.
        prediction: The answer.
        reason: The stated reason.
        confidence: The stated confidence.
        passed: The verdict (None when not graded).
        score: The graded score.
        evidence: The cited references, resolved to the skill's text.
        files_read: Skill files the agent opened.
        sections_read: Skill sections the agent opened.
        tool_calls: How many tool calls the session made.
        transcript_path: Where the full transcript is (None when none was written).
        cost: Agent cost.
        latency_ms: Wall time.
        tokens: Input plus output tokens.
        grades: The latest grade of each grader (name -> `GradeView`), in detail views only.
        calls: The tool calls read from the transcript, in detail views only.
        attempts: Every execution attempt with what it spent — failed and replaced ones too, whose
            transcript, tool calls, tokens and cost the run's own fields do not hold — in detail views
            only (empty for runs executed before attempts were recorded).
    """

    run_id: int
    arm: str
    round: int
    state: str
    outcome: str
    failure_type: str | None
    error: str | None
    prediction: str | None
    reason: str | None
    confidence: float | None
    passed: bool | None
    score: float | None
    evidence: tuple[Evidence, ...]
    files_read: tuple[str, ...]
    sections_read: tuple[str, ...]
    tool_calls: int
    transcript_path: str | None
    cost: float | None
    latency_ms: float | None
    tokens: int | None
    grades: dict[str, GradeView] | None = None
    calls: tuple[ToolCall, ...] | None = None
    attempts: tuple[AttemptView, ...] | None = None

    @property
    def executed(self) -> bool:
        """Whether its execution finished with an answer (a run recorded without a latency too)."""
        not_yet = (RunState.PENDING, RunState.RUNNING, RunState.CANCELLED)
        return self.state not in not_yet and self.outcome != RunOutcome.EXECUTION_FAILED

    @property
    def spent(self) -> float | None:
        """The known cost of every attempt (None when no attempt reported one, or attempts are not loaded)."""
        costs = [a.cost for a in self.attempts or () if a.cost is not None]
        return sum(costs) if costs else None


@dataclass(frozen=True)
class Disagreement(Result):
    """A case listed for review, with what a detail view needs.

    Attributes:
        case: The case.
        kinds: Why it is listed (see `DISAGREEMENT_KINDS`).
        arms: The arms concerned.
        runs: Every run of the case (every arm and round), with evidence resolved.
        reviews: The latest review per arm (and of the case as a whole), if any.
    """

    case: CaseView
    kinds: tuple[str, ...]
    arms: tuple[str, ...]
    runs: tuple[RunView, ...]
    reviews: tuple[Review, ...]

    @property
    def case_id(self) -> str:
        """The case's id."""
        return self.case.case_id


@dataclass(frozen=True)
class CaseDetail(Result):
    """Everything about one case of an experiment: the case, every run in full, and its review history.

    Attributes:
        experiment: The experiment's name.
        case: The case.
        kinds: Why it would be listed for review (empty when nothing is amiss).
        runs: Every run, with grades and tool calls.
        reviews: The latest review per arm.
        history: Every review of the case, oldest first.
    """

    experiment: str
    case: CaseView
    kinds: tuple[str, ...]
    runs: tuple[RunView, ...]
    reviews: tuple[Review, ...]
    history: tuple[Review, ...]


def _kinds_arg(kind: str | Sequence[str] | None) -> tuple[str, ...]:
    if kind is None or kind == "all":
        return DISAGREEMENT_KINDS
    kinds = (kind,) if isinstance(kind, str) else tuple(kind)
    unknown = [k for k in kinds if k not in DISAGREEMENT_KINDS]
    if unknown:
        raise UsageError(
            f"unknown disagreement kind {', '.join(map(repr, unknown))}; choose from {', '.join(DISAGREEMENT_KINDS)} or all"
        )
    return kinds


def _case_kinds(
    store: Store,
    exp: Experiment,
    threshold: float,
    arms: Sequence[str] | None,
    label_map: dict[str, str],
    table: Any = None,
) -> dict[int, tuple[dict[str, set[str]], str]]:
    """Case position -> ({kind: arms concerned}, case id) for every case with something to review.

    Every kind is a cases × arms table built with numpy from the run columns (`table`: the store's
    `load_run_flags` at `threshold`, loaded when not given), so a million runs cost about what loading them costs; Python only walks the cases
    that are flagged.
    """
    import pandas as pd

    table = store.runs.load_run_flags(exp.id, arms=arms, threshold=threshold) if table is None else table
    if not len(table):
        return {}
    n_arms = len(table.arms)
    case_values, case_pos = np.unique(table.case_idx, return_inverse=True)
    n_cases = case_values.size
    key = case_pos * n_arms + table.arm_index
    size = n_cases * n_arms

    def table_of(mask: np.ndarray) -> np.ndarray:
        return (np.bincount(key[mask], minlength=size) > 0).reshape(n_cases, n_arms)

    skilled = {a.name for a in exp.arms if a.snapshot}
    has_skill = np.isin(table.arm_index, [i for i, a in enumerate(table.arms) if a in skilled])
    executed = table.executed  # from its state: a run recorded without a latency is executed too
    graded = (table.outcome == PASSED) | (table.outcome == FAILED)
    flags = {
        "gold": table_of(_against_gold(table, label_map)),
        "low_confidence": table_of(executed & (table.confidence < threshold)),
        "no_evidence": table_of(executed & has_skill & ~table.evidence_cited),
    }
    k = np.bincount(key[graded], weights=(table.outcome == PASSED)[graded], minlength=size).reshape(
        n_cases, n_arms
    )
    n = np.bincount(key[graded], minlength=size).reshape(n_cases, n_arms)
    flags["flaky"] = (n >= 2) & (k > 0) & (k < n)
    present = n > 0
    if n_arms >= 2:
        majority = 2 * k > n
        split = (majority & present).any(axis=1) & (~majority & present).any(axis=1)
        # The most common answer per (case, arm), ties going to the earliest round, as label_match compares.
        raw, values = pd.factorize(np.asarray(table.prediction[executed], dtype=object), use_na_sentinel=True)
        normal = [normalise_label(v, label_map) for v in values]
        dense = {v: i for i, v in enumerate(dict.fromkeys(normal))}
        codes = np.array([dense[v] for v in normal] + [len(dense)], dtype=np.int64)[raw]
        mode: np.ndarray = np.full(size, -1, dtype=np.int64)
        if codes.size:
            width = len(dense) + 1
            pairs, first, counts = np.unique(
                key[executed] * width + codes, return_index=True, return_counts=True
            )
            owner = pairs // width
            order = np.lexsort((first, -counts, owner))
            best = order[np.r_[True, owner[order][1:] != owner[order][:-1]]]
            mode[owner[best]] = pairs[best] % width
        mode = mode.reshape(n_cases, n_arms)
        answered = mode >= 0
        highest = np.where(answered, mode, -1).max(axis=1)
        lowest = np.where(answered, mode, np.iinfo(np.int64).max).min(axis=1)
        differ = answered.any(axis=1) & (highest != lowest)
        involved = present | answered
        flags["arms"] = (split | differ)[:, None] & involved
    return _flagged(table, case_values, case_pos, flags)


def _flagged(
    table: Any, case_values: np.ndarray, case_pos: np.ndarray, flags: dict[str, np.ndarray]
) -> dict[int, tuple[dict[str, set[str]], str]]:
    """The cases with a flag of any kind, from the cases × arms tables of `_case_kinds`."""
    n_cases = case_values.size
    ids = np.empty(n_cases, dtype=object)
    ids[case_pos[::-1]] = table.case_id[::-1]
    any_flag = np.zeros(n_cases, dtype=bool)
    for grid in flags.values():
        any_flag |= grid.any(axis=1)
    rows = np.flatnonzero(any_flag)
    if not rows.size:
        return {}
    # Cases share a few patterns of (kind, arm) flags: each distinct pattern is spelled out once, and
    # each case gets its own copy of it (tens of thousands of cases cost a copy each, not a walk).
    kinds_ = list(flags)
    n_arms = len(table.arms)
    stacked = np.concatenate([flags[kind][rows] for kind in kinds_], axis=1)
    patterns, which = np.unique(stacked, axis=0, return_inverse=True)
    names = table.arms
    spelled = []
    for pattern in patterns.tolist():
        spelled.append(
            [
                (kind, [names[a] for a in range(n_arms) if pattern[k * n_arms + a]])
                for k, kind in enumerate(kinds_)
                if any(pattern[k * n_arms : (k + 1) * n_arms])
            ]
        )
    out = {}
    for position, case_id, p in zip(
        case_values[rows].tolist(), ids[rows].tolist(), which.reshape(-1).tolist(), strict=True
    ):
        out[int(position)] = ({kind: set(arms) for kind, arms in spelled[p]}, case_id)
    return out


def _against_gold(table: Any, label_map: dict[str, str]) -> np.ndarray:
    """Runs graded wrong whose answer is not the gold label.

    A run can fail with the right answer when another grader fails it (a judge, a trajectory or
    citation check); listing it as "gold ≠ answer" would show a reviewer two equal labels.
    """
    failed: np.ndarray = table.outcome == FAILED
    idx = np.flatnonzero(failed)
    if not idx.size:
        return failed
    pred = np.asarray(table.prediction, dtype=object)[idx]
    gold = np.asarray(table.expected, dtype=object)[idx]
    # each distinct value is normalised once, so a million failed runs cost a factorize, not a loop
    codes, values = _factorize(np.concatenate([pred, gold]))
    keys = [_gold_key(v, label_map) for v in values]
    dense = {k: i for i, k in enumerate(dict.fromkeys(k for k in keys if k is not None))}
    # a distinct value -> its label's number (-1: none); the last slot is for missing values (code -1)
    number = np.array([dense[k] if k is not None else -1 for k in keys] + [-1], dtype=np.int64)
    p_num, g_num = number[codes[: idx.size]], number[codes[idx.size :]]
    same = (p_num >= 0) & (p_num == g_num)
    out = failed.copy()
    out[idx[same]] = False
    return out


def _factorize(values: np.ndarray) -> tuple[np.ndarray, Any]:
    """Codes (-1 for missing) and the distinct values, as `pandas.factorize` gives them."""
    import pandas as pd

    return pd.factorize(values, use_na_sentinel=True)


def _gold_key(value: Any, label_map: dict[str, str]) -> str | None:
    """A label as label_match compares it; None for a gold that is not a label (an object)."""
    if value is None or isinstance(value, (dict, list)):
        return None
    return normalise_label(value, label_map)


def disagreements(
    experiment: int | str | Experiment,
    kind: str | Sequence[str] | None = "all",
    *,
    store: StoreLike = None,
    arms: Sequence[str] | None = None,
    threshold: float | None = None,
    limit: int | None = None,
    exclude: Collection[str] = (),
) -> list[Disagreement]:
    """Cases worth a person's look, in dataset order, with everything a case view needs.

    Args:
        experiment: The experiment (id, ``#id``, name, or Experiment).
        kind: One of `DISAGREEMENT_KINDS`, several, or ``"all"``.
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).
        arms: Only runs of these arms.
        threshold: Confidence below which an answer is low-confidence (default: halfway between
            chance and certainty for the task's labels, `low_confidence_threshold`).
        limit: At most this many cases.
        exclude: Case ids to leave out (a report lists its regressed cases apart): only the `limit`
            cases shown are loaded, however many are excluded.

    Raises:
        UsageError: an unknown kind (the message lists them).
        NotFoundError: no such experiment or arm.
    """
    wanted = _kinds_arg(kind)
    store = open_store(store)
    exp = store.experiments.get(experiment)
    label_map = dataset_labels(store, exp.dataset_id)[1]
    below = low_confidence_threshold(exp, threshold, store=store).threshold
    found = _case_kinds(store, exp, below, arms, label_map)
    chosen = []
    skip = set(exclude)
    for idx in sorted(found):
        kinds, case_id = found[idx]
        if case_id in skip:
            continue
        hits = [k for k in DISAGREEMENT_KINDS if k in kinds and k in wanted]
        if hits:
            chosen.append((idx, hits, sorted(set().union(*(kinds[k] for k in hits)), key=_arm_order(exp))))
        if limit is not None and len(chosen) >= limit:
            break
    if not chosen:
        return []
    loader = _Loader(store, exp)
    cases = loader.cases([idx for idx, _, _ in chosen])
    runs = loader.runs([idx for idx, _, _ in chosen], arms)
    latest = _latest_reviews(store, exp.id)
    out = []
    for idx, hits, concerned in chosen:
        case = cases[idx]
        out.append(
            Disagreement(
                case=case,
                kinds=tuple(hits),
                arms=tuple(concerned),
                runs=tuple(runs.get(idx, ())),
                reviews=tuple(latest.get(case.case_id, ())),
            )
        )
    return out


def case_detail(
    experiment: int | str | Experiment,
    case_id: str,
    *,
    store: StoreLike = None,
    threshold: float | None = None,
) -> CaseDetail:
    """Everything about one case: the case, every run with grades and tool calls, and its reviews.

    `threshold` is the low-confidence threshold (default: `low_confidence_threshold`'s).

    Raises:
        NotFoundError: no such experiment, or the experiment did not run that case.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    idx = store.analysis.case_position(exp.id, str(case_id))
    if idx is None:
        lists = ("; `", do.disagreements(exp.id), "` lists cases")
        raise NotFoundError(
            f"experiment {exp.name!r} has no case {case_id!r}", *lists, kind="case", name=str(case_id)
        )
    loader = _Loader(store, exp)
    case = loader.cases([idx])[idx]
    runs = loader.runs([idx], None, detail=True).get(idx, [])
    label_map = dataset_labels(store, exp.dataset_id)[1]
    below = low_confidence_threshold(exp, threshold, store=store).threshold
    kinds = _kinds_of_case(runs, exp, below, label_map, case.expected)
    history = store.reviews.all(exp.id, latest=False, case_id=case.case_id)
    return CaseDetail(
        experiment=exp.name,
        case=case,
        kinds=kinds,
        runs=tuple(runs),
        reviews=tuple(_latest_reviews(store, exp.id, case.case_id).get(case.case_id, ())),
        history=tuple(history),
    )


def _kinds_of_case(
    runs: list[RunView], exp: Experiment, threshold: float, label_map: dict[str, str], expected: Any = None
) -> tuple[str, ...]:
    skilled = {a.name for a in exp.arms if a.snapshot}
    kinds = set()
    by_arm: dict[str, list[RunView]] = {}
    for r in runs:
        by_arm.setdefault(r.arm, []).append(r)
        executed = r.executed
        right_answer = _gold_key(r.prediction, label_map) is not None and _gold_key(
            r.prediction, label_map
        ) == _gold_key(expected, label_map)
        if r.outcome == RunState.FAIL and not right_answer:  # see _against_gold
            kinds.add("gold")
        if executed and r.confidence is not None and r.confidence < threshold:
            kinds.add("low_confidence")
        if executed and r.arm in skilled and not r.evidence:
            kinds.add("no_evidence")
    modes, verdicts = set(), set()
    for rs in by_arm.values():
        graded = [bool(r.passed) for r in rs if r.outcome in (RunState.PASS, RunState.FAIL)]
        if len(graded) >= 2 and 0 < sum(graded) < len(graded):
            kinds.add("flaky")
        if graded:
            verdicts.add(sum(graded) * 2 > len(graded))
        answers = [normalise_label(r.prediction, label_map) for r in rs if r.executed]
        if answers:
            modes.add(Counter(answers).most_common(1)[0][0])
    if len(by_arm) >= 2 and (len(modes) > 1 or len(verdicts) > 1):
        kinds.add("arms")
    return tuple(k for k in DISAGREEMENT_KINDS if k in kinds)


def _arm_order(exp: Experiment) -> Callable[[str], int]:
    order = {a.name: a.position for a in exp.arms}
    return lambda name: order.get(name, len(order))


def _latest_reviews(store: Store, exp_id: int, case_id: str | None = None) -> dict[str, list[Review]]:
    out: dict[str, list[Review]] = {}
    for review in store.reviews.all(exp_id, case_id=case_id):
        out.setdefault(review.case_id, []).append(review)
    return out


class _Loader:
    """Reads cases and runs for views, resolving cited references against each arm's snapshot once."""

    def __init__(self, store: Store, exp: Experiment):
        self.store = store
        self.exp = exp
        self._snapshots: dict[str, Any] = {}

    def cases(self, positions: list[int]) -> dict[int, CaseView]:
        out = {}
        for r in self.store.analysis.case_rows(self.exp.dataset_id, positions):
            out[r[0]] = CaseView(
                case_id=r[1],
                input=r[2],
                expected=r[3],
                domain=r[4],
                history=_json(r[5]),
                context=_json(r[6]),
                request_id=r[7],
                metadata=_json(r[8]),
                source_row=_json(r[9]),
                source_line=r[10],
            )
        return out

    def runs(
        self, positions: list[int], arms: Sequence[str] | None, detail: bool = False
    ) -> dict[int, list[RunView]]:
        out: dict[int, list[RunView]] = {}
        arm_by_id = {a.id: a for a in self.exp.arms}
        rows = self.store.analysis.run_rows(self.exp.id, positions)
        kept = [r for r in rows if arms is None or arm_by_id[r[1]].name in arms]
        attempts = self.store.attempts.of_run([r[0] for r in kept]) if detail else {}
        for r in kept:
            out.setdefault(r[2], []).append(self._run(r, arm_by_id[r[1]], detail, attempts.get(r[0], [])))
        order = {a.id: a.position for a in self.exp.arms}
        for views in out.values():
            views.sort(key=lambda v: (order.get(self.exp.arm(v.arm).id, 0), v.round))
        return out

    def _run(self, r: sqlite3.Row, arm: Arm, detail: bool, attempts: Sequence[Any] = ()) -> RunView:
        state, failure_type, passed = r[4], r[5], r[10]
        outcome = _outcome(state, failure_type, passed)
        summary = loads(r[15]) or {}
        tokens = None if r[19] is None and r[20] is None else int((r[19] or 0) + (r[20] or 0))
        grades = calls = None
        if detail:
            grades = {name: GradeView.of(g) for name, g in self.store.grades.latest(r[0]).items()}
            calls = self._calls(r[16])
        return RunView(
            run_id=r[0],
            arm=arm.name,
            round=r[3],
            state=state,
            outcome=outcome,
            failure_type=failure_type,
            error=r[6],
            prediction=r[7],
            reason=r[8],
            confidence=r[9],
            passed=None if passed is None else bool(passed),
            score=r[11],
            evidence=tuple(self._evidence(arm, ref) for ref in (loads(r[12]) or ())),
            files_read=tuple(loads(r[13]) or ()),
            sections_read=tuple(loads(r[14]) or ()),
            tool_calls=int(summary.get("tool_calls", 0) or 0),
            transcript_path=str(self.store.abspath(r[16])) if r[16] else None,
            cost=r[17],
            latency_ms=r[18],
            tokens=tokens,
            grades=grades,
            calls=calls,
            attempts=tuple(self._attempt(a) for a in attempts) if detail else None,
        )

    def _attempt(self, a: Any) -> AttemptView:
        path = str(a.transcript_path) if a.transcript_path else None
        return _view_of(
            AttemptView,
            a,
            tokens=None if a.usage is None else a.usage.total_tokens,
            tool_calls=self._calls(path),
            transcript_path=path,
        )

    def _evidence(self, arm: Arm, ref: Any) -> Evidence:
        ref = str(ref)
        if not arm.snapshot:
            return Evidence(ref, False)
        snap = self._snapshots.get(arm.snapshot)
        if snap is None and arm.snapshot not in self._snapshots:
            try:
                snap = self.store.snapshots.get(arm.snapshot)
            except AbbenchError as exc:
                log.warning("cannot resolve evidence of arm %s: %s", arm.name, exc)
                snap = None
            self._snapshots[arm.snapshot] = snap
        if snap is None:
            return Evidence(ref, False)
        try:
            section = snap.resolve(ref)
        except OSError as exc:  # the snapshot's files are gone from the store folder
            log.warning("cannot read %s to resolve %s: %s", snap.label, ref, exc)
            section = None
        if section is None:
            return Evidence(ref, False)
        return Evidence(ref, True, section.ref, section.heading, section.text)

    def _calls(self, relative: str | None) -> tuple[ToolCall, ...]:
        if not relative:
            return ()
        path = self.store.abspath(relative)
        if not path.exists():
            return ()
        steps = trajectory_of(read_transcript(path, errors="keep")).steps  # a damaged line is passed over
        return tuple(ToolCall(s.name, s.arguments, s.ok, s.result_chars, s.turn) for s in steps)


def _outcome(state: str, failure_type: str | None, passed: Any) -> str:
    outcome = run_outcome(state, failure_type, passed)  # the one map from states to outcomes
    return outcome if outcome in OUTCOMES else OUTCOMES[UNFINISHED]


def _json(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text

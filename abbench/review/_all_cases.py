"""Every case of an experiment, a page at a time: each arm's outcome per round, filtered, sorted, exported.

The disagreement lists (`disagreement_page`) hold the cases worth a look; this is the whole
experiment, as the workbench's All-cases view lists it. Filters and sort are conditions of one SQL
query (`store.runs.case_list_page`), so a page of a 100,000-case experiment reads its fifty cases and
their runs only; `case_table` gives exactly the listed cases as an export table, in list order.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from abbench._result import Result
from abbench.errors import UnknownName
from abbench.export import Column, Table
from abbench.review._cases import DISAGREEMENT_KINDS, _json
from abbench.review._pages import Paged, disagreement_page
from abbench.review._turns import earlier_turns
from abbench.store import CASE_SORTS, OUTCOMES, CaseQuery, Experiment, Store, StoreLike, open_store
from abbench.types import outcome_word

CASE_OUTCOMES = OUTCOMES
"""What the outcome filter takes: a run outcome key (``pass``, ``fail``, ``execution_failed``, …)."""


@dataclass(frozen=True)
class CaseRun(Result):
    """One run of a listed case.

    Attributes:
        outcome: A key of `abbench.store.OUTCOMES` (``pass``, ``fail``, ``execution_failed``, …).
        answer: The answer given (None: none).
        confidence: The confidence stated (None: none).
    """

    outcome: str
    answer: Any
    confidence: float | None

    @property
    def word(self) -> str:
        """The outcome as people read it: right, wrong, execution failed, …"""
        return outcome_word(self.outcome)


@dataclass(frozen=True)
class CaseRow(Result):
    """One case of the All-cases list.

    Attributes:
        position: The case's position in the dataset, from 0.
        case_id: Its id.
        input: Its input.
        gold: Its gold label or answer (None: none).
        domain: Its domain (None: none).
        runs: Arm → its run per round (round 1 first; None where that round has no run).
        review: The latest review verdict on the case (any arm), None when nobody reviewed it.
        history: Its earlier conversation turns as the dataset holds them (None: a single-turn case);
            `turns` gives them as every view shows them (`CaseView.turns`).
    """

    position: int
    case_id: str
    input: str
    gold: str | None
    domain: str | None
    runs: dict[str, tuple[CaseRun | None, ...]]
    review: str | None
    history: Any = None
    turns = property(earlier_turns)


@dataclass(frozen=True)
class CasePage(Result, Paged):
    """One page of an experiment's cases, as the filters and sort choose them, and what the list holds.

    Attributes:
        rows: The page's cases.
        total: Cases matching every filter, over every page.
        offset: Cases before this page.
        limit: The page size.
        arms: The experiment's arms, in order (the columns of `CaseRow.runs`).
        rounds: Rounds per arm.
        cases: Cases in the experiment, before any filter.
    """

    rows: tuple[CaseRow, ...]
    total: int
    offset: int
    limit: int
    arms: tuple[str, ...]
    rounds: int
    cases: int


def _query(
    store: Store,
    exp: Experiment,
    *,
    outcome: str | None,
    arm: str | None,
    domain: str | None,
    gold: str | None,
    kind: str | None,
    search: str | None,
    threshold: float | None,
) -> CaseQuery:
    """The store's query for these filters (a disagreement kind becomes the ids `disagreement_page` lists)."""
    arm_id = exp.arm(arm).id if arm else None
    case_ids = None
    if kind:
        if kind not in DISAGREEMENT_KINDS:
            raise UnknownName("kind", kind, DISAGREEMENT_KINDS)
        listed = disagreement_page(exp, kind, store=store, arm=arm, limit=1, threshold=threshold)
        case_ids = listed.case_ids
    if outcome is not None and outcome not in OUTCOMES:
        raise UnknownName("outcome", outcome, OUTCOMES)
    return CaseQuery(
        outcome=outcome, arm_id=arm_id, domain=domain, gold=gold, case_ids=case_ids, search=search
    )


def _rows(store: Store, exp: Experiment, positions: Sequence[int], latest: dict[str, str]) -> list[CaseRow]:
    """The list rows of the cases at `positions`, in that order."""
    names = {a.id: a.name for a in exp.arms}
    runs: dict[int, dict[str, list[CaseRun | None]]] = {}
    for position, arm_id, round_, outcome, answer, confidence in store.runs.case_list_runs(exp.id, positions):
        per_arm = runs.setdefault(position, {a.name: [None] * exp.rounds for a in exp.arms})
        if round_ < exp.rounds:
            per_arm[names[arm_id]][round_] = CaseRun(outcome, answer, confidence)
    cases = {int(r["idx"]): r for r in store.analysis.case_rows(exp.dataset_id, list(positions))}
    empty: dict[str, tuple[CaseRun | None, ...]] = {a.name: (None,) * exp.rounds for a in exp.arms}
    out = []
    for p in positions:
        c = cases[p]
        arms = {a: tuple(rs) for a, rs in runs[p].items()} if p in runs else empty
        out.append(
            CaseRow(
                p,
                c["case_id"],
                c["input"],
                c["expected"],
                c["domain"],
                arms,
                latest.get(c["case_id"]),
                _json(c["history"]),
            )
        )
    return out


def _latest_verdicts(store: Store, exp_id: int) -> dict[str, str]:
    """Case id → the latest verdict on it (of any arm)."""
    latest: dict[str, tuple[int, str]] = {}
    for r in store.reviews.all(exp_id):
        if r.case_id not in latest or r.id > latest[r.case_id][0]:
            latest[r.case_id] = (r.id, r.verdict)
    return {case_id: verdict for case_id, (_, verdict) in latest.items()}


def case_page(
    experiment: int | str | Experiment,
    *,
    store: StoreLike = None,
    outcome: str | None = None,
    arm: str | None = None,
    domain: str | None = None,
    gold: str | None = None,
    kind: str | None = None,
    search: str | None = None,
    sort: str = "order",
    descending: bool = False,
    offset: int = 0,
    limit: int = 50,
    threshold: float | None = None,
) -> CasePage:
    """One page of every case of an experiment, with each arm's outcome per round, filtered and sorted.

    With no filter, the pages concatenated list every case the experiment ran, in dataset order.

    Args:
        experiment: The experiment (id, ``#id``, name, or Experiment).
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).
        outcome: Only cases with a run of this outcome (a key of `CASE_OUTCOMES`), of `arm` if given.
        arm: The arm `outcome`, `kind` and the ``wrong`` sort look at (None: any arm).
        domain: Only cases of this domain ("" for cases without one).
        gold: Only cases with this gold label or answer ("" for none).
        kind: Only cases of this disagreement kind (one of `DISAGREEMENT_KINDS`, as the review lists it;
            with `arm`, those where that arm is concerned).
        search: Only cases whose id, input, gold, domain or an answer contain these words (any case).
        sort: One of `abbench.store.CASE_SORTS` (``wrong``: most runs graded wrong first).
        descending: Reverse the sort (ties stay in dataset order).
        offset: Cases before the page (in list order).
        limit: The page size.
        threshold: Confidence below which an answer is low-confidence (for ``kind="low_confidence"``);
            None: the label count's default, as 04's review uses (`abbench.review.default_threshold`).

    Raises:
        UsageError: an unknown outcome, kind or sort, or a bad offset or limit.
        NotFoundError: no such experiment or arm.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    query = _query(
        store,
        exp,
        outcome=outcome,
        arm=arm,
        domain=domain,
        gold=gold,
        kind=kind,
        search=search,
        threshold=threshold,
    )
    found = store.runs.case_list_page(
        exp.id, query, sort=sort, descending=descending, offset=offset, limit=limit
    )
    unfiltered = query == CaseQuery(arm_id=query.arm_id)  # an arm alone narrows nothing
    every = found.total if unfiltered else store.runs.case_list_page(exp.id, CaseQuery(), limit=1).total
    return CasePage(
        rows=tuple(_rows(store, exp, found.positions, _latest_verdicts(store, exp.id))),
        total=found.total,
        offset=offset,
        limit=limit,
        arms=tuple(a.name for a in exp.arms),
        rounds=exp.rounds,
        cases=every,
    )


def _columns(exp: Experiment) -> tuple[Column, ...]:
    head = (
        Column("case_id", description="the case's id"),
        Column("position", "int", "the case's position in the dataset, from 1"),
        Column("input", description="the case's input"),
        Column("gold", description="the gold label or answer"),
        Column("domain", description="the case's domain"),
        Column("review", description="the latest review verdict on the case, empty when none"),
    )
    per_run = tuple(
        column
        for a in exp.arms
        for r in range(1, exp.rounds + 1)
        for column in (
            Column(f"{a.name} round {r}", description=f"what became of arm {a.name}'s run in round {r}"),
            Column(f"{a.name} round {r} answer", description=f"arm {a.name}'s answer in round {r}"),
        )
    )
    return head + per_run


def _cells(row: CaseRow) -> tuple[Any, ...]:
    runs = tuple(
        cell
        for rounds in row.runs.values()
        for run in rounds
        for cell in (
            (None, None) if run is None else (run.word, None if run.answer is None else str(run.answer))
        )
    )
    return (row.case_id, row.position + 1, row.input, row.gold, row.domain, row.review, *runs)


def case_table(
    experiment: int | str | Experiment,
    *,
    store: StoreLike = None,
    outcome: str | None = None,
    arm: str | None = None,
    domain: str | None = None,
    gold: str | None = None,
    kind: str | None = None,
    search: str | None = None,
    sort: str = "order",
    descending: bool = False,
    threshold: float | None = None,
) -> Table:
    """Exactly the cases `case_page` lists with these filters and sort, every page, as an export table
    (``abbench.export.write_csv`` / ``write_xlsx`` write it): a row per case, in list order, with each
    arm's outcome and answer per round.

    Raises:
        UsageError: an unknown outcome, kind or sort.
        NotFoundError: no such experiment or arm.
    """
    store = open_store(store)
    exp = store.experiments.get(experiment)
    query = _query(
        store,
        exp,
        outcome=outcome,
        arm=arm,
        domain=domain,
        gold=gold,
        kind=kind,
        search=search,
        threshold=threshold,
    )
    if sort not in CASE_SORTS:
        raise UnknownName("sort", sort, CASE_SORTS)

    def rows() -> Iterator[tuple[Any, ...]]:
        latest = _latest_verdicts(store, exp.id)
        for chunk in store.runs.case_list_positions(exp.id, query, sort=sort, descending=descending):
            yield from (_cells(row) for row in _rows(store, exp, chunk, latest))

    return Table(what="cases", experiment=exp.name, columns=_columns(exp), rows=rows)

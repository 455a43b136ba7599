"""Disagreements a page at a time: the cases worth a look, filtered, sorted and counted, fifty at a time.

`disagreements` builds a full view (the case, every run with its evidence, the reviews) of every
case it lists: fine for a report's ten, slow for the 60,000 cases a 100,000-case experiment can list.
`disagreement_page` builds the views of one page only. Which cases are listed, why, and the sort
keys come from the run columns in one numpy pass (kept while no run or grade is written); the search
is matched inside SQLite for the case fields (`store.runs.search_cases`) and once per
distinct answer for the runs' answers; only the page's cases are then read.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from abbench._memo import Memo
from abbench.errors import UnknownName, UsageError
from abbench.metrics import Result, dataset_labels
from abbench.review._cases import (
    DISAGREEMENT_KINDS,
    Disagreement,
    _arm_order,
    _case_kinds,
    _kinds_arg,
    _latest_reviews,
    _Loader,
)
from abbench.review._threshold import low_confidence_threshold
from abbench.store import FAILED, Experiment, Store, StoreLike, open_store

SAMPLE = "sample"
"""The kind of the cases of the latest random review sample (`abbench.review.sample_cases`)."""
PAGE_SORTS = ("order", "unreviewed", "wrong", "confidence", "domain")
"""How a page's list is ordered: dataset order, not reviewed first, most wrong runs first, lowest
confidence first, by domain (each stable, so ties keep dataset order)."""

Entry = tuple[int, str, tuple[str, ...], tuple[str, ...]]
"""A listed case: its position, id, the kinds asked for that it has, and the arms they concern."""


class Paged:
    """A page of a list shown `limit` at a time: its number and the list's count of pages."""

    total: int
    offset: int
    limit: int

    @property
    def page(self) -> int:
        """This page's number, from 1."""
        return self.offset // self.limit + 1

    @property
    def pages(self) -> int:
        """How many pages the list has (1 for an empty list)."""
        return max(1, math.ceil(self.total / self.limit))


@dataclass(frozen=True)
class DisagreementPage(Result, Paged):
    """One page of the cases listed for review, and what the whole list holds.

    Attributes:
        items: The page's cases, as `disagreements` lists them (full views).
        total: Cases matching every filter, over every page.
        offset: Cases before this page.
        limit: The page size.
        case_ids: Every matching case's id, in list order (what paging and "next" walk through).
        reviewed_ids: Those of `case_ids` with a review.
        counts: Cases listed per kind, and ``all``, before any filter (the kind buttons' numbers).
        pool: Cases matching the kind, arm and search (the review-state filter aside).
        done: Of `pool`, those with a review ("23 of 232 reviewed").
    """

    items: tuple[Disagreement, ...]
    total: int
    offset: int
    limit: int
    case_ids: tuple[str, ...]
    reviewed_ids: frozenset[str]
    counts: dict[str, int]
    pool: int
    done: int

    def page_of(self, case_id: str) -> int | None:
        """The page number holding `case_id` (None: it is not listed)."""
        try:
            return self.case_ids.index(case_id) // self.limit + 1
        except ValueError:
            return None


class _SortKeys:
    """Per case position: runs graded wrong, the lowest stated confidence, the domain; each worked out
    when a sort first asks for it (most pages keep the dataset order, and the lowest confidence is a
    query of its own over every run)."""

    def __init__(self, table: Any, arm_ids: list[int] | None):
        cases, inverse = np.unique(table.case_idx, return_inverse=True)
        self._cases = cases
        self._wrong = np.bincount(inverse, weights=table.outcome == FAILED, minlength=cases.size)
        self._domains = table.domain[np.unique(inverse, return_index=True)[1]]
        self._arm_ids = arm_ids
        self._lock = threading.Lock()
        self._built: dict[str, dict[int, Any]] = {}

    def _once(self, name: str, build: Callable[[], dict[int, Any]]) -> dict[int, Any]:
        with self._lock:
            if name not in self._built:
                self._built[name] = build()
            return self._built[name]

    def wrong(self) -> dict[int, int]:
        """Runs graded wrong per case position."""
        keys = self._cases.tolist()
        return self._once("wrong", lambda: dict(zip(keys, self._wrong.astype(int).tolist(), strict=True)))

    def domain(self) -> dict[int, str]:
        """The domain per case position ("" for none)."""
        keys = self._cases.tolist()
        return self._once("domain", lambda: dict(zip(keys, [d or "" for d in self._domains], strict=True)))

    def lowest(self, store: Store, exp_id: int) -> dict[int, float]:
        """The lowest stated confidence per case position (the store's ``lowest_confidence``), capped
        at 1.0, and 1.0 where none was stated."""

        def build() -> dict[int, float]:
            cases = self._cases
            with_stated, values = store.runs.lowest_confidence(exp_id, self._arm_ids)
            lowest = np.ones(cases.size)
            if cases.size:
                at = np.searchsorted(cases, with_stated)
                inside = (at < cases.size) & (cases[np.minimum(at, cases.size - 1)] == with_stated)
                lowest[at[inside]] = np.minimum(1.0, values[inside])
            return dict(zip(cases.tolist(), lowest.tolist(), strict=True))

        return self._once("lowest", build)


@dataclass(frozen=True)
class _Listing:
    """Every case listed for review (any kind), with its sort keys: what filtering and paging need."""

    positions: list[int]
    case_ids: list[str]
    kinds: list[dict[str, set[str]]]
    keys: _SortKeys
    answers: tuple[Any, list[Any], Any]
    """Each run's answer as a code into the distinct answers, the distinct answers, each run's case."""

    def answered(self, words: str) -> set[int]:
        """Positions of the cases with an answer containing `words` (casefolded): each distinct answer
        is compared once, so 600,000 runs of two labels cost two comparisons."""
        codes, values, case_idx = self.answers
        folded = words.strip().casefold()
        hits = [i for i, v in enumerate(values) if v is not None and folded in str(v).casefold()]
        if not hits:
            return set()
        return set(np.unique(case_idx[np.isin(codes, hits)], return_index=True)[0].tolist())


_CACHE: Memo[_Listing] = Memo(4)
"""The latest listings, each with the stamp of the runs and grades it was read from."""


def _listing(store: Store, exp: Experiment, threshold: float, arms: Sequence[str] | None) -> _Listing:
    """The listing of an experiment, computed once per state of its runs and grades."""
    key = (str(store.db_path), exp.id, threshold, None if arms is None else tuple(arms))
    return _CACHE.get(key, store.results_stamp(), lambda: _read_listing(store, exp, threshold, arms))


def _read_listing(store: Store, exp: Experiment, threshold: float, arms: Sequence[str] | None) -> _Listing:
    """The listing read from the store (`_listing` keeps it)."""
    # Outcomes, answers and flags without the runs' numbers: every kind and sort key is the same.
    table = store.runs.load_run_flags(exp.id, arms=arms, threshold=threshold)
    label_map = dataset_labels(store, exp.dataset_id)[1]
    found = _case_kinds(store, exp, threshold, arms, label_map, table=table)
    positions = sorted(found)
    arm_ids = None if arms is None else [exp.arm(a).id for a in arms]
    return _Listing(
        positions,
        [found[p][1] for p in positions],
        [found[p][0] for p in positions],
        _SortKeys(table, arm_ids),
        answers=_answers(table),
    )


def _answers(table: Any) -> tuple[Any, list[Any], Any]:
    """The runs' answers factorised (see `_Listing.answers`)."""
    import pandas as pd

    codes, values = pd.factorize(np.asarray(table.prediction, dtype=object), use_na_sentinel=True)
    return codes, list(values), np.asarray(table.case_idx)


def _sampled(store: Store, exp: Experiment) -> dict[int, tuple[str, set[str]]]:
    """Case position -> (case id, arms of its sampled runs) for the latest review sample."""
    samples = store.reviews.samples(exp.id)[-1:]
    if not samples:
        return {}
    out: dict[int, tuple[str, set[str]]] = {}
    for idx, arm, case_id in store.reviews.run_positions(exp.id, samples[0].run_ids).values():
        out.setdefault(idx, (case_id, set()))[1].add(arm)
    return out


def _check(kind: str | Sequence[str] | None, sort: str, offset: int, limit: int) -> tuple[str, ...]:
    if sort not in PAGE_SORTS:
        raise UnknownName("sort", sort, PAGE_SORTS)
    if offset < 0 or limit < 1:
        raise UsageError(f"a page needs offset >= 0 and limit >= 1 (got offset={offset}, limit={limit})")
    if kind == SAMPLE or (not isinstance(kind, str) and kind is not None and SAMPLE in kind):
        rest = [k for k in ([kind] if isinstance(kind, str) else kind) if k != SAMPLE]
        return (*(_kinds_arg(rest) if rest else ()), SAMPLE)
    return _kinds_arg(kind)


def disagreement_page(
    experiment: int | str | Experiment,
    kind: str | Sequence[str] | None = "all",
    *,
    store: StoreLike = None,
    offset: int = 0,
    limit: int = 50,
    arms: Sequence[str] | None = None,
    arm: str | None = None,
    reviewed: bool | None = None,
    search: str | None = None,
    sort: str = "order",
    sample: bool = False,
    threshold: float | None = None,
    exclude: Collection[str] = (),
) -> DisagreementPage:
    """One page of the cases worth a person's look: `disagreements`, filtered, sorted and paged.

    With no filter and the dataset order, the pages concatenated are ``disagreements(experiment,
    kind, arms=arms, threshold=threshold, exclude=exclude)``, case for case; only the page's cases
    are read in full, so a page of a 100,000-case experiment costs what a page of a small one does.

    Args:
        experiment: The experiment (id, ``#id``, name, or Experiment).
        kind: One of `DISAGREEMENT_KINDS`, several, ``"all"``, or ``"sample"`` (the cases of the
            latest random review sample).
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).
        offset: Cases before the page (in list order).
        limit: The page size.
        arms: Only runs of these arms (as in `disagreements`).
        arm: Only cases where this arm is concerned by the kinds asked for.
        reviewed: True: only cases with a review; False: only those without; None: both.
        search: Only cases whose id, input, gold, domain or an answer contain these words (any case).
        sort: One of `PAGE_SORTS`.
        sample: Also list the latest review sample's cases (kind ``sample``), among the others.
        threshold: Confidence below which an answer is low-confidence (default: halfway between
            chance and certainty for the task's labels, `low_confidence_threshold`).
        exclude: Case ids to leave out.

    Raises:
        UsageError: an unknown kind or sort, or a bad offset or limit.
        NotFoundError: no such experiment or arm.
    """
    wanted = _check(kind, sort, offset, limit)
    if sample and (kind is None or kind == "all"):
        wanted = (*wanted, SAMPLE)
    store = open_store(store)
    exp = store.experiments.get(experiment)
    listing = _listing(store, exp, low_confidence_threshold(exp, threshold, store=store).threshold, arms)
    entries = _entries(store, exp, listing, sample or SAMPLE in wanted)
    latest = _latest_reviews(store, exp.id)
    found = None
    if search and search.strip():  # the case fields in SQLite, the answers from the runs read once
        found = store.runs.search_cases(exp.id, search, answers=False) | listing.answered(search)
    pool, counts = _filtered(entries, wanted, set(exclude), arm, found, _arm_order(exp))
    done = sum(e[1] in latest for e in pool)
    shown = [e for e in pool if reviewed is None or (e[1] in latest) == reviewed]
    shown = _sorted(shown, sort, listing, latest, store, exp.id)
    chosen = shown[offset : offset + limit]
    return DisagreementPage(
        items=_views(store, exp, chosen, arms, latest),
        total=len(shown),
        offset=offset,
        limit=limit,
        case_ids=tuple(e[1] for e in shown),
        reviewed_ids=frozenset(e[1] for e in shown if e[1] in latest),
        counts=counts,
        pool=len(pool),
        done=done,
    )


def _filtered(
    entries: list[tuple[int, str, dict[str, set[str]]]],
    wanted: tuple[str, ...],
    skip: set[str],
    arm: str | None,
    found: set[int] | None,
    order: Any,
) -> tuple[list[Entry], dict[str, int]]:
    """The cases of the kinds wanted, of `arm`, matching the search; and every kind's count."""
    pool: list[Entry] = []
    counts = {k: 0 for k in (*DISAGREEMENT_KINDS, SAMPLE, "all")}
    for position, case_id, kinds in entries:
        if case_id in skip:
            continue
        counts["all"] += 1
        for k in kinds:
            counts[k] += 1
        hits = [k for k in (*DISAGREEMENT_KINDS, SAMPLE) if k in kinds and k in wanted]
        concerned = set().union(*(kinds[k] for k in hits)) if hits else set()
        if not hits or (arm and arm not in concerned) or (found is not None and position not in found):
            continue
        pool.append((position, case_id, tuple(hits), tuple(sorted(concerned, key=order))))
    return pool, counts


def _entries(
    store: Store, exp: Experiment, listing: _Listing, sample: bool
) -> list[tuple[int, str, dict[str, set[str]]]]:
    """(position, case id, {kind: arms}) of every listed case, flagged or sampled, in dataset order."""
    entries = list(zip(listing.positions, listing.case_ids, listing.kinds, strict=True))
    if not sample:
        return entries
    sampled = _sampled(store, exp)
    if not sampled:
        return entries
    merged = [(p, c, {**k, SAMPLE: sampled[p][1]} if p in sampled else k) for p, c, k in entries]
    flagged = set(listing.positions)
    extra = [(p, sampled[p][0], {SAMPLE: sampled[p][1]}) for p in sorted(sampled) if p not in flagged]
    return sorted(merged + extra, key=lambda e: e[0])  # dataset order, the sample's cases among the others


def _sorted(
    shown: list[Entry],
    sort: str,
    listing: _Listing,
    latest: dict[str, Any],
    store: Store,
    exp_id: int,
) -> list[Entry]:
    """The list in the order asked for; Python's sort is stable, so ties keep the list's order."""
    if sort == "unreviewed":
        return sorted(shown, key=lambda e: e[1] in latest)
    if sort == "wrong":
        wrong = listing.keys.wrong()
        return sorted(shown, key=lambda e: -wrong.get(e[0], 0))
    if sort == "confidence":
        lowest = listing.keys.lowest(store, exp_id)
        return sorted(shown, key=lambda e: lowest.get(e[0], 1.0))
    if sort == "domain":
        domain = listing.keys.domain()
        return sorted(shown, key=lambda e: domain.get(e[0], ""))
    return shown


def _views(
    store: Store,
    exp: Experiment,
    chosen: list[Entry],
    arms: Sequence[str] | None,
    latest: dict[str, Any],
) -> tuple[Disagreement, ...]:
    """The full views of the page's cases, read for those cases only."""
    if not chosen:
        return ()
    loader = _Loader(store, exp)
    positions = [e[0] for e in chosen]
    cases, runs = loader.cases(positions), loader.runs(positions, arms)
    return tuple(
        Disagreement(
            case=cases[p],
            kinds=hits,
            arms=concerned,
            runs=tuple(runs.get(p, ())),
            reviews=tuple(latest.get(cases[p].case_id, ())),
        )
        for p, _, hits, concerned in chosen
    )

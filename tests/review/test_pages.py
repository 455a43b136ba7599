"""Paged reads: disagreement pages equal the whole list, runs in pages and chunks equal `store.runs.records()`,
the search matches what Python's casefold finds, and the per-case lookups are served by indexes."""

from __future__ import annotations

import random

import pytest

from abbench.errors import UsageError
from abbench.review import (
    DISAGREEMENT_KINDS,
    PAGE_SORTS,
    add_review,
    case_detail,
    disagreement_page,
    disagreements,
    draw_review_sample,
    sample_cases,
)
from abbench.types import Case, RunState
from tests.results import make_experiment

DOMAINS = ("导航", "Énergie", "media", None)


def _cases(n: int) -> list[Case]:
    rng = random.Random(7)
    words = ("空调 温度", "STRASSE closed", "Straße offen", "Café au lait", "route home", "音乐 播放")
    return [
        Case(f"c{i:03d}", f"{rng.choice(words)} #{i}", ("fast", "slow")[i % 2], domain=DOMAINS[i % 4])
        for i in range(n)
    ]


def _run(rng: random.Random, label: str, skilled: bool) -> object:
    roll = rng.random()
    if roll < 0.03:
        return "exec_fail"
    if roll < 0.05:
        return "grade_fail"
    passed = rng.random() < 0.88
    return {
        "passed": passed,
        "prediction": label if passed else rng.choice(["wrong", "Évite", "慢"]),
        "confidence": (round(rng.random(), 2) if rng.random() < 0.1 else 0.9) if rng.random() < 0.9 else None,
        "evidence": ["SKILL.md#Rules"] if skilled and rng.random() < 0.9 else [],
    }


@pytest.fixture
def exp(store, tmp_path):
    """150 cases × 3 rounds × 2 arms of seeded random outcomes: every kind of disagreement, many of each."""
    folder = tmp_path / "skill"
    folder.mkdir()
    (folder / "SKILL.md").write_text("# Rules\n- 空调 requests are slow\n", encoding="utf-8")
    skill = store.snapshots.freeze(folder)
    cases = _cases(150)
    rng = random.Random(11)
    arms = {
        arm: [[_run(rng, c.expected, arm == "treatment") for _ in range(3)] for c in cases]
        for arm in ("control", "treatment")
    }
    return make_experiment(store, "paged", cases, arms, snapshots={"treatment": skill.hash})


def _pages(exp, store, kind="all", limit=17, **filters):
    out, offset, first = [], 0, None
    while True:
        page = disagreement_page(exp.id, kind, store=store, offset=offset, limit=limit, **filters)
        first = first or page
        assert page.offset == offset and page.limit == limit and len(page.items) <= limit
        assert page.total == first.total and page.case_ids == first.case_ids  # the same list on every page
        out.extend(page.items)
        offset += limit
        if offset >= page.total:
            return out, first


@pytest.mark.parametrize("kind", ["all", *DISAGREEMENT_KINDS, ["gold", "flaky"]])
def test_the_pages_concatenated_are_the_whole_list_in_the_same_order(store, exp, kind):
    whole = disagreements(exp.id, kind, store=store)
    paged, first = _pages(exp, store, kind)
    assert paged == whole and first.total == len(whole)
    assert list(first.case_ids) == [d.case_id for d in whole]
    assert first.pages == max(1, -(-len(whole) // 17)) and first.page == 1
    assert len(whole) > 17  # several pages of each kind
    if kind == "all":
        assert len(whole) < 140  # and not every case


def test_pages_with_arms_threshold_and_exclude_match_the_whole_list(store, exp):
    skip = ["c001", "c004", "c010"]
    whole = disagreements(exp.id, "all", store=store, arms=["treatment"], threshold=0.3, exclude=skip)
    paged, _ = _pages(exp, store, arms=["treatment"], threshold=0.3, exclude=skip)
    assert paged == whole and not {d.case_id for d in paged} & set(skip)


def _folded(d, words):
    texts = (d.case.case_id, d.case.input, d.case.expected, d.case.domain, *(r.prediction for r in d.runs))
    return any(t is not None and words.casefold() in str(t).casefold() for t in texts)


@pytest.mark.parametrize(
    "words", ["strasse", "STRAßE", "café", "CAFÉ", "énergie", "空调", "c01", "évite", "慢"]
)
def test_the_search_matches_what_casefold_finds_in_case_fields_and_answers(store, exp, words):
    whole = [d for d in disagreements(exp.id, "all", store=store) if _folded(d, words)]
    paged, first = _pages(exp, store, search=words, limit=7)
    assert paged == whole and first.total == len(whole) > 0
    # the store's own search, answers included, finds the same listed cases
    listed = {d.case.case_id: i for i, d in enumerate(disagreements(exp.id, "all", store=store))}
    by_store = store.runs.search_cases(exp.id, words)
    positions = {store.analysis.case_position(exp.id, c) for c in first.case_ids}
    assert positions <= by_store and len(positions) == len(whole) <= len(listed)


def test_filters_and_sorts_equal_the_whole_list_filtered_and_sorted_in_python(store, exp):
    add_review(exp.id, "c002", "unsure", store=store)
    add_review(exp.id, "c005", "gold_correct", arm="treatment", store=store)
    whole = disagreements(exp.id, "flaky", store=store)
    reviewed = {"c002", "c005"}
    for arm in ("control", "treatment"):
        for state in (None, True, False):
            want = [d for d in whole if arm in d.arms and (state is None or (d.case_id in reviewed) == state)]
            got, _ = _pages(exp, store, "flaky", limit=5, arm=arm, reviewed=state)
            assert got == want, (arm, state)
    keys = {
        "unreviewed": lambda d: d.case_id in reviewed,
        "wrong": lambda d: -sum(r.outcome == RunState.FAIL for r in d.runs),
        "confidence": lambda d: min([r.confidence for r in d.runs if r.confidence is not None] or [1.0]),
        "domain": lambda d: d.case.domain or "",
    }
    for sort in PAGE_SORTS:
        want = sorted(whole, key=keys[sort]) if sort in keys else whole
        got, _ = _pages(exp, store, "flaky", limit=6, sort=sort)
        assert [d.case_id for d in got] == [d.case_id for d in want], sort


def test_counts_and_review_progress_describe_the_whole_list(store, exp):
    whole = disagreements(exp.id, "all", store=store)
    add_review(exp.id, whole[0].case_id, "unsure", store=store)
    page = disagreement_page(exp.id, "gold", store=store, limit=3, reviewed=False)
    assert page.counts["all"] == len(whole)
    for kind in DISAGREEMENT_KINDS:
        assert page.counts[kind] == sum(kind in d.kinds for d in whole)
    gold = [d for d in whole if "gold" in d.kinds]
    assert page.pool == len(gold) and page.done == (1 if "gold" in whole[0].kinds else 0)
    assert page.total == len(gold) - page.done and whole[0].case_id not in page.case_ids


def test_a_written_run_or_review_shows_in_the_next_page(store, exp):
    """What the pages keep between calls is dropped as soon as a run or a review is written."""
    whole = disagreements(exp.id, "all", store=store)
    target = whole[len(whole) // 2]
    before = disagreement_page(exp.id, "all", store=store, limit=5)
    assert target.case_id in before.case_ids
    store.runs.reset([r.run_id for r in target.runs])  # re-run the case: nothing is left to review yet
    after = disagreement_page(exp.id, "all", store=store, limit=5)
    assert target.case_id not in after.case_ids and after.total == before.total - 1
    assert after.case_ids == tuple(d.case_id for d in disagreements(exp.id, "all", store=store))
    add_review(exp.id, after.case_ids[0], "unsure", store=store)
    assert disagreement_page(exp.id, "all", store=store, limit=5).items[0].reviews[0].verdict == "unsure"


def test_the_sample_kind_pages_the_review_sample(store, exp):
    draw_review_sample(exp.id, 12, seed=3, store=store)
    whole = sample_cases(exp.id, store=store)
    paged, _ = _pages(exp, store, "sample", limit=4)
    assert [d.case_id for d in paged] == [d.case_id for d in whole]
    assert [d.runs for d in paged] == [d.runs for d in whole]
    mixed = disagreement_page(exp.id, "all", store=store, sample=True, limit=500)
    assert set(whole_ids := [d.case_id for d in whole]) <= set(mixed.case_ids)
    assert mixed.counts["sample"] == len(whole_ids)


def test_a_page_beyond_the_end_is_empty_and_bad_pages_are_refused(store, exp):
    page = disagreement_page(exp.id, "all", store=store, offset=10_000, limit=10)
    assert page.items == () and page.total > 0 and page.page_of(page.case_ids[0]) == 1
    for bad in ({"offset": -1}, {"limit": 0}, {"sort": "size"}):
        with pytest.raises(UsageError):
            disagreement_page(exp.id, "all", store=store, **bad)
    with pytest.raises(UsageError, match="unknown disagreement kind"):
        disagreement_page(exp.id, "weird", store=store)


def test_run_pages_and_chunks_equal_store_runs(store, exp):
    every = store.runs.records(exp.id)
    assert len(every) == 900
    paged, offset = [], 0
    while offset < 900:
        page = store.runs.page(exp.id, offset=offset, limit=128)
        assert page.total == 900
        paged.extend(page.runs)
        offset += 128
    assert paged == every
    assert [r for chunk in store.runs.pages(exp.id, chunk=100) for r in chunk] == every
    failed = store.runs.records(exp.id, states=[RunState.FAIL])
    chunks = list(store.runs.pages(exp.id, states=[RunState.FAIL], chunk=13))
    assert [r for c in chunks for r in c] == failed and max(len(c) for c in chunks) == 13
    assert store.runs.page(exp.id, states=[RunState.FAIL], limit=5).total == len(failed)
    with pytest.raises(UsageError):
        store.runs.page(exp.id, limit=0)


def test_every_query_of_a_case_detail_is_served_by_an_index(store, exp):
    """The case detail view asks for one case: no statement it runs may scan a table."""
    statements: list[str] = []
    store.conn.set_trace_callback(statements.append)
    try:
        detail = case_detail(exp.id, "c077", store=store)
    finally:
        store.conn.set_trace_callback(None)
    assert detail.case.case_id == "c077" and len(detail.runs) == 6
    selects = [s for s in statements if s.lstrip().upper().startswith(("SELECT", "WITH"))]
    assert any("case_id" in s and "runs" in s for s in selects)  # the per-case lookup is among them
    for sql in selects:
        plan = store.query_plan(sql)
        scans = [
            step
            for step in plan
            if step.startswith("SCAN ")
            and not any(t in step for t in ("USING INDEX", "USING COVERING INDEX", "CONSTANT", "SUBQUERY"))
            and step.split()[1] in {"runs", "cases", "grades", "reviews", "run_attempts", "r", "g", "c"}
        ]
        assert scans == [], (sql, plan)
    lookup = "SELECT case_idx FROM runs WHERE experiment_id=? AND case_id=? LIMIT 1"
    assert store.query_plan(lookup, (exp.id, "c077")) == [
        "SEARCH runs USING INDEX runs_experiment_case_id (experiment_id=? AND case_id=?)"
    ]

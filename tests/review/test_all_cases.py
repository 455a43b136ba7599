"""The All-cases list (`case_page`, `case_table`): every filter, sort and page against the same list worked out
with pandas from the raw tables, on banking77 (real data, two rounds) and on seeded outcomes of every kind."""

from __future__ import annotations

import csv
import json
import random
import sqlite3

import numpy as np
import pandas as pd
import pytest

from abbench.errors import UsageError
from abbench.export import write_csv
from abbench.review import CASE_OUTCOMES, add_review, case_page, case_table, disagreements
from abbench.runner import create_experiment, run_experiment
from abbench.store import CASE_SORTS, open_store
from abbench.types import Case
from tests.conftest import REALDATA
from tests.results import make_experiment

BANKING = REALDATA / "banking77"


@pytest.fixture(scope="module")
def banking(tmp_path_factory):
    """banking77: 240 sampled cases, two builtin arms given the 77 intents, two rounds; a few reviews."""
    categories = json.loads((BANKING / "categories.json").read_text(encoding="utf-8"))
    store = open_store(tmp_path_factory.mktemp("cases") / "store")
    store.datasets.import_file(
        BANKING / "test.csv", {"fields": {"input": "text", "expected": "category"}}, name="banking77"
    )
    spec = {
        "name": "all-cases",
        "dataset": "banking77",
        "rounds": 2,
        "graders": ["label_match"],
        "cases": {"sample": 240, "seed": 5},
        "arms": {
            "plain": {"agent": "builtin", "labels": categories},
            "noisy": {"agent": "builtin", "labels": categories, "temperature": 2.0, "seed": 3},
        },
    }
    exp = create_experiment(spec, store=store)
    run_experiment(exp, store=store)
    exp = store.experiments.get(exp.id)
    ids = [
        r[0]
        for r in store.query(
            "SELECT min(case_id) FROM runs WHERE experiment_id=? GROUP BY case_idx ORDER BY case_idx",
            [exp.id],
        )
    ]
    add_review(exp.id, ids[3], "gold_correct", store=store)
    add_review(exp.id, ids[3], "unsure", arm="noisy", store=store)  # the latest is the one shown
    add_review(exp.id, ids[7], "model_correct", store=store)
    yield store, exp
    store.close()


DOMAINS = ("导航", "Énergie", "media", None)


def _outcome(rng: random.Random, label: str) -> object:
    roll = rng.random()
    if roll < 0.04:
        return "exec_fail"
    if roll < 0.07:
        return "grade_fail"
    if roll < 0.09:
        return "cancelled"
    passed = rng.random() < 0.8
    return {"passed": passed, "prediction": label if passed else rng.choice(["wrong", "Évite", "慢"])}


@pytest.fixture(scope="module")
def varied(tmp_path_factory):
    """130 cases (domains, CJK, casefolding) × 3 rounds × 2 arms of every outcome, a dataset of 150 cases."""
    store = open_store(tmp_path_factory.mktemp("varied") / "store")
    rng = random.Random(3)
    words = ("空调 温度", "STRASSE closed", "Straße offen", "Café au lait", "route home", "音乐 播放")
    cases = [
        Case(f"c{i:03d}", f"{rng.choice(words)} #{i}", ("fast", "slow")[i % 2], domain=DOMAINS[i % 4])
        for i in range(130)
    ]
    arms = {
        arm: [[_outcome(rng, c.expected) for _ in range(3)] for c in cases]
        for arm in ("control", "treatment")
    }
    exp = make_experiment(store, "varied", cases, arms)
    yield store, exp
    store.close()


def _outcomes(runs: pd.DataFrame) -> np.ndarray:
    """Each run's outcome key from its state, failure type and verdict, written out."""
    state, failed, verdict = runs["state"], runs["failure_type"].notna(), runs["passed"].notna()
    return np.select(
        [
            (state == "pass") & verdict,
            (state == "pass") & ~verdict,
            (state == "fail") & failed,
            (state == "fail") & ~verdict,
            state == "fail",
            state == "cancelled",
        ],
        ["pass", "scored", "execution_failed", "grading_failed", "fail", "cancelled"],
        "unfinished",
    )


def _tables(store, exp) -> tuple[pd.DataFrame, pd.DataFrame]:
    con = sqlite3.connect(store.db_path)
    runs = pd.read_sql(
        "SELECT r.case_idx, a.name AS arm, r.round, r.state, r.failure_type, r.passed, r.prediction "
        "FROM runs r JOIN arms a ON a.id = r.arm_id WHERE r.experiment_id = ?",
        con,
        params=[exp.id],
    )
    cases = pd.read_sql(
        "SELECT idx, case_id, input, expected, domain FROM cases WHERE dataset_id = ?",
        con,
        params=[exp.dataset_id],
    )
    con.close()
    runs["outcome"] = _outcomes(runs)
    return runs, cases[cases["idx"].isin(runs["case_idx"])]


def _expected(store, exp, *, outcome=None, arm=None, domain=None, gold=None, search=None, ids=None,
              sort="order", descending=False) -> list[str]:  # fmt: skip
    """The case ids the list should hold, in order, worked out with pandas over the whole tables."""
    runs, cases = _tables(store, exp)
    scope = runs if arm is None else runs[runs["arm"] == arm]
    if outcome is not None:
        cases = cases[cases["idx"].isin(scope.loc[scope["outcome"] == outcome, "case_idx"])]
    if domain is not None:
        cases = cases[cases["domain"].fillna("") == domain]
    if gold is not None:
        cases = cases[cases["expected"].fillna("") == gold]
    if ids is not None:
        cases = cases[cases["case_id"].isin(ids)]
    if search:
        words = search.strip().casefold()

        def has(value: object) -> bool:
            return (
                value is not None
                and not (isinstance(value, float) and np.isnan(value))
                and words in str(value).casefold()
            )

        answered = set(runs.loc[runs["prediction"].map(has), "case_idx"])
        fields = cases[["case_id", "input", "expected", "domain"]].map(has).any(axis=1)
        cases = cases[fields | cases["idx"].isin(answered)]
    wrong = scope[scope["outcome"] == "fail"].groupby("case_idx").size()
    rows = sorted(cases.itertuples(index=False), key=lambda c: c.idx)

    def key(c):
        if sort == "wrong":
            return -int(wrong.get(c.idx, 0))
        if sort == "gold":
            return (0, "") if c.expected is None else (1, c.expected)
        return {"order": c.idx, "case_id": c.case_id, "domain": c.domain or ""}[sort]

    return [c.case_id for c in sorted(rows, key=key, reverse=descending)]  # stable: ties keep dataset order


def _paged(store, exp, limit=23, **filters) -> list[str]:
    out, offset, first = [], 0, None
    while True:
        page = case_page(exp.id, store=store, offset=offset, limit=limit, **filters)
        first = first or page
        assert page.total == first.total and len(page.rows) <= limit and page.offset == offset
        out += [r.case_id for r in page.rows]
        offset += limit
        if offset >= page.total:
            assert len(out) == page.total and page.pages == max(1, -(-page.total // limit))
            return out


@pytest.mark.parametrize("sort", CASE_SORTS)
@pytest.mark.parametrize("descending", [False, True])
def test_every_sort_pages_through_what_pandas_orders_on_banking77(banking, sort, descending):
    store, exp = banking
    expected = _expected(store, exp, sort=sort, descending=descending)
    assert len(expected) == 240  # every case the experiment ran, of the dataset's 3,080
    assert _paged(store, exp, sort=sort, descending=descending) == expected


@pytest.mark.parametrize(
    "filters",
    [
        {"outcome": "fail"},
        {"outcome": "fail", "arm": "noisy"},
        {"outcome": "pass", "arm": "plain", "sort": "wrong"},
        {"outcome": "fail", "arm": "plain", "sort": "wrong", "descending": True},
        {"gold": "card_arrival"},
        {"gold": "card_arrival", "outcome": "fail", "arm": "noisy", "sort": "case_id"},
        {"search": "CARD"},
        {"search": "exchange", "outcome": "pass", "arm": "noisy"},
        {"search": "top_up"},  # a label: in the gold and the answers, not the inputs
        {"domain": ""},
    ],
)
def test_filters_page_through_what_pandas_finds_on_banking77(banking, filters):
    store, exp = banking
    expected = _expected(store, exp, **filters)
    assert len(expected) > 0
    assert _paged(store, exp, **filters) == expected


@pytest.mark.parametrize("outcome", CASE_OUTCOMES)
@pytest.mark.parametrize("arm", [None, "treatment"])
def test_each_outcome_of_each_arm_is_what_pandas_finds(varied, outcome, arm):
    store, exp = varied
    expected = _expected(store, exp, outcome=outcome, arm=arm)
    assert _paged(store, exp, outcome=outcome, arm=arm, limit=9) == expected
    if outcome in ("pass", "fail", "execution_failed", "grading_failed", "cancelled"):
        assert expected  # the seeded runs hold every finished outcome


@pytest.mark.parametrize("domain", ["导航", "Énergie", "media", ""])
@pytest.mark.parametrize("search", [None, "strasse", "STRAßE", "café", "空调", "évite", "慢", "c01"])
def test_domain_and_casefolded_search_are_what_pandas_finds(varied, domain, search):
    store, exp = varied
    expected = _expected(store, exp, domain=domain, search=search, sort="domain")
    assert _paged(store, exp, domain=domain, search=search, sort="domain", limit=8) == expected


@pytest.mark.parametrize("kind", ["gold", "flaky", "arms"])
def test_a_disagreement_kind_lists_the_cases_the_review_lists(varied, kind):
    store, exp = varied
    ids = [d.case_id for d in disagreements(exp.id, kind, store=store)]
    assert 0 < len(ids) < 130
    assert _paged(store, exp, kind=kind) == _expected(store, exp, ids=ids)
    concerned = [d.case_id for d in disagreements(exp.id, kind, store=store) if "control" in d.arms]
    assert _paged(store, exp, kind=kind, arm="control", outcome="fail") == _expected(
        store, exp, ids=concerned, arm="control", outcome="fail"
    )


def test_a_row_holds_each_arms_outcome_and_answer_per_round_and_the_latest_review(banking):
    store, exp = banking
    runs, cases = _tables(store, exp)
    page = case_page(exp.id, store=store, limit=10)
    assert page.arms == ("plain", "noisy") and page.rounds == 2 and page.cases == 240
    for row in page.rows:
        mine = runs[runs["case_idx"] == row.position]
        for arm, rounds in row.runs.items():
            got = [(r.outcome, r.answer) for r in rounds]
            want = mine[mine["arm"] == arm].sort_values("round")[["outcome", "prediction"]]
            assert got == list(want.itertuples(index=False, name=None))
        assert row.gold == cases.set_index("idx").loc[row.position, "expected"]
    reviews = {r.case_id: r.review for r in page.rows}
    assert list(reviews.values()).count(None) == 8
    assert reviews[page.rows[3].case_id] == "unsure" and reviews[page.rows[7].case_id] == "model_correct"


def test_the_export_holds_exactly_the_filtered_rows_in_list_order(banking, tmp_path):
    store, exp = banking
    filters = {"outcome": "fail", "arm": "noisy", "sort": "wrong", "search": "card"}
    expected = _expected(store, exp, **filters)
    table = case_table(exp.id, store=store, **filters)
    out = tmp_path / "cases.csv"
    assert write_csv(table, out) == len(expected) > 0
    with out.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert [r["case_id"] for r in rows] == expected
    runs, _ = _tables(store, exp)
    words = {"pass": "right", "fail": "wrong"}
    first = runs[runs["case_idx"] == int(rows[0]["position"]) - 1]
    for run in first.itertuples():
        assert rows[0][f"{run.arm} round {run.round + 1}"] == words[run.outcome]
        assert rows[0][f"{run.arm} round {run.round + 1} answer"] == run.prediction


@pytest.mark.parametrize(
    ("filters", "words"),
    [
        ({"outcome": "right"}, "outcome"),
        ({"sort": "input"}, "sort"),
        ({"kind": "often"}, "kind"),
        ({"offset": -1}, "offset"),
        ({"limit": 0}, "limit"),
    ],
)
def test_bad_filters_are_refused_naming_the_choices(banking, filters, words):
    store, exp = banking
    with pytest.raises(UsageError, match=words):
        case_page(exp.id, store=store, **filters)


def test_a_page_is_read_through_indexes_not_a_scan_of_the_runs(banking):
    store, exp = banking
    from abbench.store import CaseQuery

    body, order, params = store.runs._prepare(
        exp.id, CaseQuery(outcome="fail", arm_id=exp.arms[1].id), "wrong", False
    )
    plan = " ".join(
        str(r[3]) for r in store.query(f"EXPLAIN QUERY PLAN SELECT c.idx {body} ORDER BY {order}", params)
    )
    assert "SCAN runs" not in plan and "SCAN r " not in plan, plan

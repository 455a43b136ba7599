"""The widgets' cold calls read less (codes carry the failure and round bits, attempt sums skip the
probe per run when every run has attempts, review sort keys are worked out when a sort asks): every
figure and page equals the one the earlier reads gave.

The earlier reads are kept here as the reference: every run through `store.runs.table` (what metrics
and the review listing read before the packed codes) and the attempt sums as two queries, the second
always run. The store is made by hand, not the demo: three labels, missing answers, confidences and
costs, execution and grading failures, cancelled and pending runs (an experiment not finished), a
one-arm experiment, and attempts recorded for some runs only, or for every run.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace

import numpy as np
import pytest

from abbench.metrics import experiment_metrics
from abbench.review import disagreement_page
from abbench.review._pages import _CACHE
from abbench.store import ArmSpend, open_store
from tests.reads import pages_both_ways
from tests.results import cases_of, make_experiment, not_an_answer

LABELS = ("fast", "slow", "medium")


def _spec(i: int, arm: int, rnd: int):
    """A run scripted by its case, arm and round: every kind of outcome and of missing value."""
    h = (i * 7 + arm * 13 + rnd * 5) % 23
    if (unanswered := not_an_answer(h, arm)) is not None:
        return unanswered
    out = {
        "passed": h % 4 != 0,
        "confidence": None if h % 5 == 0 else (h % 10) / 10,
        "cost": None if h % 6 == 0 else 0.001 * h + 1e-9 * i,
        "latency_ms": 10.0 + h + i / 7,
        "evidence": ["SKILL.md#a"] if h % 3 == 0 else [],
        "files_read": ["SKILL.md", "k.md"] if h % 4 == 1 else (["SKILL.md"] if h % 4 == 2 else []),
    }
    if h % 7 == 0:
        out["prediction"] = None  # answered nothing
    elif h % 4 == 0:
        out["prediction"] = LABELS[(i + 1) % 3]  # another label: wrong
    return out


def _recorded_attempts(db, exp, every: bool) -> None:
    """Attempts for the runs (some only, or every one), a failed attempt with a cost before some."""
    conn = sqlite3.connect(db)
    with conn:
        runs = conn.execute(
            "SELECT id, cost, latency_ms, input_tokens, output_tokens FROM runs WHERE experiment_id=? "
            "ORDER BY id",
            (exp.id,),
        ).fetchall()
        for run_id, cost, latency, tin, tout in runs:
            if not every and run_id % 3 == 0:
                continue  # stored before attempts were recorded
            attempt = 1
            if run_id % 4 == 0:
                conn.execute(
                    "INSERT INTO run_attempts (run_id, attempt, outcome, cost, latency_ms) VALUES (?,?,?,?,?)",
                    (run_id, attempt, "failed", 0.0003 * run_id, 5.5),
                )
                attempt += 1
            conn.execute(
                "INSERT INTO run_attempts (run_id, attempt, outcome, cost, latency_ms, input_tokens, "
                "output_tokens, cached_calls, cost_saved) VALUES (?,?,?,?,?,?,?,?,?)",
                (run_id, attempt, "executed", cost, latency, tin, tout, run_id % 5 == 0, 1e-4 * (run_id % 5)),
            )
    conn.close()


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    store = open_store(tmp_path_factory.mktemp("cold") / "store")
    cases = [replace(c, domain=None) if i % 9 == 0 else c for i, c in enumerate(cases_of(60, labels=LABELS))]
    two = make_experiment(
        store,
        "two",
        cases,
        {name: [[_spec(i, a, r) for r in range(3)] for i in range(60)] for a, name in enumerate(("A", "B"))},
        label_set=LABELS,
    )
    one = make_experiment(
        store,
        "one",
        cases,
        {"solo": [[_spec(i, 2, r) for r in range(2)] for i in range(60)]},
        label_set=LABELS,
    )
    _recorded_attempts(store.db_path, two, every=False)
    _recorded_attempts(store.db_path, one, every=True)
    return store, two, one


def _old_attempt_spend(store, exp_id: int) -> dict[int, ArmSpend]:
    """The attempt sums as they were read before: every attempt joined to its run, and a probe per run."""
    from abbench.store._attempts import _add

    conn = store.conn
    recorded = conn.execute(
        "SELECT r.arm_id, count(*), total(t.outcome != 'executed'), sum(t.cost), count(t.cost), "
        "sum(CASE WHEN t.outcome != 'executed' THEN t.cost END), sum(t.input_tokens), "
        "sum(t.output_tokens), total(t.latency_ms), total(t.cached_calls > 0), total(t.cost_saved), "
        "count(CASE WHEN t.input_tokens IS NOT NULL OR t.output_tokens IS NOT NULL THEN 1 END) "
        "FROM run_attempts t JOIN runs r ON r.id = t.run_id WHERE r.experiment_id=? GROUP BY r.arm_id",
        (exp_id,),
    ).fetchall()
    legacy = conn.execute(
        "SELECT r.arm_id, count(*), 0, sum(r.cost), count(r.cost), NULL, sum(r.input_tokens), "
        "sum(r.output_tokens), total(r.latency_ms), 0, 0, "
        "count(CASE WHEN r.input_tokens IS NOT NULL OR r.output_tokens IS NOT NULL THEN 1 END) FROM runs r "
        "WHERE r.experiment_id=? AND CASE WHEN EXISTS (SELECT 1 FROM run_attempts t WHERE t.run_id = r.id) "
        "THEN 0 ELSE r.executed_at IS NOT NULL END GROUP BY r.arm_id",
        (exp_id,),
    ).fetchall()
    out: dict[int, ArmSpend] = {}
    for arm, n, failed, cost, known, failed_cost, tin, tout, latency, cached, saved, tokens in [
        *recorded,
        *legacy,
    ]:
        prior = out.get(arm, ArmSpend())
        out[arm] = ArmSpend(
            attempts=prior.attempts + int(n),
            failed_attempts=prior.failed_attempts + int(failed),
            cost=_add(prior.cost, cost),
            failed_cost=_add(prior.failed_cost, failed_cost),
            unknown_cost=prior.unknown_cost + int(n) - int(known),
            input_tokens=_add(prior.input_tokens, tin),
            output_tokens=_add(prior.output_tokens, tout),
            latency_ms=prior.latency_ms + float(latency or 0.0),
            cached_attempts=prior.cached_attempts + int(cached or 0),
            saved=prior.saved + float(saved or 0.0),
            token_attempts=prior.token_attempts + int(tokens),
        )
    return out


def _old_reads(store):
    """The store as the widgets' calls read it before: every run with `load_runs`, every sort key
    from every run, the attempt sums with the probe per run."""
    old = open_store(store.path, create=False)

    def full(s, exp_id, **kw):
        return type(s.runs).table(s.runs, exp_id, **kw)

    def executed_usage(exp_id, arm_id):
        t = full(old, exp_id)
        ex = (t.arm_id == arm_id) & ~np.isnan(t.latency_ms)
        return t.cost[ex], t.input_tokens[ex], t.output_tokens[ex], t.latency_ms[ex]

    def lowest_confidence(exp_id, arm_ids=None):
        t = full(old, exp_id)
        keep = ~np.isnan(t.confidence) & (True if arm_ids is None else np.isin(t.arm_id, arm_ids))
        cases = np.unique(t.case_idx[keep])
        lowest = np.full(cases.size, np.inf)
        np.minimum.at(lowest, np.searchsorted(cases, t.case_idx[keep]), t.confidence[keep])
        return cases, lowest

    old.runs.load_run_flags = lambda exp_id, *, arms=None, threshold=0.5: full(old, exp_id, arms=arms)
    old.runs.executed_usage = executed_usage
    old.runs.lowest_confidence = lowest_confidence
    old.attempts.spend_by_run = lambda exp_id: _old_attempt_spend(old, exp_id)
    return old


def _json(value) -> str:
    return json.dumps(value.as_dict(), sort_keys=True, default=repr)


def test_the_store_has_what_the_reads_must_get_right(built):
    store, two, _ = built
    runs = store.runs.table(two.id)
    assert set(runs.outcome.tolist()) == {0, 1, 2, 3, 4, 5}  # pending (unfinished) to cancelled
    assert np.isnan(runs.confidence).any() and np.isnan(runs.cost).any()
    assert None in runs.prediction.tolist() and len(set(runs.expected.tolist())) == 3
    assert set(runs.failure_type.tolist()) == {None, "agent_error"}
    with_attempts = {a: s.attempts for a, s in store.attempts.spend_by_run(two.id).items()}
    assert with_attempts and all(n > 0 for n in with_attempts.values())


@pytest.mark.parametrize("name", ["two", "one"])
def test_attempt_sums_equal_the_earlier_two_queries(built, name):
    store, two, one = built
    exp = two if name == "two" else one
    assert store.attempts.spend_by_run(exp.id) == _old_attempt_spend(store, exp.id)


@pytest.mark.parametrize(
    "options",
    [{}, {"arms": ["B"]}, {"arms": ["B", "A"]}, {"low_confidence": 0.35}, {"cluster": "domain"}],
)
def test_metrics_equal_those_of_the_earlier_reads(built, options):
    store, two, one = built
    old = _old_reads(store)
    assert _json(experiment_metrics(two.id, store=store, **options)) == _json(
        experiment_metrics(two.id, store=old, **options)
    )
    if not options.get("arms"):
        assert _json(experiment_metrics(one.id, store=store, **options)) == _json(
            experiment_metrics(one.id, store=old, **options)
        )


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"sort": "confidence"},
        {"sort": "wrong", "arm": "B"},
        {"sort": "domain", "offset": 10, "limit": 7},
        {"kind": "low_confidence", "threshold": 0.35, "sort": "confidence"},
        {"kind": "flaky", "arms": ["B"], "sort": "confidence"},
        {"search": "SLOW", "sort": "wrong"},
    ],
)
@pytest.mark.parametrize("name", ["two", "one"])
def test_review_pages_equal_those_of_the_earlier_reads(built, options, name):
    store, two, one = built
    exp = two if name == "two" else one
    if exp is one and (options.get("arms") or options.get("arm")):
        options = {k: v for k, v in options.items() if k not in ("arms", "arm")}
    page, before = pages_both_ways(exp.id, store, _old_reads(store), **options)
    assert page.total > 0
    assert _json(page) == _json(before)


def test_sorting_after_a_first_page_reads_the_sort_keys_then(built):
    """The listing kept for the first page (dataset order) gives the sorts the same order later."""
    store, two, _ = built
    _CACHE.clear()
    first = disagreement_page(two.id, store=store)
    later = {s: disagreement_page(two.id, store=store, sort=s) for s in ("confidence", "wrong", "domain")}
    assert len(_CACHE) == 1
    _CACHE.clear()
    old = _old_reads(store)
    for sort, page in later.items():
        _CACHE.clear()
        assert page.case_ids == disagreement_page(two.id, store=old, sort=sort).case_ids, sort
    assert sorted(first.case_ids) == sorted(later["confidence"].case_ids)
    _CACHE.clear()

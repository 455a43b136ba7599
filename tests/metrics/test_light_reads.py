"""Metrics and the review listing read runs as packed codes (`store.runs.load_run_flags`): the same figures.

Outcomes of banking77 cases are recorded for three external arms with everything that makes reading
hard: many labels, a case subset, answers outside the label set, empty and missing ones (execution failures), an answer holding
the separator SQLite's concatenation uses, execution and grading failures, runs not recorded at all
(unfinished), confidences missing, below and at the threshold, cost and tokens reported by some runs
only, one-arm selections, arms asked for out of order, and a one-arm experiment with free-text
answers and a judge's fractional scores. Every figure of `experiment_metrics` and every listing of
`disagreement_page` must equal the one computed from `store.runs.table` (the path they took before),
and the per-class figures must equal scikit-learn's on the raw runs.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score

from abbench.graders import normalise_label
from abbench.metrics import NO_PREDICTION, experiment_metrics
from abbench.runner import record_runs
from abbench.store import FAILED, PASSED, open_store
from tests.banking import one_arm_on, record_on_subset
from tests.reads import pages_both_ways

SUBSET = ["card_arrival", "exchange_rate", "age_limit", "terminate_account", "top_up_failed", "pin_blocked"]
OUTSIDE_SUBSET = ["card_linking", "lost_or_stolen_card"]


def _h(*parts: object) -> int:
    return int(hashlib.sha1("|".join(map(str, parts)).encode()).hexdigest(), 16) % 1000


def _outcome(case, arm: str, rnd: int) -> dict | None:
    """One recorded outcome (None: not recorded, the run stays unfinished), scripted by a hash."""
    h = _h(case.case_id, arm, rnd)
    if h < 40 or (arm == "c" and rnd == 3 and h < 500):
        return None
    base = {"case_id": case.case_id, "arm": arm, "round": rnd, "latency_ms": 100.0 + h / 7}
    if h < 80:
        return {**base, "error": "scripted failure", "failure_type": "timeout" if h % 2 else "agent_error"}
    wrong = 300 if arm == "a" else 150
    if h < 110:
        prediction = ""  # an empty answer
    elif h < 150:
        prediction = "I am not sure"
    elif h < wrong:
        prediction = (SUBSET + OUTSIDE_SUBSET)[h % 8]
    else:
        prediction = case.expected if h % 5 else f"  {str(case.expected).upper()} "
    if case.case_id.endswith("3") and arm == "b" and rnd == 2:
        prediction = "odd\x1eanswer"
    out = {**base, "confidence": None if h % 11 == 0 else (0.5 if h % 13 == 0 else (h % 100) / 100)}
    out["prediction"] = prediction
    if h % 3:
        out["cost"] = 0.001 * (h % 17) + 1e-9 * h
        out["usage"] = {"input_tokens": 100 + h, "output_tokens": h % 40}
    if h % 4 == 0:
        out["evidence_refs"] = ["SKILL.md#routing"]
    # What was read: nothing said, nothing, SKILL.md alone (injected: no reading), a knowledge file.
    read = {1: [], 2: ["SKILL.md"], 3: ["SKILL.md", "knowledge/routing.md"], 4: ["knowledge/routing.md"]}
    if h % 6 in read:
        out["files_read"] = read[h % 6]
    if h % 5 in (1, 2):
        out["sections_read"] = [] if h % 5 == 1 else ["SKILL.md#routing"]
    if h % 9 != 0:  # no verdict from the external tool: grading fails
        right = normalise_label(prediction, {}) == normalise_label(case.expected, {})
        out["grades"] = {"ext": {"passed": right, "score": float(right)}}
    return out


@pytest.fixture(scope="module")
def recorded(realdata, tmp_path_factory):
    store = open_store(tmp_path_factory.mktemp("light") / "store")
    # label_match advises: a run the external tool gave no verdict stays a grading failure
    graders = [{"type": "label_match", "advisory": True}, {"type": "recorded", "name": "ext"}]
    info, cases, exp = record_on_subset(store, realdata, "light", SUBSET, _outcome, graders)
    free = one_arm_on(store, info, "free", cases[:220], "solo", [{"type": "recorded", "name": "judge"}])
    record_runs(
        store,
        free,
        [
            {
                "case_id": c.case_id,
                "arm": "solo",
                "round": r,
                "prediction": f"free answer {k % 140} to {c.case_id} in round {r if k % 5 else 1}",
                "latency_ms": 10.0 + k,
                "grades": {"judge": {"passed": k % 3 > 0, "score": (k % 7) / 6}},
            }
            for k, c in enumerate(cases[:220])
            for r in (1, 2)
            if (k + r) % 10
        ],
    )
    return store, exp, free


def _old_reads(store):
    """The store as metrics and the review listing read it before: every run with `load_runs`."""

    def load_run_flags(exp_id, *, arms=None, threshold=0.5):
        return type(store.runs).table(store.runs, exp_id, arms=arms)

    def executed_usage(exp_id, arm_id):
        t = type(store.runs).table(store.runs, exp_id)
        ex = (t.arm_id == arm_id) & ~np.isnan(t.latency_ms)
        return t.cost[ex], t.input_tokens[ex], t.output_tokens[ex], t.latency_ms[ex]

    def lowest_confidence(exp_id, arm_ids=None):
        t = type(store.runs).table(store.runs, exp_id)
        keep = ~np.isnan(t.confidence) & (True if arm_ids is None else np.isin(t.arm_id, arm_ids))
        cases = np.unique(t.case_idx[keep])
        lowest = np.full(cases.size, np.inf)
        np.minimum.at(lowest, np.searchsorted(cases, t.case_idx[keep]), t.confidence[keep])
        return cases, lowest

    old = open_store(store.path, create=False)
    old.runs.load_run_flags = load_run_flags
    old.runs.executed_usage = executed_usage
    old.runs.lowest_confidence = lowest_confidence
    store = old
    return old


def _same_columns(full, light, threshold):
    assert full.arms == light.arms
    for name in ("arm_index", "arm_id", "case_idx", "round", "outcome", "state", "passed", "score"):
        assert np.array_equal(getattr(full, name), getattr(light, name), equal_nan=True), name
    for name in ("case_id", "domain", "expected", "failure_type", "prediction"):
        assert getattr(full, name).tolist() == getattr(light, name).tolist(), name
    for name in ("evidence_cited", "read_file", "read_section", "read_skill"):
        assert np.array_equal(getattr(full, name), getattr(light, name)), name
    assert np.array_equal(np.isnan(full.confidence), np.isnan(light.confidence))
    assert np.array_equal(full.confidence < threshold, light.confidence < threshold)
    assert np.array_equal(np.isnan(full.latency_ms), np.isnan(light.latency_ms))


@pytest.mark.parametrize("arms", [None, ["c", "a"], ["b"]])
@pytest.mark.parametrize("threshold", [0.5, 0.9])
def test_packed_reads_hold_the_runs_columns(recorded, arms, threshold):
    store, exp, _ = recorded
    full = store.runs.table(exp.id, arms=arms)
    light = store.runs.load_run_flags(exp.id, arms=arms, threshold=threshold)
    assert len(full) == len(light) > 0
    _same_columns(full, light, threshold)
    assert set(full.outcome.tolist()) == {0, 1, 2, 3, 4}  # unfinished, right, wrong, both failures
    if arms is None:
        assert {"odd\x1eanswer", "", None} <= set(full.prediction.tolist())
        for flag in ("evidence_cited", "read_file", "read_section"):
            assert set(getattr(full, flag).tolist()) == {True, False}, flag
    for name in arms or ["a", "b", "c"]:
        arm_id = exp.arm(name).id
        ex = (full.arm_id == arm_id) & ~np.isnan(full.latency_ms)
        expected = (full.cost[ex], full.input_tokens[ex], full.output_tokens[ex], full.latency_ms[ex])
        for got, want in zip(store.runs.executed_usage(exp.id, arm_id), expected, strict=True):
            assert np.array_equal(got, want, equal_nan=True)


def test_free_text_answers_and_judge_scores_are_read_as_they_are(recorded):
    store, _, free = recorded
    full, light = store.runs.table(free.id), store.runs.load_run_flags(free.id)
    assert len(set(full.prediction.tolist())) > 256  # past the answers SQLite numbers: read as text
    assert not set(np.unique(full.score[~np.isnan(full.score)]).tolist()) <= {0.0, 1.0}
    _same_columns(full, light, 0.5)
    # No run reported cost or tokens: the latencies alone are read, and the rest is unknown (NaN).
    ex = ~np.isnan(full.latency_ms)
    got = store.runs.executed_usage(free.id, free.arm("solo").id)
    assert np.isnan(full.cost[ex]).all() and np.isnan(full.tokens[ex]).all() and ex.sum() > 0
    for got_column, want in zip(
        got, (full.cost[ex], full.input_tokens[ex], full.output_tokens[ex], full.latency_ms[ex]), strict=True
    ):
        assert got_column.dtype == want.dtype and np.array_equal(got_column, want, equal_nan=True)


def test_the_empty_lists_the_light_reads_skip_are_the_ones_every_run_reads_skip():
    from abbench.store._light import _EMPTY_VALUES, _INJECTED_VALUES
    from abbench.store._run_columns import _EMPTY_LIST, _INJECTED_ONLY

    def sql(values):
        return "(" + ", ".join(f"'{v}'" for v in values) + ")"

    assert (sql(_EMPTY_VALUES), sql(_INJECTED_VALUES)) == (_EMPTY_LIST, _INJECTED_ONLY)


def test_outcome_and_executed_worked_out_in_numpy_are_what_the_sql_expressions_say():
    """The codes' outcome and "executed" are worked out of the state, failure type and verdict by numpy:
    on every combination a run can hold they equal `OUTCOME_SQL` and `EXECUTED_SQL` run by SQLite."""
    import itertools
    import sqlite3

    from abbench.store._light import _RAW_SQL, _code, _wide_codes
    from abbench.store._run_columns import OUTCOME_SQL, STATE_SQL, STATES
    from abbench.store.bulk._outcomes import EXECUTED_SQL

    db = sqlite3.connect(":memory:")
    db.execute(
        "CREATE TABLE runs (id INTEGER PRIMARY KEY, state TEXT, failure_type TEXT, passed INTEGER, score REAL, "
        "confidence REAL, evidence_refs TEXT, files_read TEXT, sections_read TEXT)"
    )
    combos = itertools.product(
        STATES, (None, "timeout"), (None, 0, 1), (None, 0.0, 1.0, 0.4), (None, 0.2, 0.7),
        (None, "[]", '["a"]'), (None, '["SKILL.md"]', '["x.md"]'), (None, "", '["s"]'),
    )  # fmt: skip
    db.executemany("INSERT INTO runs VALUES (NULL, ?, ?, ?, ?, ?, ?, ?, ?)", list(combos))
    text, sql_codes = db.execute(
        f"SELECT group_concat(char(48 + c), ''), group_concat(o || ',' || s || ',' || e, ';') FROM "
        f"(SELECT {_RAW_SQL} AS c, {OUTCOME_SQL} AS o, {STATE_SQL} AS s, {EXECUTED_SQL} AS e FROM runs ORDER BY id)",
        (0.5,),
    ).fetchone()
    code = _code(_wide_codes(text))
    expected = np.array([[int(v) for v in run.split(",")] for run in sql_codes.split(";")])
    assert code.size == len(STATES) * 2 * 3 * 4 * 3 * 3 * 3 * 3
    assert ((code & 7) == expected[:, 0]).all() and ((code >> 3) & 7 == expected[:, 1]).all()
    assert (((code >> 6) & 1) == expected[:, 2]).all()


def _figures(result) -> str:
    return json.dumps(result.as_dict(), sort_keys=True, default=repr)


@pytest.mark.parametrize(
    "options",
    [{}, {"arms": ["c", "a"]}, {"arms": ["b"]}, {"low_confidence": 0.9}, {"cluster": "domain"}],
)
def test_metrics_equal_those_computed_from_every_run(recorded, options):
    store, exp, free = recorded
    old = _old_reads(store)
    for experiment in (exp, free):
        assert _figures(
            experiment_metrics(experiment.id, store=store, **options if experiment is exp else {})
        ) == (_figures(experiment_metrics(experiment.id, store=old, **options if experiment is exp else {})))


def test_per_class_figures_equal_scikit_learn_on_the_raw_runs(recorded):
    store, exp, _ = recorded
    metrics = experiment_metrics(exp.id, store=store)
    runs = store.runs.table(exp.id)
    for index, name in enumerate(runs.arms):
        graded = (runs.arm_index == index) & np.isin(runs.outcome, [PASSED, FAILED])
        gold = [normalise_label(g, {}) for g in runs.expected[graded]]
        pred = [NO_PREDICTION if p is None else normalise_label(p, {}) for p in runs.prediction[graded]]
        report = metrics.arm(name).classes
        assert report.n == len(gold)
        assert report.micro.f1 == pytest.approx(accuracy_score(gold, pred))
        assert report.macro.f1 == pytest.approx(f1_score(gold, pred, average="macro", zero_division=0))
        keys = [normalise_label(label, {}) for label in report.labels]
        matrix = confusion_matrix(gold, pred, labels=keys)
        assert [list(row[: len(keys)]) for row in report.confusion.counts] == matrix.tolist()
        counts = metrics.arm(name).counts
        assert counts.graded == int(graded.sum())
        assert counts.unfinished == int(((runs.arm_index == index) & (runs.outcome == 0)).sum())


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"sort": "confidence"},
        {"sort": "wrong", "arm": "b"},
        {"kind": "flaky", "sort": "domain"},
        {"kind": "low_confidence", "threshold": 0.9},
        {"kind": "arms", "arms": ["c", "a"]},
        {"search": "ODD", "sort": "confidence"},
        {"offset": 40, "limit": 25},
    ],
)
def test_review_listing_equals_the_one_built_from_every_run(recorded, options):
    store, exp, _ = recorded
    page, before = pages_both_ways(exp.id, store, _old_reads(store), **options)
    assert page.total > 0
    assert (page.case_ids, page.counts, page.total, page.pool) == (
        before.case_ids,
        before.counts,
        before.total,
        before.pool,
    )
    assert [(i.case.case_id, i.kinds, i.arms) for i in page.items] == [
        (i.case.case_id, i.kinds, i.arms) for i in before.items
    ]


def test_spend_counts_executions_stored_without_attempts_summed_in_the_runs_order(recorded, tmp_path):
    """Stores written before attempts were recorded: such an execution counts as one attempt of its own."""
    import shutil
    import sqlite3

    store, exp, _ = recorded
    shutil.copytree(store.path, tmp_path / "copy")
    conn = sqlite3.connect(tmp_path / "copy" / "abbench.db")
    with conn:
        conn.execute("DELETE FROM run_attempts WHERE run_id % 3 = 0")
    runs = conn.execute(
        "SELECT arm_id, id, executed_at IS NOT NULL, cost, latency_ms FROM runs WHERE experiment_id=? "
        "ORDER BY arm_id, case_idx, round",
        (exp.id,),
    ).fetchall()
    attempts: dict[int, list[tuple[float | None, float | None]]] = {}
    for run_id, cost, latency in conn.execute(
        "SELECT run_id, cost, latency_ms FROM run_attempts ORDER BY run_id, attempt, id"
    ):
        attempts.setdefault(run_id, []).append((cost, latency))
    conn.close()
    spend = open_store(tmp_path / "copy", create=False).attempts.spend_by_run(exp.id)
    bare = 0
    for arm in exp.arms:
        mine = [r for r in runs if r[0] == arm.id]
        tried = [a for r in mine for a in attempts.get(r[1], [])]
        legacy = [(r[3], r[4]) for r in mine if r[1] not in attempts and r[2]]
        bare += len(legacy)
        got = spend[arm.id]
        assert got.attempts == len(tried) + len(legacy)
        assert got.unknown_cost == sum(c is None for c, _ in tried + legacy)
        cost = latency = 0.0
        for part in (tried, legacy):  # each part summed in order, as SQLite's sum() adds
            total = 0.0
            for c, _ in part:
                total = total + c if c is not None else total
            cost += total
            latency += sum((lat or 0.0 for _, lat in part), 0.0)
        assert got.cost == cost and got.latency_ms == latency  # bit for bit
    assert bare > 0


@pytest.mark.parametrize(
    "case_idx",
    [[], [0], [5, 5, 5], [0, 0, 1, 1, 2, 2], [3, 1, 3, 7, 0, 7], [9, 2, 2, 40, 2, 9, 0], [2**20, 1, 2**20]],
)
def test_case_positions_are_what_numpy_unique_gives(case_idx):
    from abbench.metrics._api import _case_positions

    values = np.asarray(case_idx, dtype=np.int64)
    got, want = _case_positions(values), np.unique(values, return_inverse=True)
    for g, w in zip(got, want, strict=True):
        assert g.dtype == w.dtype and g.shape == w.shape and np.array_equal(g, w)


@pytest.mark.parametrize("arms", [None, ["c", "a"], ["b"]])
def test_each_arm_seen_as_views_holds_the_rows_a_mask_picks(recorded, arms):
    from abbench.metrics._api import _unique_gold

    store, exp, _ = recorded
    for table in (store.runs.table(exp.id, arms=arms), store.runs.load_run_flags(exp.id, arms=arms)):
        gold = [v for v in pd.unique(table.expected) if v is not None and v == v]
        assert _unique_gold(table) == gold
        for index in range(len(table.arms)):
            view, copy = table.select(table.arm_rows(index)), table.select(table.arm_index == index)
            assert len(view) == len(copy) > 0
            for name in ("arm_id", "case_idx", "round", "outcome", "passed", "score", "latency_ms"):
                assert np.array_equal(getattr(view, name), getattr(copy, name), equal_nan=True), name
            for name in ("case_id", "domain", "expected", "prediction", "failure_type"):
                assert getattr(view, name).tolist() == getattr(copy, name).tolist(), name


@pytest.mark.parametrize(
    ("case_idx", "expected"),
    [
        ([], []),
        ([0, 0, 1, 1], ["b", "b", None, None]),
        ([0, 1, 2, 0, 1, 2], ["x", float("nan"), "X", "x", float("nan"), "X"]),
        ([4, 4, 2, 2, 4], ["é\x1e", "é\x1e", "", "", "é\x1e"]),
        (
            [1, 2, 3, 1, 2, 3],
            ["=1+2", "Card Arrival", "card_arrival", "=1+2", "Card Arrival", "card_arrival"],
        ),
    ],
)
def test_unique_gold_keeps_the_order_values_first_appear_in(case_idx, expected):
    from abbench.metrics._api import _unique_gold

    column = np.empty(len(expected), dtype=object)
    column[:] = expected
    got = _unique_gold(_Runs(np.asarray(case_idx, dtype=np.int64), column))
    assert got == [v for v in pd.unique(column) if v is not None and v == v]


@dataclass(frozen=True)
class _Runs:
    """The two columns `_unique_gold` reads, of runs side by side per case."""

    case_idx: np.ndarray
    expected: np.ndarray

    def __len__(self) -> int:
        return self.case_idx.size

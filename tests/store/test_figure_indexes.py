"""Migration 14 and the reads beside it: attempt spend summed from `run_attempts_spend`, the distinct
answers, the case fields kept between figures, reads on a helper thread (`read_aside`)."""

from __future__ import annotations

import sqlite3
import threading

import pytest

from abbench.metrics import experiment_metrics
from abbench.runner import create_experiment, record_runs
from abbench.store import SCHEMA_VERSION, open_store
from abbench.store._light import MAX_ANSWER_CODES, _distinct_answers
from abbench.store._migrations import migrate
from abbench.types import Case


def test_a_store_at_version_13_gains_the_figure_indexes(tmp_path):
    conn = sqlite3.connect(tmp_path / "old.db", isolation_level=None)
    migrate(conn, upto=13)

    def indexes() -> set[str]:
        return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}

    assert "run_attempts_run" in indexes() and "run_attempts_spend" not in indexes()
    assert 14 in migrate(conn)
    assert "run_attempts_spend" in indexes()
    assert "run_attempts_run" not in indexes()  # replaced: still one index per attempt to write
    conn.close()
    assert SCHEMA_VERSION >= 14


def _experiment(store, answers, arms=("a", "b")):
    """An experiment over 300 cases whose runs answer `answers(case, arm)` (None: no answer)."""
    cases = [Case(f"q{i:03d}", f"query {i}", "fast" if i % 2 else "slow") for i in range(300)]
    ds = store.datasets.save("walk", cases, label_set=["fast", "slow"])
    exp = create_experiment(
        {"name": "walk", "dataset": ds.fingerprint, "arms": {a: {"agent": "builtin"} for a in arms}},
        store=store,
    )
    outcomes = []
    for arm in arms:
        for c in cases:
            answer = answers(c, arm)
            outcomes.append(
                {
                    "case_id": c.case_id,
                    "arm": arm,
                    "prediction": answer,
                    "error": None if answer else "no answer",
                }
            )
    record_runs(store, exp, outcomes)
    return exp


def _walked(store, exp):
    return _distinct_answers(store.conn.cursor(), "FROM runs WHERE experiment_id=?", (exp.id,))


def _plain(store, exp):
    rows = store.query(
        "SELECT DISTINCT prediction FROM runs WHERE experiment_id=? AND prediction IS NOT NULL", (exp.id,)
    )
    return sorted(str(r[0]) for r in rows)


@pytest.mark.parametrize(
    "answers",
    [
        lambda c, arm: c.expected,  # two labels
        lambda c, arm: None if c.case_id.endswith("7") else ("Fast" if arm == "b" else c.expected),
        lambda c, arm: f"label {int(c.case_id[1:]) % 250}",  # just under the most numbered
    ],
)
def test_every_distinct_answer_is_found(tmp_path, answers):
    store = open_store(tmp_path / "store")
    exp = _experiment(store, answers)
    walked = _walked(store, exp)
    assert walked is not None and sorted(text for _, text in walked) == _plain(store, exp)
    store.close()


def test_more_answers_than_can_be_numbered_are_read_as_text(tmp_path):
    store = open_store(tmp_path / "store")
    exp = _experiment(store, lambda c, arm: f"free text {c.case_id} {arm}", arms=("only",))
    assert len(_plain(store, exp)) == 300 > MAX_ANSWER_CODES
    assert _walked(store, exp) is None
    arm = experiment_metrics(exp.id, store=store).arm("only")
    assert arm.accuracy is not None and arm.accuracy.value == pytest.approx(0.0)  # no answer is a label
    store.close()


def test_case_fields_kept_between_figures_are_read_again_after_a_write(tmp_path):
    store = open_store(tmp_path / "store")
    exp = _experiment(store, lambda c, arm: "fast", arms=("a",))
    before = experiment_metrics(exp.id, store=store).arm("a").accuracy.value
    assert before == pytest.approx(0.5)
    with store.transaction() as conn:  # every gold becomes "fast": every run is now right
        conn.execute("UPDATE cases SET expected='fast'")
        conn.execute("UPDATE runs SET passed=1, state='pass' WHERE experiment_id=?", (exp.id,))
    after = experiment_metrics(exp.id, store=store).arm("a").accuracy.value
    assert after == pytest.approx(1.0)
    other = open_store(tmp_path / "store")  # a write by another connection is seen too
    with other.transaction() as conn:
        conn.execute("UPDATE runs SET passed=0, state='fail' WHERE experiment_id=?", (exp.id,))
    other.close()
    assert experiment_metrics(exp.id, store=store).arm("a").accuracy.value == pytest.approx(0.0)
    store.close()


def test_a_read_aside_runs_on_its_own_thread_and_hands_back_its_error(tmp_path):
    store = open_store(tmp_path / "store")
    main = threading.get_ident()
    aside = store.read_aside(lambda: (threading.get_ident(), store.query_one("SELECT count(*) FROM runs")[0]))
    ident, count = aside.result()
    assert ident != main and count == 0
    failing = store.read_aside(lambda: store.query("SELECT * FROM no_such_table"))
    with pytest.raises(sqlite3.OperationalError, match="no_such_table"):
        failing.result()
    with store.transaction() as conn:  # inside one, the helper's connection would not see the write
        conn.execute("INSERT INTO meta(key, value) VALUES ('probe', 'v')")
        inside = store.read_aside(
            lambda: (threading.get_ident(), store.query("SELECT value FROM meta WHERE key='probe'"))
        )
        ident, rows = inside.result()
        assert ident == main and [r[0] for r in rows] == ["v"]
    store.close()

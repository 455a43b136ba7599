"""Listing experiments reads their arms and their skills' names in a few queries, however many there are."""

from __future__ import annotations

from abbench.runner import create_experiment
from tests.conftest import DEMO

SKILLS = DEMO / "skills"


def _create(store, name: str, arms: dict[str, str | None]) -> None:
    create_experiment(
        {
            "name": name,
            "dataset": "demo",
            "cases": {"limit": 2},
            "arms": {
                arm: {"agent": "builtin", **({"skill": str(SKILLS / skill)} if skill else {})}
                for arm, skill in arms.items()
            },
        },
        store=store,
    )


def _statements(store, read) -> int:
    seen: list[str] = []
    store.conn.set_trace_callback(seen.append)
    try:
        read()
    finally:
        store.conn.set_trace_callback(None)
    return len(seen)


def test_listing_reads_arms_and_skills_in_queries_not_growing_with_experiments(store):
    store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
    _create(store, "first", {"z-last": "fast-slow-routing-v1", "a-first": "fast-slow-routing-v2"})
    _create(store, "bare", {"solo": None})
    few = _statements(store, store.experiments.all)
    for i in range(4):
        _create(store, f"more{i}", {"control": "fast-slow-routing-v1", "treatment": "in-car-media"})
    many = _statements(store, store.experiments.all)
    assert many == few

    listed = {e.name: e for e in store.experiments.all()}
    assert len(listed) == 6
    for name, exp in listed.items():
        one = store.experiments.get(exp.id)  # read alone, the same experiment
        assert exp == one, name
    first = listed["first"]
    assert [a.name for a in first.arms] == ["z-last", "a-first"]  # the definition's order
    assert [a.skill_name for a in first.arms] == ["fast-slow-routing", "fast-slow-routing"]
    assert first.arms[0].snapshot != first.arms[1].snapshot
    assert [a.skill_name for a in listed["more3"].arms] == ["fast-slow-routing", "in-car-media"]
    assert listed["bare"].arms[0].skill_name is None and listed["bare"].arms[0].version is None

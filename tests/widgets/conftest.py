"""Fixtures for widget tests: small datasets and experiments in a real store."""

from __future__ import annotations

import pytest

from abbench.types import Case
from tests.conftest import DEMO
from tests.widgets import agents


@pytest.fixture(autouse=True)
def _no_failures():
    agents.FAIL_EXECUTION.clear()
    agents.FAIL_GRADING.clear()
    yield
    agents.FAIL_EXECUTION.clear()
    agents.FAIL_GRADING.clear()


def make_cases(n: int) -> list[Case]:
    """`n` cases c00.. with gold fast/slow over three domains."""
    domains = ("导航", "车控", "媒体")
    return [
        Case(f"c{i:02d}", f"query {i} <i>{i}</i>", "fast" if i % 3 else "slow", domain=domains[i % 3])
        for i in range(n)
    ]


@pytest.fixture
def small(store):
    """A dataset of 24 cases."""
    return store.save_dataset("small", make_cases(24), label_set=["fast", "slow"])


@pytest.fixture
def demo(store):
    """The demo dataset imported from cases.csv with its mapping profile."""
    return store.import_dataset(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")


def python_arm(**params) -> dict:
    """An arm running `tests.widgets.agents:answer`."""
    return {"agent": "python", "function": "tests.widgets.agents:answer", **params}

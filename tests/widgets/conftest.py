"""Fixtures for widget tests: small datasets and experiments in a real store."""

from __future__ import annotations

import pytest

from abbench.types import Case
from tests.browser import require_chromium
from tests.conftest import DEMO
from tests.widgets import agents
from tests.widgets.lab import Lab, jupyterlab


@pytest.fixture(autouse=True)
def _close_widgets():
    """Close the test's widgets afterwards, so a run widget stops following its (finished) store."""
    yield
    import ipywidgets

    ipywidgets.Widget.close_all()


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
    return store.datasets.save("small", make_cases(24), label_set=["fast", "slow"])


@pytest.fixture
def demo(store):
    """The demo dataset imported from cases.csv with its mapping profile."""
    return store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")


def without_errors(widget):
    """`widget`, once its errors panel is checked to be empty (it opened what it was given)."""
    assert widget.errors.message is None
    return widget


def python_arm(skill: str | None = None, **params) -> dict:
    """An arm running `tests.widgets.agents:answer`, a test double that reads the gold (with a skill folder, when given)."""
    arm = {"agent": "python", "function": "tests.widgets.agents:answer", "sees_gold": True, **params}
    if skill is not None:
        arm["skill"] = skill
    return arm


@pytest.fixture
def skill(tmp_path):
    """A small skill folder (SKILL.md with a 规则 section)."""
    from tests.skillfiles import SKILL_V1, write_files

    return write_files(tmp_path / "skill", SKILL_V1)


@pytest.fixture
def ab(store, small, skill):
    """A finished two-arm experiment over `small`, two rounds, with known disagreements.

    Arm ``a`` (no skill) is wrong on c01, c02 (and every id ending in 7); arm ``b`` (with the skill) on
    c02, c03, in round 0 on c04 (flaky), cites nothing for c06 and words its reason for c08 otherwise.
    So c01 is fixed, c03 and c04 regressed (c04 passes one round of two).
    """
    from abbench.runner import create_experiment, run_experiment

    exp = create_experiment(
        {
            "name": "ab",
            "dataset": small.fingerprint,
            "rounds": 2,
            "arms": {
                "a": python_arm(wrong=["c01", "c02"]),
                "b": python_arm(
                    wrong=["c02", "c03"], flaky=["c04"], silent=["c06"], rephrase=["c08"], skill=str(skill)
                ),
            },
        },
        store=store,
    )
    run_experiment(exp.id, store=store)
    return store.experiments.get(exp.id)


@pytest.fixture
def no_domains(store):
    """Experiment "plain": 12 cases without a domain (as IBM's VIRA), arm a wrong on c01, arm b right."""
    from abbench.runner import create_experiment, run_experiment

    cases = [Case(f"c{i:02d}", f"question {i}", "fast" if i % 2 else "slow") for i in range(12)]
    ds = store.datasets.save("plain", cases, label_set=["fast", "slow"])
    spec = {
        "name": "plain",
        "dataset": ds.fingerprint,
        "arms": {"a": python_arm(wrong=["c01"]), "b": python_arm()},
    }
    run_experiment(create_experiment(spec, store=store).id, store=store)
    return "plain"


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory):
    """One JupyterLab on 127.0.0.1 for the session's browser tests (one per xdist worker), started when the
    first asks for it: `lab` gives each test a folder of its own on it. Skips without Chromium."""
    require_chromium()
    root = tmp_path_factory.mktemp("lab")
    with jupyterlab(root) as url:
        yield Lab(url, root)


@pytest.fixture
def lab(lab_server, tmp_path):
    """The test's own folder on the shared JupyterLab (`Lab`); the kernels it started are shut down after it."""
    folder = lab_server.folder(tmp_path.name)
    yield folder
    folder.shut_down_kernels()

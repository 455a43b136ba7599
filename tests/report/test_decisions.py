"""Report pages make no claim their data cannot carry: nothing run yet, a pair nobody named."""

from __future__ import annotations

import re

import pytest

from abbench.runner import create_experiment, run_experiment
from abbench.store import open_store
from tests.conftest import DEMO
from tests.report.conftest import parse_page

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("reports")]

SKILLS = DEMO / "skills"
# Sentences that are true of nothing at all when no run has executed.
VACUOUS = (
    "No case regressed",
    "agrees with the gold",
    "several rounds",
    "All 0 runs",
    "No judge graded",
    "better than",
    "worse than",
)


@pytest.fixture
def demo_cli(cli):
    """The `cli` fixture over a store holding the demo's cases."""
    store = open_store(cli.store_dir)
    ds = store.datasets.import_file(DEMO / "cases.csv", DEMO / "mapping-csv.yaml", name="demo")
    cli.fingerprint = ds.fingerprint
    cli.store = store
    yield cli
    store.close()


def _builtin(skill: str | None = None) -> dict:
    """A builtin arm, given the demo's skill `skill` when named."""
    return {"agent": "builtin", "skill": str(SKILLS / skill)} if skill else {"agent": "builtin"}


def _experiment(demo_cli, name: str, cases: int, arms: dict):
    """Experiment `name` (not run): one round of `arms` on the first `cases` demo cases."""
    definition = {"name": name, "dataset": demo_cli.fingerprint, "rounds": 1, "cases": {"limit": cases}}
    return create_experiment({**definition, "arms": arms}, store=demo_cli.store)


def test_a_report_on_an_experiment_with_nothing_run_says_so_and_claims_nothing(demo_cli, tmp_path):
    _experiment(demo_cli, "not-yet", 20, {"v1": _builtin(), "v2": _builtin("fast-slow-routing-v2")})
    out = tmp_path / "not-yet.html"
    result = demo_cli("report", "not-yet", "--out", out, "--json")
    assert result.exit_code == 0, result.output
    assert "warning: #1 not-yet: nothing has run yet; the page shows no verdict" in result.stderr
    page = parse_page(out.read_text(encoding="utf-8"))
    top = page.text.split("Decision")[0]
    assert "Nothing has run yet: none of the 40 planned runs of not-yet has executed" in top
    assert (
        "Arms v1 and v2 use the builtin stand-in agent (offline BM25 lookup, not a model): their figures show "
        "the workflow, not an agent's quality." in top
    )  # in the header, above the verdict
    for sentence in VACUOUS:
        assert sentence not in page.text, sentence
    assert "NO VERDICT YET" in page.text
    for verdict in ("PASS", "BLOCK", "INCOMPLETE", "INCONCLUSIVE"):
        assert verdict not in page.text
    none = re.search(r"\bNone\b", page.text)  # the cost table says "no executed run", not None
    assert none is None, page.text[max(0, none.start() - 200) : none.end() + 100]


def test_three_arms_and_no_pair_named_render_every_other_section_and_exit_2(demo_cli, tmp_path):
    arms = {
        "no-skill": _builtin(),
        "v1": _builtin("fast-slow-routing-v1"),
        "v2": _builtin("fast-slow-routing-v2"),
    }
    exp = _experiment(demo_cli, "three", 30, arms)
    run_experiment(exp.id, store=demo_cli.store)
    out = tmp_path / "three.html"
    result = demo_cli("report", "three", "--out", out)
    assert result.exit_code == 2, result.output
    assert "no decision" in result.stderr and "no-skill, v1, v2" in result.stderr
    assert out.exists()  # written all the same
    page = parse_page(out.read_text(encoding="utf-8"))
    decision = page.text.split("Decision")[1].split("Arms")[0]
    assert "NO DECISION" in decision and "has 3 arms (no-skill, v1, v2)" in decision
    assert "Arms no-skill, v1 and v2 use the builtin stand-in agent" in page.text.split("Decision")[0]
    assert "decision: {baseline: A, candidate: B}" in decision and "--arms A B" in decision
    for word in ("PASS", "BLOCK"):
        assert word not in page.text
    # Everything else still renders: the arms, every arm against the first, confusion matrices, provenance.
    assert "Every arm against the baseline" in page.text and "Cochran" in page.text
    assert "gold runs" in page.text and "snapshot hash" in page.text
    assert "No case regressed" not in page.text and "agrees with the gold" not in page.text

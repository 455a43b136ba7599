"""The report command: one page, a batch, and its usage errors."""

from __future__ import annotations

import json

import pytest

from abbench.store import open_store
from tests.experiments import build_all


@pytest.fixture
def cli_store(cli):
    """The `cli` fixture's store, holding the fixture experiments."""
    store = open_store(cli.store_dir)
    build_all(store, cli.store_dir.parent / "files", only=("single-case", "no-discordant", "three-arm"))
    store.close()
    return cli


@pytest.mark.slow
def test_report_one_and_a_batch(cli_store, tmp_path):
    out = tmp_path / "one" / "single.html"
    result = cli_store("report", "single-case", "--arms", "control", "treatment", "--out", out, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["html_path"] == str(out) and out.exists() and out.with_suffix(".ipynb").exists()
    assert data["title"] == "single-case: treatment vs control"
    # One case cannot show the treatment is not worse: the default capability rule is inconclusive, never a pass.
    assert data["decision"] == "inconclusive" and "treatment" in data["headline"]
    result = cli_store("report", "--all-since", "2000-01-01", "--out-dir", tmp_path / "nightly")
    # three-arm names no pair: its page is written without a decision, and the batch says so (exit 2).
    assert result.exit_code == 2, result.output
    assert result.output.count("wrote ") == 3
    # One case, and 30 cases that never moved (95% CI about ±11 points), settle nothing against a 2-point margin.
    assert result.output.count("treatment vs control: INCONCLUSIVE") == 2
    assert "treatment vs control: PASS" not in result.output
    assert "#1 three-arm  NO DECISION" in result.output
    assert "warning: #1 three-arm: no decision: " in result.stderr and "(none, v1, v2)" in result.stderr
    assert {p.name for p in (tmp_path / "nightly").glob("*.html")} == {
        "single-case.html",
        "no-discordant.html",
        "three-arm.html",
    }


@pytest.mark.slow
def test_fail_on_block_exits_1_after_writing_the_page(cli_store, tmp_path):
    gate = tmp_path / "strict.yaml"
    gate.write_text("rules:\n  - accuracy >= 1.01\n", encoding="utf-8")  # no arm can pass it
    out = tmp_path / "blocked.html"
    args = ("report", "single-case", "--arms", "control", "treatment", "--gate", gate, "--out", out)
    result = cli_store(*args, "--fail-on-block")
    assert result.exit_code == 1, result.output
    assert (
        "decision: treatment vs control: BLOCK (decided on 1 of 1 runs per arm)" in result.output
        and out.exists()
    )
    result = cli_store(*args)  # without the flag a written report is a success, whatever it decides
    assert result.exit_code == 0 and "decision: treatment vs control: BLOCK" in result.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "name an experiment, several, or --all-since DATE"),
        (("three-arm", "--all-since", "2026-01-01"), "not both"),
        (("three-arm", "single-case", "--out", "x.html"), "a batch uses --out-dir"),
        (("nope",), "no experiment named 'nope'"),
        (("three-arm", "--arms", "none", "nope"), "has no arm 'nope'; its arms: none, v1, v2"),
        (("--all-since", "yesterday"), "write it as YYYY-MM-DD"),
    ],
)
def test_report_usage_errors(cli_store, args, message):
    result = cli_store("report", *args)
    assert result.exit_code == 2
    assert message in result.output

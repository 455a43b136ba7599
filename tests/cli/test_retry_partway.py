"""A retry that does not run to the end says so, rather than "re-ran N runs"."""

from __future__ import annotations

from tests.conftest import DEMO


def test_a_retry_paused_by_its_budget_says_what_did_not_run(cli, tmp_path):
    definition = tmp_path / "exp.yaml"
    definition.write_text(
        f"""name: tight
dataset: {{file: {DEMO / "cases.csv"}, mapping: {DEMO / "mapping-csv.yaml"}, name: demo}}
cases: {{sample: 12, seed: 3}}
graders: [label_match]
arms:
  only: {{agent: builtin}}
budget: {{max_tokens: 1500}}
concurrency: 1
""",
        encoding="utf-8",
    )
    first = cli("run", definition)
    assert first.exit_code == 3, first.output  # paused on its budget with runs still pending
    assert cli("cancel", "tight").exit_code == 0
    retried = cli("retry", "tight", "--cancelled")
    assert "re-ran" not in retried.output, retried.output
    assert "but the experiment was paused part-way" in retried.output, retried.output
    assert "`abbench resume tight` runs the rest" in retried.output

"""A new user's path through the CLI on data the demo never saw: banking77, their own skill and gate."""

from __future__ import annotations

import csv
import json
import sys

import pytest

INTENTS = ["card_arrival", "lost_or_stolen_card", "pin_blocked", "exchange_rate", "terminate_account"]

SKILL = """---
name: banking-intents
description: Route a banking customer's message to one of five support intents.
labels: [card_arrival, lost_or_stolen_card, pin_blocked, exchange_rate, terminate_account]
---
# Banking support intents

## card_arrival
- "has not arrived", "not received my card", "when will I get my card", "track my card"

## lost_or_stolen_card
- "lost my card", "card was stolen", "can't find my card", "someone stole"

## pin_blocked
- "PIN blocked", "unblock my PIN", "wrong PIN too many times"

## exchange_rate
- "exchange rate", "exchange rates", "currency rate"

## terminate_account
- "close my account", "delete my account", "cancel my account"
"""


@pytest.fixture
def banking(cli, realdata, tmp_path):
    """banking77's test split imported through a saved, suggested profile; a skill folder beside it."""
    data = realdata / "banking77" / "test.csv"
    saved = cli("import", data, "--suggest", "--save-profile", "banking")
    assert saved.exit_code == 0, saved.output
    imported = cli("import", data, "--mapping", "banking", "--name", "banking77")
    assert imported.exit_code == 0, imported.output
    skill = tmp_path / "skills" / "banking-intents"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL, encoding="utf-8")
    return tmp_path


def test_no_skill_against_my_skill_on_a_subset_of_intents(cli, banking):
    definition = banking / "exp.yaml"
    definition.write_text(
        f"""name: banking-5
dataset: banking77
rounds: 2
graders: [label_match, read_skill, cited_evidence]
cases:
  labels: &intents {json.dumps(INTENTS)}
arms:
  no-skill: {{agent: builtin, labels: *intents, temperature: 0.3}}
  skill: {{agent: builtin, skill: skills/banking-intents, temperature: 0.3}}
""",
        encoding="utf-8",
    )
    run = cli("run", definition, "-q")
    assert run.exit_code == 0, run.output
    assert (
        "executed 800, graded 800, execution failed 0, grading failed 0" in run.output
    )  # 5 intents × 40 cases × 2 rounds × 2 arms
    assert "failures:" not in run.output

    compare = cli("compare", "banking-5", "--json")
    data = json.loads(compare.output)
    assert data["n_cases"] == 200 and data["verdict"]["code"] == "no_detectable_difference"

    gate = banking / "gate.yaml"
    gate.write_text(
        "rules:\n  - {metric: diff_ci_low, op: '>=', value: 0}\n  - 'recall[card_arrival] >= 0.99'\n",
        encoding="utf-8",
    )
    blocked = cli("gate", "banking-5", "--rules", gate)
    assert blocked.exit_code == 1 and "GATE BLOCK" in blocked.output

    listed = cli("disagreements", "banking-5", "--kind", "gold", "--arm", "skill", "--json")
    case_id = json.loads(listed.output)[0]["case"]["case_id"]
    reviewed = cli("review", "banking-5", case_id, "--verdict", "ambiguous_standard", "--arm", "skill")
    assert reviewed.exit_code == 0, reviewed.output
    shown = cli("case", "banking-5", case_id)
    assert "grades: " in shown.output and "ambiguous_standard" in shown.output

    out = banking / "runs.csv"
    exported = cli("export", "banking-5", "--format", "csv", "--out", out)
    assert exported.exit_code == 0, exported.output
    with out.open(encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 800 and {r["expected"] for r in rows} == set(INTENTS)


def test_run_and_status_say_which_runs_are_errors_not_wrong_answers(cli, banking):
    definition = banking / "broken.yaml"
    crash = "import sys; sys.stderr.write('no model configured'); sys.exit(3)"
    definition.write_text(
        f"""name: broken
dataset: banking77
retries: 0
cases: {{labels: [card_arrival], limit: 4}}
arms:
  script: {{agent: command, argv: [{json.dumps(sys.executable)}, -c, {json.dumps(crash)}]}}
""",
        encoding="utf-8",
    )
    for args in (("run", definition, "-q"), ("status", "broken")):
        result = cli(*args)
        assert result.exit_code == 0, result.output
        assert "failures: 4 run(s) got no verdict (errors, not wrong answers):" in result.output
        assert "execution agent_error: 4 (script 4)" in result.output
        assert "no model configured" in result.output
        assert "re-run them: abbench retry broken --failed" in result.output


def test_a_changed_skill_gives_a_new_experiment_that_the_list_tells_apart(cli, banking):
    definition = banking / "exp.yaml"
    definition.write_text(
        "name: again\ndataset: banking77\ncases: {labels: [card_arrival], limit: 3}\n"
        "arms:\n  skill: {agent: builtin, skill: skills/banking-intents}\n",
        encoding="utf-8",
    )
    assert cli("create", definition).exit_code == 0
    skill_md = banking / "skills" / "banking-intents" / "SKILL.md"
    skill_md.write_text(skill_md.read_text(encoding="utf-8") + '- "where is my card"\n', encoding="utf-8")
    assert cli("create", definition).exit_code == 0  # another skill version: another experiment
    listed = cli("experiments").output.splitlines()
    versions = {line.split()[5] for line in listed if " again " in line}
    assert len(versions) == 2 and all(v.startswith("banking-intents@") for v in versions), listed
    latest = max(int(line.split()[0].lstrip("#")) for line in listed if " again " in line)
    status = cli("status", "again")  # the latest of the two (tests/cli/test_same_name.py: the note)
    assert status.exit_code == 0 and f"again (#{latest})" in status.output, status.output


def test_status_of_a_finished_local_run_says_it_ran_here(cli, banking):
    definition = banking / "local.yaml"
    definition.write_text(
        "name: local\ndataset: banking77\ncases: {limit: 3}\narms:\n  base: {agent: builtin, labels: dataset}\n",
        encoding="utf-8",
    )
    assert (
        "executes locally when run (not started)"
        in cli("create", definition).output + cli("status", "local").output
    )
    assert cli("run", "local", "-q").exit_code == 0
    status = cli("status", "local").output
    assert "last executed locally" in status and "not started" not in status, status

"""`abbench case` prints an agent's answer, reason and error as text: a model's output cannot drive the
terminal (clear it, recolour it, forge a line with a carriage return), as the input and history cannot."""

from __future__ import annotations

import json

from tests.conftest import demo_source

ESCAPE = "\x1b[2J\x1b[31m"


def answers_with_escapes(task):
    """A python agent whose answer and reason carry terminal escapes (what a model may write)."""
    return {"prediction": f"fast{ESCAPE}", "reason": f"because\r{ESCAPE}forged"}


def test_an_answer_cannot_drive_the_terminal(cli, tmp_path):
    spec = {
        "name": "esc",
        "dataset": demo_source(),
        "cases": {"limit": 1},
        "graders": ["label_match"],
        "arms": {"a": {"agent": "python", "function": f"{__name__}:answers_with_escapes"}},
    }
    path = tmp_path / "esc.yaml"
    path.write_text(json.dumps(spec), encoding="utf-8")
    ran = cli("run", path, "-q")
    assert ran.exit_code == 0, ran.output
    (found,) = json.loads(cli("disagreements", "esc", "--json").output)
    assert "\x1b" in found["runs"][0]["reason"]  # stored as the agent gave it (--json keeps it as it is)
    out = cli("case", "esc", found["case"]["case_id"]).output
    assert "\x1b" not in out and "\r" not in out, repr(out)
    assert "because\\r\\x1b[2J\\x1b[31mforged" in out  # shown as its codes, on the run's own line

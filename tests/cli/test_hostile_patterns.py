"""A mapping's `match` runs on RE2 (issue 36, item 2): through the CLI, a pattern that backtracks 2^40
steps in Python answers at once, and one RE2 cannot run is refused when the mapping is read."""

from __future__ import annotations

import json

from tests.conftest import run_abbench
from tests.test_regex import CATASTROPHIC, HOSTILE_TEXT


def _files(tmp_path, pattern: str):
    data = tmp_path / "cases.csv"
    data.write_text(f"id,query,label\n1,{HOSTILE_TEXT},fast\n2,aaa,slow\n", encoding="utf-8")
    mapping = tmp_path / "m.json"
    mapping.write_text(
        json.dumps(
            {"fields": {"case_id": "id", "input": {"column": "query", "match": pattern}, "expected": "label"}}
        )
    )
    return data, mapping


def test_a_match_pattern_that_backtracks_answers_at_once_in_a_child_process(tmp_path):
    data, mapping = _files(tmp_path, CATASTROPHIC)
    # the timeout only ends the code before the fix, which ran for hours; it asserts nothing about speed
    done = run_abbench(
        "--store", tmp_path / "s", "import", data, "--mapping", mapping, "--skip-invalid", timeout=300
    )
    assert done.returncode == 0, done.stderr
    assert "line 2" in done.stdout + done.stderr and "finds nothing" in done.stdout + done.stderr


def test_a_match_pattern_re2_cannot_run_is_refused_when_the_mapping_is_read(cli, tmp_path):
    data, mapping = _files(tmp_path, r"(?<=a)(a+)")
    result = cli("import", data, "--mapping", mapping)
    assert result.exit_code == 2, result.output
    assert "match: '(?<=a)(a+)' uses a lookahead or lookbehind" in result.output
    assert "cannot run on RE2" in result.output and "Traceback" not in result.output

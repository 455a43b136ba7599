"""Every command's ``--help`` shows examples that use the command."""

from __future__ import annotations

import pytest

DATASETS = ["import", "datasets", "profiles"]
GRADES = ["grade", "grades", "judge-report"]
SNAPSHOTS = ["snapshot", "snapshots", "show-ref", "diff-skill"]


@pytest.mark.parametrize(
    ("command", "heading"),
    [*((c, "Examples:") for c in DATASETS + SNAPSHOTS), *((c, "Example") for c in GRADES)],
)
def test_every_command_has_help_with_examples(cli, command, heading):
    result = cli(command, "--help")
    assert result.exit_code == 0
    assert heading in result.output and f"abbench {command}" in result.output

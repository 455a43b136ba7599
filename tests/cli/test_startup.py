"""`abbench --help` loads neither the numeric stack nor the snapshot package (checked by what loads, not by time)."""

from __future__ import annotations

import subprocess
import sys

from abbench.cli._snapshot import MAX_FILES
from abbench.snapshot import DEFAULT_MAX_FILES

from ..conftest import REPO, subprocess_env

HEAVY = ("numpy", "pandas", "scipy", "statsmodels", "plotly", "pydantic", "asyncio", "abbench.snapshot")


def test_help_loads_nothing_heavy():
    probe = (
        "import sys, runpy\n"
        "sys.argv = ['abbench', '--help']\n"
        "try:\n    runpy.run_module('abbench', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        f"print(sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe],
        cwd=REPO,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert "Usage: abbench" in out.stdout
    assert out.stdout.strip().splitlines()[-1] == "[]", out.stdout.splitlines()[-1]


def test_the_cli_default_of_max_files_is_the_snapshot_packages():
    assert MAX_FILES == DEFAULT_MAX_FILES

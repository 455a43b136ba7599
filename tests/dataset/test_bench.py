"""The import benchmark still runs (its figures are for people; `make bench` runs the full size)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO, subprocess_env


@pytest.mark.slow
def test_bench_import_quick():
    out = subprocess.run(
        [sys.executable, str(REPO / "bench" / "bench_import.py"), "--quick", "--repeat", "1"],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=600,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "CSV    4,000 rows" in out.stdout and "XLSX   1,000 rows" in out.stdout
    assert out.stdout.count("peak Python memory") == 2 and "rows/s" in out.stdout

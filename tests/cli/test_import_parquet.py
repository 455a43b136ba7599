"""`abbench import` on a Parquet file (issue 41, item 2): suggestion, preview and import as for a CSV."""

from __future__ import annotations

import json

import pytest

pytest.importorskip("pyarrow")


def test_suggest_preview_and_import_a_parquet_file(cli, realdata):
    path = realdata / "parquet" / "banking77_test.parquet"
    out = cli("import", path, "--suggest")
    assert out.exit_code == 0, out.output
    assert "input      ← 'text'" in out.output and "expected   ← 'category'" in out.output
    assert "format: parquet" in out.output
    preview = cli("import", path, "--preview", "2")
    assert preview.exit_code == 0, preview.output
    assert "How do I locate my card?" in preview.output and "row 1" in preview.output
    done = cli("import", path, "--name", "b77")
    assert done.exit_code == 0, done.output
    assert "3,080 rows: 3,080 valid, 0 invalid" in done.output
    again = json.loads(cli("import", realdata / "banking77" / "test.csv", "--name", "b77", "--json").output)
    assert again["reused"] is True and again["read_options"]["format"] == "parquet"  # the Parquet import's

"""The README's CI recipe, run as written (bash) against a real `abbench serve`."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

from abbench.store import open_store
from tests.server.live import REPO, LiveServer


@pytest.mark.slow
def test_the_readme_ci_recipe_creates_runs_gates_and_keeps_the_report(tmp_path):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    recipe = re.search(r"<!-- ci-recipe -->\n```bash\n(.*?)```\n<!-- /ci-recipe -->", readme, re.S)
    assert recipe, "the README's CI recipe block is missing"
    store_dir = tmp_path / "server-store"
    with open_store(store_dir) as s:
        key = s.keys.create("ci", scopes="read,run")[1]
    server = LiveServer(store_dir, log=tmp_path / "server.log").start()
    work = tmp_path / "checkout"
    shutil.copytree(REPO / "data" / "demo", work / "data" / "demo")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "abbench").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m abbench "$@"\n')
    (bindir / "abbench").chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{bindir}:{os.environ['PATH']}",
        "PYTHONPATH": str(REPO),
        "ABBENCH_SERVER": server.url,
        "ABBENCH_KEY": key,
        "GITHUB_RUN_ID": "4242",
        "GITHUB_JOB": "gate",
    }
    env.pop("ABBENCH_STORE", None)
    try:
        done = subprocess.run(
            ["bash", "-c", recipe.group(1)], cwd=work, env=env, capture_output=True, text=True
        )
    finally:
        server.stop()
    assert done.returncode in (0, 1), done.stdout + done.stderr
    found = re.search(r"^v2 vs v1: GATE (.+?) — decided on ", done.stdout, re.M)
    assert found, done.stdout + done.stderr
    outcome = found.group(1).strip().lower()
    assert (done.returncode == 0) == outcome.startswith("pass"), done.stdout
    # The remote gate is the local one: its pair, its coverage and every rule with its value (an earlier
    # remote printed "pass None" per rule).
    assert "; pair named by data/demo/gate.yaml; rules: data/demo/gate.yaml" in done.stdout, done.stdout
    rules = yaml.safe_load((REPO / "data" / "demo" / "gate.yaml").read_text(encoding="utf-8"))["rules"]
    for rule in rules:
        assert re.search(rf"[✓✗!?] {re.escape(rule['name'])}: {rule['metric']} ", done.stdout), rule
    assert "None" not in done.stdout, done.stdout
    # The remote import says what the local one says (it printed only the fingerprint): read, validation.
    assert re.search(r"^imported demo@[0-9a-f]{12}  \(\d+ cases from cases.csv\)$", done.stdout, re.M), (
        done.stdout
    )
    assert re.search(r"^  read        csv, .*header row 1$", done.stdout, re.M), done.stdout
    assert re.search(r"^  validation  \d+ rows: \d+ valid", done.stdout, re.M), done.stdout
    page = (work / "abbench-report.html").read_text(encoding="utf-8")
    assert "ci-routing-4242" in page
    assert key not in page and key not in done.stdout and key not in done.stderr
    assert not (work / ".abbench").exists()  # nothing ran on a local store
    assert key not in server.log_path.read_text()  # the key never reaches the server's log

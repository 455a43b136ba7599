"""One word per outcome in every view: a graded-incorrect answer is *wrong*, never a bare "failed".

"failed" is said only of runs that got no verdict — *execution failed*, *grading failed* — and the
store's state names (pass/fail) stay behind the words (`abbench.types.run_outcome`, `outcome_word`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import DEMO, run_abbench, subprocess_env
from tests.report.conftest import parse_page

ALLOWED = ("execution or grading failed", "execution failed", "grading failed", "--failed", "failed=True")
"""Where "failed" is right: runs without a verdict, and the option (CLI) or keyword (Python) that re-runs them."""
AGENT = '''
def route(task):
    """Answers fast, except that the endpoint is "down" for every case id ending in 3."""
    if task.case.case_id.endswith("3"):
        raise RuntimeError("the model endpoint is down")
    return "fast"
'''


def bare_fail_words(text: str) -> list[str]:
    """Each bare "fail" or "failed" (not one of the allowed phrases), with its context.

    "failures" stays allowed: the views say it only of runs without a verdict ("execution and
    grading failures count as wrong").
    """
    for phrase in ALLOWED:
        text = re.sub(re.escape(phrase), "", text, flags=re.IGNORECASE)
    return [
        text[max(0, m.start() - 60) : m.end() + 60]
        for m in re.finditer(r"\bfail(ed)?\b", text, re.IGNORECASE)
    ]


def _with_progress_bar(*args) -> subprocess.CompletedProcess:
    """``abbench ARGS`` in a child process with tqdm's bar on (any TQDM_DISABLE value turns it off)."""
    env = subprocess_env()
    env.pop("TQDM_DISABLE", None)
    return subprocess.run(
        [sys.executable, "-m", "abbench", *map(str, args)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    """run (with its progress bar), status and metrics of a demo subset with wrong answers and
    execution failures, and its report's visible text."""
    tmp = tmp_path_factory.mktemp("words")
    (tmp / "router.py").write_text(AGENT, encoding="utf-8")
    definition = tmp / "exp.yaml"
    definition.write_text(
        f"""name: words
dataset: {{file: {json.dumps(str(DEMO / "cases.csv"))}, mapping: {json.dumps(str(DEMO / "mapping-csv.yaml"))}, name: demo}}
cases: {{limit: 40}}
retries: 0
arms:
  always-fast: {{agent: python, function: router.py:route}}
  v2: {{agent: builtin, skill: {json.dumps(str(DEMO / "skills" / "fast-slow-routing-v2"))}}}
""",
        encoding="utf-8",
    )
    store = tmp / "store"
    out = {}
    for name, args in (
        ("run", ("run", definition)),
        ("status", ("status", "words")),
        ("metrics", ("metrics", "words")),
        ("report", ("report", "words", "--out", tmp / "words.html")),
    ):
        done = (
            run_abbench("--store", store, *args)
            if name != "run"
            else _with_progress_bar("--store", store, *args)
        )
        assert done.returncode == 0, (name, done.stderr)
        out[name] = done.stdout + "\n" + done.stderr  # the progress bar is on stderr
    out["page"] = parse_page((tmp / "words.html").read_text(encoding="utf-8")).text
    return out


@pytest.mark.parametrize("view", ["run", "status", "metrics", "page"])
def test_wrong_answers_are_never_called_failed(outputs, view):
    text = outputs[view]
    assert re.search(r"\bwrong\b", text), text[:2000]  # there are wrong answers, and they are named so
    assert bare_fail_words(text) == []


def test_the_counts_tell_wrong_from_execution_failed(outputs):
    # 4 of the 40 cases end in 3: the python arm fails to execute them, and answers fast on the rest
    status = outputs["status"]
    arm = next(line for line in status.splitlines() if line.strip().startswith("always-fast"))
    assert "execution failed 4" in arm, status
    right = int(re.search(r"right (\d+)", arm).group(1))
    wrong = int(re.search(r"wrong (\d+)", arm).group(1))
    assert right + wrong == 36 and wrong > 0
    assert "execution failed 4" in outputs["run"] and "wrong" in outputs["run"].splitlines()[1]
    progress = [
        line for line in outputs["run"].splitlines() if " runs (" in line
    ]  # no terminal: a line per tenth
    assert progress and "wrong " in progress[-1] and "execution failed 4" in progress[-1], progress


def test_the_scan_catches_a_bare_failed():
    assert bare_fail_words("routing (#1): finished, 40/40 done, 12 failed") == [
        "routing (#1): finished, 40/40 done, 12 failed"
    ]
    assert bare_fail_words("right 5 wrong 2 execution failed 4 grading failed 1") == []


def test_the_words_come_from_one_map():
    from abbench.types import outcome_word, run_outcome

    assert [
        outcome_word(run_outcome(*args))
        for args in [
            ("pass", None, 1),
            ("fail", None, 0),
            ("fail", "timeout", None),
            ("fail", None, None),
            ("cancelled",),
            ("executed",),
        ]
    ] == ["right", "wrong", "execution failed", "grading failed", "cancelled", "waiting for grading"]

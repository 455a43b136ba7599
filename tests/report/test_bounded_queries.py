"""The report's bounded queries say what loading every run says: failures, the gold sample, run facts, figures."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from abbench.report import disagreement_sample, run_overview
from abbench.review import disagreements
from abbench.store import FailedRun, run_failures, runs_facts, wrong_answers
from tests.conftest import run_python
from tests.results import cases_of, make_experiment

RIGHT_BUT_FAILED = {"passed": False, "prediction": " SLOW "}  # the gold of the odd cases, failed by a judge
ODD_TYPE = {"state": "fail", "passed": None, "prediction": None, "failure_type": "timeout", "executed": False}


@pytest.fixture
def mixed(store):
    """Two arms over 12 cases × 2 rounds: right, wrong, right-but-failed, execution and grading failures."""
    cases = cases_of(12)
    a, b = [], []
    for i in range(12):
        a.append([True, False] if i % 3 else ["exec_fail", True])
        b.append(
            [
                [False, False],
                [RIGHT_BUT_FAILED, True],
                ["grade_fail", False],
                [ODD_TYPE, "exec_fail"],
            ][i % 4]
        )
    return make_experiment(store, "mixed", cases, {"a": a, "b": b})


def _overview_from_records(store, exp, limit):
    """What `run_overview` computed before: every failed run loaded and sorted out in Python."""
    exec_fail = {a.name: Counter() for a in exp.arms}
    grade_fail: Counter[str] = Counter()
    failures = []
    for r in store.runs.records(exp.id, states=["fail"]):
        if r.execution_failed:
            exec_fail.setdefault(r.arm, Counter())[r.failure_type or "unknown"] += 1
            kind = "execution"
        elif r.grading_failed:
            grade_fail[r.arm] += 1
            kind = "grading"
        else:
            continue
        if len(failures) < limit:
            failures.append(FailedRun(r.case_id, r.arm, r.round, kind, r.failure_type, r.error))
    return (
        {a: dict(c) for a, c in exec_fail.items()},
        {a.name: grade_fail.get(a.name, 0) for a in exp.arms},
        tuple(failures),
    )


@pytest.mark.parametrize("limit", [0, 3, 50])
def test_run_overview_counts_in_sql_what_the_loaded_runs_say(store, mixed, limit):
    got = run_overview(mixed, store=store, limit=limit)
    execution, grading, failures = _overview_from_records(store, mixed, limit)
    assert got.execution_failures == execution
    # the order of failure types is the order their first run failed in, as before
    assert [list(kinds) for kinds in got.execution_failures.values()] == [list(k) for k in execution.values()]
    assert got.grading_failures == grading and got.failures == failures
    assert grading == {"a": 0, "b": 3} and execution == {
        "a": {"agent_error": 4},
        "b": {"timeout": 3, "agent_error": 3},
    }
    assert len(failures) == min(limit, 13)


def test_run_failures_leave_wrong_answers_out(store, mixed):
    found = run_failures(store, mixed.id, limit=100)
    assert {f.kind for f in found.first} == {"execution", "grading"}
    assert all(f.failure_type is None for f in found.first if f.kind == "grading")
    assert len(found.first) == sum(map(sum, (c.values() for c in found.execution.values()))) + sum(
        found.grading.values()
    )


@pytest.mark.parametrize("limit", [1, 2, 10])
@pytest.mark.parametrize("arm", ["a", "b"])
def test_the_gold_sample_is_what_disagreements_list(store, mixed, arm, limit):
    every = [d.case_id for d in disagreements(mixed, "gold", store=store, arms=[arm])]
    for exclude in (set(), set(every[:2])):
        want = disagreements(mixed, "gold", store=store, arms=[arm], limit=limit, exclude=exclude)
        got = disagreement_sample(mixed, arm, store=store, limit=limit, exclude=exclude)
        assert [d.case_id for d in got] == [d.case_id for d in want]
        for g, w in zip(got, want, strict=True):
            assert (g.kinds, g.arms, g.reviews, g.case) == (w.kinds, w.arms, w.reviews, w.case)
            assert [(r.run_id, r.prediction, r.passed, r.failure_type) for r in g.runs] == [
                (r.run_id, r.prediction, r.passed, r.failure_type) for r in w.runs
            ]
    assert every, arm


def test_a_right_answer_failed_by_another_grader_is_read_but_not_sampled(store, mixed):
    wrong = list(wrong_answers(store, mixed.id, "b"))
    assert [w.case_idx for w in wrong] == sorted(w.case_idx for w in wrong)
    assert any(w.prediction == " SLOW " for w in wrong)
    sampled = {d.case_id for d in disagreement_sample(mixed, "b", store=store, limit=100)}
    assert sampled and not sampled & {w.case_id for w in wrong if w.prediction == " SLOW "}


def test_run_facts_are_the_stored_provenance(store, mixed):
    assert runs_facts(store, mixed.id) == store.analysis.runs_provenance(mixed.id)


def test_run_facts_over_the_fixture_experiments(report_store):
    store, ids, _ = report_store
    for shape, exp_id in ids.items():
        assert runs_facts(store, exp_id) == store.analysis.runs_provenance(exp_id), shape


def test_a_figure_displays_as_the_report_renderer_shows_it():
    import plotly.io as pio

    from abbench.report import RENDERER, use_report_renderer
    from abbench.report._display import states_figure
    from abbench.report._plotly import PLOTLY_MIMETYPE, figure_bundle

    fig = states_figure({"a": {"pass": 3, "fail": 1}, "b": {"pass": 2}})
    before = pio.renderers.default
    try:
        use_report_renderer()
        want = pio.renderers._build_mime_bundle(fig.to_dict(), f"plotly_mimetype+{RENDERER}")
    finally:
        pio.renderers.default = before
    got = figure_bundle(fig)
    assert set(got) == set(want) == {PLOTLY_MIMETYPE, "text/html"}
    assert got[PLOTLY_MIMETYPE] == want[PLOTLY_MIMETYPE]
    strip = lambda html: html.replace(html.split('id="', 1)[1].split('"', 1)[0], "ID")  # noqa: E731
    assert strip(got["text/html"]) == strip(want["text/html"])


def test_papermill_is_imported_without_the_iri_grammars_and_the_module_stays_importable():
    code = (
        "import sys, json\n"
        "from abbench.report._render import _without_iri_syntax\n"
        "with _without_iri_syntax():\n"
        "    import papermill\n"
        "import nbformat\n"
        "nbformat.validate(nbformat.v4.new_notebook())\n"
        "loaded = 'rfc3987_syntax' in sys.modules\n"
        "try:\n"
        "    import rfc3987_syntax\n"
        "    later = rfc3987_syntax is not None\n"
        "except ImportError:\n"
        "    later = None\n"
        "print(json.dumps([loaded, 'rfc3987_syntax' in sys.modules or later is None]))\n"
    )
    out = run_python(code)
    loaded, importable = json.loads(out.stdout)
    assert loaded is False and importable is True


def test_the_report_kernel_shows_figures_without_plotly_renderers():
    code = (
        "import sys, json\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "from abbench import report\n"
        "report.setup_kernel()\n"
        "from abbench.report._display import states_figure\n"
        "fig = states_figure({'a': {'pass': 1}})\n"
        "shown = []\n"
        "shell.display_pub.publish = lambda data, metadata=None, **kw: shown.append(sorted(data))\n"
        "from IPython.display import display\n"
        "display(fig)\n"
        "report.show_parts([fig])\n"
        "print(json.dumps([shown, [m for m in ('nbformat', 'plotly.io._renderers') if m in sys.modules]]))\n"
    )
    out = run_python(code)
    shown, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert shown == [["application/vnd.plotly.v1+json", "text/html"]] * 2
    assert loaded == []


def test_the_overview_lists_the_stores_failed_runs_and_shows_their_rounds_from_1(store, mixed):
    """One shape of a failed run (`FailedRun`, round from 0 as stored) in the overview; its JSON and the
    report's table count rounds from 1, as every view does."""
    got = run_overview(mixed, store=store, limit=50)
    assert got.failures == run_failures(store, mixed.id, limit=50).first
    assert all(isinstance(f, FailedRun) for f in got.failures)
    assert [f["round"] for f in got.as_dict()["failures"]] == [f.round + 1 for f in got.failures]
    from abbench.report import runs_section

    html = "".join(str(p) for p in runs_section(got))
    table = html.split("Runs whose execution or grading failed", 1)[1]
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]  # the header row first
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row, re.S) for row in rows]
    assert [(c[0], c[1], c[2]) for c in cells] == [(f.case_id, f.arm, str(f.round + 1)) for f in got.failures]
    assert {f.round for f in got.failures} == {0, 1}  # both rounds of the fixture, shown as 1 and 2

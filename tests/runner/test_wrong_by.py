"""Item 2 of issue 40's leftovers: the progress names which grader made runs wrong.

An analyst whose demo graders (``label_match``, ``cited_evidence``) were carried to an arm that cites
nothing sees "0 right" and nothing more; the progress record counts, per arm and deciding grader, the
wrong runs that grader failed, and the run widget and ``abbench run``/``status`` say it in words.
"""

from __future__ import annotations

from collections import Counter

import pytest

from abbench.runner import Progress, create_experiment, experiment_status, regrade_experiment, run_experiment
from abbench.types import RunState
from abbench.widgets import RunControlWidget
from tests.skillfiles import SKILL_V1, write_files
from tests.widgets.conftest import make_cases, python_arm

GRADERS = [
    "label_match",
    "cited_evidence",
    # advisory: graded and shown, never deciding; it fails every run and must never be named
    {"type": "regex", "name": "never_matches", "pattern": "^zzz$", "advisory": True},
]


class Seen:
    """An observer keeping the last progress it was told."""

    last: Progress | None = None

    def on_progress(self, progress: Progress) -> None:
        self.last = progress


@pytest.fixture
def carried(store, tmp_path):
    """24 cases; arm ``cites`` has a skill and cites it but for c03–c06, wrong on c01, c02 (and c07,
    c17: ids ending in 7); arm ``silent`` has the skill and never cites it (wrong on c07, c17 too)."""
    skill = write_files(tmp_path / "skill", SKILL_V1)
    ds = store.datasets.save("carried", make_cases(24), label_set=["fast", "slow"])
    silent_all = [f"c{i:02d}" for i in range(24)]
    exp = create_experiment(
        {
            "name": "carried",
            "dataset": ds.fingerprint,
            "graders": GRADERS,
            "arms": {
                "cites": python_arm(str(skill), wrong=["c01", "c02"], silent=["c03", "c04", "c05", "c06"]),
                "silent": python_arm(str(skill), silent=silent_all),
            },
        },
        store=store,
    )
    seen = Seen()
    run_experiment(exp.id, store=store, observers=[seen])
    return exp, seen


def _from_grades(store, exp_id: int) -> dict[str, Counter]:
    """Written out from the stored rows: per arm, the deciding graders whose latest grade failed a
    wrong run (a run in fail with a verdict)."""
    arms = {a.id: a.name for a in store.experiments.get(exp_id).arms}
    out: dict[str, Counter] = {name: Counter() for name in arms.values()}
    latest: dict[tuple[int, str], tuple[int, int | None]] = {}
    for run_id, grader, grade_id, passed in store.query(
        "SELECT run_id, grader, id, passed FROM grades WHERE experiment_id=? AND other_run_id IS NULL",
        (exp_id,),
    ):
        if (run_id, grader) not in latest or latest[run_id, grader][0] < grade_id:
            latest[run_id, grader] = (grade_id, passed)
    for run_id, arm_id, state, passed, ftype in store.query(
        "SELECT id, arm_id, state, passed, failure_type FROM runs WHERE experiment_id=?", (exp_id,)
    ):
        if state != RunState.FAIL or ftype is not None or passed is None:
            continue
        for (rid, grader), (_, grade_passed) in latest.items():
            if rid == run_id and grade_passed == 0 and grader != "never_matches":
                out[arms[arm_id]][grader] += 1
    return {arm: c for arm, c in out.items()}


def test_progress_counts_the_wrong_runs_each_grader_failed(store, carried):
    exp, seen = carried
    expected = {
        "cites": {"cited_evidence": 4, "label_match": 4},
        "silent": {"cited_evidence": 24, "label_match": 2},
    }
    assert {arm: dict(c) for arm, c in _from_grades(store, exp.id).items()} == expected
    live = seen.last
    assert live is not None and live.status == "finished"
    assert (live.right, live.wrong) == (24 - 8, 8 + 24)  # c01, c02, c07, c17 wrong on labels; c03–c06 uncited
    assert live.arm_wrong_by == expected
    assert live.wrong_by == {"cited_evidence": 28, "label_match": 6}  # the one that failed most first
    stored = experiment_status(exp.id, store=store)
    assert stored.arm_wrong_by == expected and stored.wrong_by == live.wrong_by
    assert Progress.from_dict(stored.as_dict()).arm_wrong_by == expected  # as the server sends it


def test_regrading_counts_each_run_once(store, carried):
    exp, _ = carried
    seen = Seen()
    regrade_experiment(exp.id, store=store, observers=[seen])
    assert seen.last is not None
    assert seen.last.arm_wrong_by == experiment_status(exp.id, store=store).arm_wrong_by
    assert seen.last.wrong_by == {"cited_evidence": 28, "label_match": 6}


def test_the_views_name_the_grader(store, carried, cli):
    exp, _ = carried
    widget = RunControlWidget(store, experiment=exp.id, poll_s=60)
    try:
        status = widget.status_html.value
        assert "16 right · 32 wrong (by cited_evidence 28, label_match 6)" in status
        assert "0 wrong" not in status
        assert "24 wrong (by cited_evidence 24, label_match 2)" in widget.bars["silent"].text
    finally:
        widget.close()
    out = cli("status", "carried", store=store.path).output
    assert "right 16 wrong 32 (by cited_evidence 28, label_match 6)" in out
    assert "silent" in out and "(wrong by cited_evidence 24, label_match 2)" in out
    assert "never_matches" not in out


def test_abbench_run_says_which_grader_made_runs_wrong(store, tmp_path, cli):
    skill = write_files(tmp_path / "skill", SKILL_V1)
    ds = store.datasets.save("plain", make_cases(12), label_set=["fast", "slow"])
    create_experiment(
        {
            "name": "nothing-to-cite",
            "dataset": ds.fingerprint,
            "graders": ["label_match", "cited_evidence"],
            "arms": {"v1": python_arm(str(skill), silent=[f"c{i:02d}" for i in range(12)])},
        },
        store=store,
    )
    out = cli("run", "nothing-to-cite", store=store.path).output
    # c07 is wrong on its label too: both graders failed it
    assert "right 0 wrong 12 (by cited_evidence 12, label_match 1)" in out, out
    assert "(wrong by cited_evidence 12, label_match 1)" in out, out

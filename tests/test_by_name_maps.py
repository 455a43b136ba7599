"""The records mapped onto one another by field name: each field the target takes by name has a field of
that name on the source, so a field added to one side only fails here, not when a view is built.

A case view's grade and attempt (`abbench.review._cases._view_of`), a snapshot's source
(`Snapshot.provenance`), a judge's spend handed to its grade (`JudgeSpend.result`) and the work a
server's job asks for (`abbench.server._pool._work`).
"""

from __future__ import annotations

import inspect
from dataclasses import fields

from abbench.graders import GradeResult
from abbench.graders._judge_settings import JudgeSpend
from abbench.review._cases import AttemptView, GradeView
from abbench.runner import QueuedWork
from abbench.server._child import Job
from abbench.server._pool import _WORK, RunnerPool
from abbench.snapshot import Snapshot, SnapshotSource
from abbench.store import Grade
from abbench.store._attempts import AttemptRecord


def _names(record: type) -> set[str]:
    return {f.name for f in fields(record)}


def test_a_grade_view_takes_every_field_from_the_stored_grade():
    assert _names(GradeView) <= _names(Grade)


def test_an_attempt_view_takes_its_other_fields_from_the_stored_attempt():
    given = {"tokens", "tool_calls", "transcript_path"}  # computed by the loader
    assert given <= _names(AttemptView)
    assert _names(AttemptView) - given <= _names(AttemptRecord)


def test_a_snapshot_source_takes_its_fields_of_the_same_name_from_the_snapshot():
    shared = _names(SnapshotSource) & _names(Snapshot)
    assert _names(SnapshotSource) - shared == {"taken_at", "taken_by"}


def test_a_judge_spend_is_made_of_grade_result_fields():
    assert _names(JudgeSpend) <= _names(GradeResult)


def test_the_work_fields_are_in_a_job_a_queued_record_and_submit():
    assert set(_WORK) <= _names(Job)
    assert set(_WORK) <= _names(QueuedWork)
    assert set(_WORK) <= set(inspect.signature(RunnerPool.submit).parameters)

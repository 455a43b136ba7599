"""Fixtures for grader tests: a real skill snapshot and a builder of grade contexts."""

from __future__ import annotations

import pytest

from abbench.graders import GradeContext
from abbench.snapshot import build_snapshot
from abbench.types import AgentOutput, Case, Usage
from tests.skillfiles import SKILL_V1, write_files


@pytest.fixture
def skill(tmp_path):
    """The fast-slow-routing skill (SKILL.md with Chinese headings, two knowledge files), snapshotted."""
    return build_snapshot(write_files(tmp_path / "fast-slow-routing", SKILL_V1))


def make_ctx(
    prediction="fast",
    *,
    expected="fast",
    case_input="打开空调",
    skill=None,
    arm="treatment",
    transcript=(),
    usage=(0, 0),
    tool_calls=0,
    **output,
) -> GradeContext:
    """A grade context for one run; `output` fills other AgentOutput fields."""
    return GradeContext(
        case=Case("c1", case_input, expected),
        output=AgentOutput(
            prediction=prediction, transcript=tuple(transcript), usage=Usage(*usage), **output
        ),
        skill=skill,
        arm=arm,
        tool_calls=tool_calls,
    )


@pytest.fixture
def ctx():
    """`make_ctx`, as a fixture."""
    return make_ctx

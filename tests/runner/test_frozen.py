"""`make_frozen` makes the same object as the dataclass's constructor, or uses the constructor."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from abbench.agents import Spending, Task
from abbench.graders import GradeContext
from abbench.runner._frozen import make_frozen
from abbench.types import AgentOutput, Case


def _same(a: object, b: object) -> None:
    assert type(a) is type(b)
    for f in dataclasses.fields(a):  # type: ignore[arg-type]
        assert getattr(a, f.name) is getattr(b, f.name) or getattr(a, f.name) == getattr(b, f.name), f.name


def test_task_and_grade_context_match_their_constructors() -> None:
    case = Case("c1", "请问 q", "fast", domain="d1")
    spending = Spending()
    task_values = {
        "case": case,
        "skill": None,
        "skills": (),
        "skill_mode": "injected",
        "arm": "A",
        "model": "m",
        "params": {"t": 1},
        "round": 2,
        "session_id": "abc",
        "run_id": 7,
        "label_set": ("fast", "slow"),
        "timeout_s": 30.0,
        "spending": spending,
        "cache": None,
    }
    fast = make_frozen(Task, dict(task_values))
    _same(fast, Task(**task_values))
    assert fast == Task(**task_values)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.arm = "B"  # type: ignore[misc]
    assert fast.offered == ()

    out = AgentOutput(prediction="fast")
    ctx_values = {
        "case": case,
        "output": out,
        "skill": None,
        "label_map": {},
        "label_set": None,
        "arm": "A",
        "round": 0,
        "run_id": 7,
        "transcript_path": Path("/nonexistent"),
        "tool_calls": 0,
        "agent": "python",
        "model": None,
        "cache": None,
    }
    ctx = make_frozen(GradeContext, dict(ctx_values))
    _same(ctx, GradeContext(**ctx_values))
    assert ctx.transcript == ()  # its cached property works as on a constructed one


@dataclasses.dataclass(frozen=True)
class _Checked:
    x: int

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("negative")


@dataclasses.dataclass(frozen=True, slots=True)
class _Slotted:
    x: int


def test_classes_that_need_their_constructor_get_it() -> None:
    with pytest.raises(ValueError, match="negative"):
        make_frozen(_Checked, {"x": -1})
    assert make_frozen(_Slotted, {"x": 1}) == _Slotted(1)
    with pytest.raises(TypeError):  # a missing field is the constructor's error, not a half-made object
        make_frozen(Task, {"arm": "A"})

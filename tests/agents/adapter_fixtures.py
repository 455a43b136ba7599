"""Shared pieces of the adapter tests (imported by them, not a conftest, so other agent tests stay independent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from abbench.agents import Task
from abbench.snapshot import Snapshot, build_snapshot
from abbench.testing import Reply
from abbench.types import Case

SKILL_FILES = {
    "SKILL.md": """---
name: routing
description: Decide whether a request goes to the fast or the slow system.
---
# Routing

Route each in-car request.

## Rules
- Direct vehicle control (空调, 车窗) goes to **fast**.
- Anything that needs planning or data goes to **slow**.

## Fast system
Handles one-shot commands.
""",
    "knowledge/domains.md": """# 车控
打开空调、关车窗：fast。

# Navigation
到目的地电量够不够：slow，需要路线与能耗数据。
""",
    "assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00binary",
}


FINAL = json.dumps(
    {
        "prediction": "Slow",
        "reason": "需要路线与能耗数据",
        "confidence": 0.8,
        "evidence_refs": ["SKILL.md#rules", "knowledge/domains.md#Navigation"],
    },
    ensure_ascii=False,
)
"""The openai adapter's final answer to the routing case (in JSON, with Chinese text)."""


def routing_case(**extra) -> Case:
    """The adapter tests' case: Chinese input, a history, a context and the gold label GOLD-slow."""
    return Case(
        case_id="c1",
        input="到目的地电量够不够",
        expected="GOLD-slow",
        history=[{"role": "user", "content": "我要去机场"}, {"role": "assistant", "content": "好的"}],
        context={"battery": "40%"},
        source_row={"label": "GOLD-slow"},
        **extra,
    )


def routing_task(case: Case, skill: Snapshot | None) -> Task:
    """`case` given with `skill`, the labels fast and slow and a session id."""
    return Task(case=case, skill=skill, arm="b", label_set=("fast", "slow"), session_id="sess-1")


def tool_loop_script(final: str = FINAL) -> list[Reply]:
    """A model's replies in a tool loop: a 429 to retry, a listing, a section and a missing file, then `final`."""
    return [
        Reply.error(429, "slow down", retry_after=0),
        Reply.tools(("list_files", {}), usage=(100, 10)),
        Reply.tools(
            ("read_section", {"ref": "SKILL.md#Rules"}), ("read_file", {"path": "nope.md"}), usage=(200, 20)
        ),
        Reply.text(final, usage=(300, 30)),
    ]


def write_skill(root: Path, files: dict[str, str | bytes]) -> Snapshot:
    """Write `files` under `root` and snapshot the folder with the real `build_snapshot`."""
    for path, content in files.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return build_snapshot(root)


@pytest.fixture
def skill(tmp_path) -> Snapshot:
    """The routing skill: SKILL.md, one knowledge file with Chinese headings, one binary file."""
    return write_skill(tmp_path / "skill", SKILL_FILES)


@pytest.fixture
def case() -> Case:
    """A case with a gold label that must never reach an agent."""
    return routing_case(metadata={"gold_hint": "GOLD-slow"})


@pytest.fixture
def task(case, skill) -> Task:
    """A task with the skill, two labels and a session id."""
    return routing_task(case, skill)

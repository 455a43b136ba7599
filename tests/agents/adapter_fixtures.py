"""Shared pieces of the adapter tests (imported by them, not a conftest, so other agent tests stay independent)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from abbench.agents import Task
from abbench.snapshot import Snapshot, SnapshotFile
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


def build_snapshot(root: Path, files: dict[str, str | bytes], name: str = "routing") -> Snapshot:
    """Write `files` under `root` and describe them as a Snapshot (hash over sorted paths and bytes)."""
    digest = hashlib.sha256()
    entries = []
    for path in sorted(files):
        data = files[path].encode("utf-8") if isinstance(files[path], str) else files[path]
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        digest.update(path.encode("utf-8") + b"\0" + data)
        entries.append(SnapshotFile(path, hashlib.sha256(data).hexdigest(), len(data), b"\0" in data))
    return Snapshot(hash=digest.hexdigest(), skill_name=name, root=root, files=tuple(entries))


@pytest.fixture
def skill(tmp_path) -> Snapshot:
    """The routing skill: SKILL.md, one knowledge file with Chinese headings, one binary file."""
    return build_snapshot(tmp_path / "skill", SKILL_FILES)


@pytest.fixture
def case() -> Case:
    """A case with a gold label that must never reach an agent."""
    return Case(
        case_id="c1",
        input="到目的地电量够不够",
        expected="GOLD-slow",
        history=[{"role": "user", "content": "我要去机场"}, {"role": "assistant", "content": "好的"}],
        context={"battery": "40%"},
        source_row={"label": "GOLD-slow"},
        metadata={"gold_hint": "GOLD-slow"},
    )


@pytest.fixture
def task(case, skill) -> Task:
    """A task with the skill, two labels and a session id."""
    return Task(case=case, skill=skill, arm="b", label_set=("fast", "slow"), session_id="sess-1")

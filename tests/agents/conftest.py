"""Fixtures for agent tests: skill folders as Snapshot values, and the demo cases."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from abbench.snapshot import Snapshot, build_snapshot
from abbench.types import Case

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def folder_snapshot(folder: Path) -> Snapshot:
    """The Snapshot of a skill folder read in place (nothing stored)."""
    return build_snapshot(folder)


@pytest.fixture
def make_skill(tmp_path):
    """Write a skill folder from ``{relative path: text}`` and return its Snapshot."""

    def make(files: dict[str, str], name: str = "skill") -> Snapshot:
        folder = tmp_path / name
        for rel, text in files.items():
            path = folder / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        return folder_snapshot(folder)

    return make


@pytest.fixture(scope="session")
def demo_skills() -> dict[str, Snapshot]:
    """The two versions of the demo skill, by version name (``v1``, ``v2``)."""
    return {v: folder_snapshot(DEMO / "skills" / f"fast-slow-routing-{v}") for v in ("v1", "v2")}


@pytest.fixture(scope="session")
def demo_cases() -> list[Case]:
    """The demo cases from cases.csv (read with the csv module), labels stripped and lower-cased."""
    with open(DEMO / "cases.csv", encoding="utf-8-sig", newline="") as f:
        rows = list(csv.DictReader(f))
    return [
        Case(
            case_id=r["case_id"],
            input=r["query"],
            expected=r["route"].strip().lower(),
            history=json.loads(r["history"]) if r["history"] else None,
            context=json.loads(r["vehicle_state"]) if r["vehicle_state"] else None,
            domain=r["domain"],
            request_id=r["request_id"] or None,
        )
        for r in rows
    ]

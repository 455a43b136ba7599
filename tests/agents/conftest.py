"""Fixtures for agent tests: skill folders as Snapshot values, and the demo cases."""

from __future__ import annotations

import csv
import hashlib
import json
from pathlib import Path

import pytest
import yaml

from abbench.snapshot import Snapshot, SnapshotFile, front_matter_end
from abbench.types import Case

DEMO = Path(__file__).resolve().parents[2] / "data" / "demo"


def folder_snapshot(folder: Path) -> Snapshot:
    """A Snapshot of a skill folder read in place, as the snapshot engine would describe it.

    Uses ``abbench.snapshot.build_snapshot`` when it exists; otherwise hashes the files itself (sorted
    relative paths and bytes) and reads the SKILL.md front matter.
    """
    import abbench.snapshot as snapshot

    build = getattr(snapshot, "build_snapshot", None)
    if build is not None:
        return build(folder)
    files, digest = [], hashlib.sha256()
    for p in sorted(q for q in folder.rglob("*") if q.is_file()):
        rel, data = p.relative_to(folder).as_posix(), p.read_bytes()
        digest.update(rel.encode() + b"\0" + data + b"\0")
        files.append(SnapshotFile(rel, hashlib.sha256(data).hexdigest(), len(data)))
    front: dict = {}
    skill_md = folder / "SKILL.md"
    if skill_md.exists():
        lines = skill_md.read_text(encoding="utf-8").splitlines()
        end = front_matter_end(lines)
        front = (yaml.safe_load("\n".join(lines[1 : end - 1])) if end else None) or {}
    return Snapshot(
        digest.hexdigest(),
        front.get("name", folder.name),
        folder,
        tuple(files),
        description=front.get("description"),
        front_matter=front,
    )


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

"""Turning another tool's logs into an experiment: a dataset, ``external`` arms, recorded outcomes."""

from __future__ import annotations

import json
import logging
import tempfile
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abbench.dataset import DatasetInfo
from abbench.errors import ImportFailed, UnknownName, UsageError
from abbench.interop._inspect import read_inspect
from abbench.interop._model import ImportedLog
from abbench.interop._promptfoo import read_promptfoo
from abbench.interop._skill_creator import read_skill_creator
from abbench.runner import RecordSummary, create_experiment, record_runs
from abbench.store import Experiment, Store, open_store

log = logging.getLogger(__name__)

READERS: dict[str, Callable[[list[Path]], ImportedLog]] = {
    "inspect": read_inspect,
    "promptfoo": read_promptfoo,
    "skill-creator": read_skill_creator,
}
FORMATS = tuple(READERS)
"""The formats `import_results` reads."""


@dataclass(frozen=True)
class ImportedResults:
    """What `import_results` made.

    Attributes:
        experiment: The experiment (created, or the one a former import made).
        dataset: Its dataset.
        created_dataset: Whether the dataset was created from the logs.
        arms: The arms, baseline first.
        cases: Cases with at least one run.
        rounds: Rounds of the experiment.
        recording: What `record_runs` stored (and the grading pass).
    """

    experiment: Experiment
    dataset: DatasetInfo
    created_dataset: bool
    arms: tuple[str, ...]
    cases: int
    rounds: int
    recording: RecordSummary

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {
            "experiment": self.experiment.name,
            "experiment_id": self.experiment.id,
            "dataset": self.dataset.fingerprint,
            "created_dataset": self.created_dataset,
            "arms": list(self.arms),
            "cases": self.cases,
            "rounds": self.rounds,
            "recording": self.recording.as_dict(),
        }


def read_results(format: str, paths: list[str | Path]) -> ImportedLog:
    """Read another tool's logs (see `FORMATS`) without storing anything.

    Raises:
        UsageError: an unknown format, or a path that does not exist.
        ImportFailed: the files are not what the format says (the message names the file and what to do).
    """
    if format not in READERS:
        raise UnknownName("results format", format, FORMATS)
    files = [Path(p) for p in paths]
    missing = [str(p) for p in files if not p.exists()]
    if missing:
        raise UsageError(f"{', '.join(missing)}: no such file or folder")
    if not files:
        raise UsageError("give at least one file or folder to import")
    found = READERS[format](files)
    if not found.runs:
        raise ImportFailed(f"{', '.join(map(str, files))}: no run found to import")
    return found


def import_results(
    format: str,
    paths: list[str | Path],
    *,
    store: str | Path | Store | None = None,
    dataset: str | None = None,
    experiment: str | None = None,
) -> ImportedResults:
    """Make an experiment of another tool's runs, so abbench's statistics, gates and reports apply.

    Each model / provider / configuration becomes an ``external`` arm, each epoch / repeat / run
    number a round, and the tool's own verdicts (scorers, assertions, expectations) ``recorded``
    graders. Importing the same logs again changes nothing (outcomes are recorded idempotently).

    Args:
        format: ``inspect``, ``promptfoo`` or ``skill-creator``.
        paths: The tool's files (Inspect logs, promptfoo ``-o`` JSON files, skill-creator benchmark folders).
        store: The store.
        dataset: A stored dataset whose cases the runs are matched to (by case id, then by input);
            default: a dataset is created from the logs' inputs and gold answers.
        experiment: The experiment's name (default ``<tool>-<task name>``).

    Raises:
        UsageError, ImportFailed: see `read_results`; runs that match no case of `dataset`.
        RecordError: an outcome does not fit (conflicts with what a former import recorded).
    """
    found = read_results(format, paths)
    st = open_store(store)
    if dataset is None:
        info, ids = _create_dataset(st, found), {c: c for c in found.cases}
    else:
        info = st.datasets.get(dataset)
        ids = _match_cases(st, info, found)
    used = sorted({ids[r.case_id] for r in found.runs})
    rounds = max(r.round for r in found.runs)
    spec = _definition(found, info, used, rounds, experiment)
    exp = create_experiment(spec, store=st, reuse=True)
    _check_reused(exp, spec, info)
    outcomes = [{"case_id": ids[r.case_id], "arm": r.arm, "round": r.round, **r.outcome} for r in found.runs]
    recording = record_runs(st, exp, outcomes)
    log.info("imported %d runs of %s into experiment %s", recording.recorded, format, exp.ref)
    exp = st.experiments.get(exp.id)
    return ImportedResults(exp, info, dataset is None, tuple(found.arms), len(used), rounds, recording)


def _check_reused(exp: Experiment, spec: dict[str, Any], info: DatasetInfo) -> None:
    """An experiment a former import made must be the same shape: same dataset, arms and graders.

    Raises:
        ImportFailed: it differs (the logs are others): name what differs and what to do.
    """
    arms = [a.name for a in exp.arms]
    graders = [g.get("name") if isinstance(g, dict) else g for g in exp.spec.graders]
    wanted = [g["name"] if isinstance(g, dict) else g for g in spec["graders"]]
    differs = []
    if exp.dataset_id != info.id:
        differs.append("another dataset")
    if arms != list(spec["arms"]):
        differs.append(f"arms {', '.join(arms)} (these logs: {', '.join(spec['arms'])})")
    if graders != wanted:
        differs.append(f"graders {', '.join(map(str, graders))} (these logs: {', '.join(map(str, wanted))})")
    if int(exp.spec.rounds) < int(spec["rounds"]):
        differs.append(f"{exp.spec.rounds} rounds (these logs: {spec['rounds']})")
    if differs:
        raise ImportFailed(
            f"experiment {exp.name!r} already exists with {'; '.join(differs)}; import these logs as "
            "another experiment (--experiment NAME)"
        )


def _definition(
    found: ImportedLog, info: DatasetInfo, cases: list[str], rounds: int, name: str | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": name or f"{found.tool}-{found.name}",
        "dataset": info.fingerprint,
        "rounds": rounds,
        "cases": {"ids": cases},
        "arms": {arm: {"agent": "external", **settings} for arm, settings in found.arms.items()},
        "graders": [{"type": "recorded", "name": g} for g in found.graders] or ["label_match"],
        "tags": ["imported", found.tool],
        "concurrency": 32,
    }
    if found.decision is not None:
        spec["decision"] = {"baseline": found.decision[0], "candidate": found.decision[1]}
    return spec


def _create_dataset(store: Store, found: ImportedLog) -> DatasetInfo:
    """A dataset of the logs' cases (id, input, gold answer, the tool's variables as metadata)."""
    with tempfile.TemporaryDirectory(prefix="abbench-import-") as tmp:
        path = Path(tmp) / f"{found.tool}-{found.name}.jsonl"
        with path.open("w", encoding="utf-8") as f:
            for case in found.cases.values():
                row: dict[str, Any] = {
                    "case_id": case.case_id,
                    "input": case.input,
                    "expected": case.expected,
                    "metadata": {"source_tool": found.tool, **case.metadata},
                }
                f.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        profile = {
            "name": f"import-{found.tool}",
            "fields": {
                "case_id": "case_id",
                "input": "input",
                "expected": "expected",
                "metadata": "metadata",
            },
        }
        return store.datasets.import_file(path, profile, name=f"{found.tool}-{found.name}")


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _match_cases(store: Store, info: DatasetInfo, found: ImportedLog) -> dict[str, str]:
    """Each imported case's id in `info`: the same case id with the same input, else the same input
    (spaces, width and case aside).

    Raises:
        ImportFailed: some cases match none, or an input matches several cases.
    """
    cases = store.datasets.load_cases(info, source_rows=False)
    by_id = {c.case_id: c.input[:40] for c in cases}
    by_input: dict[str, list[str]] = {}
    for c in cases:
        by_input.setdefault(_fold(c.input), []).append(c.case_id)
    ids: dict[str, str] = {}
    unmatched: list[str] = []
    ambiguous: list[str] = []
    different: list[str] = []
    inputs = {c.case_id: _fold(c.input) for c in cases}
    for case in found.cases.values():
        if case.case_id in by_id and inputs[case.case_id] == _fold(case.input):
            ids[case.case_id] = case.case_id
            continue
        hits = by_input.get(_fold(case.input), [])
        if not hits and case.case_id in by_id:
            different.append(
                f"{case.case_id} ({case.input[:40]!r} in the logs, {by_id[case.case_id]!r} in the dataset)"
            )
            continue
        if len(hits) == 1:
            ids[case.case_id] = hits[0]
        elif hits:
            ambiguous.append(f"{case.case_id} (input matches {', '.join(hits[:5])})")
        else:
            unmatched.append(case.case_id)
    if unmatched or ambiguous or different:
        parts = []
        if different:
            parts.append(
                f"{len(different)} have a case id of it with another input: {'; '.join(different[:5])}"
            )
        if unmatched:
            parts.append(f"{len(unmatched)} match no case id or input: {', '.join(unmatched[:10])}")
        if ambiguous:
            parts.append(f"{len(ambiguous)} match several cases: {'; '.join(ambiguous[:5])}")
        raise ImportFailed(
            f"of the {len(found.cases)} cases in the logs, {' and '.join(parts)} of dataset "
            f"{info.fingerprint}; import into the dataset they were run on, or leave the dataset out and a "
            "new one is made (dataset=, CLI --dataset)"
        )
    return ids

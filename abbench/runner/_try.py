"""Trying one input at once — kept as a one-case experiment, through the same run and record machinery."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from abbench.runner._api import run_experiment
from abbench.runner._experiment import create_experiment
from abbench.store import DEFAULT_GRADERS, TRY_DATASET, TRY_TAG, Experiment, Store, open_store
from abbench.types import Case

TRY_PRIORITY = 10
"""Tries jump ahead of big batches sharing the machine."""


@dataclass(frozen=True)
class TryResult:
    """The answer to one tried input, with its evidence resolved to the skill's text."""

    experiment: str
    experiment_id: int
    run_id: int
    state: str
    prediction: str | None
    reason: str | None
    confidence: float | None
    evidence: list[dict[str, Any]] = field(default_factory=list)
    files_read: tuple[str, ...] = ()
    sections_read: tuple[str, ...] = ()
    passed: bool | None = None
    error: str | None = None
    latency_ms: float | None = None
    cost: float | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready view."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def try_input(
    text: str,
    *,
    skill: str | Path | None = None,
    agent: str = "builtin",
    model: str | None = None,
    params: dict[str, Any] | None = None,
    expected: str | None = None,
    labels: list[str] | None = None,
    history: list[dict[str, Any]] | None = None,
    context: Any = None,
    store: str | Path | Store | None = None,
    started_by: str | None = None,
) -> TryResult:
    """Run one input through an agent now and keep it as a one-case experiment.

    Args:
        text: The input (query).
        skill: A skill folder or snapshot reference; None for no skill.
        agent: Adapter name.
        model: Model id.
        params: Adapter parameters.
        expected: A gold label, to grade the answer with label match.
        labels: The labels the agent may choose from.
        history: Earlier turns.
        context: Extra context given to the agent.
    """
    store = open_store(store)
    case = Case(case_id="try-1", input=text, expected=expected, history=history, context=context)
    arm: dict[str, Any] = {"agent": agent, "params": dict(params or {})}
    if model:
        arm["model"] = model
    if skill:
        arm["skill"] = str(skill)
    digest = hashlib.sha256(f"{text}\0{skill}\0{agent}\0{model}".encode()).hexdigest()[:6]
    exp = _create_try(store, case, arm, labels, digest)
    run_experiment(exp.id, store=store, started_by=started_by)
    return _try_result(store, exp)


def _create_try(
    store: Store, case: Case, arm: dict[str, Any], labels: list[str] | None, digest: str
) -> Experiment:
    """The one-case experiment of a try, with its one-case dataset."""
    # The same input tried again is the same stored dataset, label set included: name the labels in
    # the dataset's name, or a later try with other labels would silently get the first try's.
    name = TRY_DATASET
    if labels:
        name += "-" + hashlib.sha256("\0".join(labels).encode("utf-8")).hexdigest()[:8]
    stamp = datetime.now(UTC).strftime("%Y%m%d-%H%M%S-%f")
    # One transaction: a try the experiment checks refuse (no labels, an unknown setting, a skill
    # that is not there) leaves nothing behind, neither its dataset nor the skill's snapshot.
    with store.transaction():
        dataset = store.datasets.save(name, [case], label_set=labels)
        return create_experiment(
            {
                "name": f"try-{stamp}-{digest}",
                "dataset": dataset.fingerprint,
                "arms": {"try": arm},
                "graders": list(DEFAULT_GRADERS) if case.expected is not None else [],
                "concurrency": 1,
                "retries": 0,
                "priority": TRY_PRIORITY,
                "tags": [TRY_TAG],
            },
            store=store,
        )


def _try_result(store: Store, exp: Experiment) -> TryResult:
    """What the try's one run answered, its evidence resolved against the skill."""
    record = store.runs.records(exp.id)[0]
    snapshot = store.snapshots.get(exp.arms[0].snapshot) if exp.arms[0].snapshot else None
    out = record.output
    evidence = []
    for ref in out.evidence_refs if out else ():
        section = snapshot.resolve(ref) if snapshot else None
        evidence.append(
            {
                "ref": ref,
                "resolved": section.ref if section else None,
                "text": section.text if section else None,
            }
        )
    return TryResult(
        experiment=exp.name,
        experiment_id=exp.id,
        run_id=record.id,
        state=record.state,
        prediction=out.prediction if out else None,
        reason=out.reason if out else None,
        confidence=out.confidence if out else None,
        evidence=evidence,
        files_read=out.files_read if out else (),
        sections_read=out.sections_read if out else (),
        passed=record.passed,
        error=record.error,
        latency_ms=out.latency_ms if out else None,
        cost=out.cost if out else None,
    )

"""What an experiment ran on and how its runs went, read from the store for the report's provenance and run sections."""

from __future__ import annotations

import platform
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from abbench import __version__
from abbench.runner import PauseReason, halt_of
from abbench.snapshot import version_label
from abbench.store import (
    Experiment,
    FailedRun,
    Store,
    StoreLike,
    current_user,
    open_store,
    run_failures,
    runs_facts,
)
from abbench.types import ExperimentStatus, RunState

if TYPE_CHECKING:
    from abbench.dataset import DatasetInfo


@dataclass(frozen=True)
class ArmProvenance:
    """One arm as it ran: adapter, models, skill snapshot and where the skill came from.

    Attributes:
        name: The arm's name.
        agent: The adapter (builtin, openai, command, python, ...).
        model: The model the arm asked for.
        models_seen: The models the runs reported (an endpoint may answer with a dated variant).
        skill: ``name@hash12`` of the skill snapshot, or None for no skill.
        snapshot_hash: The full content hash.
        draft: Whether the skill content is not a clean git commit.
        draft_reason: Why it is a draft.
        commit: The git commit the skill came from.
        tag: Its tag.
        repo: The repository's remote (credentials removed), else its folder.
        params: The adapter parameters (names of key variables, never their values).
        sees_gold: The arm is a test double that reads the gold answer (``sees_gold: true``).
    """

    name: str
    agent: str
    model: str | None
    models_seen: tuple[str, ...] = ()
    skill: str | None = None
    snapshot_hash: str | None = None
    draft: bool | None = None
    draft_reason: str | None = None
    commit: str | None = None
    tag: str | None = None
    repo: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    sees_gold: bool = False


@dataclass(frozen=True)
class Provenance:
    """Everything a sceptic asks about where a result came from.

    Attributes:
        experiment: ``#id name``.
        owner: The experiment's owner.
        created_at: When the experiment was created (UTC).
        created_by: Who created it.
        status: Its status.
        paused_because: Why the runner paused it by itself (``budget reached — $5.02 of $5.00
            spent, …``); None otherwise.
        stopped_because: Where its stopping rule stopped it and what that saved (``decided after 120
            of 500 cases: better (…); 760 runs not needed``); None otherwise.
        halted_because: Why its execution stopped before it was done (``stopped on purpose (SIGTERM
            to abbench, pid 4242 …)``, ``its process died without a word …``); None otherwise.
        rounds: Rounds per case and arm.
        n_cases: Cases the experiment runs.
        dataset: The dataset fingerprint.
        dataset_cases: Cases in the whole dataset.
        mapping_profile: ``name@version`` of the mapping profile used to import it.
        dataset_file: The file it was imported from.
        dataset_imported: When and by whom it was imported.
        arms: Per-arm provenance, control first.
        graders: ``name (kind)`` of every grader that wrote a grade.
        judge_models: The models that judged.
        batch_id: The grade batch.
        first_started: When the first run started.
        last_finished: When the last run finished.
        run_by: Who ran it.
        parent: The experiment this one was cloned from.
        tags: The experiment's tags.
        abbench_version: The abbench that rendered the report.
        python: The Python that rendered it.
        generated_at: When the report was rendered (UTC).
        generated_by: Who rendered it.
    """

    experiment: str
    owner: str
    created_at: str
    created_by: str | None
    status: str
    rounds: int
    n_cases: int
    dataset: str
    dataset_cases: int | None
    mapping_profile: str | None
    dataset_file: str | None
    dataset_imported: str | None
    arms: tuple[ArmProvenance, ...]
    graders: tuple[str, ...]
    judge_models: tuple[str, ...]
    batch_id: str | None
    first_started: str | None
    last_finished: str | None
    run_by: tuple[str, ...]
    parent: str | None
    tags: tuple[str, ...]
    abbench_version: str
    python: str
    generated_at: str
    generated_by: str
    paused_because: str | None = None
    stopped_because: str | None = None
    halted_because: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return asdict(self)


_AS_STORED = ("owner", "created_at", "created_by", "status", "rounds", "batch_id")
"""The `Provenance` fields that are the experiment's own, under the same names."""
_AS_COUNTED = ("n_cases", "judge_models", "first_started", "last_finished", "run_by")
"""The `Provenance` fields counted over its runs (`abbench.store.runs_facts`), under the same names."""


def experiment_provenance(experiment: Experiment | int | str, *, store: StoreLike = None) -> Provenance:
    """The provenance of an experiment: dataset, mapping, skills (drafts marked), agents, models, dates, people.

    Args:
        experiment: The experiment: id, ``#id``, name, or an `Experiment`.
        store: A `Store`, a store folder, or None for $ABBENCH_STORE / ./.abbench.
    """
    s = open_store(store)
    exp = s.experiments.get(experiment)
    ds = s.datasets.get(exp.dataset_id)
    facts = runs_facts(s, exp.id)  # aggregated in SQL, one pass over the runs: no run or grade is loaded
    arms = _arm_provenance(s, exp, facts.models_seen)
    profile = _profile_ref(exp, ds)
    parent = None
    if exp.parent_id is not None:
        try:
            parent = s.experiments.get(exp.parent_id).ref
        except Exception:  # the parent may have been deleted; provenance still renders
            parent = f"#{exp.parent_id}"
    return Provenance(
        experiment=exp.ref,
        **{name: getattr(exp, name) for name in _AS_STORED},
        **{name: getattr(facts, name) for name in _AS_COUNTED},
        dataset=exp.dataset,
        dataset_cases=ds.n_cases,
        mapping_profile=profile,
        dataset_file=ds.source_file,
        dataset_imported=f"{ds.created_at or '?'} by {ds.created_by or '?'}",
        arms=tuple(arms),
        graders=tuple(f"{name} ({kind})" for name, kind in facts.graders),
        parent=parent,
        tags=tuple(exp.tags),
        abbench_version=__version__,
        python=platform.python_version(),
        generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        generated_by=current_user(),
        paused_because=_paused_because(exp),
        stopped_because=_stopped_because(exp),
        halted_because=_halted_because(exp),
    )


def _arm_provenance(s: Store, exp: Experiment, models: dict[str, tuple[str, ...]]) -> list[ArmProvenance]:
    """Each arm's agent, model (and `models`, those its runs reported), skill snapshot and parameters."""
    arms = []
    for arm in exp.arms:
        snap = s.snapshots.get(arm.snapshot) if arm.snapshot else None
        arms.append(
            ArmProvenance(
                name=arm.name,
                agent=arm.agent,
                model=arm.model,
                models_seen=models.get(arm.name, ()),
                skill=version_label(snap.skill_name, snap.hash, draft=False) if snap else None,
                snapshot_hash=snap.hash if snap else None,
                draft=snap.draft if snap else None,
                draft_reason=snap.draft_reason if snap else None,
                commit=snap.commit if snap else None,
                tag=snap.tag if snap else None,
                repo=(snap.remote or snap.repo) if snap else None,
                params=dict(arm.params or {}),
                sees_gold=(arm.params or {}).get("sees_gold") is True,
            )
        )
    return arms


def _paused_because(exp: Experiment) -> str | None:
    if exp.status != ExperimentStatus.PAUSED or not exp.pause_reason:
        return None

    reason = PauseReason.from_dict(exp.pause_reason)
    return None if reason is None else reason.text


def _halted_because(exp: Experiment) -> str | None:
    halt = halt_of(exp)
    return None if halt is None else halt.text


def _stopped_because(exp: Experiment) -> str | None:
    stop = exp.stop_reason
    if not stop or not stop.get("text"):
        return None
    saved = sum((stop.get("skipped") or {}).values())
    return str(stop["text"]) + (f"; {saved:,} runs not needed" if saved else "")


def _profile_ref(exp: Experiment, ds: DatasetInfo) -> str | None:
    if ds.profile_ref:
        return ds.profile_ref
    name = exp.spec.dataset_profile
    if name:
        version = exp.spec.dataset_profile_version
        return f"{name}@{version}" if version else name
    return None


@dataclass(frozen=True)
class RunOverview:
    """How an experiment's runs went: states per arm, failures by kind, and the failures themselves.

    Attributes:
        states: Arm -> state -> runs (every state present, arms in order).
        total: All runs.
        finished: Runs in pass or fail.
        execution_failures: Arm -> failure type -> runs (agent_error, timeout, interrupted ...).
        grading_failures: Arm -> runs whose execution succeeded but grading reached no verdict.
        cancelled: Arm -> cancelled runs.
        failures: Up to `limit` failed runs (`abbench.store.FailedRun`: case, arm, round from 0, kind, failure
            type, error), by run id.
        scored: Arm -> runs graded with a score and no verdict (in ``pass``, but not right).
        experiment_id: The experiment's id (what the report tells a reader to retry or re-grade).
    """

    states: dict[str, dict[str, int]]
    total: int
    finished: int
    execution_failures: dict[str, dict[str, int]]
    grading_failures: dict[str, int]
    cancelled: dict[str, int]
    failures: tuple[FailedRun, ...]
    scored: dict[str, int] = field(default_factory=dict)
    experiment_id: int | None = None

    @property
    def complete(self) -> bool:
        """Whether every run reached pass or fail (nothing pending, cancelled or failed to execute)."""
        return self.finished == self.total and not any(self.execution_failures.values())

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (each failed run's round from 1, as every view shows rounds)."""
        failures = [asdict(f) | {"round": f.round + 1} for f in self.failures]
        return asdict(self) | {"failures": failures, "complete": self.complete}


def run_overview(
    experiment: Experiment | int | str, *, store: StoreLike = None, limit: int = 50
) -> RunOverview:
    """Where an experiment's runs ended up, with its execution and grading failures told apart.

    Args:
        experiment: The experiment: id, ``#id``, name, or an `Experiment`.
        store: A `Store`, a store folder, or None for $ABBENCH_STORE / ./.abbench.
        limit: How many failed runs to list in detail.
    """
    s = open_store(store)
    exp = s.experiments.get(experiment)
    states = s.runs.counts(exp.id)
    found = run_failures(s, exp.id, limit=limit)  # counted in SQL: no run is loaded, wrong answers not read
    exec_fail: dict[str, dict[str, int]] = {a.name: {} for a in exp.arms} | found.execution
    total = sum(sum(c.values()) for c in states.values())
    finished = sum(c.get(RunState.PASS, 0) + c.get(RunState.FAIL, 0) for c in states.values())
    return RunOverview(
        states=states,
        total=total,
        finished=finished,
        execution_failures=exec_fail,
        grading_failures={a.name: found.grading.get(a.name, 0) for a in exp.arms},
        cancelled={a: c.get(RunState.CANCELLED, 0) for a, c in states.items()},
        failures=found.first,
        scored={a.name: found.scored.get(a.name, 0) for a in exp.arms},
        experiment_id=exp.id,
    )

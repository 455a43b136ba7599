"""The experiment and arm records, and whether the process that runs one is alive."""

from __future__ import annotations

import os
import socket
import sqlite3
import time
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from abbench import _actions as do
from abbench.errors import Action, NotFoundError, StoreError
from abbench.snapshot import version_label
from abbench.store._base import loads
from abbench.store._settings import RunSettings
from abbench.types import Control, ExperimentStatus

if TYPE_CHECKING:
    from abbench.store._spec import StoredExperimentSpec


CONTROLS = tuple(c.value for c in Control)


STATUSES = tuple(s.value for s in ExperimentStatus)


TRY_TAG = "try"
"""The tag that marks a try (`abbench try`): a one-case experiment kept out of the default lists."""


HEARTBEAT_STALE_S = 5.0
"""A runner that has not written its heartbeat for this long is presumed dead."""


@dataclass(frozen=True)
class Arm:
    """One stored arm of an experiment."""

    id: int
    name: str
    position: int
    agent: str
    model: str | None = None
    snapshot: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    skill_mode: str = "injected"
    """``injected`` (the skill is put into the task) or ``offered`` (a catalogue the agent loads from)."""
    snapshots: tuple[str, ...] = ()
    """Every skill snapshot of the arm, in order: ``(snapshot,)`` for one skill, () for none."""
    skill_name: str | None = None
    """The name of the skill of `snapshot` (None without a skill, or when the store no longer has it)."""
    drafts: tuple[str, ...] = ()
    """Those of `snapshots` whose content is a draft (not a clean git commit), as the store has them now."""

    @property
    def draft(self) -> bool:
        """Whether the arm's skill (`snapshot`) is a draft."""
        return self.snapshot is not None and self.snapshot in self.drafts

    @property
    def version(self) -> str | None:
        """The arm's skill version as every view names it (``name@hash12``, ``(draft)`` marked), or None
        without a skill (`snapshot`)."""
        if not self.snapshot:
            return None
        if self.skill_name is None:  # a snapshot the store does not hold (an old server's answer): its hash
            return self.snapshot[:12]
        return version_label(self.skill_name, self.snapshot, self.draft)

    @property
    def offered(self) -> bool:
        """True when the arm offers its skills in a catalogue instead of injecting one."""
        return self.skill_mode == "offered"

    @property
    def label(self) -> str:
        """``name (agent/model, skill name@hash12)`` for people, a draft skill marked ``(draft)``."""
        bits = [self.agent + (f"/{self.model}" if self.model else "")]
        if len(self.snapshots) > 1:
            drafts = len(self.drafts)
            bits.append(
                f"{len(self.snapshots)} skills" + (f", {drafts} draft{'s' * (drafts > 1)}" if drafts else "")
            )
        else:
            bits.append(f"skill {self.version}" if self.snapshot else "no skill")
        if self.offered:
            bits.append("offered")
        return f"{self.name} ({', '.join(bits)})"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Arm:
        """The arm from its fields as a JSON object (a server's experiment answer lists them so)."""
        return cls(
            id=int(data.get("id") or 0),
            name=str(data["name"]),
            position=int(data.get("position") or 0),
            agent=str(data["agent"]),
            model=data.get("model"),
            snapshot=data.get("snapshot"),
            params=dict(data.get("params") or {}),
            skill_mode=str(data.get("skill_mode") or "injected"),
            snapshots=tuple(data.get("snapshots") or ()),
            skill_name=data.get("skill_name"),
            drafts=tuple(data.get("drafts") or ()),
        )


@dataclass(frozen=True)
class Experiment:
    """A stored experiment: its identity, dataset, arms, definition and current control state."""

    id: int
    name: str
    owner: str
    skill: str
    skill_version: str
    dataset_id: int
    dataset: str
    profile_id: int | None
    definition: dict[str, Any]
    """Its definition as stored (JSON); `spec` is the same as its validated model."""
    settings: RunSettings
    """What a run reads of its definition, read without pydantic (start-up stays fast)."""
    rounds: int
    status: str
    control: str
    batch_id: str | None
    priority: int
    tags: tuple[str, ...]
    gate: Any
    parent_id: int | None
    created_at: str
    updated_at: str
    created_by: str | None
    arms: tuple[Arm, ...]
    runner_pid: int | None = None
    runner_host: str | None = None
    heartbeat_at: float | None = None
    pause_reason: dict[str, Any] | None = None
    """Why the runner paused it by itself (``{"reason": "budget reached", ...figures}``), else None."""
    stop_reason: dict[str, Any] | None = None
    """Why its stopping rule stopped it (``{"decision": "better", "cases": 120, "total": 500, ...}``),
    else None (see `abbench.runner.StopReason`)."""
    executor: dict[str, Any] | None = None
    """Where its agents run, as the last runner recorded it (``{"executor": "dask", "scheduler": ...,
    "dashboard": ..., "workers": 4}``); None: on the runner's own machine (the local executor)."""
    runner_origin: str | None = None
    """What kind of process holds (or last held) it: ``cli``, ``server`` (a server's runner pool) or
    ``python``; None before any ran it."""
    halt: dict[str, Any] | None = None
    """Why its last runner stopped before the work was done (``{"why": "stopped", "signal": "SIGTERM",
    "origin": "cli", "pid": ..., "host": ..., "at": ...}``, see `abbench.runner.HaltReason`); None while
    one runs, once it finished, and when its runner died without a word."""
    queued: dict[str, Any] | None = None
    """Work a server's runner pool accepted for it and no process has started yet (``{"by": "server",
    "at": ..., "actor": ..., "regrade": false, ...}``, see `abbench.runner.QueuedWork`), with
    ``not_started`` when a restarted server did not start it; None once a pass claims it."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Experiment:
        """The experiment from its fields as a JSON object: what `abbench.client.Client` reads from a
        server's experiment answer (``GET /api/experiments/{id}``). `settings` is read again from the
        definition; a field the answer leaves out (the store's row ids of the profile, who created it)
        is None.
        """
        definition = dict(data.get("definition") or {})
        return cls(
            id=int(data["id"]),
            name=str(data["name"]),
            owner=str(data.get("owner") or ""),
            skill=str(data.get("skill") or ""),
            skill_version=str(data.get("skill_version") or ""),
            dataset_id=int(data.get("dataset_id") or 0),
            dataset=str(data["dataset"]),
            profile_id=data.get("profile_id"),
            definition=definition,
            settings=RunSettings.from_json(definition),
            rounds=int(data.get("rounds") or 1),
            status=str(data["status"]),
            control=str(data.get("control") or Control.RUN),
            batch_id=data.get("batch_id"),
            priority=int(data.get("priority") or 0),
            tags=tuple(data.get("tags") or ()),
            gate=data.get("gate"),
            parent_id=data.get("parent_id"),
            created_at=str(data.get("created_at") or ""),
            updated_at=str(data.get("updated_at") or ""),
            created_by=data.get("created_by"),
            arms=tuple(Arm.from_dict(a) for a in data.get("arms") or ()),
            runner_pid=data.get("runner_pid"),
            runner_host=data.get("runner_host"),
            heartbeat_at=data.get("heartbeat_at"),
            pause_reason=data.get("pause_reason"),
            stop_reason=data.get("stop_reason"),
            executor=data.get("executor"),
            runner_origin=data.get("runner_origin"),
            halt=data.get("halt"),
            queued=data.get("queued"),
        )

    @cached_property
    def spec(self) -> StoredExperimentSpec:
        """Its definition as validated when it was created (with the snapshots and profile recorded).

        Built on first use: the runner reads `settings` instead, so running loads no pydantic model.

        Raises:
            StoreError: the stored definition is not valid.
        """
        return _read_spec(self.definition, self.name)

    @property
    def is_try(self) -> bool:
        """Whether this is a try (one input tried at once), kept out of the default lists."""
        return TRY_TAG in self.tags

    @property
    def version(self) -> str | None:
        """The skill version it is named by (``skill@hash12``, ``(draft)`` marked, see `Arm.version`);
        None when no arm has a skill."""
        return version_label(self.skill, self.skill_version, self.draft) if self.skill else None

    @property
    def draft(self) -> bool:
        """Whether the skill version it is named by (`version`) is a draft."""
        return bool(self.skill) and any(
            a.draft for a in self.arms if a.snapshot and a.snapshot.startswith(self.skill_version)
        )

    @property
    def ref(self) -> str:
        """How to name it in commands: ``#id name``."""
        return f"#{self.id} {self.name}"

    def arm(self, name: str) -> Arm:
        """The arm called `name`.

        Raises:
            NotFoundError: no such arm (the message lists the arms).
        """
        for a in self.arms:
            if a.name == name:
                return a
        raise NotFoundError.no_arm(repr(self.name), name, (a.name for a in self.arms))

    @property
    def runner_alive(self) -> bool:
        """Whether some process is running this experiment right now (a fresh heartbeat, a live process)."""
        if self.heartbeat_at is None or time.time() - self.heartbeat_at >= HEARTBEAT_STALE_S:
            return False
        return not (
            self.runner_host == socket.gethostname() and self.runner_pid and not _pid_alive(self.runner_pid)
        )

    def busy_message(self) -> tuple[str | Action, ...]:
        """Why this experiment cannot be run from here now: another live process holds it (the message's
        parts: an `AbbenchError` words the actions for its view).

        A paused experiment is still held by its process, so the message says to resume it there
        rather than "pause first"; a running one can be paused, cancelled or waited for.
        """
        where = f"process {self.runner_pid} on {self.runner_host}"
        if self.status == ExperimentStatus.PAUSED or self.control == Control.PAUSE:
            return (
                f"experiment {self.name!r} is paused in {where}, which still holds it: resume it (",
                do.resume_experiment(self.id),
                ") and let it finish, or cancel it (",
                do.cancel_experiment(self.id),
                "), then try again",
            )
        return (
            f"experiment {self.name!r} is being run by {where}; wait for it to finish, or cancel it (",
            do.cancel_experiment(self.id),
            "), then try again",
        )


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by someone else
        return True
    return not _zombie(pid)


def _zombie(pid: int) -> bool:
    """Whether `pid` has exited but was never reaped (Linux): it runs nothing, so it holds nothing.

    A runner whose parent died (a server's child after a SIGKILL) is adopted by init, and an init that
    does not reap (some containers) leaves it a zombie that `kill(pid, 0)` still finds.
    """
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:  # not Linux, or gone already
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] == b"Z"


def arm_snapshots(settings: RunSettings, a: sqlite3.Row) -> tuple[str, ...]:
    """Every skill snapshot of an arm's row (``id, name, position, agent, model, snapshot, ...``): the
    stored definition's, else the row's own."""
    defined = settings.arms.get(a[1])
    hashes = tuple(defined.snapshots or ()) if defined is not None else ()
    return hashes or ((a[5],) if a[5] else ())


def _arm(settings: RunSettings, a: sqlite3.Row, skills: dict[str, tuple[str, bool]]) -> Arm:
    """An arm's row with its skill mode and snapshots from the stored definition, and its skills' names
    and draft marks from `skills` (hash → (skill name, draft))."""
    defined = settings.arms.get(a[1])
    mode = defined.skill_mode if defined is not None else "injected"
    hashes = arm_snapshots(settings, a)
    name = skills[a[5]][0] if a[5] in skills else None
    drafts = tuple(h for h in hashes if skills.get(h, ("", False))[1])
    return Arm(a[0], a[1], a[2], a[3], a[4], a[5], loads(a[6]) or {}, mode, hashes, name, drafts)


def _read_spec(data: dict[str, Any], name: str) -> StoredExperimentSpec:
    """The stored definition as its model (every definition is validated when it is written)."""
    from pydantic import ValidationError

    try:
        return _spec_model().model_validate(data)
    except ValidationError as exc:
        raise StoreError(
            f"experiment {name!r}: its stored definition is not valid ({exc.error_count()} problems: "
            f"{exc.errors()[0]['msg']}); create it again from its definition file"
        ) from None


def _spec_json(spec: StoredExperimentSpec | dict[str, Any]) -> dict[str, Any]:
    """A definition as the store keeps it: validated, JSON-ready."""
    if isinstance(spec, dict):
        spec = _spec_model().model_validate(spec)
    return spec.as_json()


def _spec_model() -> type[StoredExperimentSpec]:
    """The definition's model; its module loads pydantic, only when a definition is read or written."""
    from abbench.store._spec import StoredExperimentSpec

    return StoredExperimentSpec

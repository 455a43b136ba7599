"""What a run reads of a stored definition, without validating it again: plain values, no pydantic.

A stored definition was validated when it was written (`abbench.store.StoredExperimentSpec`), so the
runner reads the few settings it needs straight from its JSON, with the same defaults; the full model
(`Experiment.spec`) is built only when something asks for it. This keeps pydantic, and the time its
models take to build, off the path of `abbench run` to its first agent call.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

DEFAULT_GRADERS: tuple[str, ...] = ("label_match",)
"""The graders of an experiment whose definition names none."""
DEFAULT_CONCURRENCY = 8
"""Runs in flight at once when the definition does not say."""
DEFAULT_TIMEOUT_S = 120.0
"""The per-run timeout when the definition does not say."""
DEFAULT_RETRIES = 2
"""Extra attempts for retryable failures when the definition does not say."""


@dataclass(frozen=True)
class ArmSettings:
    """What a run reads of one stored arm: its cache mode, budget, skill mode and snapshots."""

    cache: str | None = None
    budget: dict[str, Any] | None = None
    skill_mode: str = "injected"
    snapshots: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ArmSettings:
        """The settings of a stored arm (its JSON, as `StoredExperimentSpec.as_json` wrote it)."""
        return cls(
            cache=data.get("cache"),
            budget=data.get("budget"),
            skill_mode=data.get("skill_mode") or "injected",
            snapshots=tuple(data.get("snapshots") or ()),
        )


@dataclass(frozen=True)
class RunSettings:
    """What a run reads of a stored definition, with the definition's defaults where a key is absent.

    Attributes:
        concurrency, timeout_s, retries, seed, cache, graders: As in `abbench.store.ExperimentSpec`.
        budget: The ``budget:`` mapping (``max_cost``, ``max_tokens``), or None.
        stopping: The ``stopping:`` mapping, or None when the experiment has no stopping rule.
        arms: Arm name -> its settings.
        executor: ``local`` or ``dask`` (the definition's ``executor:``; absent: local).
    """

    concurrency: int = DEFAULT_CONCURRENCY
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = DEFAULT_RETRIES
    seed: int = 0
    cache: str | None = None
    graders: tuple[str | dict[str, Any], ...] = DEFAULT_GRADERS
    budget: dict[str, Any] | None = None
    stopping: dict[str, Any] | None = None
    arms: dict[str, ArmSettings] = field(default_factory=dict)
    executor: str = "local"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSettings:
        """The settings of a stored definition (its JSON, as `StoredExperimentSpec.as_json` wrote it)."""

        def get(key: str, default: Any) -> Any:
            value = data.get(key)
            return default if value is None else value

        return cls(
            concurrency=int(get("concurrency", DEFAULT_CONCURRENCY)),
            timeout_s=float(get("timeout_s", DEFAULT_TIMEOUT_S)),
            retries=int(get("retries", DEFAULT_RETRIES)),
            seed=int(get("seed", 0)),
            cache=data.get("cache"),
            graders=tuple(get("graders", DEFAULT_GRADERS)),
            budget=data.get("budget"),
            stopping=data.get("stopping"),
            arms={name: ArmSettings.from_json(arm or {}) for name, arm in (data.get("arms") or {}).items()},
            executor=str(get("executor", "local")),
        )

"""Experiment definitions as validated models: what a YAML file (or a Python dict) may say, and what is stored.

The store keeps an experiment's definition as JSON and reads it back as a `StoredExperimentSpec` (the
definition plus what creating the experiment recorded: snapshots, the dataset's mapping profile);
the runner validates the definitions people write (`abbench.runner.load_spec`) with the same models.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from abbench._text import control_character
from abbench.errors import UsageError
from abbench.store._settings import DEFAULT_CONCURRENCY, DEFAULT_GRADERS, DEFAULT_RETRIES, DEFAULT_TIMEOUT_S

_NAME = re.compile(r"^[^\s/\\][^/\\]{0,199}$")


def _cache_mode(value: Any) -> str | None:
    # imported here: the store reads definitions without loading the HTTP client behind abbench.llm
    from abbench.llm import check_cache_mode

    try:
        return check_cache_mode(value)
    except UsageError as exc:
        raise ValueError(str(exc).removeprefix("cache: ")) from None


class DatasetSource(BaseModel):
    """A dataset given as a file to import (with its mapping profile) instead of a stored fingerprint."""

    model_config = ConfigDict(extra="forbid")

    file: str = Field(description="Path of the CSV/XLSX/JSONL/JSON file, relative to the definition file.")
    mapping: str | dict[str, Any] | None = Field(
        None, description="Saved profile name (name or name@version), a profile file, or an inline profile."
    )
    name: str | None = Field(None, description="Dataset name (default: the file's stem).")
    sheet: str | int | None = None
    header_row: int | None = None
    encoding: str | None = None
    recipe: str | None = None
    skip_invalid: bool = False


class CaseSelection(BaseModel):
    """Which cases of the dataset the experiment runs (all of them by default)."""

    model_config = ConfigDict(extra="forbid")

    ids: list[str] | None = Field(None, description="Only these case ids.")
    domains: list[str] | None = Field(None, description="Only cases of these domains.")
    labels: list[str] | None = Field(
        None,
        validation_alias=AliasChoices("labels", "expected"),
        description="Only cases whose gold label (`expected`) is one of these; `expected:` is accepted too.",
    )
    tag: str | None = Field(
        None, description="Only cases whose metadata `tags` (or `tag`) include this, e.g. smoke."
    )
    limit: int | None = Field(None, ge=1, description="At most this many cases (after the filters above).")
    sample: int | None = Field(None, ge=1, description="A seeded random sample of this many cases.")
    seed: int = 0


class BudgetSpec(BaseModel):
    """What an experiment (or one arm) may spend: the scheduler starts no run that would pass it.

    Every execution attempt counts, failed and retried ones included. A cost of unknown price never
    counts as 0: with runs of unknown cost, `max_cost` counts only the known part (a warning says so)
    and `max_tokens`, when given, is the limit that holds.
    """

    model_config = ConfigDict(extra="forbid")

    max_cost: float | None = Field(None, gt=0, description="Money (the prices' currency, e.g. USD).")
    max_tokens: int | None = Field(None, gt=0, description="Input plus output tokens.")

    @model_validator(mode="after")
    def _some_limit(self) -> BudgetSpec:
        if self.max_cost is None and self.max_tokens is None:
            raise ValueError("a budget needs max_cost and/or max_tokens, e.g. {max_cost: 5.00}")
        return self


class ArmSpec(BaseModel):
    """One arm: an agent adapter, a model, a skill (or none) and parameters.

    Unknown keys are taken as parameters, so ``{agent: builtin, latency_ms: 20}`` works.
    ``sees_gold: true`` (a parameter too) lets a ``python`` test double read the gold answer; no
    other adapter takes it, and the report shows such an arm as a test double.
    """

    model_config = ConfigDict(extra="allow")

    agent: str = Field(
        "builtin",
        description="Adapter name: builtin, openai, command (with preset: opencode, llm, generic-jsonl, "
        "claude-code, codex), python.",
    )
    model: str | None = Field(None, description="Model id, for adapters that take one.")
    skill: str | None = Field(
        None,
        description="A skill folder (snapshotted when the experiment is created) or a snapshot reference.",
    )
    skills: list[str] | None = Field(
        None,
        description="Several skills (folders or snapshot references), offered together in one catalogue "
        "(the whole-plugin arm); `skill:` is the one-skill shorthand. Needs skill_mode: offered.",
    )
    skill_mode: Literal["injected", "offered"] = Field(
        "injected",
        description="injected: the skill is put into the task (default); offered: the agent is shown a "
        "catalogue of the arm's skills (name and description) and may load one.",
    )
    git_ref: str | None = Field(None, description="Snapshot the skill folder as it was at this git ref.")
    params: dict[str, Any] = Field(default_factory=dict, description="Adapter parameters.")
    cache: str | None = Field(
        None,
        description="The response cache for this arm's model calls: on, off, read-only or refresh "
        "(default: the experiment's; without one, on at temperature 0 and off otherwise).",
    )

    _cache_ok = field_validator("cache", mode="before")(lambda v: _cache_mode(v))
    budget: BudgetSpec | None = Field(
        None, description="What this arm may spend: {max_cost: 5.00, max_tokens: 2_000_000}."
    )

    @field_validator("skill_mode", mode="before")
    @classmethod
    def _mode_word(cls, v: Any) -> Any:
        if v is None:
            return "injected"
        if isinstance(v, str) and v.strip().casefold() in ("injected", "offered"):
            return v.strip().casefold()
        raise ValueError(f"skill_mode is injected or offered, not {v!r}")

    @model_validator(mode="after")
    def _skills_fit_mode(self) -> ArmSpec:
        if self.skills is not None:
            if self.skill is not None:
                raise ValueError(
                    "an arm names its skill once: `skill:` for one, or `skills: [...]` for several, not both"
                )
            if not self.skills or any(not str(s).strip() for s in self.skills):
                raise ValueError("skills: lists no skill (or an empty one); list skill folders or snapshots")
            if len(set(self.skills)) != len(self.skills):
                twice = sorted({s for s in self.skills if self.skills.count(s) > 1})
                raise ValueError(f"skills: {', '.join(twice)} listed twice; list each skill once")
            if len(self.skills) > 1 and self.skill_mode != "offered":
                raise ValueError(
                    f"skills: {len(self.skills)} skills can only be offered (a catalogue the agent "
                    "chooses from), not injected into one task; add skill_mode: offered"
                )
        if self.skill_mode == "offered" and not self.skill_list:
            raise ValueError(
                "skill_mode: offered, but the arm has no skill to offer; give it `skill:` or "
                "`skills: [...]`, or leave skill_mode out for a no-skill arm"
            )
        return self

    @property
    def skill_list(self) -> list[str]:
        """Every skill the arm names, in order (`skills`, or the one `skill`)."""
        if self.skills:
            return list(self.skills)
        return [self.skill] if self.skill else []

    @model_validator(mode="after")
    def _extras_are_params(self) -> ArmSpec:
        extra = dict(self.__pydantic_extra__ or {})
        if extra and self.__pydantic_extra__ is not None:
            self.params = {**extra, **self.params}
            self.__pydantic_extra__.clear()
        if "sees_gold" in self.params:
            sees = self.params["sees_gold"]
            if not isinstance(sees, bool):
                raise ValueError(f"sees_gold must be true or false, not {sees!r}")
            if sees and self.agent != "python":
                raise ValueError(
                    f"sees_gold is for python test doubles only; the {self.agent} agent never sees the "
                    "gold answer: remove sees_gold"
                )
            if not sees and self.agent != "python":
                del self.params["sees_gold"]  # false says what every other adapter does anyway
        return self


CORROBORATION_RULES = ("both", "either", "advisory")
"""How a second judge counts (``judges: {corroborate: ...}``): a regression or a win counts only when both
judges find it, when either does, or as the primary finds it with the secondary shown beside it."""


class JudgesSpec(BaseModel):
    """Two judges of the experiment's graders, the second corroborating the first (``judges:``).

    Written ``judges: [primary, secondary]`` or ``judges: {primary: A, secondary: B, corroborate: both}``.
    """

    model_config = ConfigDict(extra="forbid")

    primary: str = Field(description="The grader name of the judge the decision rests on.")
    secondary: str = Field(description="The grader name of the judge that must corroborate it.")
    corroborate: Literal["both", "either", "advisory"] = Field(
        "both",
        description="both: a regression or a win counts only when both judges find it (default); either: "
        "when either does; advisory: as the primary finds it, the secondary shown beside it.",
    )

    @model_validator(mode="before")
    @classmethod
    def _from_list(cls, value: Any) -> Any:
        if isinstance(value, list | tuple):
            if len(value) != 2:
                raise ValueError(f"judges: names two graders, [primary, secondary]; got {len(value)}")
            return {"primary": value[0], "secondary": value[1]}
        return value

    @model_validator(mode="after")
    def _two_judges(self) -> JudgesSpec:
        if self.primary == self.secondary:
            raise ValueError(
                f"judges: {self.primary!r} is both the primary and the secondary; name two graders"
            )
        return self


class DecisionSpec(BaseModel):
    """The pair the experiment's decision is about: the gate, the report and ``compare`` use it unless
    a gate file or the command line names another."""

    model_config = ConfigDict(extra="forbid")

    baseline: str | None = Field(
        None, description="The arm the candidate is compared with (e.g. the current skill version)."
    )
    candidate: str | None = Field(
        None, description="The arm the decision is about (e.g. the new skill version)."
    )
    policy: Literal["difference", "votes"] = Field(
        "difference",
        description="How capability is decided: the paired difference and its interval (default), or "
        "per-case votes — wins, ties, losses, an exact sign test and a net-win margin.",
    )
    margin: float | None = Field(
        None,
        ge=0,
        le=1,
        description="With policy votes: the net-win share (wins − losses) / decided cases asked for "
        "(default 0.2).",
    )
    min_cases: int | None = Field(
        None, ge=1, description="With policy votes: the fewest decided cases to decide on (default 5)."
    )

    @model_validator(mode="after")
    def _both_or_neither(self) -> DecisionSpec:
        if (self.baseline is None) != (self.candidate is None):
            given = "baseline" if self.baseline is not None else "candidate"
            other = "candidate" if given == "baseline" else "baseline"
            raise ValueError(
                f"decision: names a {given} but no {other}; name both arms of the pair or neither"
            )
        if self.policy != "votes" and (self.margin is not None or self.min_cases is not None):
            raise ValueError(
                "decision: margin and min_cases belong to policy: votes; add policy: votes, or set a "
                "non-inferiority margin in a gate rule ({metric: non_inferior, margin: 0.02})"
            )
        return self


class DaskSpec(BaseModel):
    """Where ``executor: dask`` sends the agent calls: an existing scheduler, or a cluster made for the run.

    Example::

        executor: dask
        dask: {scheduler: tcp://10.0.0.5:8786}      # or {local: 4}: a LocalCluster of 4 processes
    """

    model_config = ConfigDict(extra="forbid")

    scheduler: str | None = Field(
        None, description="The address of a running Dask scheduler (tcp://HOST:8786)."
    )
    local: int | None = Field(
        None, ge=1, le=1024, description="Start a LocalCluster of this many worker processes for the run."
    )
    shared_store: str | None = Field(
        None,
        description="The store folder as the workers see it (a shared file system): snapshots are "
        "read from there, their hash checked, instead of being sent through the scheduler.",
    )
    connect_timeout_s: float = Field(
        10.0, gt=0, description="How long to wait for the scheduler and its first worker."
    )

    @model_validator(mode="after")
    def _one_cluster(self) -> DaskSpec:
        if self.scheduler is not None and self.local is not None:
            raise ValueError("give scheduler (an existing cluster) or local (a LocalCluster), not both")
        return self


class StoppingSpec(BaseModel):
    """Anytime-valid sequential stopping: run cases in a seeded random order and stop once decided.

    After every `check_every` finished cases (and never before `min_cases`), an anytime-valid confidence
    sequence on the decision pair's paired difference (`abbench.stats.SequentialTest`) is updated; the
    experiment stops when it excludes 0 (better / worse), lies inside ±`margin` (equivalent), or at the
    last case. The runs left are not run (cancelled, recorded as stopped by the rule, not failed).
    """

    model_config = ConfigDict(extra="forbid")

    rule: Literal["decided"] = Field(
        "decided", description="``decided``: stop as soon as the confidence sequence decides."
    )
    alpha: float = Field(
        0.05,
        gt=0,
        lt=1,
        description="1 − the coverage of the confidence sequence (the chance of a false verdict).",
    )
    margin: float = Field(
        0.02,
        ge=0,
        lt=1,
        description="Stop as equivalent when the sequence lies inside ±margin (2 points: 0.02).",
    )
    min_cases: int = Field(50, ge=1, description="Never stop before this many finished cases.")
    check_every: int = Field(20, ge=1, description="Look after every this many finished cases.")


class ExperimentSpec(BaseModel):
    """An experiment definition (the YAML file's content).

    Example::

        name: routing-v2
        dataset: demo@3fa9c2e1b0d4
        rounds: 3
        arms:
          control: {agent: builtin}
          treatment: {agent: builtin, skill: data/demo/skills/fast-slow-routing-v2}
    """

    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The experiment's name; with owner and skill version, its identity.")
    dataset: str | DatasetSource = Field(description="A dataset fingerprint/name, or a file to import.")
    arms: dict[str, ArmSpec] = Field(description="Arm name -> arm; the first is the control (a).")
    rounds: int = Field(1, ge=1, le=1000, description="How many times each case is run per arm.")
    graders: list[str | dict[str, Any]] = Field(
        default_factory=lambda: list[str | dict[str, Any]](DEFAULT_GRADERS),
        description="The graders (a name, or a mapping with type and options).",
    )
    concurrency: int = Field(
        DEFAULT_CONCURRENCY, ge=1, le=10_000, description="Runs in flight at once for this experiment."
    )
    timeout_s: float = Field(DEFAULT_TIMEOUT_S, gt=0, description="Per-run timeout in seconds.")
    retries: int = Field(DEFAULT_RETRIES, ge=0, le=20, description="Extra attempts for retryable failures.")
    priority: int = Field(0, description="Higher runs first when experiments share the machine.")
    executor: Literal["local", "dask"] | None = Field(
        None,
        description="Where the agents run: local (this process, the default) or dask (tasks on a Dask "
        "cluster; this process stays the one that writes the store).",
    )
    dask: DaskSpec | None = Field(None, description="The Dask cluster (with executor: dask).")
    tags: list[str] = Field(default_factory=list)
    cases: CaseSelection | None = None
    owner: str | None = Field(None, description="Owner (default: the OS user).")
    description: str | None = None
    gate: str | list[dict[str, Any]] | dict[str, Any] | None = Field(
        None, description="Gate rules, a gate file, or {rules, baseline, candidate, min_coverage}."
    )
    decision: DecisionSpec | None = Field(
        None, description="The pair the decision is about: {baseline: ARM, candidate: ARM}."
    )
    judges: JudgesSpec | None = Field(
        None,
        description="Two judges of `graders`, [primary, secondary]: a regression or a win counts only when "
        "the second corroborates it (see `JudgesSpec`).",
    )
    seed: int = Field(0, description="Seed for anything random (pairwise order, samples).")
    cache: str | None = Field(
        None,
        description="The response cache for every model call (arms and judges; an arm's or a judge's "
        "own `cache` wins): on, off, read-only or refresh. Default: on for judges and for arms at "
        "temperature 0, off otherwise (sampled replies are measured for their spread).",
    )

    _cache_ok = field_validator("cache", mode="before")(lambda v: _cache_mode(v))
    budget: BudgetSpec | None = Field(
        None, description="What the whole experiment may spend: {max_cost: 5.00, max_tokens: 2_000_000}."
    )
    stopping: StoppingSpec | None = Field(
        None,
        description="Stop when decided: {rule: decided, alpha: 0.05, margin: 0.02, min_cases: 50, "
        "check_every: 20} (cases then run in a seeded random order).",
    )

    @field_validator("name")
    @classmethod
    def _name_ok(cls, v: str) -> str:
        v = v.strip()
        bad = control_character(v)
        if bad is not None:
            raise ValueError(f"{v!r} holds {bad}; a name is one line of text")
        if not _NAME.fullmatch(v):
            raise ValueError("must be 1-200 characters, without slashes, not starting with a space")
        return v

    @field_validator("arms")
    @classmethod
    def _arms_ok(cls, v: dict[str, ArmSpec]) -> dict[str, ArmSpec]:
        if not v:
            raise ValueError("needs at least one arm, e.g. {control: {agent: builtin}}")
        for name in v:
            bad = control_character(str(name))
            if bad is not None:
                raise ValueError(f"arm name {name!r} holds {bad}; a name is one line of text")
            if not _NAME.fullmatch(str(name)):
                raise ValueError(f"arm name {name!r} must be 1-200 characters without slashes")
        return v

    @model_validator(mode="after")
    def _stopping_has_a_pair(self) -> ExperimentSpec:
        if self.stopping is None:
            return self
        named = self.decision is not None and self.decision.baseline is not None
        if len(self.arms) < 2:
            raise ValueError("stopping: needs two arms to compare; add an arm, or remove stopping:")
        if len(self.arms) > 2 and not named:
            raise ValueError(
                f"stopping: decides on a pair, and there are {len(self.arms)} arms "
                f"({', '.join(self.arms)}); name it: decision: {{baseline: A, candidate: B}}"
            )
        if self.decision is not None and self.decision.policy == "votes":
            raise ValueError(
                "stopping: monitors the paired difference; it cannot be combined with decision.policy: votes"
            )
        return self

    @model_validator(mode="after")
    def _judges_are_graders(self) -> ExperimentSpec:
        if self.judges is None:
            return self
        names = [_grader_name(g) for g in self.graders]
        for key in ("primary", "secondary"):
            name = getattr(self.judges, key)
            if name not in names:
                raise ValueError(
                    f"judges.{key}: no grader {name!r}; the graders: {', '.join(map(str, names)) or '(none)'}"
                )
        return self

    @model_validator(mode="after")
    def _decision_names_arms(self) -> ExperimentSpec:
        if self.decision is None:
            return self
        arms = list(self.arms)
        if self.decision.baseline is None:
            return self
        for key in ("baseline", "candidate"):
            name = getattr(self.decision, key)
            if name not in self.arms:
                close = difflib.get_close_matches(name, arms, n=1, cutoff=0.5)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(f"decision.{key}: no arm {name!r}{hint}; the arms: {', '.join(arms)}")
        if self.decision.baseline == self.decision.candidate:
            raise ValueError(
                f"decision: {self.decision.baseline!r} is both the baseline and the candidate; name two arms"
            )
        return self


class StoredArmSpec(ArmSpec):
    """An arm as stored: its definition plus the skill snapshot it was created with."""

    snapshot: str | None = Field(None, description="The skill snapshot's hash (recorded when created).")
    snapshots: list[str] | None = Field(
        None, description="With `skills:`, every skill's snapshot hash, in order (recorded when created)."
    )
    skill_source: str | None = Field(
        None, description="The `skill` the definition gave (folder or reference)."
    )
    skill_label: str | None = Field(None, description="The snapshot's label for people.")


class StoredExperimentSpec(ExperimentSpec):
    """An experiment's definition as stored: ``dataset`` is the fingerprint, each arm records its snapshot,
    and the dataset's mapping profile is named. Keys an older version stored are kept as they are."""

    model_config = ConfigDict(extra="allow")

    arms: dict[str, StoredArmSpec] = Field(description="Arm name -> arm; the first is the control (a).")  # type: ignore[assignment]  # a stored arm is an ArmSpec; pydantic parses the subclass
    dataset_profile: str | None = Field(
        None, description="The dataset's mapping profile (recorded when created)."
    )
    dataset_profile_version: int | None = Field(None, description="That profile's version.")

    def as_json(self) -> dict[str, Any]:
        """The definition as the store keeps it (JSON-ready; unset optional keys left out, and an
        arm's ``skill_mode`` when it is the default ``injected``, so injected arms read as before)."""
        data = self.model_dump(mode="json", exclude_none=True)
        for arm in data.get("arms", {}).values():
            if arm.get("skill_mode") == "injected":
                del arm["skill_mode"]
        return data


def _grader_name(spec: Any) -> Any:
    """A grader definition's name, as `abbench.graders.make_grader` names it: its ``name``, else its type."""
    if isinstance(spec, dict):
        return spec.get("name") or spec.get("type") or spec.get("grader")
    return spec

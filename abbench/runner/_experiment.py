"""Creating experiments from definitions: resolve the dataset, snapshot the skills, write one run per case × round × arm."""

from __future__ import annotations

import difflib
import json
import logging
import random
from pathlib import Path
from typing import Any

import yaml

from abbench import _actions as do
from abbench._yaml import load_yaml
from abbench.agents import make_agent
from abbench.dataset import DatasetInfo, gold_kind
from abbench.errors import AbbenchError, ExperimentError, NotFoundError, UsageError
from abbench.graders import experiment_self_judging, normalise_label
from abbench.runner._grading import build_graders, repeated
from abbench.runner._spec import load_spec
from abbench.snapshot import Snapshot
from abbench.store import (
    ArmSpec,
    CaseSelection,
    DatasetSource,
    Experiment,
    ExperimentSpec,
    Store,
    current_user,
    open_store,
)
from abbench.types import Case

log = logging.getLogger(__name__)


def _resolve_path(text: str, base: Path | None) -> Path | None:
    """`text` as an existing path: relative to the definition file first, then to the working folder."""
    candidates = [Path(text).expanduser()]
    if base is not None and not Path(text).is_absolute():
        candidates.insert(0, base / text)
    for p in candidates:
        if p.exists():
            return p.resolve()
    return None


def _resolve_dataset(store: Store, source: str | DatasetSource, base: Path | None) -> DatasetInfo:
    if isinstance(source, str):
        return store.datasets.get(source)
    path = _resolve_path(source.file, base)
    if path is None:
        raise ExperimentError(
            f"dataset file {source.file!r} does not exist (relative to {base or Path.cwd()})"
        )
    mapping: Any = source.mapping
    if isinstance(mapping, str):
        mapping_path = _resolve_path(mapping, base)
        if mapping_path is not None and mapping_path.is_file():
            mapping = str(mapping_path)
    return store.datasets.import_file(
        path,
        mapping,
        name=source.name,
        sheet=source.sheet,
        header_row=source.header_row,
        encoding=source.encoding,
        recipe=source.recipe,
        skip_invalid=source.skip_invalid,
    )


def _resolve_skills(store: Store, arm_name: str, arm: ArmSpec, base: Path | None) -> list[Snapshot]:
    """Every snapshot of the arm, in order (`skills:`, or the one `skill:`).

    Raises:
        ExperimentError: a skill is neither a folder nor a stored snapshot, or two offered skills
            share a name (the catalogue could not tell them apart).
    """
    out: list[Snapshot] = []
    for text in arm.skill_list:
        path = _resolve_path(text, base)
        if path is not None and path.is_dir():
            out.append(store.snapshots.freeze(path, git_ref=arm.git_ref))
            continue
        try:
            out.append(store.snapshots.get(text))
        except NotFoundError:
            raise ExperimentError(
                f"arm {arm_name!r}: skill {text!r} is neither a folder (relative to {base or Path.cwd()}) "
                "nor a stored snapshot (`",
                do.list_snapshots(),
                "` lists them)",
                kind="skill",
                name=text,
            ) from None
    twice = repeated(s.skill_name for s in out)
    if twice:
        raise ExperimentError(
            f"arm {arm_name!r}: the skills offered share the name {', '.join(map(repr, twice))}; an "
            "agent choosing from the catalogue could not tell them apart: offer one version per arm"
        )
    return out


# Adapters that read files named in their settings: relative paths start at the definition's folder,
# as a skill folder's do, rather than wherever `abbench run` is started later.
_FILE_AGENTS = ("command", "python")


def _check_arms(spec: ExperimentSpec, base: Path | None) -> dict[str, Any]:
    """Build each arm's agent once, so that its settings are checked when the experiment is created.

    Raises:
        ExperimentError: an arm names an unknown agent or a setting it does not take (the message
            names the arm and lists the valid settings).
    """
    agents: dict[str, Any] = {}
    for name, arm in spec.arms.items():
        if arm.agent in _FILE_AGENTS and base is not None and "base_dir" not in arm.params:
            arm.params["base_dir"] = str(base)
        try:
            agents[name] = make_agent(arm.agent, model=arm.model, **arm.params)
        except AbbenchError as exc:
            hint = ""
            keys = [k for k in arm.params if k != "base_dir"]
            for key in keys:
                close = difflib.get_close_matches(key, list(ArmSpec.model_fields), n=1)
                if close:
                    hint = f" ({key!r}: did you mean {close[0]!r}?)"
                    break
            raise exc.within(ExperimentError, f"arm {name!r}: ", hint) from None
    return agents


def _preflight(agents: dict[str, Any], snapshots: dict[str, Any], store: Store, dataset: Any) -> None:
    """Let each adapter refuse an arm that could answer no case (see `Agent.run`)."""
    label_set = dataset.label_set
    for name, agent in agents.items():
        check = getattr(agent, "preflight", None)
        if not callable(check):
            continue
        try:
            check(snapshots[name], tuple(label_set) if label_set else None)
        except UsageError as exc:
            hint = "" if label_set else _gold_hint(store, dataset)
            raise exc.within(ExperimentError, f"arm {name!r}: ", hint) from None


def _gold_hint(store: Store, dataset: Any, written_out: int = 50) -> str:
    """The dataset's gold values written as the `labels:` an arm could be given, when they are labels."""
    counts = {k: n for k, n in store.datasets.value_counts(dataset.id).items() if k is not None}
    kind = dataset.expected_kind if dataset.expected_kind is not None else gold_kind(counts)
    if not kind.is_label:
        return ""  # answers rather than labels
    if len(counts) > written_out:  # too many to write out in a message: say how to declare them
        first = ", ".join(sorted(counts)[:5])
        return (
            f". Its gold values are {len(counts):,} labels ({first}, …): give the arm `labels: dataset` "
            "to choose among them, or declare them as `label_set:` in the mapping profile"
        )
    values = sorted(counts)
    # quoted where YAML would read something else (True, 1, null, "a: b")
    written = [v if _yaml_reads_as_text(v) else json.dumps(v, ensure_ascii=False) for v in values]
    return (
        f". Its gold values are {', '.join(f'{v} ({counts[v]})' for v in values)}: "
        f"e.g. `labels: [{', '.join(written)}]`"
    )


def _yaml_reads_as_text(value: str) -> bool:
    try:
        return bool(load_yaml(f"[{value}]") == [value])
    except yaml.YAMLError:
        return False


def select_cases(cases: list[Case], selection: CaseSelection | None) -> list[tuple[int, str]]:
    """(index, case id) of the cases an experiment runs, in dataset order.

    Raises:
        ExperimentError: the selection names case ids the dataset lacks, or selects nothing.
    """
    chosen = list(enumerate(cases))
    if selection is None:
        return [(i, c.case_id) for i, c in chosen]
    if selection.ids is not None:
        wanted = set(selection.ids)
        missing = wanted - {c.case_id for c in cases}
        if missing:
            raise ExperimentError(f"cases not in the dataset: {', '.join(sorted(missing)[:10])}")
        chosen = [(i, c) for i, c in chosen if c.case_id in wanted]
    if selection.domains is not None:
        domains = set(selection.domains)
        known = {c.domain for c in cases if c.domain}
        unknown = [d for d in selection.domains if d not in known]
        if unknown:
            raise ExperimentError(
                f"cases.domains: {_unknown(unknown, known)} not a domain of the dataset; "
                f"its domains: {_some(sorted(known))}"
            )
        chosen = [(i, c) for i, c in chosen if c.domain in domains]
    if selection.labels is not None:
        gold = {str(c.expected) for c in cases if c.expected is not None}
        unknown = [label for label in selection.labels if label not in gold]
        if unknown:
            raise ExperimentError(
                f"cases.labels: {_unknown(unknown, gold)} not a gold label of the dataset; "
                f"its labels: {_some(sorted(gold))}"
            )
        labels = set(selection.labels)
        chosen = [(i, c) for i, c in chosen if c.expected is not None and str(c.expected) in labels]
    if selection.tag is not None:
        chosen = [(i, c) for i, c in chosen if selection.tag in _tags(c)]
    if selection.sample is not None and selection.sample < len(chosen):
        rng = random.Random(selection.seed)
        chosen = sorted(rng.sample(chosen, selection.sample), key=lambda ic: ic[0])
    if selection.limit is not None:
        chosen = chosen[: selection.limit]
    if not chosen:
        raise ExperimentError(f"the case selection {selection.model_dump(exclude_none=True)} selects no case")
    return [(i, c.case_id) for i, c in chosen]


def _unknown(values: list[str], known: set[str] | list[str] | tuple[str, ...]) -> str:
    """The values a definition names that do not exist, each with its closest existing one: ``'a' (did
    you mean 'b'?), 'c' is`` — `is`/`are` ends it, so the caller goes on with "not a ..."."""
    choices = sorted(str(k) for k in known)
    folded = {c.casefold(): c for c in choices}
    said = []
    for value in values:
        close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.6)
        if not close:  # a difference of case only reads as far apart to difflib
            close = difflib.get_close_matches(str(value).casefold(), list(folded), n=1, cutoff=0.6)
            close = [folded[c] for c in close]
        said.append(f"{value!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return ", ".join(said) + (" is" if len(values) == 1 else " are")


DATASET_LABELS = "dataset"
"""An arm's ``labels: dataset``: choose among the dataset's labels, written out when it is created."""


def _dataset_labels(spec: ExperimentSpec, store: Store, dataset: Any) -> bool:
    """Write out ``labels: dataset`` as the dataset's labels: its declared label set, else its distinct
    gold values when they read as labels (`gold_kind`). The definition stored holds the list, so the
    experiment records exactly what each arm chose among. Returns whether any arm said it.

    Raises:
        ExperimentError: an arm says it and the dataset's gold values are free-text answers.
    """
    asking = [name for name, arm in spec.arms.items() if arm.params.get("labels") == DATASET_LABELS]
    if not asking:
        return False
    if dataset.label_set:
        labels = list(dataset.label_set)
    else:
        counts = {k: n for k, n in store.datasets.value_counts(dataset.id).items() if k not in (None, "")}
        kind = dataset.expected_kind if dataset.expected_kind is not None else gold_kind(counts)
        if not kind.is_label:
            raise ExperimentError(
                f"arm {asking[0]!r}: `labels: dataset`, but the gold values of dataset {dataset.fingerprint} "
                f"are free-text answers, not labels ({kind.reason}); list the labels as `labels: [...]`, "
                "or declare `expected_kind: label` in the mapping profile"
            )
        labels = sorted(counts, key=str)
    for name in asking:
        spec.arms[name].params["labels"] = [str(v) for v in labels]
    return True


def _check_arm_labels(spec: ExperimentSpec, dataset: Any) -> None:
    """Refuse an arm's `labels:` that the dataset's label set lacks (a dataset without one takes any).

    Labels compare as the grader compares them (trimmed, case-folded, through the label map), so
    ``Fast`` and ``快`` are ``fast`` when the profile says so.
    """
    label_set = dataset.label_set
    if not label_set:
        return
    label_map = dict(getattr(dataset, "label_map", None) or {})
    known = {normalise_label(v, label_map) for v in label_set}
    for name, arm in spec.arms.items():
        labels = arm.params.get("labels")
        if not isinstance(labels, (list, tuple)):
            continue
        unknown = [str(v) for v in labels if normalise_label(v, label_map) not in known]
        if unknown:
            raise ExperimentError(
                f"arm {name!r}: labels: {_unknown(unknown, label_set)} not in the label set of dataset "
                f"{dataset.fingerprint}; its labels: {_some(sorted(label_set))}. The agent would choose "
                "answers no case can have: correct them, or leave `labels:` out to use the dataset's"
            )


def _some(values: list[str], n: int = 20) -> str:
    shown = ", ".join(values[:n])
    return shown + (f" … ({len(values) - n} more)" if len(values) > n else "") if values else "none"


def _tags(case: Case) -> set[str]:
    meta = case.metadata or {}
    tags = meta.get("tags", meta.get("tag", ()))
    if isinstance(tags, str):
        tags = [t.strip() for t in tags.replace(";", ",").split(",")]
    return {str(t) for t in tags or ()}


def _check_judges(spec: ExperimentSpec, graders: list[Any]) -> None:
    """A second judge judges what the first does: two judges (not rules) of one kind, pointwise or pairwise."""
    if spec.judges is None:
        return
    kinds = {g.name: g.kind for g in graders}
    pair = (spec.judges.primary, spec.judges.secondary)
    if any(kinds[n] == "rule" for n in pair) or kinds[pair[0]] != kinds[pair[1]]:
        said = ", ".join(f"{n} is a {kinds[n]} grader" for n in pair)
        raise ExperimentError(
            f"judges: must name two judges of one kind (both llm judges or both pairwise judges); {said}"
        )


def create_experiment(
    definition: str | Path | dict[str, Any] | ExperimentSpec,
    *,
    store: str | Path | Store | None = None,
    reuse: bool = False,
    owner: str | None = None,
    parent_id: int | None = None,
    max_runs: int | None = None,
) -> Experiment:
    """Create an experiment (and one pending run per case × round × arm) from its definition.

    Skill folders are snapshotted and a dataset given as a file is imported now, so the experiment
    records exactly what it runs: snapshot hashes, dataset fingerprint, mapping profile, models and
    parameters.

    Args:
        definition: A YAML/JSON file, a dict, or an `ExperimentSpec`.
        store: The store (path or open Store; default ./.abbench or $ABBENCH_STORE).
        reuse: When an experiment with the same identity exists, return it instead of refusing.
        owner: Owner for the identity (default: the definition's, else the OS user).
        parent_id: The experiment this one was cloned from.
        max_runs: The most runs it may have (a server's limit on what one request stores); None: any.

    Raises:
        ExperimentError: the definition is invalid, it has more runs than `max_runs`, or its identity is
            taken and `reuse` is False.
    """
    spec, base = load_spec(definition)
    graders = build_graders(list(spec.graders), spec.name, list(spec.arms))  # refused now, not mid-run
    _check_judges(spec, graders)
    agents = _check_arms(spec, base)  # an unknown agent or a misspelt setting is refused now, not mid-run
    store = open_store(store)
    dataset = _resolve_dataset(store, spec.dataset, base)
    cases = store.datasets.load_cases(dataset.id)
    selected = select_cases(cases, spec.cases)
    _check_size(spec, len(selected), max_runs)
    if _dataset_labels(spec, store, dataset):
        agents = _check_arms(spec, base)  # the arms now hold the labels written out
    _check_arm_labels(spec, dataset)
    every = {name: _resolve_skills(store, name, arm, base) for name, arm in spec.arms.items()}
    snapshots = {name: (found[0] if found else None) for name, found in every.items()}
    _check_offered(spec, agents)
    _preflight(agents, snapshots, store, dataset)
    with_skill = [s for s in snapshots.values() if s is not None]
    skill = with_skill[-1].skill_name if with_skill else ""
    skill_version = with_skill[-1].short if with_skill else ""
    owner = spec.owner or owner or current_user()
    existing = store.experiments.find(owner=owner, skill=skill, skill_version=skill_version, name=spec.name)
    if existing is not None and reuse:
        log.info("reusing experiment %s", existing.ref)
        return existing
    resolved, arms = _resolved(spec, dataset, owner, every)
    with store.transaction():
        exp_id = store.experiments.insert(
            name=spec.name,
            owner=owner,
            skill=skill,
            skill_version=skill_version,
            dataset_id=dataset.id,
            profile_id=getattr(dataset, "profile_id", None),
            spec=resolved,
            rounds=spec.rounds,
            priority=spec.priority,
            tags=spec.tags,
            gate=spec.gate,
            arms=arms,
            parent_id=parent_id,
        )
        exp = store.experiments.get(exp_id)
        store.runs.create(exp_id, [a.id for a in exp.arms], selected, spec.rounds)
    log.info(
        "created experiment %s: %d cases × %d rounds × %d arms",
        exp.ref,
        len(selected),
        spec.rounds,
        len(exp.arms),
    )
    for warning in experiment_self_judging(exp):
        log.warning("experiment %s: %s", exp.ref, warning.message)
    return exp


def _check_size(spec: ExperimentSpec, cases: int, max_runs: int | None) -> None:
    """Refuse an experiment of more runs (cases × rounds × arms) than `max_runs`, saying how many."""
    runs = cases * spec.rounds * len(spec.arms)
    if max_runs is not None and runs > max_runs:
        raise ExperimentError(
            f"{spec.name}: {cases:,} cases × {spec.rounds} rounds × {len(spec.arms)} arms make "
            f"{runs:,} runs, over the {max_runs:,} one experiment may have here; select fewer cases "
            "(cases: {limit: N} or {sample: N}), rounds or arms, or split it into several experiments"
        )


def _check_offered(spec: ExperimentSpec, agents: dict[str, Any]) -> None:
    """Refuse an offered arm whose agent cannot offer skills (it would be measured as never loading one).

    Raises:
        ExperimentError: names the arm and the adapters that can.
    """
    for name, arm in spec.arms.items():
        if arm.skill_mode == "offered" and not getattr(agents[name], "offers_skills", False):
            raise ExperimentError(
                f"arm {name!r}: skill_mode: offered, but the {arm.agent} agent cannot offer skills "
                "(builtin, openai and command agents can); use one of them, or skill_mode: injected"
            )


def _resolved(
    spec: ExperimentSpec, dataset: DatasetInfo, owner: str, every: dict[str, list[Snapshot]]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The definition as stored (dataset fingerprint, profile, owner and each arm's snapshot written
    in) and the arms' rows."""
    resolved = spec.model_dump(mode="json", exclude_none=True)
    resolved["dataset"] = dataset.fingerprint
    resolved["dataset_profile"] = getattr(dataset, "profile_name", None)
    resolved["dataset_profile_version"] = getattr(dataset, "profile_version", None)
    resolved["owner"] = owner
    arms = []
    for name, arm in spec.arms.items():
        found = every[name]
        snap = found[0] if found else None
        entry = resolved["arms"][name]
        if snap is not None:
            entry["snapshot"] = snap.hash
            entry["skill_source"] = arm.skill or arm.skill_list[0]
            entry["skill_label"] = snap.label
        if arm.skills:
            entry["snapshots"] = [s.hash for s in found]
        arms.append(
            {
                "name": name,
                "agent": arm.agent,
                "model": arm.model,
                "snapshot": snap.hash if snap else None,
                "params": arm.params,
            }
        )
    return resolved, arms


def load_experiment(ref: int | str, *, store: str | Path | Store | None = None) -> Experiment:
    """A stored experiment by id (``12``, ``#12``), name or ``NAME@<skill version>``.

    A name shared by several experiments (one per skill version) gives the latest, and a logged
    note names the others. Reading never starts any work.
    """
    return open_store(store).experiments.get(ref)


def list_experiments(
    *, store: str | Path | Store | None = None, since: str | None = None, include_tries: bool = False
) -> list[Experiment]:
    """Stored experiments, newest first (created on or after `since` when given).

    Tries (`try_input`) are left out unless `include_tries`.
    """
    return open_store(store).experiments.all(since=since, include_tries=include_tries)


def clone_spec(source: Experiment) -> dict[str, Any]:
    """The definition a clone of `source` starts from (what `clone_experiment` changes): each arm's
    skill its exact snapshot, not whatever the folder holds now, and what creating `source` recorded
    (its dataset's profile, its owner) left out."""
    spec = source.spec.as_json()
    arms: dict[str, Any] = {}
    for arm_name, arm in spec["arms"].items():
        arm = dict(arm)
        if arm.get("snapshots"):
            arm["skills"] = list(arm["snapshots"])
        elif arm.get("snapshot"):
            arm["skill"] = arm["snapshot"]
        for key in ("snapshot", "snapshots", "skill_source", "skill_label"):
            arm.pop(key, None)
        arms[arm_name] = arm
    spec["arms"] = arms
    for key in ("dataset_profile", "dataset_profile_version", "owner"):
        spec.pop(key, None)
    return spec


def clone_experiment(
    ref: int | str | Experiment,
    *,
    name: str,
    arms: dict[str, ArmSpec | dict[str, Any]] | None = None,
    rounds: int | None = None,
    store: str | Path | Store | None = None,
    reuse: bool = False,
    changes: dict[str, Any] | None = None,
) -> Experiment:
    """A new experiment like `ref`, with some arms replaced (a new skill version, a new model).

    Args:
        ref: The experiment to clone.
        name: The new experiment's name.
        arms: Arm name -> replacement arm (fields not given are kept from the original arm); a new
            name adds an arm.
        rounds: A different number of rounds.
        changes: Other fields of the definition to set instead of the original's (``dataset``,
            ``graders``, ``cases``, ``concurrency``; ``arms`` replaces every arm at once).
    """
    store = open_store(store)
    source = store.experiments.get(ref)
    spec = clone_spec(source)
    spec["name"] = name
    if rounds is not None:
        spec["rounds"] = rounds
    new_arms: dict[str, Any] = spec["arms"]
    for arm_name, replacement in (arms or {}).items():
        data = (
            replacement.model_dump(exclude_unset=True)
            if isinstance(replacement, ArmSpec)
            else dict(replacement)
        )
        merged = {**new_arms.get(arm_name, {}), **data}
        if "skill" in data:
            merged.pop("skills", None)  # one skill replaces a list, and a list one skill
        if "skills" in data:
            merged.pop("skill", None)
        if ("skill" in data or "skills" in data) and "git_ref" not in data:
            merged.pop("git_ref", None)  # a new skill does not inherit the old one's git ref
        new_arms[arm_name] = merged
    spec.update(changes or {})
    return create_experiment(spec, store=store, reuse=reuse, owner=source.owner, parent_id=source.id)

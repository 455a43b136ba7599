"""Objects as one owner sees them: lookups that answer 404 for another owner's, and safe definitions.

Every lookup goes through here. Another owner's dataset, snapshot or experiment is missing, with the
same words and the same work as a missing one. An experiment definition sent over HTTP may name only
the caller's own datasets and snapshots (never a file or folder on the server) and only the agents
and graders the server allows.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any

from abbench import _actions as do
from abbench.dataset import DatasetInfo, MappingProfile
from abbench.errors import Action, NotFoundError
from abbench.runner import list_experiments, load_spec
from abbench.server import _policy
from abbench.server._documents import INT_MAX
from abbench.server._problems import Problem, not_found, refusal
from abbench.server._settings import ServerSettings
from abbench.snapshot import Snapshot
from abbench.store import Experiment, Store


def experiment(store: Store, ref: str | int, owner: str) -> Experiment:
    """The owner's experiment `ref` (id, ``#id`` or name: the latest of that name), else a 404 in the
    local store's words, its "did you mean" drawn from the owner's names alone."""
    text = str(ref).strip().lstrip("#")
    if text.isascii() and text.isdigit():
        try:
            found = store.experiments.get(int(text)) if int(text) <= INT_MAX else None
        except NotFoundError:
            found = None
        if found is not None and found.owner == owner:
            return found
        if str(ref).strip().startswith("#"):
            raise _no_experiment(
                f"no experiment {str(ref).strip()}; `", do.list_experiments(), "` lists them"
            )
    owned = owned_experiments(store, owner, tries=True)
    named = [e for e in owned if e.name == text]
    if not named:
        names = sorted({e.name for e in owned})
        close = difflib.get_close_matches(text.partition("@")[0], names, n=3, cutoff=0.6)
        said = f"did you mean {' or '.join(map(repr, close))}? `" if close else "`"
        if not names:
            raise _no_experiment(
                text,
                f"no experiment named {text!r}; the store has no experiments yet; create one with `",
                do.create_experiment(),
                "`",
            )
        raise _no_experiment(
            text, f"no experiment named {text!r}; {said}", do.list_experiments(), "` lists them"
        )
    return named[0]


def _no_experiment(name: str, *said: str | Action) -> Problem:
    """A 404 for an experiment this owner does not hold (another owner's is said to be missing alike)."""
    return refusal(404, "not found", NotFoundError(*said, kind="experiment", name=name))


def owned_experiments(store: Store, owner: str, *, tries: bool = False) -> list[Experiment]:
    """The owner's experiments, newest first."""
    return [e for e in list_experiments(store=store, include_tries=tries) if e.owner == owner]


def datasets(store: Store, owner: str) -> list[DatasetInfo]:
    """The datasets the owner holds, oldest first."""
    held = store.keys.held("dataset", owner)
    return [d for d in store.datasets.all(include_tries=True) if d.fingerprint in held]


def dataset(store: Store, ref: str, owner: str) -> DatasetInfo:
    """The owner's dataset by fingerprint, name (the latest) or content-hash prefix, else a 404."""
    mine = datasets(store, owner)
    matchers: tuple[Callable[[DatasetInfo], bool], ...] = (
        lambda d: d.fingerprint == ref,
        lambda d: d.name == ref,
        lambda d: (
            len(ref) >= 6 and (d.content_hash.startswith(ref) or d.fingerprint.split("@")[-1].startswith(ref))
        ),
    )
    for match in matchers:
        found = [d for d in mine if match(d)]
        if found:
            return found[-1]
    raise not_found("dataset", ref, "datasets")


def profile(store: Store, ref: str, owner: str) -> MappingProfile:
    """The mapping profile the owner saved as `ref` (``name``: the latest version, ``name@3``), else a 404.

    Another owner's profile of the name is missing, as a name nobody saved: never found, never listed.
    """
    try:
        return store.profiles.get(ref, owner=owner)
    except NotFoundError:
        raise Problem(
            404,
            "not found",
            f"no saved mapping profile {ref!r} for this key's owner; send the profile itself (JSON or YAML) "
            "— an import saves it under its name (or the dataset's) for next time",
        ) from None


def snapshots(store: Store, owner: str) -> list[Snapshot]:
    """The snapshots the owner holds."""
    held = store.keys.held("snapshot", owner)
    return [s for s in store.snapshots.all() if s.hash in held]


def snapshot(store: Store, ref: str, owner: str) -> Snapshot:
    """The owner's snapshot by hash (or a prefix of 8+), label or skill name (the latest), else a 404."""
    text = ref.removesuffix(" (draft)")
    mine = snapshots(store, owner)
    matchers: tuple[Callable[[Snapshot], bool], ...] = (
        lambda s: s.hash == text or (len(text) >= 8 and s.hash.startswith(text)),
        lambda s: s.label.removesuffix(" (draft)") == text,
        lambda s: s.skill_name == text,
    )
    for match in matchers:
        found = [s for s in mine if match(s)]
        if found:
            return found[-1]  # a skill name: its latest snapshot
    raise not_found("snapshot", ref, "skill-snapshots")


def _invalid(detail: str) -> Problem:
    return Problem(422, "invalid definition", detail)


def _resolve_skills(store: Store, arm: dict[str, Any], owner: str) -> None:
    if isinstance(arm.get("skill"), str) and arm["skill"]:
        arm["skill"] = snapshot(store, arm["skill"], owner).hash
    elif arm.get("skill") is not None:
        raise _invalid("an arm's skill names one of your snapshots (its hash, label or skill name)")
    if isinstance(arm.get("skills"), list):
        arm["skills"] = [snapshot(store, str(s), owner).hash for s in arm["skills"]]


def definition(store: Store, spec: Any, owner: str, settings: ServerSettings) -> dict[str, Any]:
    """The definition, with its dataset and skills resolved among the owner's, and the owner set.

    Raises:
        Problem: 422 for a server file, another owner, or an agent, grader or endpoint the server does
            not allow (`abbench.server._policy`); 404 for a dataset or snapshot the owner does not hold.
        ExperimentError: the definition is invalid (422, each problem named).
    """
    if not isinstance(spec, dict):
        raise _invalid("the definition must be a YAML or JSON mapping (name, dataset, arms, ...)")
    spec = dict(spec)
    if spec.get("owner") not in (None, owner):
        raise _invalid(f"the definition names owner {spec['owner']!r}, but this key acts for {owner!r}")
    spec["owner"] = owner
    ds = spec.get("dataset")
    if isinstance(ds, dict):
        raise _policy.refused_path("dataset", "dataset")
    if not isinstance(ds, str) or not ds:
        raise _invalid(
            "dataset must name a dataset you uploaded (its fingerprint or name); upload a file with "
            "POST /api/datasets first"
        )
    spec["dataset"] = dataset(store, ds, owner).fingerprint
    arms = spec.get("arms")
    if not isinstance(arms, dict) or not arms:
        raise _invalid("arms must map arm names to arms, e.g. {control: {agent: builtin}}")
    spec["arms"] = {}
    for name, arm in arms.items():
        if not isinstance(arm, dict):
            raise _invalid(f"arm {name!r} must be a mapping (agent, model, skill, params)")
        arm = dict(arm)
        _resolve_skills(store, arm, owner)
        spec["arms"][name] = arm
    checked, _ = load_spec(spec)
    _policy.check_definition(checked, settings)
    return dict(spec)

"""A definition loaded into the run form: it runs as written, and what the form changed is said before Start.

The form has controls for some of a definition's keys (`FORM_KEYS`; of an arm, those `abbench.widgets._arm_form` lists);
every other key — ``description``, ``decision``, ``seed``, ``gate``, ``budget``, an arm's ``cache`` ...,
and any key a later version adds — is carried through unchanged. `merged` puts the form's values over the
loaded definition; `changes` lists, in words, where the two differ (``concurrency 16 → 8``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from abbench.runner import ExperimentSpec, load_spec

FORM_KEYS = ("name", "dataset", "arms", "rounds", "concurrency", "graders", "cases")
"""The definition's keys the form has a control for (the rest are carried through)."""
FORM_CASE_KEYS = ("domains", "labels", "limit", "sample")
"""The keys of ``cases:`` the form has a control for (``ids``, ``tag``, ``seed`` are carried)."""
FILE_DATASET = "file:"
"""The dataset chooser's value for "the definition's own file, imported at Start"."""
SHOWN_CHARS = 60
"""A value longer than this is shortened in the list of changes."""


def load_definition(source: str | os.PathLike[str] | Mapping[str, Any] | ExperimentSpec) -> dict[str, Any]:
    """A definition (a YAML/JSON file, a dict or a spec), validated as `abbench run` validates it, as JSON.

    Folders and files it names relative to its own folder (skills, the dataset file and its mapping) are
    written as this process finds them, so the form runs what the file runs.

    Raises:
        ExperimentError: the file cannot be read or the definition is invalid (said where).
    """
    given: Path | dict[str, Any] | ExperimentSpec
    if isinstance(source, Mapping):
        given = dict(source)
    elif isinstance(source, ExperimentSpec):
        given = source
    else:
        given = Path(source)
    spec, folder = load_spec(given)
    data = spec.model_dump(mode="json", exclude_none=True)
    if folder is None:
        return data
    for arm in data["arms"].values():
        if arm.get("skill"):
            arm["skill"] = _here(folder, arm["skill"], dirs=True)
        if arm.get("skills"):
            arm["skills"] = [_here(folder, s, dirs=True) for s in arm["skills"]]
    if isinstance(data["dataset"], dict):
        source_ = data["dataset"]
        source_["file"] = _here(folder, source_["file"])
        if isinstance(source_.get("mapping"), str):
            source_["mapping"] = _here(folder, source_["mapping"])
    return data


def _here(folder: Path, text: str, *, dirs: bool = False) -> str:
    """`text` as this process finds it, when it names a file (a folder with `dirs`) next to the definition."""
    path = folder / text
    if not (path.is_dir() if dirs else path.is_file()) or Path(text).is_absolute():
        return text  # a snapshot reference, a profile name, or a path given in full
    try:
        near = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path.resolve())
    # ``../data/demo/skills/v1`` from a notebook beside data/; a path that climbs further reads better whole
    return near if near.count("..") <= 2 else str(path.resolve())


def dataset_file_label(source: Mapping[str, Any]) -> str:
    """The dataset chooser's line for a definition's dataset file."""
    name = source.get("name") or Path(str(source["file"])).stem
    return f"{Path(str(source['file'])).name} as {name} (the definition's file, imported at Start)"


def merged(base: Mapping[str, Any] | None, form: Mapping[str, Any]) -> dict[str, Any]:
    """The definition the form describes: `form` (its keys, `FORM_KEYS`) over `base`, whose other keys —
    and each arm's and ``cases:``'s keys the form has no control for — are kept."""
    if not base:
        return dict(form)
    out = {k: v for k, v in base.items() if k not in FORM_KEYS}
    out.update({k: v for k, v in form.items() if k != "cases"})
    given, chosen = base.get("cases") or {}, form.get("cases") or {}
    kept = {k: v for k, v in given.items() if k not in FORM_CASE_KEYS}
    if "sample" in chosen and "sample" in given and "limit" in given:
        kept["limit"] = given["limit"]  # the form shows a count, the sample's: the limit is carried
    cases = {**kept, **chosen}
    if cases and cases != {"seed": 0}:
        out["cases"] = cases
    return out


def _normal(definition: Mapping[str, Any]) -> dict[str, Any]:
    """`definition` as the runner reads it (defaults written in), or as given when it does not validate."""
    try:
        spec, _ = load_spec(dict(definition))
    except Exception:  # the form says what is wrong at Start; the changes are listed from what it holds
        return dict(definition)
    data = spec.model_dump(mode="json", exclude_none=True)
    if data.get("cases", {}).get("seed") == 0:
        del data["cases"]["seed"]  # the default, on both sides: not a change when cases are chosen
    return data


def _shown(value: Any) -> str:
    if value is None:
        return "—"
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    """Dotted path → value for every value that is not a mapping (lists are one value; an empty
    mapping is no value)."""
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_leaves(item, f"{path}.{key}" if path else str(key)))
        return out
    return {path: value}


def changes(base: Mapping[str, Any] | None, definition: Mapping[str, Any]) -> list[str]:
    """What `definition` changes of `base`, one line each: ``concurrency 16 → 8``, ``arm v3 removed``,
    ``arms.v1.params.latency_ms — → 150``. Empty when nothing changed (or there is no `base`)."""
    if not base:
        return []
    before, after = _normal(base), _normal(definition)
    out = []
    old_arms, new_arms = dict(before.pop("arms", {})), dict(after.pop("arms", {}))
    out += [f"arm {name} removed" for name in old_arms if name not in new_arms]
    out += [f"arm {name} added" for name in new_arms if name not in old_arms]
    if list(old_arms) != list(new_arms) and set(old_arms) == set(new_arms):
        out.append(f"arm order {', '.join(old_arms)} → {', '.join(new_arms)}")
    common = [name for name in new_arms if name in old_arms]
    was = _leaves(before) | {k: v for n in common for k, v in _leaves(old_arms[n], f"arms.{n}").items()}
    now = _leaves(after) | {k: v for n in common for k, v in _leaves(new_arms[n], f"arms.{n}").items()}
    for path in [*was, *(p for p in now if p not in was)]:
        if was.get(path) != now.get(path):
            out.append(f"{path} {_shown(was.get(path))} → {_shown(now.get(path))}")
    return out

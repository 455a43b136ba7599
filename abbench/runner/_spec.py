"""Reading an experiment definition: a YAML file (or a Python dict) validated with clear messages.

The models themselves live in the store (`abbench.store.ExperimentSpec`), which reads stored
definitions back as them; `abbench.runner` exports them too, where people have always found them.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ValidationError

from abbench._utf8 import read_utf8
from abbench._yaml import compose_yaml, error_at, error_problem, load_yaml
from abbench.errors import ExperimentError
from abbench.store import (
    BudgetSpec,
    CaseSelection,
    DaskSpec,
    DatasetSource,
    DecisionSpec,
    ExperimentSpec,
    StoppingSpec,
)


def load_spec(source: str | Path | dict[str, Any] | ExperimentSpec) -> tuple[ExperimentSpec, Path | None]:
    """Validate an experiment definition from a YAML/JSON file, a dict, or a spec.

    Returns the spec and the folder relative paths in it are resolved against (the file's folder).

    Raises:
        ExperimentError: the file cannot be read or the definition is invalid (each problem named
            with its location in the definition).
    """
    base: Path | None = None
    if isinstance(source, ExperimentSpec):
        return source, None
    if isinstance(source, (str, Path)) and not isinstance(source, dict):
        if not str(source).strip():
            raise ExperimentError(
                "no experiment definition named: give the path of its YAML or JSON file (name, dataset, arms)"
            )
        path = Path(source)
        if not path.exists():
            raise ExperimentError(f"experiment definition {path} does not exist")
        if path.is_dir():
            raise ExperimentError(
                f"experiment definition {path} is a folder: name the YAML or JSON file in it (name, dataset, arms)"
            )
        try:
            text = read_utf8(path, ExperimentError)
        except OSError as exc:
            raise ExperimentError(
                f"experiment definition {path} cannot be read: {exc.strerror or exc}"
            ) from exc
        try:
            data = load_yaml(text)
        except yaml.YAMLError as exc:
            raise ExperimentError(f"{path}{error_at(exc)}: not valid YAML ({error_problem(exc)})") from exc
        base = path.resolve().parent
        origin = str(path)
    else:
        data, text = source, None
        origin = "experiment definition"
    if not isinstance(data, dict):
        raise ExperimentError(f"{origin}: expected a mapping with name, dataset and arms")
    try:
        return ExperimentSpec.model_validate(data), base
    except ValidationError as exc:
        raise ExperimentError(f"{origin}: {'; '.join(_problems(exc, text))}") from None


_KINDS = {bool: "a boolean", int: "a number", float: "a number", type(None): "nothing (null)"}


def _key_not_text(parent: list[str], key: Any, text: str | None) -> str:
    """The problem of a mapping key YAML read as something else than text (``yes``, ``no``, ``on`` and
    ``off`` are booleans to YAML 1.1, ``2`` a number): the name would not be the one the file shows.
    With the file's `text`, the key's line and column and its word as written."""
    said = repr(key)
    node = compose_yaml(text) if text else None
    for part in parent:  # down to the mapping holding the key
        found = (
            [v for k, v in node.value if str(k.value) == part] if isinstance(node, yaml.MappingNode) else []
        )
        node = found[0] if found else None
    for name, _ in node.value if isinstance(node, yaml.MappingNode) else []:
        if name.tag != "tag:yaml.org,2002:str" and load_yaml(name.value) == key:
            said = f"line {name.start_mark.line + 1}, column {name.start_mark.column + 1}: {name.value!r}"
            break
    kind = _KINDS.get(type(key), type(key).__name__)
    return f'{".".join(parent) or "(top)"}: {said} is read as {kind}, not a name — put it in quotes (e.g. "yes":)'


# Where pydantic names the branch of a union in an error's location ("dataset.str"), not a key.
_UNION_BRANCHES = {
    "str",
    "int",
    "DatasetSource",
    "CaseSelection",
    "DecisionSpec",
    "BudgetSpec",
    "StoppingSpec",
    "DaskSpec",
    "dict[str,any]",
    "list[dict[str,any]]",
}
# The model whose keys are valid at a location (after union branches are dropped).
_MODELS: dict[tuple[str, ...], type[BaseModel]] = {
    (): ExperimentSpec,
    ("dataset",): DatasetSource,
    ("cases",): CaseSelection,
    ("decision",): DecisionSpec,
    ("budget",): BudgetSpec,
    ("stopping",): StoppingSpec,
    ("dask",): DaskSpec,
}


def _problems(exc: ValidationError, text: str | None = None) -> list[str]:
    """Each validation error as ``place: what is wrong`` — unknown keys with the valid ones listed, a key
    that is not text with its line in the definition's `text` (when it came from a file)."""
    problems: list[str] = []
    for err in exc.errors():
        loc = [str(p) for p in err["loc"]]
        if loc[-1:] == ["[key]"] and not isinstance(err.get("input"), str):
            problems.append(
                _key_not_text([p for p in loc[:-2] if p not in _UNION_BRANCHES], err["input"], text)
            )
            continue
        branch = next((p for p in loc if p in _UNION_BRANCHES), None)
        # A mapping given where a union also allows a string: the string branch's complaint is noise.
        if branch in ("str", "int") and isinstance(err.get("input"), (dict, list)):
            continue
        loc = [p for p in loc if p not in _UNION_BRANCHES]
        place = ".".join(loc) or "(top)"
        if err["type"] == "extra_forbidden":
            model = _MODELS.get(tuple(loc[:-1])) or (BudgetSpec if loc[-2:-1] == ["budget"] else None)
            valid = list(model.model_fields) if model else []
            hint = difflib.get_close_matches(loc[-1], valid, n=1)
            msg = f"unknown key {loc[-1]!r}" + (f" (did you mean {hint[0]!r}?)" if hint else "")
            if valid:
                msg += f"; valid keys: {', '.join(valid)}"
            problems.append(f"{'.'.join(loc[:-1]) or '(top)'}: {msg}")
            continue
        msg = str(err["msg"]).removeprefix("Value error, ")
        # A check over the whole definition names its own place (decision.candidate: ...).
        problems.append(msg if err["type"] == "value_error" and not loc else f"{place}: {msg}")
    return problems

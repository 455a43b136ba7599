"""The arm form: one row per arm (agent, model, skill, parameters), parameters as YAML or as a form.

The parameters box takes YAML as in an experiment file (``temperature: 0.3, labels: [fast, slow]``) or
``key=value`` pairs; under it, a form built from what the agent declares (`abbench.agents.agent_parameters`)
holds the same values, a list-valued parameter (``labels``, ``args``) as a list of tags. Both stay in step.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import ipywidgets as w
import yaml

from abbench._yaml import load_yaml
from abbench.agents import agent_names, agent_parameters
from abbench.errors import UsageError
from abbench.store import StoredArmSpec
from abbench.widgets._base import NONE, note

NO_SKILL = ""
"""The skill chooser's value for "no skill"."""
FOLDER = "folder"
"""The skill chooser's value for "a folder…" (typed in the box beside it)."""


class ArmOwner(Protocol):
    """What an arm row needs from the widget holding it."""

    def guard(self, action: str, fn: Callable[..., Any]) -> Callable[..., Any]: ...
    def on_change(self, widget: w.Widget, action: Callable[[Any], Any], name: str = "value") -> None: ...
    def skill_options(self) -> list[tuple[str, str]]: ...
    def remove_arm(self, row: ArmRow) -> None: ...


PARAMS_HINT = "temperature: 0.3, labels: [fast, slow]"
"""What the parameters box shows when empty: a form the box accepts (lists as lists)."""


def params_hint(declared: Sequence[Any]) -> str:
    """An example for the parameters box from an agent's declared parameters (`AgentParameter`): a
    number and a list it takes, written as the box reads them (``temperature: 0.3, args: [a, b]``)."""
    parts: dict[str, Any] = {}
    numbers = [p for p in declared if p.kind == "number" and p.default is not None]
    number = next((p for p in numbers if p.name == "temperature"), numbers[0] if numbers else None)
    listed = next((p for p in declared if p.kind == "list"), None)
    if number is not None:
        parts[number.name] = 0.3 if number.name == "temperature" else number.default
    if listed is not None:
        parts[listed.name] = ["fast", "slow"] if listed.name == "labels" else ["a", "b"]
    return params_text(parts)[1:-1] if parts else PARAMS_HINT


def _split_top(text: str) -> list[str]:
    """`text` split at the commas outside brackets and quotes (``labels=[a, b], seed=2`` is two parts)."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch in ",，" and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def _yaml_error(exc: yaml.YAMLError, arm: str, shift: int = 0) -> UsageError:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1 - shift}" if mark is not None else ""
    return UsageError(
        f"arm {arm!r}: parameters are not valid YAML{where} ({getattr(exc, 'problem', None) or exc}); "
        f"write e.g. {PARAMS_HINT}"
    )


def parse_params(text: str, *, arm: str = "") -> dict[str, Any]:
    """An arm's parameters from the form: YAML (or JSON), or ``key=value`` pairs split by commas.

    YAML as in an experiment file, on one line (``temperature: 0.3, labels: [fast, slow]``, braces
    optional) or several; JSON is YAML too. In ``key=value`` pairs a value is read as JSON when it
    parses (``latency_ms=50`` is a number), as a YAML list or mapping when bracketed
    (``labels=[a, b]``), else kept as text.

    Raises:
        UsageError: the text is none of these (the message says which arm, where, and how to write it).
    """
    text = text.strip()
    if not text:
        return {}
    pairs = _split_top(text)
    if not all("=" in p.partition(":")[0] for p in pairs if p.strip()) and (":" in text or text[0] in "{"):
        one_line = "\n" not in text and not text.startswith("{")
        try:
            value = load_yaml("{" + text + "}" if one_line else text)
        except yaml.YAMLError as exc:
            raise _yaml_error(exc, arm, shift=int(one_line)) from None  # the brace added in front
        if not isinstance(value, dict):
            raise UsageError(f"arm {arm!r}: parameters must be a mapping, e.g. {PARAMS_HINT}")
        return {str(k): v for k, v in value.items()}
    out: dict[str, Any] = {}
    for part in pairs:
        if not part.strip():
            continue
        key, eq, raw = part.partition("=")
        if not eq or not key.strip():
            raise UsageError(
                f"arm {arm!r}: cannot read parameter {part.strip()!r}; write YAML ({PARAMS_HINT}) or "
                "key=value pairs split by commas (latency_ms=50, temperature=0.3)"
            )
        out[key.strip()] = _scalar(raw.strip(), arm)
    return out


def _scalar(raw: str, arm: str) -> Any:
    try:
        return json.loads(raw)
    except json.JSONDecodeError:
        pass
    if raw[:1] in "[{":
        try:
            return load_yaml(raw)
        except yaml.YAMLError as exc:
            raise _yaml_error(exc, arm) from None
    return raw


def params_text(params: Mapping[str, Any]) -> str:
    """Parameters as the box shows them: one line of YAML that `parse_params` reads back."""
    if not params:
        return ""
    return yaml.safe_dump(
        dict(params), default_flow_style=True, allow_unicode=True, width=10**6, sort_keys=False
    ).strip()


def parse_graders(text: str) -> list[str | dict[str, Any]]:
    """Graders from the form: names and definitions split by commas, as in a YAML list without brackets.

    ``label_match, read_skill, {type: llm_judge, model: gpt-4o-mini}`` gives two names and one definition.

    Raises:
        UsageError: the text does not parse (the message says where).
    """
    text = text.strip()
    if not text:
        return []
    try:
        value = load_yaml(text if text.startswith("[") else f"[{text}]")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at column {mark.column}" if mark is not None else ""
        raise UsageError(
            f"cannot read the graders{where}: write names and definitions split by commas, e.g. "
            "label_match, {type: llm_judge, model: gpt-4o-mini}"
        ) from None
    graders: list[str | dict[str, Any]] = [g for g in value if isinstance(g, (str, dict))]
    if len(graders) != len(value):
        bad = next(g for g in value if not isinstance(g, (str, dict)))
        raise UsageError(f"a grader is a name or a definition {{type: ...}}; got {bad!r}")
    return graders


class ArmRow:
    """One arm of the experiment being defined."""

    def __init__(self, owner: ArmOwner, name: str, arm: Mapping[str, Any]):
        self.name = w.Text(value=name, description="arm", layout={"width": "180px"})
        agents = agent_names()
        agent = str(arm.get("agent") or "builtin")
        self.agent = w.Dropdown(
            options=sorted({*agents, agent}), value=agent, description="agent", layout={"width": "180px"}
        )
        self.model = w.Text(value=str(arm.get("model") or ""), placeholder="model", layout={"width": "130px"})
        self.skill = w.Dropdown(description="skill", layout={"width": "300px"})
        self.folder = w.Text(placeholder="skill folder", layout={"width": "300px", "display": "none"})
        schema = set(StoredArmSpec.model_fields)
        params = {k: v for k, v in arm.items() if k not in schema}  # ``{agent: builtin, latency_ms: 20}``
        # what the form has no control for (an arm's cache, budget, git ref ...) is kept as it is
        self._carried = {
            k: v for k, v in arm.items() if k in schema and k not in _FORM_KEYS and v is not None
        }
        self._skill_given = arm.get("snapshot") or arm.get("skill")
        # an offered arm's mode and skill list are kept as they are (the form edits neither)
        self._offer = {k: arm[k] for k in _OFFER_KEYS if arm.get(k) not in (None, "injected")}
        if arm.get("snapshots"):
            self._offer["skills"] = list(arm["snapshots"])  # the exact snapshots it was created with
        params.update(arm.get("params") or {})
        self._arm_name = name
        self.params = w.Text(
            value=params_text(params),
            placeholder=PARAMS_HINT,
            tooltip="YAML as in an experiment file (lists as [a, b]), or key=value pairs",
            continuous_update=False,
            layout={"width": "360px"},
        )
        self.remove = w.Button(description="✕", tooltip="remove this arm", layout={"width": "36px"})
        self.remove.on_click(lambda _b: owner.guard("removing an arm", owner.remove_arm)(self))
        self.skill.observe(lambda _c: self._show_folder(), names="value")
        self.set_skill_options(owner.skill_options(), arm)
        # The form: one box per parameter the adapter declares, kept in step with the YAML box.
        self.fields: dict[str, w.Text | w.TagsInput] = {}
        self._kinds: dict[str, str] = {}
        self._syncing = False
        self.form_box = w.VBox()
        self.form = w.Accordion(children=[self.form_box], selected_index=None)
        self._build_form()
        owner.on_change(self.agent, lambda _v: self._build_form())
        owner.on_change(self.params, lambda _v: self._params_typed())
        self._owner = owner
        # An arm is wider than a laptop's notebook: its row wraps instead of hiding the folder, the
        # parameters and the remove button past the right edge.
        self.row = w.HBox(
            [self.name, self.agent, self.model, self.skill, self.folder, self.params, self.remove],
            layout={"flex_flow": "row wrap"},
        )
        self.box = w.VBox([self.row, self.form], layout={"margin": "0 0 6px 0"})

    # -- the parameters form ---------------------------------------------------------------------------

    def _current(self) -> dict[str, Any]:
        return parse_params(self.params.value, arm=self.name.value.strip() or self._arm_name)

    def _build_form(self) -> None:
        try:
            declared = agent_parameters(self.agent.value)
        except UsageError:
            declared = []  # an adapter this installation lacks: the YAML box still takes its parameters
        self.fields, self._kinds = {}, {}
        rows = []
        for p in declared:
            default = NONE if p.default is None else params_text({"x": p.default})[4:-1]
            if p.kind == "list":
                # A list is edited as a list: one tag per item (Enter or a comma ends one).
                field: w.Widget = w.TagsInput(
                    value=[],
                    allow_duplicates=False,
                    placeholder=f"add an item (Enter); default {default}",
                    tooltip=p.description,
                    layout={"width": "370px"},
                )
                shown = w.HBox(
                    [w.Label(p.name, layout={"width": "150px"}, tooltip=p.description), field],
                    layout={"width": "520px"},
                )
            else:
                field = w.Text(
                    description=p.name,
                    placeholder=f"default {default}",
                    tooltip=p.description,
                    continuous_update=False,
                    style={"description_width": "150px"},
                    layout={"width": "520px"},
                )
                shown = field
            field.observe(lambda _c, key=p.name: self._field_typed(key), names="value")
            self.fields[p.name], self._kinds[p.name] = field, p.kind
            rows.append(w.HBox([shown, w.HTML(note(p.description))]))
        self.form_box.children = rows or [w.HTML(note(f"{self.agent.value} declares no parameters"))]
        self.params.placeholder = params_hint(declared)
        self.form.titles = (
            f"parameters of {self.agent.value} (a form; the box above holds the same as YAML)",
        )
        with contextlib.suppress(UsageError):  # the box is mid-edit: the form fills in once it reads
            self._fill(self._current())

    def _fill(self, params: Mapping[str, Any]) -> None:
        self._syncing = True
        try:
            for key, field in self.fields.items():
                if self._kinds[key] == "list":
                    value = params.get(key)
                    items = [] if value is None else value if isinstance(value, list) else [value]
                    field.value = [v if isinstance(v, str) else params_text({"x": v})[4:-1] for v in items]
                else:
                    field.value = "" if key not in params else params_text({"x": params[key]})[4:-1]
        finally:
            self._syncing = False

    def _params_typed(self) -> None:
        if self._syncing:
            return
        with contextlib.suppress(UsageError):  # said at Start; the form keeps what it read last
            self._fill(self._current())

    def _field_typed(self, key: str) -> None:
        if self._syncing:
            return
        guarded = self._owner.guard(f"setting {key}", self._set_field)
        guarded(key)

    def _set_field(self, key: str) -> None:
        params = self._current()
        kind = self._kinds[key]
        if kind == "list":
            # a tag typed or pasted as "fast, slow" is two items, as in the YAML box
            items = [t.strip() for v in self.fields[key].value for t in _split_top(str(v)) if t.strip()]
            if items != list(self.fields[key].value):
                self._syncing = True
                try:
                    self.fields[key].value = items
                finally:
                    self._syncing = False
            if items:
                params[key] = items  # tags are text: a label "1" stays the label "1"
            else:
                params.pop(key, None)  # no items: the agent's default
        else:
            raw = self.fields[key].value.strip()
            if not raw:
                params.pop(key, None)
            elif kind == "text":
                params[key] = raw
            else:
                try:
                    params[key] = load_yaml(raw)
                except yaml.YAMLError as exc:
                    raise UsageError(
                        f"{key}: {raw!r} is not a value ({getattr(exc, 'problem', exc)})"
                    ) from None
        self._syncing = True
        try:
            self.params.value = params_text(params)
        finally:
            self._syncing = False

    def _show_folder(self) -> None:
        self.folder.layout.display = "" if self.skill.value == FOLDER else "none"

    def set_skill_options(self, options: list[tuple[str, str]], arm: Mapping[str, Any] | None = None) -> None:
        """Offer these skills, keeping the one chosen (or choosing `arm`'s)."""
        current = self.skill.value
        if arm is not None:
            current = arm.get("snapshot") or arm.get("skill") or NO_SKILL
        self.skill.options = options
        values = [v for _, v in options]
        if current in values:
            self.skill.value = current
        elif current:
            self.skill.value = FOLDER
            self.folder.value = str(current)
        else:
            self.skill.value = NO_SKILL
        self._show_folder()

    def spec(self) -> tuple[str, dict[str, Any]]:
        """(name, arm) as an experiment file writes it.

        Raises:
            UsageError: no name, no folder for "a folder…", or parameters that do not read.
        """
        name = self.name.value.strip()
        if not name:
            raise UsageError("every arm needs a name (control, treatment, v1 ...)")
        arm: dict[str, Any] = {"agent": self.agent.value}
        if self.model.value.strip():
            arm["model"] = self.model.value.strip()
        skill = self.folder.value.strip() if self.skill.value == FOLDER else self.skill.value
        if self.skill.value == FOLDER and not skill:
            raise UsageError(f"arm {name!r}: give the skill folder, or choose a stored snapshot or no skill")
        if skill:
            arm["skill"] = skill
        params = parse_params(self.params.value, arm=name)
        if params:
            arm["params"] = params
        if "skills" in self._offer:
            arm.pop("skill", None)  # the list it was created with, not the first skill the form shows
        arm.update(self._offer)
        carried = dict(self._carried)
        if skill != (self._skill_given or NO_SKILL):
            carried.pop("git_ref", None)  # the ref was the given folder's, not the one chosen now
        return name, {**carried, **arm}


_OFFER_KEYS = ("skill_mode", "skills")
_FORM_KEYS = (
    "agent",
    "model",
    "skill",
    "params",
    *_OFFER_KEYS,
    # what creating the experiment recorded: a clone runs the snapshot the skill control shows
    "snapshot",
    "snapshots",
    "skill_source",
    "skill_label",
)
"""An arm's keys the form has a control for (or that creating the experiment wrote)."""

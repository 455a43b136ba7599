"""`RunControlWidget`: define, start, pause, resume, cancel and clone experiments, and watch them run."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import ipywidgets as w
import yaml

from abbench.agents import agent_names, agent_parameters
from abbench.errors import NotFoundError, UsageError
from abbench.runner import (
    Progress,
    RunHandle,
    cancel_experiment,
    create_experiment,
    experiment_status,
    pause_experiment,
    resume_experiment,
    start_experiment,
)
from abbench.store._experiments import Experiment
from abbench.types import outcome_word
from abbench.widgets._base import NONE, STYLE, Choice, StoreLike, View, escape, html_table, log, note

NEW = 0
"""The experiment chooser's value for "define a new experiment"."""
NO_SKILL = ""
FOLDER = "folder"
FAILURES_SHOWN = 50
ENDED = ("finished", "cancelled", "interrupted")


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m{seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m"


def _when(value: str | None) -> str:
    """An ISO-8601 time as people read it: ``2026-11-29 22:37 UTC``."""
    if not value:
        return "—"
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        return value
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%d %H:%M") + (" UTC" if moment.tzinfo is not None else "")


PARAMS_HINT = "temperature: 0.3, labels: [fast, slow]"
"""What the parameters box shows when empty: a form the box accepts (lists as lists)."""


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
            value = yaml.safe_load("{" + text + "}" if one_line else text)
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
            return yaml.safe_load(raw)
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
        value = yaml.safe_load(text if text.startswith("[") else f"[{text}]")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at column {mark.column}" if mark is not None else ""
        raise UsageError(
            f"cannot read the graders{where}: write names and definitions split by commas, e.g. "
            "label_match, {type: llm_judge, model: gpt-4o-mini}"
        ) from None
    bad = [g for g in value if not isinstance(g, (str, dict))]
    if bad:
        raise UsageError(f"a grader is a name or a definition {{type: ...}}; got {bad[0]!r}")
    return value


class _ArmRow:
    """One arm of the experiment being defined."""

    def __init__(self, owner: RunControlWidget, name: str, arm: Mapping[str, Any]):
        self.name = w.Text(value=name, description="arm", layout={"width": "180px"})
        agents = agent_names()
        agent = str(arm.get("agent") or "builtin")
        self.agent = w.Dropdown(
            options=sorted({*agents, agent}), value=agent, description="agent", layout={"width": "180px"}
        )
        self.model = w.Text(value=str(arm.get("model") or ""), placeholder="model", layout={"width": "130px"})
        self.skill = w.Dropdown(description="skill", layout={"width": "300px"})
        self.folder = w.Text(placeholder="skill folder", layout={"width": "300px", "display": "none"})
        params = {k: v for k, v in arm.items() if k not in _ARM_KEYS}
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
        self.fields: dict[str, w.Text] = {}
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
        for p in declared:
            default = NONE if p.default is None else params_text({"x": p.default})[4:-1]
            field = w.Text(
                description=p.name,
                placeholder=f"default {default}" + (" · a list: [a, b]" if p.kind == "list" else ""),
                tooltip=p.description,
                continuous_update=False,
                style={"description_width": "150px"},
                layout={"width": "520px"},
            )
            field.observe(lambda _c, key=p.name: self._field_typed(key), names="value")
            self.fields[p.name], self._kinds[p.name] = field, p.kind
        rows = [
            w.HBox([f, w.HTML(note(p.description))])
            for p, f in zip(declared, self.fields.values(), strict=True)
        ]
        self.form_box.children = rows or [w.HTML(note(f"{self.agent.value} declares no parameters"))]
        self.form.titles = (
            f"parameters of {self.agent.value} (a form; the box above holds the same as YAML)",
        )
        with contextlib.suppress(UsageError):  # the box is mid-edit: the form fills in once it reads
            self._fill(self._current())

    def _fill(self, params: Mapping[str, Any]) -> None:
        self._syncing = True
        try:
            for key, field in self.fields.items():
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
        raw = self.fields[key].value.strip()
        if not raw:
            params.pop(key, None)
        else:
            kind = self._kinds[key]
            if kind == "list" and not raw.startswith("["):
                raw = f"[{raw}]"  # fast, slow → [fast, slow]
            if kind == "text":
                value: Any = raw
            else:
                try:
                    value = yaml.safe_load(raw)
                except yaml.YAMLError as exc:
                    raise UsageError(
                        f"{key}: {raw!r} is not a value ({getattr(exc, 'problem', exc)})"
                    ) from None
            params[key] = value
        self._syncing = True
        try:
            self.params.value = params_text(params)
        finally:
            self._syncing = False

    def _show_folder(self) -> None:
        self.folder.layout.display = "" if self.skill.value == FOLDER else "none"

    def set_skill_options(self, options: list[tuple[str, str]], arm: Mapping[str, Any] | None = None) -> None:
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
        return name, arm


_ARM_KEYS = ("agent", "model", "skill", "snapshot", "skill_source", "skill_label", "git_ref", "params")


def _outcomes(p, sep: str = ", ") -> str:
    """``5 right, 2 wrong`` for an arm's or the experiment's progress, then the runs without a verdict
    and the cancelled ones when there are any (in `abbench.types.OUTCOME_WORDS`'s words)."""
    arms = getattr(p, "arms", None) or (p,)
    parts = [
        ("pass", p.right),
        ("fail", p.wrong),
        ("execution_failed", p.execution_failed),
        ("grading_failed", p.grading_failed),
        ("cancelled", sum(a.counts.get("cancelled", 0) for a in arms)),
    ]
    return sep.join(f"{n:,} {outcome_word(k)}" for k, n in parts if n or k in ("pass", "fail"))


class _ArmBar:
    """The progress of one arm: a bar and its counts."""

    def __init__(self, arm: str):
        self.bar = w.IntProgress(value=0, min=0, max=1, description=arm, layout={"width": "420px"})
        self.bar.style.description_width = "120px"
        self.counts = w.HTML()
        self.box = w.HBox([self.bar, self.counts])


class RunControlWidget(View):
    """Define an experiment, run it off the cell, and steer it: pause, resume, cancel, clone, re-run.

    The run executes on abbench's background event loop (`abbench.runner.start_experiment`), so the
    kernel stays free for the buttons; progress arrives through the runner's `Observer` interface and
    moves one bar per arm (done / running / failed / pending, throughput, time left). Choosing an
    existing experiment shows where it stands, read from the store. Once a run starts, the definition
    folds away. Failed runs are listed with their kind: execution failures get a re-run, grading
    failures a re-grade (which reuses the stored execution).

    Args:
        store: The store (an open `Store`, a folder, or None to find the notebook's store).
        experiment: An experiment to show at once (id, ``#id`` or name).
        dataset: The dataset to pre-select (fingerprint or name; default the newest).
        arms: Arms to pre-fill: name → ``{agent, model, skill, params...}`` as in an experiment file.
        rounds: Rounds to pre-fill.
        cases: Run only this many cases (0: all of them).
        sample: Take `cases` as a seeded random sample instead of the first ones.
        concurrency: Runs in flight at once.
        graders: Graders (default ``["label_match"]``).
        name: The new experiment's name (default: the dataset's name and the time).
        poll_s: How often an experiment run by another process (the CLI) is re-read from the store.

    Attributes:
        experiment: The experiment shown (None while defining a new one).
        handle: The `RunHandle` of the run started from this widget, if any.
        progress: The latest `Progress` shown.
        bars: Arm name → its ``IntProgress``.
        status_html: The status line (``status_html.value``).
        failures: The failed runs listed (`RunRecord` values).
    """

    def __init__(
        self,
        store: StoreLike = None,
        *,
        experiment: int | str | None = None,
        dataset: str | None = None,
        arms: Mapping[str, Mapping[str, Any]] | None = None,
        rounds: int = 1,
        cases: int = 0,
        sample: bool = False,
        concurrency: int = 8,
        graders: list[str | dict[str, Any]] | None = None,
        name: str | None = None,
        poll_s: float = 1.0,
        **kwargs: Any,
    ):
        super().__init__(store, **kwargs)
        self.experiment: Experiment | None = None
        self.handle: RunHandle | None = None
        self.progress: Progress | None = None
        self.failures: list[Any] = []
        self.bars: dict[str, w.IntProgress] = {}
        self._arm_bars: dict[str, _ArmBar] = {}
        self._clone_of: Experiment | None = None
        self._graders = list(graders or ["label_match"])
        self._poll_s = poll_s
        self._poller: threading.Thread | None = None
        self._stop_poll = threading.Event()
        self._render_lock = threading.Lock()

        self.chooser = Choice("Experiment", on_select=self.guard("choosing an experiment", self._chosen))
        self.chooser.widget.layout.width = "640px"
        self.reload_button = self.button("Reload", self.reload, tooltip="read the experiments again")

        self.name = w.Text(description="Name", value=name or "", layout={"width": "420px"})
        self.dataset = Choice("Dataset", on_select=self.guard("choosing a dataset", self._dataset_chosen))
        self.dataset.widget.layout.width = "520px"
        self.rounds = w.BoundedIntText(value=rounds, min=1, max=1000, description="Rounds")
        self.concurrency = w.BoundedIntText(
            value=concurrency,
            min=1,
            max=10_000,
            description="Concurrency",
            style={"description_width": "initial"},
        )
        self.cases = w.BoundedIntText(
            value=cases, min=0, max=10_000_000, description="Cases", tooltip="0: all"
        )
        self.sample = w.Checkbox(value=sample, description="random sample (seeded)", indent=False)
        self.graders_text = w.Text(
            value=", ".join(g if isinstance(g, str) else json.dumps(g) for g in self._graders),
            description="Graders",
            layout={"width": "520px"},
        )
        self.arm_rows: list[_ArmRow] = []
        self.arms_box = w.VBox()
        self.add_arm_button = self.button("Add arm", lambda: self.add_arm())
        self.start_button = self.button("Start", self.start, button_style="primary", icon="play")
        self.config_note = w.HTML()
        form = w.VBox(
            [
                self.name,
                self.dataset.widget,
                w.HBox([self.rounds, self.concurrency]),
                w.HBox([self.cases, self.sample, w.HTML(note("cases: 0 runs every case"))]),
                self.graders_text,
                w.HTML("<b>Arms</b> (the first is the control)"),
                self.arms_box,
                self.add_arm_button,
                self.config_note,
                self.start_button,
            ]
        )
        self.config = w.Accordion(children=[form], titles=("Definition",), selected_index=0)

        self.pause_button = self.button("Pause", self.pause, icon="pause")
        self.resume_button = self.button("Resume", self.resume, icon="play")
        self.cancel_button = self.button("Cancel", self.cancel, icon="stop", button_style="danger")
        self.clone_button = self.button(
            "Clone", self.clone, icon="copy", tooltip="define a new experiment like this one"
        )
        self.controls = w.HBox([self.pause_button, self.resume_button, self.cancel_button, self.clone_button])
        self.status_html = w.HTML()
        self.definition_html = w.HTML()
        self.bars_box = w.VBox()
        self.failures_html = w.HTML()
        self.rerun_button = self.button("Re-run execution failures", self.rerun_failed, icon="repeat")
        self.regrade_button = self.button("Re-grade grading failures", self.regrade_failed, icon="check")
        self.failure_actions = w.HBox([self.rerun_button, self.regrade_button], layout={"display": "none"})

        self.children = [
            w.HTML(STYLE),
            w.HBox([self.chooser.widget, self.reload_button]),
            self.config,
            self.controls,
            self.status_html,
            self.bars_box,
            self.definition_html,
            self.failures_html,
            self.failure_actions,
            self.errors,
        ]
        self.guard("listing snapshots", self._list_skills)()
        self.guard("listing datasets", self._list_datasets)(dataset)
        for arm_name, arm in (arms or {"control": {"agent": "builtin"}}).items():
            self.guard("adding an arm", self.add_arm)(arm_name, arm)
        self.guard("listing experiments", self.reload)()
        if experiment is not None:
            self.guard("choosing an experiment", self.select_experiment)(experiment)
        else:
            self.chooser.select(NEW, notify=False)
            self._show_controls()

    # -- lists -----------------------------------------------------------------------------------------

    def _list_skills(self) -> None:
        options = [("no skill", NO_SKILL)]
        for snap in self.store.list_snapshots():
            version = snap.front_matter.get("version") if snap.front_matter else None
            label = f"{snap.skill_name}" + (f" {version}" if version else "") + f" @{snap.short}"
            options.append((label + (" (draft)" if snap.draft else ""), snap.hash))
        options.append(("a folder…", FOLDER))
        self._skill_options = options

    def skill_options(self) -> list[tuple[str, str]]:
        """The skills an arm may use: none, each stored snapshot, or a folder."""
        return list(getattr(self, "_skill_options", [("no skill", NO_SKILL), ("a folder…", FOLDER)]))

    def _list_datasets(self, wanted: str | None = None) -> None:
        infos = list(reversed(self.store.list_datasets()))
        self.dataset.set_options(
            [
                (f"{d.fingerprint} · {d.n_cases:,} cases · imported {_when(d.created_at)}", d.fingerprint)
                for d in infos
            ]
        )
        if wanted:
            self.dataset.select(self.store.get_dataset(wanted).fingerprint, notify=False)
        elif self.dataset.intended is None and infos:
            self.dataset.select(infos[0].fingerprint, notify=False)  # the newest, said so in the list order
        if not self.name.value and self.dataset.value:
            self.name.value = self._default_name()

    def _default_name(self) -> str:
        base = str(self.dataset.value or "experiment").partition("@")[0]
        return f"{base}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"

    def _dataset_chosen(self, _value: Any) -> None:
        if not self.name.value:
            self.name.value = self._default_name()

    def reload(self) -> None:
        """Read the experiments, datasets and snapshots again, keeping every selection made."""
        self._list_skills()
        for row in self.arm_rows:
            row.set_skill_options(self.skill_options())
        self._list_datasets()
        options: list[tuple[str, int]] = [("— new experiment —", NEW)]
        for exp in self.store.list_experiments():
            options.append(
                (f"#{exp.id} {exp.name} · {exp.status} · {exp.dataset} · {len(exp.arms)} arms", exp.id)
            )
        self.chooser.set_options(options)
        if self.chooser.missing is not None and self.chooser.missing != NEW:
            self.status_html.value = note(
                f"experiment #{self.chooser.missing} is not in the store any more; choose another", "warn"
            )

    # -- arms ------------------------------------------------------------------------------------------

    def add_arm(self, name: str | None = None, arm: Mapping[str, Any] | None = None) -> None:
        """Add an arm row (pre-filled from `arm`, an experiment file's arm)."""
        taken = {r.name.value for r in self.arm_rows}
        if name is None:
            name = next(
                n for n in ("control", "treatment", *(f"arm{i}" for i in range(2, 99))) if n not in taken
            )
        self.arm_rows.append(_ArmRow(self, name, dict(arm or {"agent": "builtin"})))
        self.arms_box.children = [r.box for r in self.arm_rows]

    def remove_arm(self, row: _ArmRow) -> None:
        """Remove an arm row."""
        if len(self.arm_rows) == 1:
            raise UsageError("an experiment needs at least one arm")
        self.arm_rows.remove(row)
        self.arms_box.children = [r.box for r in self.arm_rows]

    def spec(self) -> dict[str, Any]:
        """The experiment definition the form describes (what `create_experiment` takes).

        Raises:
            UsageError: no dataset, no name, or an arm is incomplete.
        """
        if not self.dataset.value:
            raise UsageError("choose a dataset (import one with the mapping widget or `abbench import`)")
        name = self.name.value.strip()
        if not name:
            raise UsageError("give the experiment a name")
        arms = dict(row.spec() for row in self.arm_rows)
        if len(arms) != len(self.arm_rows):
            raise UsageError("two arms have the same name; every arm needs its own")
        graders = parse_graders(self.graders_text.value)
        spec: dict[str, Any] = {
            "name": name,
            "dataset": self.dataset.value,
            "arms": arms,
            "rounds": int(self.rounds.value),
            "concurrency": int(self.concurrency.value),
            "graders": graders or ["label_match"],
        }
        if self.cases.value:
            spec["cases"] = {"sample" if self.sample.value else "limit": int(self.cases.value)}
        return spec

    # -- choosing and showing --------------------------------------------------------------------------

    def select_experiment(self, ref: int | str | Experiment | None) -> None:
        """Show an experiment (None: define a new one), as choosing it in the list does."""
        if ref is None or ref == NEW:
            self.chooser.select(NEW)
            return
        exp = self.store.get_experiment(ref)
        if exp.id not in self.chooser.values:
            self.reload()
        self.chooser.select(exp.id)

    def _chosen(self, value: Any) -> None:
        self._stop_polling()
        if not value:
            self.experiment = None
            self.progress = None
            if self.name.value.strip() in {e.name for e in self.store.list_experiments()}:
                self.name.value = self._default_name()  # that name is taken: a new one for the new experiment
            self.config.selected_index = 0
            self.status_html.value = self.definition_html.value = ""
            self.bars_box.children = []
            self.failures, self.failures_html.value = [], ""
            self._show_controls()
            return
        self.experiment = self.store.get_experiment(value)
        self.config.selected_index = None
        self._show_definition(self.experiment)
        self.refresh()
        if self.progress is not None and self.progress.status == "running" and not self._own_run():
            self._start_polling()

    def _own_run(self) -> bool:
        return (
            self.handle is not None
            and self.experiment is not None
            and self.handle.experiment.id == self.experiment.id
            and not self.handle.done()
        )

    def refresh(self) -> None:
        """Read the shown experiment's progress and failures from the store and show them."""
        if self.experiment is None:
            return
        if self._own_run():
            self._render(self.handle.progress)
        else:
            self._render(experiment_status(self.experiment.id, store=self.store))
        self._list_failures()

    def _show_definition(self, exp: Experiment) -> None:
        arms = html_table(
            ["arm", "agent", "model", "skill snapshot", "parameters"],
            [
                (
                    a.name,
                    a.agent,
                    a.model,
                    a.snapshot[:12] if a.snapshot else "no skill",
                    json.dumps(a.params, ensure_ascii=False),
                )
                for a in exp.arms
            ],
        )
        spec = yaml.safe_dump(exp.spec, allow_unicode=True, sort_keys=False)
        self.definition_html.value = (
            f"<details><summary>definition of #{exp.id} {escape(exp.name)} ({escape(exp.dataset)}, "
            f"{exp.rounds} rounds, created {escape(_when(exp.created_at))} by {escape(exp.created_by)})</summary>"
            f"{arms}<pre>{escape(spec)}</pre></details>"
        )

    @property
    def config_open(self) -> bool:
        """Whether the definition form is unfolded."""
        return self.config.selected_index == 0

    def _show_controls(self) -> None:
        status = self.progress.status if self.progress is not None and self.experiment else None
        exp = self.experiment is not None
        self.pause_button.disabled = status not in ("running",)
        self.resume_button.disabled = status not in ("paused", "interrupted", "created")
        self.cancel_button.disabled = status not in ("running", "paused", "interrupted", "created")
        self.clone_button.disabled = not exp

    # -- progress (called from the runner's thread) ----------------------------------------------------

    def on_progress(self, progress: Progress) -> None:
        """The runner's `Observer` hook: move the bars. Runs on the runner's thread; never raises."""
        try:
            if self.experiment is None or progress.experiment_id != self.experiment.id:
                return  # the person is looking at another experiment; the store has this one's progress
            self._render(progress)
            if progress.status in ENDED:
                self._list_failures()
                self.reload()
        except Exception as exc:  # a view error must reach the person, not stop the run
            log.warning("showing progress failed: %s", exc, exc_info=True)
            self.errors.show(exc, "showing progress")

    def _render(self, progress: Progress) -> None:
        with self._render_lock:
            self.progress = progress
            for arm in progress.arms:
                bar = self._arm_bars.get(arm.arm)
                if bar is None:
                    bar = self._arm_bars[arm.arm] = _ArmBar(arm.arm)
                    self.bars[arm.arm] = bar.bar
                bar.bar.max = max(arm.total, 1)
                bar.bar.value = arm.done
                bar.bar.bar_style = "success" if arm.total and arm.done == arm.total else "info"
                bar.counts.value = escape(
                    f"{arm.done:,}/{arm.total:,} done ({_outcomes(arm)}) · {arm.running} running · "
                    f"{arm.pending:,} pending"
                )
            shown = [self._arm_bars[a.arm].box for a in progress.arms]
            if list(self.bars_box.children) != shown:
                self.bars_box.children = shown
            rate = f" · {progress.throughput:.1f} runs/s" if progress.throughput else ""
            eta = (
                f" · about {_duration(progress.eta_s)} left"
                if progress.eta_s and progress.status == "running"
                else ""
            )
            exp = self.experiment
            title = f"#{exp.id} {exp.name}" if exp is not None else progress.experiment
            # pairs are judged once both arms' runs are in
            pairs = (
                f" · pairs judged {progress.pairs_done:,}/{progress.pairs_total:,}"
                if progress.pairs_total
                else ""
            )
            self.status_html.value = note(
                f"{title}: {progress.status_text} · {progress.done:,}/{progress.total:,} done "
                f"({100 * progress.fraction:.0f} %) · {_outcomes(progress, ' · ')}"
                f" · {progress.running} running · {progress.pending:,} pending{rate}{eta}{pairs}",
                "ok" if progress.status == "finished" else "note",
            )
            self._show_controls()

    def _list_failures(self) -> None:
        exp = self.experiment
        if exp is None:
            return
        failed = self.store.runs(exp.id, states=["fail"])
        self.failures = failed
        execution = [r for r in failed if r.execution_failed]
        grading = [r for r in failed if r.grading_failed]
        self.rerun_button.description = f"Re-run {len(execution)} execution failures"
        self.regrade_button.description = f"Re-grade {len(grading)} grading failures"
        self.rerun_button.disabled = not execution
        self.regrade_button.disabled = not grading
        self.failure_actions.layout.display = "" if (execution or grading) else "none"
        shown = [r for r in failed if r.execution_failed or r.grading_failed][:FAILURES_SHOWN]
        if not shown:
            self.failures_html.value = ""
            return
        rows = [
            (
                r.id,
                r.arm,
                r.case_id,
                r.round + 1,
                "execution → re-run" if r.execution_failed else "grading → re-grade",
                r.failure_type or "grading",
                (r.error or "")[:200],
            )
            for r in shown
        ]
        more = len(execution) + len(grading) - len(shown)
        self.failures_html.value = (
            "<b>Failures</b>"
            + html_table(["run", "arm", "case", "round", "kind", "type", "error"], rows)
            + (note(f"... and {more} more") if more > 0 else "")
        )

    # -- polling an experiment run elsewhere ------------------------------------------------------------

    def _start_polling(self) -> None:
        self._stop_poll = threading.Event()
        stop, exp_id = self._stop_poll, self.experiment.id

        def poll() -> None:
            while not stop.wait(self._poll_s):
                try:
                    progress = experiment_status(exp_id, store=self.store)
                    self.on_progress(progress)
                    if progress.status != "running":
                        return
                except Exception as exc:
                    self.errors.show(exc, "reading progress")
                    return
                finally:
                    self.store.close_thread_connection()

        self._poller = threading.Thread(target=poll, name=f"abbench-widget-poll-{exp_id}", daemon=True)
        self._poller.start()

    def _stop_polling(self) -> None:
        self._stop_poll.set()

    # -- actions ---------------------------------------------------------------------------------------

    def start(self) -> RunHandle:
        """Start the experiment shown, or create the one the form defines and start it."""
        if self.experiment is None:
            if self._clone_of is not None:
                exp = create_experiment(self._clone_spec(), store=self.store, parent_id=self._clone_of.id)
            else:
                exp = create_experiment(self.spec(), store=self.store)
            self._clone_of = None
            self.config_note.value = ""
            self.reload()
            self.chooser.select(exp.id, notify=False)
            self.experiment = exp
            self.config.selected_index = None
            self._show_definition(exp)
        return self._run()

    def _run(self, **options: Any) -> RunHandle:
        exp = self.experiment
        assert exp is not None
        self._stop_polling()
        self.handle = start_experiment(exp.id, store=self.store, observers=[self], **options)
        self.experiment = self.store.get_experiment(exp.id)
        return self.handle

    def _require(self) -> Experiment:
        if self.experiment is None:
            raise UsageError("choose an experiment first (or start a new one)")
        return self.experiment

    def pause(self) -> None:
        """Let running runs finish and start no new ones."""
        exp = self._require()
        if self._own_run():
            self.handle.pause()
        else:
            pause_experiment(exp.id, store=self.store)
            self.refresh()
        self.status_html.value += note("pausing: runs in flight finish, no new ones start")

    def resume(self) -> None:
        """Go on after a pause; an experiment nobody is running (interrupted, or new) is started here."""
        exp = self._require()
        if self._own_run():
            self.handle.resume()
            return
        fresh = self.store.get_experiment(exp.id)
        if fresh.runner_alive:
            resume_experiment(exp.id, store=self.store)
            self.refresh()
            return
        self._run()

    def cancel(self) -> None:
        """Stop: runs in flight are cancelled and pending ones marked cancelled."""
        exp = self._require()
        if self._own_run():
            self.handle.cancel()
        else:
            cancel_experiment(exp.id, store=self.store)
            self.refresh()
            self.reload()

    def clone(self) -> None:
        """Fill the definition from the shown experiment (a new name), to change and start as a new one."""
        source = self._require()
        names = {e.name for e in self.store.list_experiments()}
        n = 2
        while f"{source.name}-{n}" in names:
            n += 1
        arms = {}
        for arm in source.arms:
            entry = dict(source.spec.get("arms", {}).get(arm.name, {}))
            entry["snapshot"] = arm.snapshot
            arms[arm.name] = {**entry, "agent": arm.agent, "model": arm.model, "params": arm.params}
        self.arm_rows = []
        for arm_name, arm in arms.items():
            self.add_arm(arm_name, arm)
        self._list_datasets(source.dataset)
        self.rounds.value = source.rounds
        self.concurrency.value = int(source.spec.get("concurrency") or self.concurrency.value)
        self.graders_text.value = ", ".join(
            g if isinstance(g, str) else json.dumps(g, ensure_ascii=False)
            for g in source.spec.get("graders", [])
        )
        self.name.value = f"{source.name}-{n}"
        self.chooser.select(NEW)
        self._clone_of = source
        self.config_note.value = note(
            f"a clone of #{source.id} {source.name}: its timeouts, retries, case selection and gate are kept"
        )

    def _clone_spec(self) -> dict[str, Any]:
        """The clone's definition: the source's, with what the form sets (name, dataset, arms, rounds ...)."""
        assert self._clone_of is not None
        spec = {
            k: v
            for k, v in self._clone_of.spec.items()
            if k not in ("dataset_profile", "dataset_profile_version", "owner")
        }
        spec.update(self.spec())
        return spec

    def rerun_failed(self) -> RunHandle:
        """Run the execution failures again (they go back to pending; old grades stay readable)."""
        exp = self._require()
        ids = self.store.select_runs(exp.id, execution_failed=True)
        if not ids:
            raise NotFoundError(f"experiment {exp.name!r} has no execution failure to re-run")
        self.store.reset_runs(ids, "re-run requested")
        return self._run(run_ids=ids)

    def regrade_failed(self) -> RunHandle:
        """Grade the grading failures again from their stored executions (the agent does not run)."""
        exp = self._require()
        ids = self.store.select_runs(exp.id, grading_failed=True)
        if not ids:
            raise NotFoundError(f"experiment {exp.name!r} has no grading failure to re-grade")
        return self._run(run_ids=ids, regrade=True)

    def wait(self, timeout: float | None = None) -> Progress | None:
        """Block until the run started here ends and its last progress is shown (for scripts and tests)."""
        if self.handle is not None:
            self.handle.wait(timeout)
            deadline = time.monotonic() + 5
            while (
                self.progress is None or self.progress.status not in ENDED
            ) and time.monotonic() < deadline:
                time.sleep(0.02)
        return self.progress

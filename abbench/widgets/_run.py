"""`RunControlWidget`: define, start, pause, resume, cancel and clone experiments, and watch them run.

The define form is built from `abbench.widgets._arm_form` (arms) and `abbench.widgets._case_form`
(which cases); what is shown of an experiment is one `ExperimentStanding` (`abbench.widgets._run_state`)
drawn by `abbench.widgets._progress_view`. This module holds the widget: the chooser, the buttons,
and following the store.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import ipywidgets as w
import yaml

from abbench import _actions as do
from abbench.errors import NotFoundError, UsageError
from abbench.runner import (
    Progress,
    RunHandle,
    cancel_experiment,
    clone_experiment,
    create_experiment,
    pause_experiment,
    resume_experiment,
    retry_runs,
    start_experiment,
)
from abbench.snapshot import DRAFT_MARK
from abbench.store import DEFAULT_CONCURRENCY, DEFAULT_GRADERS, Experiment, RunRecord
from abbench.types import ExperimentStatus, Phase
from abbench.widgets._arm_form import FOLDER, NO_SKILL, ArmRow, parse_graders
from abbench.widgets._base import STYLE, Choice, StoreLike, View, escape, html_table, log, note
from abbench.widgets._case_form import CaseForm, selection_text
from abbench.widgets._progress_view import ProgressView, status_html
from abbench.widgets._run_state import (
    ENDED,
    Buttons,
    ExperimentStanding,
    Failures,
    experiment_label,
    read_failures,
    read_standing,
)

NEW = 0
"""The experiment chooser's value for "define a new experiment"."""


def where_html(where: Mapping[str, Any] | None, running: bool = True) -> str:
    """Where the experiment's agents run (or, when it is not `running`, last ran): nothing for this
    machine; for Dask, the dashboard link and workers."""
    if not where or where.get("executor") != "dask":
        return ""
    scheduler = escape(str(where.get("scheduler") or "?"))
    cluster = f"a LocalCluster at {scheduler}" if where.get("local") else scheduler
    workers = list(where.get("worker_addresses") or ())
    n = int(where.get("workers") or len(workers))
    listed = f' title="{escape(", ".join(workers))}"' if workers else ""
    link = where.get("dashboard")
    dashboard = (
        f' · <a href="{escape(str(link))}" target="_blank" rel="noopener">Dask dashboard</a>' if link else ""
    )
    return (
        f'<div class="abb-where">{"executes" if running else "last executed"} on Dask: {cluster}, '
        f"<span{listed}>{n} worker{'' if n == 1 else 's'}</span>{dashboard}</div>"
    )


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


class RunControlWidget(View):
    """Define an experiment, run it off the cell, and steer it: pause, resume, cancel, clone, re-run.

    The run executes on abbench's background event loop (`abbench.runner.start_experiment`), so the
    kernel stays free for the buttons; progress arrives through the runner's `Observer` interface and
    moves one bar per arm, each outcome apart (right, wrong, execution failed, grading failed,
    cancelled) with throughput and time left. An experiment shown that this kernel does not run (the
    CLI's, another notebook's) is followed from the store, whichever process runs it, every `poll_s`
    seconds. Once a run starts, the definition folds away. Failed runs are listed with their kind:
    execution failures get a re-run, grading failures a re-grade (which reuses the stored execution).

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
        poll_s: How often the experiment shown is read again from the store when this kernel does
            not run it.

    Attributes:
        experiment: The experiment shown (None while defining a new one).
        handle: The `RunHandle` of the run started from this widget, if any.
        standing: What is shown now (`ExperimentStanding`: experiment, progress, failures, phase).
        progress: The latest `Progress` shown.
        bars: Arm name → its bar (`ArmBar`: ``value`` done of ``max``, ``segments`` per outcome).
        status_html: The status line (``status_html.value``).
        failures: The failed runs listed (`RunRecord` values, the first 50).
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
        concurrency: int = DEFAULT_CONCURRENCY,
        graders: list[str | dict[str, Any]] | None = None,
        name: str | None = None,
        poll_s: float = 1.0,
        **kwargs: Any,
    ):
        super().__init__(store, **kwargs)
        self.experiment: Experiment | None = None
        self.handle: RunHandle | None = None
        self.standing: ExperimentStanding | None = None
        self._clone_of: Experiment | None = None
        self._graders = list(graders or DEFAULT_GRADERS)
        self._poll_s = poll_s
        self._stop_poll = threading.Event()
        self._render_lock = threading.RLock()

        self.chooser = Choice("Experiment", on_select=self.guard("choosing an experiment", self._chosen))
        self.chooser.widget.layout.width = "640px"
        self.reload_button = self.button("Reload", self.reload, tooltip="read the experiments again")
        self.config = self._definition_form(name, rounds, concurrency, cases, sample)
        panel = self._experiment_panel()
        self.children = [
            w.HTML(STYLE),
            w.HBox([self.chooser.widget, self.reload_button]),
            self.config,
            *panel,
            self.errors,
        ]
        self._fill(dataset, arms, experiment)
        self._poller = threading.Thread(target=self._follow, name="abbench-run-widget-follow", daemon=True)
        self._poller.start()

    def _definition_form(
        self, name: str | None, rounds: int, concurrency: int, cases: int, sample: bool
    ) -> w.Accordion:
        """The form that defines a new experiment (name, dataset, rounds, cases, graders, arms)."""
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
        self.case_form = CaseForm(count=cases, sample=sample)
        self.cases, self.sample = self.case_form.count, self.case_form.sample
        self.graders_text = w.Text(
            value=", ".join(g if isinstance(g, str) else json.dumps(g) for g in self._graders),
            description="Graders",
            layout={"width": "520px"},
        )
        self.arm_rows: list[ArmRow] = []
        self.arms_box = w.VBox()
        self.add_arm_button = self.button("Add arm", lambda: self.add_arm())
        self.start_button = self.button("Start", self.start, button_style="primary", icon="play")
        self.config_note = w.HTML()
        form = w.VBox(
            [
                self.name,
                self.dataset.widget,
                w.HBox([self.rounds, self.concurrency]),
                w.HTML("<b>Cases</b> (only some domains or gold labels, at most N, or a sample)"),
                self.case_form.box,
                self.graders_text,
                w.HTML("<b>Arms</b> (the first is the control)"),
                self.arms_box,
                self.add_arm_button,
                self.config_note,
                self.start_button,
            ]
        )
        return w.Accordion(children=[form], titles=("Definition",), selected_index=0)

    def _experiment_panel(self) -> list[Any]:
        """What is shown of the chosen experiment: its buttons, status, bars, definition and failures."""
        self.pause_button = self.button("Pause", self.pause, icon="pause")
        self.resume_button = self.button("Resume", self.resume, icon="play")
        self.cancel_button = self.button("Cancel", self.cancel, icon="stop", button_style="danger")
        self.clone_button = self.button(
            "Clone", self.clone, icon="copy", tooltip="define a new experiment like this one"
        )
        self.controls = w.HBox([self.pause_button, self.resume_button, self.cancel_button, self.clone_button])
        self.status_html = w.HTML()
        self.where_html = w.HTML()
        self.action_note = w.HTML()
        self.definition_html = w.HTML()
        self.progress_view = ProgressView()
        self.bars = self.progress_view.bars
        self.bars_box = self.progress_view.box
        self.failures_html = w.HTML()
        self.rerun_button = self.button("Re-run execution failures", self.rerun_failed, icon="repeat")
        self.regrade_button = self.button("Re-grade grading failures", self.regrade_failed, icon="check")
        self.failure_actions = w.HBox([self.rerun_button, self.regrade_button], layout={"display": "none"})
        return [
            self.controls,
            self.status_html,
            self.where_html,
            self.action_note,
            self.bars_box,
            self.definition_html,
            self.failures_html,
            self.failure_actions,
        ]

    def _fill(
        self,
        dataset: str | None,
        arms: Mapping[str, Mapping[str, Any]] | None,
        experiment: int | str | None,
    ) -> None:
        """List what the store holds, pre-fill the arms, and show `experiment` (or the empty form)."""
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

    @property
    def progress(self) -> Progress | None:
        """The latest `Progress` shown (None while defining a new experiment)."""
        return self.standing.progress if self.standing is not None else None

    @property
    def failures(self) -> list[RunRecord]:
        """The failed runs listed (execution and grading failures, the first 50)."""
        return list(self.standing.failures.shown) if self.standing is not None else []

    def close(self) -> None:
        """Stop following the store and close the widget."""
        self._stop_poll.set()
        super().close()

    # -- lists -----------------------------------------------------------------------------------------

    def _list_skills(self) -> None:
        options = [("no skill", NO_SKILL)]
        for snap in self.store.snapshots.all():
            version = snap.front_matter.get("version") if snap.front_matter else None
            label = f"{snap.skill_name}" + (f" {version}" if version else "") + f" @{snap.short}"
            options.append((label + (DRAFT_MARK if snap.draft else ""), snap.hash))
        options.append(("a folder…", FOLDER))
        self._skill_options = options

    def skill_options(self) -> list[tuple[str, str]]:
        """The skills an arm may use: none, each stored snapshot, or a folder."""
        return list(getattr(self, "_skill_options", [("no skill", NO_SKILL), ("a folder…", FOLDER)]))

    def _list_datasets(self, wanted: str | None = None) -> None:
        infos = list(reversed(self.store.datasets.all()))
        before = self.dataset.value
        self.dataset.set_options(
            [
                (f"{d.fingerprint} · {d.n_cases:,} cases · imported {_when(d.created_at)}", d.fingerprint)
                for d in infos
            ]
        )
        if wanted:
            self.dataset.select(self.store.datasets.get(wanted).fingerprint, notify=False)
        elif self.dataset.intended is None and infos:
            self.dataset.select(infos[0].fingerprint, notify=False)  # the newest, said so in the list order
        if not self.name.value and self.dataset.value:
            self.name.value = self._default_name()
        if self.dataset.value != before or wanted:
            self.case_form.set_dataset(self.store, self.dataset.value)

    def _default_name(self) -> str:
        base = str(self.dataset.value or "experiment").partition("@")[0]
        return f"{base}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"

    def _dataset_chosen(self, _value: Any) -> None:
        if not self.name.value:
            self.name.value = self._default_name()
        self.case_form.set_dataset(self.store, self.dataset.value)

    def reload(self) -> None:
        """Read the experiments, datasets and snapshots again, keeping every selection made."""
        self._list_skills()
        for row in self.arm_rows:
            row.set_skill_options(self.skill_options())
        self._list_datasets()
        with self._render_lock:
            options: list[tuple[str, int]] = [("— new experiment —", NEW)]
            options += [(experiment_label(exp), exp.id) for exp in self.store.experiments.all()]
            self.chooser.set_options(options)
            if self.chooser.missing is not None and self.chooser.missing != NEW:
                self.status_html.value = note(
                    f"experiment #{self.chooser.missing} is not in the store any more; choose another", "warn"
                )
            elif self.experiment is not None:
                self.refresh()  # the panel and its line in the list from one read

    # -- arms ------------------------------------------------------------------------------------------

    def add_arm(self, name: str | None = None, arm: Mapping[str, Any] | None = None) -> None:
        """Add an arm row (pre-filled from `arm`, an experiment file's arm)."""
        taken = {r.name.value for r in self.arm_rows}
        if name is None:
            name = next(
                n for n in ("control", "treatment", *(f"arm{i}" for i in range(2, 99))) if n not in taken
            )
        self.arm_rows.append(ArmRow(self, name, dict(arm or {"agent": "builtin"})))
        self.arms_box.children = [r.box for r in self.arm_rows]

    def remove_arm(self, row: ArmRow) -> None:
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
            raise UsageError(
                "choose a dataset (import one with the mapping widget or `", do.import_dataset(), "`)"
            )
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
            "graders": graders or list(DEFAULT_GRADERS),
        }
        cases = self.case_form.selection()
        if cases:
            spec["cases"] = cases
        return spec

    # -- choosing and showing --------------------------------------------------------------------------

    def select_experiment(self, ref: int | str | Experiment | None) -> None:
        """Show an experiment (None: define a new one), as choosing it in the list does."""
        if ref is None or ref == NEW:
            self.chooser.select(NEW)
            return
        self.chooser.select_listed(self.store.experiments.get(ref).id, self.reload)

    def _chosen(self, value: Any) -> None:
        with self._render_lock:
            if not value:
                self.experiment = None
                self.standing = None
                if self.name.value.strip() in {e.name for e in self.store.experiments.all()}:
                    self.name.value = self._default_name()  # that name is taken: a new one for the new one
                self.config.selected_index = 0
                self.status_html.value = self.definition_html.value = self.action_note.value = ""
                self.progress_view.show(None)
                self.failures_html.value = ""
                self.failure_actions.layout.display = "none"
                self._show_controls()
                return
            self.experiment = self.store.experiments.get(value)
            self.standing = None
            self.action_note.value = ""
            self.config.selected_index = None
            self._show_definition(self.experiment)
            self.refresh()

    def _own_run(self) -> RunHandle | None:
        """The run this kernel started of the experiment shown, while it runs (else None)."""
        handle, exp = self.handle, self.experiment
        if handle is None or exp is None or handle.experiment.id != exp.id or handle.done():
            return None
        return handle

    def refresh(self) -> None:
        """Read the shown experiment from the store (or from the run started here) and show it."""
        with self._render_lock:
            if self.experiment is None:
                return
            own = self._own_run()
            if own is not None:
                self._render(self._own_standing(own.progress))
            else:
                self._render(read_standing(self.store, self.experiment.id, self.standing))

    def _own_standing(self, progress: Progress) -> ExperimentStanding:
        previous = self.standing
        failures = previous.failures if previous is not None and previous.own else Failures()
        if progress.status in ENDED:
            failures = read_failures(self.store, progress.experiment_id)
        assert self.experiment is not None  # a run of the experiment shown reports
        return ExperimentStanding(self.experiment, progress, failures, own=True)

    def _show_definition(self, exp: Experiment) -> None:
        arms = html_table(
            ["arm", "agent", "model", "skill snapshot", "parameters"],
            [
                (
                    a.name,
                    a.agent,
                    a.model,
                    a.version or "no skill",
                    json.dumps(a.params, ensure_ascii=False),
                )
                for a in exp.arms
            ],
        )
        spec = yaml.safe_dump(exp.spec.as_json(), allow_unicode=True, sort_keys=False)
        chosen = selection_text(exp.spec.as_json().get("cases"))
        self.definition_html.value = (
            f"<details><summary>definition of #{exp.id} {escape(exp.name)} ({escape(exp.dataset)}, "
            f"{exp.rounds} round{'' if exp.rounds == 1 else 's'}, cases: {escape(chosen)}, created {escape(_when(exp.created_at))} by "
            f"{escape(exp.created_by)})</summary>{arms}<pre>{escape(spec)}</pre></details>"
        )

    @property
    def config_open(self) -> bool:
        """Whether the definition form is unfolded."""
        return bool(self.config.selected_index == 0)

    def _show_controls(self) -> None:
        enabled = self.standing.enabled() if self.standing is not None else Buttons()
        self.pause_button.disabled = not enabled.pause
        self.resume_button.disabled = not enabled.resume
        self.cancel_button.disabled = not enabled.cancel
        self.clone_button.disabled = not enabled.clone
        self.rerun_button.disabled = not enabled.rerun
        self.regrade_button.disabled = not enabled.regrade

    def _render(self, snap: ExperimentStanding) -> None:
        """Show `snap` everywhere at once: the chooser's line, the status, the bars, failures, buttons."""
        with self._render_lock:
            if self.experiment is None or snap.experiment.id != self.experiment.id:
                return  # the person is looking at another experiment by now
            self.standing = snap
            exp, progress = self.experiment, snap.progress
            if exp.id in self.chooser.values:
                labels = dict(zip(self.chooser.values, self.chooser.labels, strict=True))
                if labels[exp.id] != snap.label:
                    labels[exp.id] = snap.label
                    self.chooser.set_options([(label, value) for value, label in labels.items()])
            self.status_html.value = status_html(progress, snap.phase, f"#{exp.id} {exp.name}")
            own = self._own_run()
            running = snap.phase in (ExperimentStatus.RUNNING, Phase.PAUSING)
            self.where_html.value = where_html(
                own.where if own is not None else snap.experiment.executor, running
            )
            if snap.phase not in (ExperimentStatus.RUNNING, Phase.PAUSING):
                self.action_note.value = ""  # "pause asked" said its part once the pause shows
            self.progress_view.show(progress)
            self._list_failures(snap.failures)
            self._show_controls()

    def _list_failures(self, failures: Failures) -> None:
        self.rerun_button.description = f"Re-run {failures.execution:,} execution failures"
        self.regrade_button.description = f"Re-grade {failures.grading:,} grading failures"
        self.failure_actions.layout.display = "" if failures.total else "none"
        if not failures.shown:
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
            for r in failures.shown
        ]
        more = failures.total - len(failures.shown)
        self.failures_html.value = (
            "<b>Failures</b>"
            + html_table(["run", "arm", "case", "round", "kind", "type", "error"], rows)
            + (note(f"... and {more:,} more") if more > 0 else "")
        )

    # -- following: the runner's reports, and the store for runs elsewhere -------------------------------

    def on_progress(self, progress: Progress) -> None:
        """The runner's `Observer` hook: move the bars. Runs on the runner's thread; never raises."""
        try:
            with self._render_lock:
                if self.experiment is None or progress.experiment_id != self.experiment.id:
                    return  # the person is looking at another experiment; the store has this one's progress
                self._render(self._own_standing(progress))
            if progress.status in ENDED:
                self.reload()
        except Exception as exc:  # a view error must reach the person, not stop the run
            log.warning("showing progress failed: %s", exc, exc_info=True)
            self.errors.show(exc, "showing progress")

    def _follow(self) -> None:
        """Re-read the experiment shown every `poll_s` seconds unless this kernel runs it (the runner
        reports then): a run in another process, paused, resumed, finished or cancelled anywhere, shows
        here within about a second. Only what changed is drawn again."""
        said = ""
        while not self._stop_poll.wait(self._poll_s):
            try:
                with self._render_lock:
                    exp = self.experiment
                    if exp is None or self._own_run() is not None:
                        continue
                    snap = read_standing(self.store, exp.id, self.standing)
                    if not snap.same_as(self.standing):
                        self._render(snap)
                        if snap.ended:
                            self.reload()
                said = ""
            except Exception as exc:  # said once; the next read may work (a locked or busy store)
                if str(exc) != said:
                    log.warning("following the experiment failed: %s", exc, exc_info=True)
                    self.errors.show(exc, "reading progress")
                    said = str(exc)
            finally:
                self.store.close_thread_connection()

    # -- actions ---------------------------------------------------------------------------------------

    def start(self) -> RunHandle:
        """Start the experiment shown, or create the one the form defines and start it."""
        if self.experiment is None:
            if self._clone_of is not None:
                exp = self._create_clone(self._clone_of)
            else:
                exp = create_experiment(self.spec(), store=self.store)
            self._clone_of = None
            self.config_note.value = ""
            with self._render_lock:
                self.reload()
                self.chooser.select(exp.id, notify=False)
                self.experiment = exp
                self.standing = None
                self.config.selected_index = None
                self._show_definition(exp)
        return self._run()

    def _run(self, **options: Any) -> RunHandle:
        exp = self.experiment
        assert exp is not None
        with self._render_lock:  # the follower must not draw the store's older state over the run's
            self.handle = start_experiment(exp.id, store=self.store, observers=[self], **options)
            self.experiment = self.store.experiments.get(exp.id)
        return self.handle

    def _require(self) -> Experiment:
        if self.experiment is None:
            raise UsageError("choose an experiment first (or start a new one)")
        return self.experiment

    def pause(self) -> None:
        """Let running runs finish and start no new ones."""
        exp = self._require()
        own = self._own_run()
        if own is not None:
            own.pause()
        else:
            pause_experiment(exp.id, store=self.store)
            self.refresh()
        self.action_note.value = note("pause asked: runs in flight finish, no new ones start")

    def resume(self) -> None:
        """Go on after a pause; an experiment nobody is running (interrupted, or new) is started here."""
        exp = self._require()
        self.action_note.value = ""
        own = self._own_run()
        if own is not None:
            own.resume()
            return
        fresh = self.store.experiments.get(exp.id)
        if fresh.runner_alive:
            resume_experiment(exp.id, store=self.store)
            self.refresh()
            return
        self._run()

    def cancel(self) -> None:
        """Stop: runs in flight are cancelled and pending ones marked cancelled."""
        exp = self._require()
        self.action_note.value = ""
        own = self._own_run()
        if own is not None:
            own.cancel()
        else:
            cancel_experiment(exp.id, store=self.store)
            self.reload()

    def clone(self) -> None:
        """Fill the definition from the shown experiment (a new name), to change and start as a new one."""
        source = self._require()
        names = {e.name for e in self.store.experiments.all()}
        n = 2
        while f"{source.name}-{n}" in names:
            n += 1
        arms: dict[str, dict[str, Any]] = {}
        for arm in source.arms:
            entry = dict(source.spec.as_json()["arms"].get(arm.name, {}))
            entry["snapshot"] = arm.snapshot
            arms[arm.name] = {**entry, "agent": arm.agent, "model": arm.model, "params": arm.params}
        self.arm_rows = []
        for arm_name, entry in arms.items():
            self.add_arm(arm_name, entry)
        self._list_datasets(source.dataset)
        self.case_form.fill(source.spec.as_json().get("cases"))
        self.rounds.value = source.rounds
        self.concurrency.value = int(source.spec.concurrency)
        self.graders_text.value = ", ".join(
            g if isinstance(g, str) else json.dumps(g, ensure_ascii=False) for g in source.spec.graders
        )
        self.name.value = f"{source.name}-{n}"
        self.chooser.select(NEW)
        self._clone_of = source
        self.config_note.value = note(
            f"a clone of #{source.id} {source.name}: its timeouts, retries and gate are kept"
        )

    def _create_clone(self, source: Experiment) -> Experiment:
        """The clone: the source's definition (timeouts, retries, gate ...) with what the form sets."""
        form = self.spec()
        changes = {key: form[key] for key in ("dataset", "arms", "concurrency", "graders")}
        changes["cases"] = form.get("cases")  # the form's choice, all cases when it makes none
        return clone_experiment(
            source, name=form["name"], rounds=form["rounds"], changes=changes, store=self.store
        )

    def rerun_failed(self) -> RunHandle:
        """Run the execution failures again (they go back to pending; old grades stay readable)."""
        exp = self._require()
        ids = self.store.runs.select(exp.id, execution_failed=True)
        if not ids:
            raise NotFoundError(f"experiment {exp.name!r} has no execution failure to re-run")
        retry_runs(exp, store=self.store, execution_failed=True, run=False)
        return self._run(run_ids=ids)

    def regrade_failed(self) -> RunHandle:
        """Grade the grading failures again from their stored executions (the agent does not run)."""
        exp = self._require()
        ids = self.store.runs.select(exp.id, grading_failed=True)
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

"""`RunControlWidget`: define, start, pause, resume, cancel and clone experiments, and watch them run.

The define form is built from `abbench.widgets._arm_form` (arms) and `abbench.widgets._case_form`
(which cases); what is shown of an experiment is one `ExperimentStanding` (`abbench.widgets._run_state`)
drawn by `abbench.widgets._progress_view`. This module holds the widget: the chooser, the buttons,
and following the store.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import ipywidgets as w
import yaml

from abbench.errors import ExperimentError, NotFoundError, UsageError
from abbench.runner import (
    ExperimentSpec,
    Progress,
    RunHandle,
    cancel_experiment,
    clone_experiment,
    clone_spec,
    create_experiment,
    pause_experiment,
    resume_experiment,
    select_retry,
    start_experiment,
)
from abbench.store import DEFAULT_CONCURRENCY, DEFAULT_GRADERS, Experiment, RunRecord
from abbench.types import ExperimentStatus, Phase
from abbench.widgets._base import STYLE, Choice, StoreLike, escape, html_table, log, note
from abbench.widgets._case_form import selection_text
from abbench.widgets._progress_view import ProgressView, status_html, when_text, where_html
from abbench.widgets._run_definition import FILE_DATASET, load_definition
from abbench.widgets._run_form import RunForm
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


class RunControlWidget(RunForm):
    """Define an experiment, run it off the cell, and steer it: pause, resume, cancel, clone, re-run.

    The run executes on abbench's background event loop (`abbench.runner.start_experiment`), so the
    kernel stays free for the buttons; progress arrives through the runner's `Observer` interface and
    moves one bar per arm, each outcome apart (right, wrong, execution failed, grading failed,
    cancelled) with throughput and time left. An experiment shown that this kernel does not run (the
    CLI's, another notebook's) is followed from the store, whichever process runs it, every `poll_s`
    seconds; the list of experiments follows the store too (one started from the CLI appears without
    *Reload*), read again only when a cheap stamp of it (`Store.listing_stamp`) changed. Once a run
    starts, the definition folds away. Failed runs are listed with their kind: execution failures get
    a re-run, grading failures a re-grade (which reuses the stored execution). *Cancel* asks first,
    naming how many runs it stops; *Run the cancelled runs* undoes it (`retry_runs(cancelled=True)`,
    as ``abbench retry --cancelled``).

    A `definition` loaded into the form runs as written: the keys the form has no control for
    (``description``, ``decision``, ``seed``, ``gate``, budgets, an arm's ``cache`` ...) are carried
    through unchanged, and what the form changed is listed above *Start* (``concurrency 16 → 8``).

    Args:
        store: The store (an open `Store`, a folder, or None to find the notebook's store).
        experiment: An experiment to show at once (id, ``#id`` or name).
        definition: An experiment definition to fill the form from (a YAML/JSON file, a dict or an
            `ExperimentSpec`, validated as `abbench run` validates it); the arguments below, when
            given, change it (and are listed as changes).
        dataset: The dataset to pre-select (fingerprint or name; default the definition's, else the
            newest).
        arms: Arms to pre-fill: name → ``{agent, model, skill, params...}`` as in an experiment file.
        params: Parameters set on every arm (``{"latency_ms": 150}``).
        rounds: Rounds to pre-fill (default the definition's, else 1).
        cases: Run only this many cases (0: all of them; default as the definition says).
        sample: Take `cases` as a seeded random sample instead of the first ones.
        concurrency: Runs in flight at once (default the definition's, else `DEFAULT_CONCURRENCY`).
        graders: Graders (default the definition's, else ``["label_match"]``).
        name: The new experiment's name (default the definition's, else the dataset's name and the time).
        poll_s: How often the experiment shown (and the list) is read again from the store when
            this kernel does not run it.

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
        definition: str | os.PathLike[str] | Mapping[str, Any] | ExperimentSpec | None = None,
        dataset: str | None = None,
        arms: Mapping[str, Mapping[str, Any]] | None = None,
        params: Mapping[str, Any] | None = None,
        rounds: int | None = None,
        cases: int | None = None,
        sample: bool | None = None,
        concurrency: int | None = None,
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
        self._base: dict[str, Any] | None = None
        self._base_origin = ""
        if definition is not None:
            self._base = load_definition(definition)
            self._base_origin = (
                Path(definition).name if isinstance(definition, (str, os.PathLike)) else "the definition"
            )
        base = self._base or {}
        self._graders = list(graders or base.get("graders") or DEFAULT_GRADERS)
        self._poll_s = poll_s
        self._stop_poll = threading.Event()
        self._render_lock = threading.RLock()
        self._list_stamp: tuple[Any, ...] | None = None
        self._watching = False

        self.chooser = Choice("Experiment", on_select=self.guard("choosing an experiment", self._chosen))
        self.chooser.widget.layout.width = "640px"
        self.reload_button = self.button("Reload", self.reload, tooltip="read the experiments again")
        self.config = self._definition_form(
            name or base.get("name"),
            rounds or base.get("rounds", 1),
            concurrency or base.get("concurrency", DEFAULT_CONCURRENCY),
        )
        panel = self._experiment_panel()
        self.children = [
            w.HTML(STYLE),
            w.HBox([self.chooser.widget, self.reload_button]),
            self.config,
            *panel,
            self.errors,
        ]
        arms = arms or base.get("arms") or {"control": {"agent": "builtin"}}
        if params:
            arms = {n: {**a, "params": {**(a.get("params") or {}), **params}} for n, a in arms.items()}
        self._fill(dataset, arms, experiment)
        self.guard("choosing the cases", self._fill_cases)(cases, sample)
        if self._base is not None and not name:
            # the definition's name is taken here (run before): a free one, listed as a change
            self.name.value = self.guard("naming", self._free_name)(self._base["name"]) or self._base["name"]
        self._watching = True
        self._show_changes()
        self._poller = threading.Thread(target=self._follow, name="abbench-run-widget-follow", daemon=True)
        self._poller.start()

    def _experiment_panel(self) -> list[Any]:
        """What is shown of the chosen experiment: its buttons, status, bars, definition and failures."""
        self.pause_button = self.button("Pause", self.pause, icon="pause")
        self.resume_button = self.button("Resume", self.resume, icon="play")
        self.cancel_button = self.button("Cancel", self.ask_cancel, icon="stop", button_style="danger")
        self.clone_button = self.button(
            "Clone", self.clone, icon="copy", tooltip="define a new experiment like this one"
        )
        self.rerun_cancelled_button = self.button(
            "Run the cancelled runs",
            self.run_cancelled,
            icon="repeat",
            tooltip="run the cancelled runs now (as abbench retry --cancelled)",
            layout={"display": "none", "width": "auto"},  # the count is part of the label
        )
        self.controls = w.HBox(
            [
                self.pause_button,
                self.resume_button,
                self.cancel_button,
                self.clone_button,
                self.rerun_cancelled_button,
            ]
        )
        self.cancel_question = w.HTML()
        self.cancel_confirm_button = self.button(
            "Cancel them",
            self._cancel_confirmed,
            button_style="danger",
            layout={"width": "auto", "flex": "none"},
        )
        self.cancel_keep_button = self.button(
            "Keep running", self._cancel_dismissed, layout={"width": "auto", "flex": "none"}
        )
        self.cancel_confirm = w.HBox(
            [self.cancel_question, self.cancel_confirm_button, self.cancel_keep_button],
            layout={"display": "none", "align_items": "center"},
        )
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
            self.cancel_confirm,
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
        arms: Mapping[str, Mapping[str, Any]],
        experiment: int | str | None,
    ) -> None:
        """List what the store holds, pre-fill the arms, and show `experiment` (or the empty form)."""
        self.guard("listing snapshots", self._list_skills)()
        if dataset is None and self._base is not None:
            given = self._base["dataset"]
            dataset = FILE_DATASET if isinstance(given, dict) else given
        self.guard("listing datasets", self._list_datasets)(dataset)
        for arm_name, arm in arms.items():
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

    def reload(self) -> None:
        """Read the experiments, datasets and snapshots again, keeping every selection made. The listing
        stamp is kept only once the lists are drawn: a read that fails midway (a busy store) leaves the
        old stamp, so the follower's next tick reads them again instead of taking them as read."""
        stamp = self.store.listing_stamp()
        self._list_skills()
        for row in self.arm_rows:
            row.set_skill_options(self.skill_options())
        self._list_datasets()
        with self._render_lock:
            options: list[tuple[str, int]] = [("— new experiment —", NEW)]
            options += [(experiment_label(exp), exp.id) for exp in self.store.experiments.all()]
            self.chooser.set_options(options)
            self._list_stamp = stamp
            if self.chooser.missing is not None and self.chooser.missing != NEW:
                self.status_html.value = note(
                    f"experiment #{self.chooser.missing} is not in the store any more; choose another", "warn"
                )
            elif self.experiment is not None:
                self.refresh()  # the panel and its line in the list from one read

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
            f"{exp.rounds} round{'' if exp.rounds == 1 else 's'}, cases: {escape(chosen)}, created {escape(when_text(exp.created_at))} by "
            f"{escape(exp.created_by)})</summary>{arms}<pre>{escape(spec)}</pre></details>"
        )

    def _show_controls(self) -> None:
        enabled = self.standing.enabled() if self.standing is not None else Buttons()
        self.pause_button.disabled = not enabled.pause
        self.resume_button.disabled = not enabled.resume
        self.cancel_button.disabled = not enabled.cancel
        self.clone_button.disabled = not enabled.clone
        self.rerun_button.disabled = not enabled.rerun
        self.regrade_button.disabled = not enabled.regrade
        self.rerun_cancelled_button.layout.display = "" if enabled.rerun_cancelled else "none"
        cancelled = self.progress.cancelled if self.progress is not None else 0
        self.rerun_cancelled_button.description = f"Run the {cancelled:,} cancelled runs"
        if not enabled.cancel:
            self.cancel_confirm.layout.display = "none"  # nothing left to cancel (or another experiment)
        elif self.cancel_confirm.layout.display != "none":
            self._word_cancel()

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
        here within about a second. Only what changed is drawn again. The list is read again only when
        `Store.listing_stamp` says an experiment, dataset or snapshot changed, and that stamp (a scan
        of the experiments) only when something was committed since the last tick (`Store.state_stamp`,
        on the one connection this thread keeps)."""
        said = ""
        seen = None  # the store's state when the listing stamp was last compared
        try:
            while not self._stop_poll.wait(self._poll_s):
                try:
                    with self._render_lock:
                        state = self.store.state_stamp()
                        if state != seen:
                            listed = self.store.listing_stamp() == self._list_stamp
                            seen = state
                            if not listed:
                                self.reload()  # an experiment created, or its status changed, anywhere
                                continue  # the shown experiment was read again with the list
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
                    seen = None
                    self.store.close_thread_connection()  # the next tick starts on a fresh one
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

    def ask_cancel(self) -> None:
        """What *Cancel* does: ask first, naming how many runs it stops (`cancel` does it at once)."""
        self._require()
        self.cancel_confirm.layout.display = ""
        self._word_cancel()

    def _word_cancel(self) -> None:
        """The cancel question, with the counts shown now (kept up to date while it is asked)."""
        exp, progress = self.experiment, self.progress
        if exp is None:
            return
        if progress is None:
            left, said = 0, "its runs not done yet stop and are marked cancelled"
        else:
            left = progress.pending + progress.running
            said = (
                f"{progress.running:,} running and {progress.pending:,} pending runs stop and are marked "
                f"cancelled; the {progress.done:,} done are kept"
            )
        self.cancel_question.value = (
            f'<span class="abbench-warn">Cancel #{exp.id} {escape(exp.name)}? {escape(said)}. '
            "<i>Run the cancelled runs</i> undoes it.</span>"
        )
        self.cancel_confirm_button.description = f"Cancel {left:,} run{'' if left == 1 else 's'}"

    def _cancel_confirmed(self) -> None:
        self.cancel_confirm.layout.display = "none"
        self.cancel()

    def _cancel_dismissed(self) -> None:
        self.cancel_confirm.layout.display = "none"

    def cancel(self) -> None:
        """Stop: runs in flight are cancelled and pending ones marked cancelled (the button asks first)."""
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
        self._watching = False  # the changes are listed once the form holds the clone
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
        self._base, self._base_origin = clone_spec(source), f"#{source.id}"
        self.name.value = self._free_name(source.name)
        self.chooser.select(NEW)
        self._clone_of = source
        self._watching = True
        self._show_changes()
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

    def run_cancelled(self) -> RunHandle:
        """Run the cancelled runs (undoing a cancel), as ``abbench retry --cancelled`` does, off the cell."""
        return self._retry("no cancelled run to run", cancelled=True)

    def rerun_failed(self) -> RunHandle:
        """Run the execution failures again (they go back to pending; old grades stay readable)."""
        return self._retry("no execution failure to re-run", execution_failed=True)

    def regrade_failed(self) -> RunHandle:
        """Grade the grading failures again from their stored executions (the agent does not run)."""
        return self._retry("no grading failure to re-grade", grading_failed=True)

    def _retry(self, none: str, **which: Any) -> RunHandle:
        """Take up the runs `which` names as `retry_runs` does (`select_retry` says which), off the cell."""
        exp = self._require()
        try:
            chosen = select_retry(exp, store=self.store, **which)
        except ExperimentError as exc:
            raise NotFoundError(f"experiment {exp.name!r} has {none}") from exc
        return self._run(retry=chosen)

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

"""The run widget's define form: name, dataset, rounds, concurrency, cases, graders and arms.

A definition loaded into it (`abbench.widgets._run_definition`) runs as written: what the form has no
control for is carried through, and what the form changed is listed above *Start*.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import ipywidgets as w

from abbench import _actions as do
from abbench.errors import AbbenchError, NotFoundError, UsageError
from abbench.snapshot import DRAFT_MARK
from abbench.store import DEFAULT_GRADERS
from abbench.widgets._arm_form import FOLDER, NO_SKILL, ArmRow, parse_graders
from abbench.widgets._base import Choice, View, escape, log, note
from abbench.widgets._case_form import CaseForm
from abbench.widgets._progress_view import when_text
from abbench.widgets._run_definition import FILE_DATASET, changes, dataset_file_label, merged


class RunForm(View):
    """The define form of `abbench.widgets.RunControlWidget` (its base: the widget builds it)."""

    _base: dict[str, Any] | None
    """The definition the form was filled from (a file, or a clone's source); None: none."""
    _base_origin: str
    _graders: list[str | dict[str, Any]]
    _watching: bool
    config: w.Accordion

    def _definition_form(self, name: str | None, rounds: int, concurrency: int) -> w.Accordion:
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
        self.case_form = CaseForm()
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
        self.changes_html = w.HTML()
        for widget in (self.name, self.dataset.widget, self.rounds, self.concurrency, self.graders_text):
            self._watch(widget)
        for widget in (self.case_form.domains, self.case_form.labels, self.cases, self.sample):
            self._watch(widget)
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
                self.changes_html,
                self.start_button,
            ]
        )
        return w.Accordion(children=[form], titles=("Definition",), selected_index=0)

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
        options = [
            (f"{d.fingerprint} · {d.n_cases:,} cases · imported {when_text(d.created_at)}", d.fingerprint)
            for d in infos
        ]
        source = self._dataset_file()
        if source is not None:
            options.insert(0, (dataset_file_label(source), FILE_DATASET))
        self.dataset.set_options(options)
        if wanted:
            chosen = wanted if wanted == FILE_DATASET else self.store.datasets.get(wanted).fingerprint
            self.dataset.select(chosen, notify=False)
        elif self.dataset.intended is None and infos:
            self.dataset.select(infos[0].fingerprint, notify=False)  # the newest, said so in the list order
        if not self.name.value and self.dataset.value:
            self.name.value = self._default_name()
        if self.dataset.value != before or wanted:
            self.case_form.set_dataset(self.store, self._stored_dataset())

    def _dataset_file(self) -> dict[str, Any] | None:
        """The definition's dataset when it is a file to import (``{file, mapping, name}``), else None."""
        given = (self._base or {}).get("dataset")
        return given if isinstance(given, dict) else None

    def _stored_dataset(self) -> str | None:
        """The stored dataset the case choices are offered from: the one chosen, or for the definition's
        file, the newest stored under its name (importing the same cases reuses it)."""
        source = self._dataset_file()
        if self.dataset.value != FILE_DATASET or source is None:
            return str(self.dataset.value) if self.dataset.value else None
        name = source.get("name") or Path(str(source["file"])).stem
        try:
            return self.store.datasets.get(name).fingerprint
        except NotFoundError:
            return None  # not imported yet: every case, until Start imports it

    def _free_name(self, name: str) -> str:
        """`name` if no stored experiment has it, else the first of ``name-2``, ``name-3`` ... none has."""
        names = {e.name for e in self.store.experiments.all()}
        n = 2
        while name in names and f"{name}-{n}" in names:
            n += 1
        return name if name not in names else f"{name}-{n}"

    def _default_name(self) -> str:
        base = str(self._stored_dataset() or "experiment").partition("@")[0]
        return f"{base}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"

    def _dataset_chosen(self, _value: Any) -> None:
        if not self.name.value:
            self.name.value = self._default_name()
        self.case_form.set_dataset(self.store, self._stored_dataset())

    def _fill_cases(self, count: int | None, sample: bool | None) -> None:
        """Choose the definition's ``cases:`` (what the form can show), then `count` and `sample` if given."""
        if self._base is not None:
            self.case_form.fill(self._base.get("cases"))
        if count is not None:
            self.cases.value = count
        if sample is not None:
            self.sample.value = sample

    # -- arms ------------------------------------------------------------------------------------------

    def add_arm(self, name: str | None = None, arm: Mapping[str, Any] | None = None) -> None:
        """Add an arm row (pre-filled from `arm`, an experiment file's arm)."""
        taken = {r.name.value for r in self.arm_rows}
        if name is None:
            name = next(
                n for n in ("control", "treatment", *(f"arm{i}" for i in range(2, 99))) if n not in taken
            )
        row = ArmRow(self, name, dict(arm or {"agent": "builtin"}))
        for widget in (row.name, row.agent, row.model, row.skill, row.folder, row.params):
            self._watch(widget)
        self.arm_rows.append(row)
        self.arms_box.children = [r.box for r in self.arm_rows]
        self._show_changes()

    def remove_arm(self, row: ArmRow) -> None:
        """Remove an arm row."""
        if len(self.arm_rows) == 1:
            raise UsageError("an experiment needs at least one arm")
        self.arm_rows.remove(row)
        self.arms_box.children = [r.box for r in self.arm_rows]
        self._show_changes()

    def spec(self) -> dict[str, Any]:
        """The experiment definition the form describes (what `create_experiment` takes): the loaded
        definition (or the clone's source) with what the form sets.

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
            "dataset": self._dataset_file() if self.dataset.value == FILE_DATASET else self.dataset.value,
            "arms": arms,
            "rounds": int(self.rounds.value),
            "concurrency": int(self.concurrency.value),
            "graders": graders or list(DEFAULT_GRADERS),
        }
        cases = self.case_form.selection()
        if cases:
            spec["cases"] = cases
        return merged(self._base, spec)

    def form_changes(self) -> list[str]:
        """What the form changed of the definition it was filled from (``concurrency 16 → 8``), one line
        each; empty when it runs as written, or no definition was loaded.

        Raises:
            UsageError: the form does not describe an experiment yet (as `spec`).
        """
        return changes(self._base, self.spec())

    def _watch(self, widget: w.Widget) -> None:
        widget.observe(lambda _c: self._show_changes(), names="value")

    def _show_changes(self) -> None:
        """List what the form changed of the loaded definition above Start (never raises)."""
        if not self._watching:
            return
        if self._base is None:
            self.changes_html.value = ""
            return
        where = f"{escape(self._base_origin)} ({escape(self._base.get('name'))})"
        try:
            lines = self.form_changes()
        except AbbenchError as exc:
            self.changes_html.value = note(f"{where}: the form does not read yet: {exc}", "warn")
            return
        except Exception as exc:  # a view error must not stop the form
            log.warning("listing the form's changes failed: %s", exc, exc_info=True)
            return
        if not lines:
            self.changes_html.value = note(f"runs {where} as written")
            return
        items = "".join(f"<li>{escape(line)}</li>" for line in lines)
        count = f"{len(lines)} change{'' if len(lines) == 1 else 's'}"
        self.changes_html.value = (
            f'<div class="abbench-changes"><b>{count} to {where}</b> (the rest runs as written)'
            f"<ul>{items}</ul></div>"
        )

    @property
    def config_open(self) -> bool:
        """Whether the definition form is unfolded."""
        return bool(self.config.selected_index == 0)

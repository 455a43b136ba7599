"""`MappingWidget`: from a raw file to a mapping profile and an imported dataset, with a live preview."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import ipywidgets as w

from abbench.dataset import (
    DatasetInfo,
    ExpectedKind,
    MappingProfile,
    Preview,
    ProfileMatch,
    ProfileMatches,
    Shape,
    Suggestion,
    Table,
    ValidationReport,
    ValueCounts,
    convert_file,
    default_name,
    get_recipe,
    gold_kind,
    label_key,
    load_profile,
    match_profile,
    match_profiles,
    preview_import,
    read_table,
    sheet_names,
    suggest_mapping,
)
from abbench.errors import ImportFailed, UsageError
from abbench.types import CASE_FIELDS
from abbench.widgets._base import STYLE, Choice, StoreLike, View, escape, html_table, note
from abbench.widgets._mapping_parts import (
    NOT_MAPPED,
    PATH,
    FieldRow,
    LabelRow,
    edited_label_map,
    file_html,
    fit_tag,
    gold_counts,
    group_spellings,
    imported_html,
    parse_label_set,
    profile_summary,
    report_html,
    short,
)

SUGGESTED = "suggested"
GIVEN = "given"
KIND_OPTIONS = (("decide from the values", ""), ("labels", "label"), ("answers (free text)", "answer"))
"""The choices for what the gold values are: the profile's ``expected_kind`` (empty: not declared)."""
LABEL_COUNT_ROWS = 200_000
"""Rows read to count the gold column's values (the count says when it stopped early)."""
PREVIEW_CASES = 10
UPLOAD_TYPES = ".csv,.tsv,.txt,.xlsx,.xlsm,.xls,.ods,.jsonl,.ndjson,.json"


class MappingWidget(View):
    """Map a raw file's columns to case fields, see the cases and problems live, save and import.

    Pick a file (a path, or an upload) and sheet; each case field gets a dropdown pre-filled with the
    suggested column (and why it was suggested), or a JSON path; the gold column's values are listed
    with their counts beside the label each becomes. The first cases and the validation report of the
    rows read follow every change; "Check whole file" says what an import would do, without importing.
    "Save profile" stores the mapping under a name (a new version when it changed) and "Import" stores
    the dataset and shows its fingerprint. Everything is a call to `abbench.dataset` and the store.

    Opening a file, or choosing another sheet or header row, holds every saved profile against it
    (`abbench.dataset.match_profiles`): one whose columns are all there is proposed, with why; a profile
    chosen before is kept only when it fits. Keys inside objects that the suggestion weighed
    (``data.query``) are offered beside the columns. "Load mapping" reads a YAML/JSON profile as ``abbench import --mapping``
    does, lookups and templates included.

    Args:
        store: The store (an open `Store`, a folder, or None to find the notebook's store).
        path: A file to open at once.
        profile: A saved profile (``name`` or ``name@3``), a profile file, or a `MappingProfile` to
            start from instead of the suggestion.
        mapping: A mapping YAML/JSON file to load (as `load_mapping` does).

    Attributes:
        table: The opened file (None before one is opened).
        suggestion: The suggested mapping for it.
        preview: The latest preview (first cases and the report of the rows read).
        report: The validation report shown (the preview's, or the whole file's after a check).
        matches: The saved profiles held against the open file, best first.
        saved: The profile saved last.
        dataset: The dataset imported last.
        fields: Case field → its row's widgets (``fields["input"].choice`` is the dropdown).
        label_rows: The value map editor's rows, most common value first.
        counts: The gold column's value counts (None until the expected field is mapped).
        kind: Whether those values are labels or answers (`abbench.dataset.gold_kind`, honouring
            ``expected_kind`` chosen under Gold labels, and the label set); only labels get rows.
    """

    def __init__(
        self,
        store: StoreLike = None,
        *,
        path: str | Path | None = None,
        profile: Any = None,
        mapping: str | Path | None = None,
        **kwargs: Any,
    ):
        super().__init__(store, **kwargs)
        self.path: Path | None = None
        self.table: Table | None = None
        self.suggestion: Suggestion | None = None
        self.base: MappingProfile | None = None
        self.preview: Preview | None = None
        self.report: ValidationReport | None = None
        self.saved: MappingProfile | None = None
        self.dataset: DatasetInfo | None = None
        self.counts: ValueCounts | None = None
        self.kind: ExpectedKind | None = None
        self.label_rows: list[LabelRow] = []
        self._columns: tuple[str, ...] = ()
        self._chosen_ref: str | None = None
        self._given: MappingProfile | None = None
        self._given_where: str | None = None
        self.matches: ProfileMatches | None = None
        self._labels_typed: dict[str, str] = {}
        self._loading = False
        self._upload_dir: Path | None = None
        self._fingerprint: str | None = None
        self._file_controls()
        self._field_controls()
        self._label_controls()
        self._action_controls()
        self.children = self._layout()
        self.guard("listing profiles", self._list_profiles)()
        if profile is not None:
            self.guard("choosing a profile", self._choose_profile)(profile)
        if mapping is not None:
            self.guard("loading the mapping", self.load_mapping)(mapping)
        if path is not None:
            self.guard("opening the file", self.open_file)(path)

    def _file_controls(self) -> None:
        """The file, its sheet and header row, the profile to start from and a mapping file to load."""
        self.file = w.Text(description="File", placeholder="path to a CSV, XLSX, JSONL or JSON file")
        self.file.layout.width = "520px"
        self.open_button = self.button("Open", self._open_clicked)
        self.upload = w.FileUpload(accept=UPLOAD_TYPES, multiple=False, description="Upload")
        self.on_change(self.upload, self._uploaded)
        self.sheet = Choice(
            "Sheet", on_select=self.guard("choosing a sheet", lambda _v: self._reread("sheet"))
        )
        self.sheet.widget.layout.display = "none"
        self.header_row = w.Text(
            description="Header row", placeholder="detect", continuous_update=False, layout={"width": "180px"}
        )
        self.on_change(self.header_row, lambda _v: self._reread("header row"))
        self.start_from = Choice(
            "Start from", on_select=self.guard("choosing a profile", lambda _v: self._restart())
        )
        self.start_from.widget.layout.width = "420px"
        self.mapping_file = w.Text(
            description="Mapping",
            placeholder="a mapping profile (YAML/JSON), as import_dataset's profile= reads",
            continuous_update=False,
        )
        self.mapping_file.layout.width = "520px"
        self.load_button = self.button("Load mapping", self._load_clicked)
        self.match_html = w.HTML()
        self.kept_html = w.HTML()
        self.file_info = w.HTML()
        self.sample_html = w.HTML()

    def _field_controls(self) -> None:
        """One row per case field: the column (or JSON path) it comes from."""
        self.fields = {name: FieldRow(name) for name in CASE_FIELDS}
        for row in self.fields.values():
            self._watch_field(row)

    def _watch_field(self, row: FieldRow) -> None:
        """A new column or JSON path in `row` updates the preview."""

        def changed(_value: Any) -> None:
            self._field_changed(row)

        self.on_change(row.choice, changed)
        self.on_change(row.path, changed)

    def _label_controls(self) -> None:
        """The label set, what the gold values are, and the value map editor's box."""
        self.label_set = w.Text(
            description="Label set",
            placeholder="allowed labels, e.g. fast, slow (empty: any)",
            continuous_update=False,
            layout={"width": "520px"},
        )
        self.on_change(self.label_set, lambda _v: self._labels_changed())
        self.expected_kind = w.Dropdown(
            description="Gold values are",
            options=KIND_OPTIONS,
            value="",
            style={"description_width": "initial"},
        )
        self.on_change(self.expected_kind, lambda _v: self._labels_changed())
        self.labels_note = w.HTML()
        self.labels_box = w.VBox()

    def _action_controls(self) -> None:
        """The preview, the whole-file check, saving the profile and importing the dataset."""
        self.preview_html = w.HTML()
        self.report_html = w.HTML()
        self.profile_html = w.HTML()
        self.check_button = self.button("Check whole file", self.check)
        self.profile_name = w.Text(description="Profile", placeholder="name to save the mapping under")
        self.save_button = self.button("Save profile", self.save)
        self.dataset_name = w.Text(description="Dataset", placeholder="name (default: the file's name)")
        self.skip_invalid = w.Checkbox(description="skip invalid rows", indent=False)
        self.on_change(self.skip_invalid, lambda _v: self._show_report())
        self.import_button = self.button("Import", self.do_import, button_style="primary")
        self.result_html = w.HTML()

    def _layout(self) -> list[Any]:
        """The widget's parts, top to bottom."""
        return [
            w.HTML(STYLE + "<b>Data file</b>"),
            w.HBox([self.file, self.open_button, self.upload]),
            w.HBox([self.sheet.widget, self.header_row, self.start_from.widget]),
            w.HBox([self.mapping_file, self.load_button]),
            self.match_html,
            # The form is taller than a screen: the error area shows both under the controls that
            # most often fail (file, sheet, header row) and beside the actions at the bottom.
            self.errors,
            self.file_info,
            self.sample_html,
            w.HTML("<b>Case fields</b>"),
            *(row.box for row in self.fields.values()),
            self.kept_html,
            w.HTML("<b>Gold labels</b>"),
            w.HBox([self.label_set, self.expected_kind]),
            self.labels_note,
            self.labels_box,
            w.HTML("<b>Preview</b>"),
            self.preview_html,
            self.report_html,
            self.check_button,
            self.profile_html,
            w.HBox([self.profile_name, self.save_button]),
            w.HBox([self.dataset_name, self.skip_invalid, self.import_button]),
            self.result_html,
            self.errors,
        ]

    # -- the file --------------------------------------------------------------------------------------

    def _list_profiles(self) -> None:
        options: list[tuple[str, Any]] = [("suggested mapping", SUGGESTED)]
        if self._given is not None:
            options.append((self._given_where or f"profile {self._given.name or '(unnamed)'} (given)", GIVEN))
        for info in self.store.profiles.all():
            options.append((f"saved profile {info.ref}{fit_tag(self.matches, info.ref)}", info.ref))
        self.start_from.set_options(options)
        if self.start_from.intended is None:
            self.start_from.select(SUGGESTED, notify=False)

    def _choose_profile(self, profile: Any) -> None:
        resolved = self.store.profiles.resolve(profile)
        if resolved is None:
            return  # nothing to start from: the suggestion stays
        self._list_profiles()
        if resolved.version is not None and resolved.ref in self.start_from.values:
            self.start_from.select(resolved.ref, notify=False)
            return
        self._given, self._given_where = resolved, None
        self._list_profiles()
        self.start_from.select(GIVEN, notify=False)

    def _load_clicked(self) -> None:
        self.load_mapping(self.mapping_file.value)

    def load_mapping(self, path: str | Path) -> MappingProfile:
        """Start from a mapping profile file (YAML or JSON), read as ``abbench import --mapping`` reads it.

        Lookup files are read relative to it; templates, lookups and defaults the dropdowns cannot show
        are listed read-only under the case fields, and the import uses them exactly as the CLI would.
        A profile loaded on purpose is applied even when it does not fit the open file, with a warning
        saying which columns it misses.

        Raises:
            UsageError: no path given.
            MappingError: the file is missing or not a valid profile (the message says where).
        """
        text = str(path).strip()
        if not text:
            raise UsageError(
                "give the path of a mapping profile: a YAML or JSON file (what import_dataset's profile= reads)"
            )
        file = Path(text).expanduser()
        profile = load_profile(file)
        self._given, self._given_where = profile, f"mapping file {file.name}"
        with self._hold():
            self.mapping_file.value = str(file)
        self._list_profiles()
        self.start_from.select(GIVEN, notify=False)
        if self.path is not None:
            fit = match_profile(read_table(self.path), profile)
            self.match_html.value = note(f"loaded {file.name}: {fit.reason}", "ok" if fit.fits else "warn")
            self._restart()
        else:
            self.match_html.value = note(f"loaded {file.name}; open a data file to apply it")
        return profile

    def _restart(self) -> None:
        """Fill the form from the profile chosen to start from: its labels, label set and name."""
        with self._hold():
            self.label_rows = []
            self._labels_typed.clear()
            self.label_set.value = ""
            self.profile_name.value = ""
        self._reload()

    def _open_clicked(self) -> None:
        self.open_file(self.file.value.strip())

    def _uploaded(self, value: Any) -> None:
        if not value:
            return
        item = value[0]
        if self._upload_dir is None:
            self._upload_dir = Path(tempfile.mkdtemp(prefix="abbench-upload-"))
        target = self._upload_dir / Path(item["name"]).name
        target.write_bytes(bytes(item["content"]))
        self.open_file(target)

    def open_file(self, path: str | Path) -> None:
        """Open a data file: read options come from the chosen profile or are detected.

        Raises:
            UsageError: no path given.
            ImportFailed: the file cannot be read.
        """
        if not str(path).strip():
            raise UsageError("give the path of a CSV, XLSX, JSONL or JSON file (or upload one)")
        self.path = Path(path).expanduser()
        with self._hold():
            self.file.value = str(self.path)
            self.header_row.value = ""
            self.sheet.intended = None
            self.dataset_name.value = ""
            self.label_set.value = ""
            self.expected_kind.value = ""
            self.profile_name.value = ""
            self._labels_typed.clear()
        self.result_html.value = ""
        self._propose(read_table(self.path))
        self._reload()

    def _match_saved(self, table: Table) -> None:
        self.matches = match_profiles(table, [info.profile for info in self.store.profiles.all()])

    def _reread(self, what: str) -> None:
        """Another sheet or header row: hold the saved profiles against its columns again, refill the form."""
        if self._loading or self.path is None:
            return
        self._propose(self._read(None)[0], what)
        self._reload()

    def _propose(self, table: Table, what: str = "file") -> None:
        """Choose the profile to start from for a newly opened file (or sheet, or header row), and say why.

        The profile chosen before stays only when its columns are all in this one; else the best
        fitting saved profile is proposed; else the suggestion, saying why no saved one fits.
        """
        self._match_saved(table)
        assert self.matches is not None
        intended = self.start_from.intended
        said: list[tuple[str, str]] = []
        keep = False
        fit: ProfileMatch | None
        if intended == GIVEN and self._given is not None:
            fit = match_profile(table, self._given)
            where = self._given_where or f"profile {self._given.name or '(unnamed)'}"
            keep = fit.fits
            said.append(
                (f"kept {where}: {fit.reason}", "ok")
                if fit.fits
                else (f"{where} was not kept for this {what}: {fit.reason}", "warn")
            )
        elif intended not in (None, SUGGESTED):
            fit = self.matches.get(intended)
            keep = fit is not None and fit.fits
            if fit is not None:
                said.append(
                    (f"kept {fit.reason}", "ok")
                    if keep
                    else (f"{intended} was not kept for this {what}: {fit.reason}", "warn")
                )
        if not keep:
            best = self.matches.best
            if best is not None:
                self.start_from.select(best.ref, notify=False)
                said.append(
                    (
                        f"proposed {best.reason}; choose 'suggested mapping' under Start from to ignore it",
                        "ok",
                    )
                )
            else:
                self.start_from.select(SUGGESTED, notify=False)
                if self.matches.matches:
                    said.append((self.matches.explain() + "; starting from the suggested mapping", "note"))
        self._list_profiles()
        self.match_html.value = "".join(note(text, kind) for text, kind in said)

    @contextmanager
    def _hold(self) -> Iterator[None]:
        # Filling the form programmatically must not fire a preview per widget touched.
        before, self._loading = self._loading, True
        try:
            yield
        finally:
            self._loading = before

    def _chosen_profile(self) -> MappingProfile | None:
        ref = self.start_from.value
        if ref == GIVEN:
            return self._given
        return self.store.profiles.get(ref) if ref and ref != SUGGESTED else None

    def _read(self, chosen: MappingProfile | None) -> tuple[Table, list[str]]:
        """The file read with the sheet and header row chosen (else `chosen`'s), and its sheets."""
        assert self.path is not None
        header = self.header_row.value.strip()
        if header and not header.isdigit():
            raise UsageError(f"the header row is a row number (1 = the first row, 0 = none), got {header!r}")
        options: dict[str, Any] = {}
        read = chosen.read if chosen is not None else None
        if (sheet := self.sheet.intended or (read.sheet if read is not None else None)) is not None:
            options["sheet"] = sheet
        if header:
            options["header_row"] = int(header)
        elif read is not None and read.header_row is not None:
            options["header_row"] = read.header_row
        sheets = sheet_names(self.path)
        if sheet is not None and (not sheets or (isinstance(sheet, str) and sheet not in sheets)):
            options.pop("sheet")
        return read_table(self.path, **options), sheets

    def _reload(self) -> None:
        """Read the file again with the chosen sheet, header row and starting profile; refill the form."""
        if self._loading or self.path is None:
            return
        chosen = self._chosen_profile()
        table, sheets = self._read(chosen)
        self.table = table
        with self._hold():
            self.sheet.widget.layout.display = "" if sheets else "none"
            self.sheet.set_options([(s, s) for s in sheets])
            if sheets and self.sheet.value is None:
                self.sheet.show(table.options.get("sheet"))  # detected, not chosen
            if not self.header_row.value and table.options.get("header_row") is not None and table.tabular:
                self.header_row.placeholder = f"detect ({table.options['header_row']})"
        self.suggestion = suggest_mapping(table)
        self.base = chosen if chosen is not None else self.suggestion.profile
        if chosen is None:
            self._chosen_ref = None
        elif self.start_from.value == GIVEN and self._given_where:
            self._chosen_ref = self._given_where
        else:
            self._chosen_ref = f"profile {chosen.ref or '(given)'}"
        self._show_file(table)
        base = self.base
        if base.recipe:  # the recipe reads the profile too (a conversation layout, its roles)
            columns = tuple(get_recipe(base.recipe).transform(table, base).columns)
        else:  # the keys inside objects the suggestion weighed (data.query) are offered like columns
            columns = (*table.columns, *(c for c in self.suggestion.columns if c not in table.columns))
        with self._hold():
            for name, row in self.fields.items():
                row.show(self.base.fields.get(name), columns, "the profile" if chosen else "the suggestion")
            if not self.label_set.value or chosen is not None:
                self.label_set.value = ", ".join(self.base.label_set or ())
            if not self.expected_kind.value or chosen is not None:
                self.expected_kind.value = self.base.expected_kind or ""
            if not self.profile_name.value or chosen is not None:
                self.profile_name.value = self.base.name or ""
        self._columns = columns
        self.kept_html.value = profile_summary(self.base, self._chosen_ref or "the suggestion")
        self._rebuild_labels()
        self.refresh()

    def _show_file(self, table: Table) -> None:
        self.file_info.value, self.sample_html.value = file_html(table, self.suggestion)

    # -- the form ----------------------------------------------------------------------------------------

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns (or keys) the mapping reads."""
        return self._columns

    @property
    def reasons(self) -> dict[str, str]:
        """Why each field is mapped as it is (shown beside its dropdown)."""
        return {name: row.reason.value for name, row in self.fields.items()}

    def set_field(self, field: str, source: str | None) -> None:
        """Map `field` from a column or JSON path (None: not mapped), as choosing it in the form does."""
        row = self.fields[field]
        if source is None:
            row.choice.value = NOT_MAPPED
        elif source in self.columns:
            row.choice.value = f"col:{source}"
        else:
            with self._hold():
                row.choice.value = PATH
            if row.path.value == source:
                self._field_changed(row)
            else:
                row.path.value = source  # its observer refreshes

    def set_label(self, value: str, label: str) -> None:
        """Map a gold value (any of its spellings) to `label`, as typing it in the value map does."""
        key = label_key(value)
        for row in self.label_rows:
            if row.key == key:
                row.label.value = label
                return
        raise UsageError(
            f"no gold value {value!r} in the file; values: {', '.join(r.key for r in self.label_rows)}"
        )

    def _field_changed(self, row: FieldRow) -> None:
        if self._loading:
            return
        row.path.layout.display = "" if row.choice.value == PATH else "none"
        if row.field == "expected":
            self._rebuild_labels()
        self.refresh()

    def _reason(self, name: str, source: Any) -> str:
        base_source = self.base.fields.get(name) if self.base is not None else None
        if source is None:
            if name == "case_id":
                return note("generated from the input")
            return ""
        if source != base_source:
            return note("chosen here")
        if self._chosen_ref:
            return note(f"from {self._chosen_ref}")
        if self.suggestion is not None and name in self.suggestion.reasons:
            return note("suggested: " + self.suggestion.reasons[name])
        return ""

    def _label_set(self) -> list[str] | None:
        return parse_label_set(self.label_set.value)

    def _label_map(self) -> dict[str, str]:
        return edited_label_map(self.label_rows, self.base.label_map if self.base is not None else {})

    def _rebuild_labels(self) -> None:
        """List the gold column's values with counts, keeping labels typed earlier for the same value."""
        for row in self.label_rows:
            self._labels_typed[row.key] = row.label.value
        self.label_rows = []
        self.counts = None
        source = self.fields["expected"].source
        table = self.table
        if table is None or source is None or not isinstance(source, str):
            self.labels_box.children = []
            self.labels_note.value = note("map the expected field to list its values") if table else ""
            return
        self.counts = gold_counts(table, source, self.base, LABEL_COUNT_ROWS)
        if self.counts is None and self.base is not None:
            self.labels_box.children = []
            self.labels_note.value = note(f"recipe {self.base.recipe} reads the labels")
            return
        self._show_labels(source)

    def _labels_changed(self) -> None:
        """The label set or the declared kind changed: list the counted values again (no re-reading)."""
        source = self.fields["expected"].source
        if self.counts is not None and isinstance(source, str):
            for row in self.label_rows:
                self._labels_typed[row.key] = row.label.value
            self.label_rows = []
            self._show_labels(source)
        self.refresh()

    def _show_labels(self, source: str) -> None:
        """The counted values with the label each becomes, when they are labels (`gold_kind` decides)."""
        counts = self.counts
        assert counts is not None  # counted by the caller
        groups = group_spellings(counts.counts)
        merged = {key: sum(variants.values()) for key, variants in groups.items()}
        self.kind = gold_kind(merged, declared=self.expected_kind.value or None, label_set=self._label_set())
        if not self.kind.is_label:
            self.labels_box.children = []
            self.labels_note.value = note(
                f"{len(groups):,} distinct values in {source!r}, {counts.blank:,} blank: {self.kind.reason}; "
                "no value map (choose “Gold values are: labels” if they are labels)"
            )
            return
        base_map = {label_key(k): v for k, v in (self.base.label_map if self.base else {}).items()}
        allowed = {label_key(v): v for v in (self._label_set() or ())}
        for key, variants in sorted(groups.items(), key=lambda kv: -sum(kv[1].values())):
            label = self._labels_typed.get(key)
            if label is None:
                label = base_map.get(key) or allowed.get(key) or next(iter(variants)).strip()
            row = LabelRow(key, variants, label)
            self.on_change(row.label, lambda _v: self.refresh())
            self.label_rows.append(row)
        self.labels_box.children = [row.box for row in self.label_rows]
        scope = "" if counts.complete else f" (first {counts.n_rows:,} rows)"
        self.labels_note.value = note(
            f"{len(groups):,} values in {source!r}{scope}, {counts.blank:,} blank; "
            "spellings that differ only in case, width or spaces are one value; "
            f"{self.kind.reason}"
        )

    def _compose(self, base: MappingProfile, *, from_form: bool = True) -> MappingProfile:
        """The profile the form describes: `base` with the form's fields, labels and read options."""
        changes: dict[str, Any] = {}
        read = base.read.model_dump(exclude_none=True)
        table = self.table
        if table is not None and table.format == "xlsx" and table.options.get("sheet"):
            read["sheet"] = table.options["sheet"]
        header = self.header_row.value.strip()
        if header.isdigit() and table is not None and table.tabular:
            read["header_row"] = int(header)
        if table is not None and table.format != "xlsx":
            read.pop("sheet", None)
        changes["read"] = read
        if from_form:
            fields = {}
            for name, row in self.fields.items():
                source = row.source
                if source is not None:
                    fields[name] = source
            changes["fields"] = fields
            changes["label_set"] = self._label_set()
            changes["expected_kind"] = self.expected_kind.value or None
            changes["label_map"] = self._label_map()
            name = self.profile_name.value.strip()
            changes["name"] = name or None
        return base.evolve(**changes)

    @property
    def profile(self) -> MappingProfile:
        """The mapping profile the form describes now.

        Raises:
            UsageError: no file is open yet.
            MappingError: the form describes an invalid profile (the message says which field).
        """
        if self.base is None:
            raise UsageError("open a file first")
        return self._compose(self.base)

    def refresh(self) -> None:
        """Convert the first cases with the profile as it stands and show them with their problems."""
        if self._loading or self.path is None or self.base is None:
            return
        for name, row in self.fields.items():
            row.reason.value = self._reason(name, row.source)
        profile = self.profile
        self.profile_html.value = (
            "<details><summary>mapping profile (YAML)</summary>"
            f"<pre>{escape(profile.to_yaml())}</pre></details>"
        )
        try:
            preview = preview_import(self.path, profile, n=PREVIEW_CASES)
        except Exception:
            self.preview = None
            self.preview_html.value = note("no preview: see the error below", "warn")
            raise
        self.preview = preview
        self.report = preview.report
        rows = [
            (
                c.case_id,
                short(c.input, 120),
                c.expected,
                c.domain,
                short(c.history, 60),
                short(c.context, 60),
                c.request_id,
                c.source_line,
            )
            for c in preview.cases
        ]
        self.preview_html.value = (
            html_table(
                ["case_id", "input", "expected", "domain", "history", "context", "request_id", "from"],
                rows,
                nowrap=(0, 7),
            )
            if rows
            else note("no row of those read became a case: the problems below say why", "warn")
        )
        self._fingerprint = None
        self._show_report()

    def _show_report(self) -> None:
        """Show the report as it stands, with the outcome for the skip-invalid choice made now."""
        report = self.report
        if report is None:
            self.report_html.value = ""
            return
        html = report_html(report, skip_invalid=self.skip_invalid.value)
        if (
            self._fingerprint
            and report.complete
            and (report.ok or self.skip_invalid.value)
            and report.n_valid
        ):
            html += note(f"the dataset would be {self._fingerprint}")
        self.report_html.value = html

    # -- actions -----------------------------------------------------------------------------------------

    def check(self) -> ValidationReport:
        """Validate every row with the profile as it stands and say what an import would do (nothing is
        imported): refused with the problems grouped, or how many cases, with "skip invalid rows" as ticked.
        """
        if self.path is None:
            raise UsageError("open a file first")
        name = self.dataset_name.value.strip() or default_name(self.path)
        self._fingerprint = None
        try:
            conversion = convert_file(
                self.path, self.profile, name=name, skip_invalid=self.skip_invalid.value
            )
        except ImportFailed as exc:
            # A refusal is the check's answer, shown as a report like any other.
            if exc.report is None:
                raise
            report: ValidationReport = exc.report
            self.report = report
            self._show_report()
            return report
        self.report = conversion.report
        self._fingerprint = conversion.fingerprint
        self._show_report()
        return conversion.report

    def save(self) -> MappingProfile:
        """Save the profile under the name given (a new version when it changed); return it.

        The open file's columns are recorded with it, so the next file of this shape is matched to it.
        """
        name = self.profile_name.value.strip()
        if not name:
            raise UsageError("give the profile a name to save it under (the Profile box)")
        profile = self.profile
        if self.table is not None:
            profile = profile.model_copy(update={"shape": Shape(**self.table.shape)})
        saved = self.store.profiles.save(profile, name=name)
        self.saved = saved
        self.result_html.value = note(f"saved mapping profile {saved.ref}", "ok")
        if self.table is not None:
            self._match_saved(self.table)
        self._list_profiles()
        return saved

    def do_import(self) -> DatasetInfo:
        """Import the file as a dataset with the profile as it stands; shows (and returns) its info."""
        if self.path is None:
            raise UsageError("open a file first")
        name = self.dataset_name.value.strip() or None
        try:
            info = self.store.datasets.import_file(
                self.path,
                self.profile,
                name=name,
                skip_invalid=self.skip_invalid.value,
                save_profile_as=self.profile_name.value.strip() or None,
            )
        except ImportFailed as exc:
            if exc.report is None:
                raise
            self.report = exc.report
            self._show_report()
            outcome = exc.report.outcome(skip_invalid=self.skip_invalid.value)
            raise ImportFailed(
                f"{self.path.name} was not imported: {outcome}. The report above groups the problems; "
                "fix the mapping, or tick 'skip invalid rows' to import the valid ones",
                exc.report,
            ) from None
        self.dataset = info
        self.result_html.value = imported_html(info)
        self._list_profiles()
        return info

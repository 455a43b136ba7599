"""Pieces of `MappingWidget`: the grouped validation report, a field's and a gold value's row, and the
read-only summary of what the form cannot edit (templates, lookups, defaults)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import ipywidgets as w

from abbench._text import clip
from abbench.dataset import (
    DatasetInfo,
    MappingProfile,
    ProblemKind,
    ProfileMatch,
    ProfileMatches,
    Source,
    Suggestion,
    Table,
    ValidationReport,
    ValueCounts,
    compact_locations,
    get_recipe,
    label_key,
)
from abbench.errors import MappingError
from abbench.widgets._base import escape, html_table, note

NOT_MAPPED = ""
PATH = "path"
KEEP = "keep"
SHOWN_KINDS = 8
"""Kinds of problem listed in the report's table; the rest are counted (and listed under "show all")."""
SHOWN_LOCATIONS = 5
SHOWN_VALUES = 4
ALL_LOCATIONS = 2_000
"""Locations per kind listed under "show all" at most."""
ALL_VALUES = 200
"""Values per kind listed (with their first rows) under "show all" at most."""
WIDGET_HINTS = {
    "label_not_in_set": (
        "type the label each value stands for under Gold labels (快 → fast), or add it to the label set"
    ),
    "path_failed": "choose a column or JSON path that every row has under Case fields, or load another mapping",
}
"""What to do, in the form's own words, where the library's words name YAML keys."""


def short(value: Any, limit: int = 160) -> str:
    """A value as one short line of text (JSON for lists and objects)."""
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return clip(text, limit)


def source_text(source: Any) -> str:
    """A field's source as written in a profile (a column name, or the JSON of a source object)."""
    if isinstance(source, Source):
        return json.dumps(source.model_dump(mode="json", exclude_unset=True), ensure_ascii=False)
    return str(source)


def file_html(table: Table, suggestion: Suggestion | None) -> tuple[str, str]:
    """How a file was read (with its notes and the suggestion's), and its first rows, as HTML."""
    opts = ", ".join(f"{k}={v!r}" for k, v in table.options.items() if v is not None)
    notes = "".join(note(n) for n in table.notes)
    hints = "".join(note(n, "warn") for n in (suggestion.notes if suggestion else ()))
    info = note(f"{table.path.name}: {table.format}, {len(table.columns)} columns ({opts})") + notes + hints
    head = table.head(5)
    if table.tabular:
        rows = [[r.location, *(short(r.value.get(c), 60) for c in table.columns)] for r in head]
        return info, html_table(["row", *table.columns], rows, nowrap=(0,))
    rows = [[r.location, short(r.value, 300)] for r in head]
    return info, html_table(["row", "value"], rows, nowrap=(0,))


# -- the validation report ------------------------------------------------------------------------------


def _values(kind: ProblemKind, limit: int) -> str:
    items = [f"{short(v, 40)!s} ×{n:,}" if n > 1 else short(v, 40) for v, n in kind.values[:limit]]
    rest = len(kind.values) - limit
    return ", ".join(items) + (f" … (+{rest:,} more values)" if rest > 0 else "")


def _ids(kind: ProblemKind, limit: int) -> str:
    ids = [short(i, 30) for i in kind.case_ids[:limit]]
    rest = len(kind.case_ids) - limit
    return ", ".join(ids) + (f" … (+{rest:,})" if rest > 0 else "")


def outcome_kind(report: ValidationReport, skip_invalid: bool) -> str:
    """The note style of a report's outcome: refused is a warning, an import that would go through is ok."""
    if not report.complete:
        return "warn" if report.n_invalid else "note"
    refused = report.n_rows == 0 or report.n_valid == 0 or (report.n_invalid and not skip_invalid)
    return "warn" if refused else "ok"


def report_html(report: ValidationReport, *, skip_invalid: bool = False, limit: int = SHOWN_KINDS) -> str:
    """A validation report as HTML under one screen: the real outcome, then one row per kind of problem.

    Each row says how many rows have it, where the first few sit (``line 3, 7, 12 … (+40 more)``),
    which values and case ids, and what to do; every location and value is under a "show all" fold
    that scrolls in its own box. The outcome line is what an import would do now (refused, or how many
    cases with how many skipped), never a promise the import then breaks.
    """
    outcome = report.outcome(skip_invalid=skip_invalid)
    parts = [
        f'<div class="abbench-{outcome_kind(report, skip_invalid)}"><b>{escape(outcome)}</b></div>',
        note(f"{report.n_rows:,} rows read: {report.n_valid:,} valid, {report.n_invalid:,} invalid"),
    ]
    kinds = report.kinds()
    if not kinds:
        return "".join(parts)
    rows = []
    for k in kinds[:limit]:
        where = escape(k.where(SHOWN_LOCATIONS))
        if k.case_ids:
            where += f'<div class="abbench-muted">ids {escape(_ids(k, 3))}</div>'
        hint = WIDGET_HINTS.get(k.kind, k.hint)
        todo = escape(hint)
        if len(k.values) <= 1:
            todo += f'<div class="abbench-muted">{escape(clip(k.message, 110))}</div>'
        label = k.kind if k.severity == "error" else f"{k.kind} (warning)"
        rows.append(
            (
                f'<code title="{escape(k.what)}">{escape(label)}</code>',
                k.field or "",
                f"{k.count:,}",
                where,
                _values(k, SHOWN_VALUES),
                todo,
            )
        )
    parts.append(
        html_table(
            ["problem", "field", "rows", "where", "values", "what to do"],
            rows,
            raw=(0, 3, 5),
            numeric=(2,),
            nowrap=(1,),
            wide=(3, 5),
            css="abbench-table abbench-report",
        )
    )
    rest = kinds[limit:]
    if rest:
        parts.append(note(f"… and {len(rest)} more kinds of problem ({sum(k.count for k in rest):,} rows)"))
    if report.truncated:
        parts.append(note(f"{report.truncated:,} more problems were not kept; the counts are complete"))
    if report.label_set and report.counts.get("label_not_in_set"):
        labels = ", ".join(report.label_set)
        parts.append(note(f"label set ({len(report.label_set)}): {clip(labels, 300)}"))
    parts.append(_all_problems(report, kinds))
    return "".join(parts)


def _all_problems(report: ValidationReport, kinds: list[ProblemKind]) -> str:
    """Every kept location, value and case id per kind, folded, in a box that scrolls by itself."""
    total = sum(len(k.locations) for k in kinds)
    by_value: dict[tuple[Any, ...], list[str]] = {}
    for g in report.groups():
        if g.value is not None:
            where = compact_locations(g.locations) + (" …" if g.count > len(g.locations) else "")
            by_value.setdefault((g.severity, g.kind, g.field), []).append(
                f"{short(g.value, 60)} ×{g.count:,} at {where}"
            )
    blocks = []
    for k in kinds:
        locations = k.locations[:ALL_LOCATIONS]
        more = len(k.locations) - len(locations)
        where = k.where(ALL_LOCATIONS) if not more else f"{k.where(ALL_LOCATIONS)} (first {ALL_LOCATIONS:,})"
        lines = [
            f"<b>{escape(k.kind)}</b> · {escape(k.field or 'file')} · {k.count:,} rows — {escape(k.what)}"
        ]
        lines.append(f"<div>where: {escape(where)}</div>")
        per_value = by_value.get((k.severity, k.kind, k.field), [])
        if len(per_value) > 1:
            shown = per_value[:ALL_VALUES]
            rest = f" … (+{len(per_value) - ALL_VALUES:,} more values)" if len(per_value) > ALL_VALUES else ""
            lines.append(f"<div>by value: {escape('; '.join(shown) + rest)}</div>")
        elif k.values:
            lines.append(f"<div>values: {escape(_values(k, len(k.values)))}</div>")
        if k.case_ids:
            lines.append(f"<div>case ids: {escape(_ids(k, len(k.case_ids)))}</div>")
        lines.append(f'<div class="abbench-muted">e.g. {escape(k.message)}</div>')
        blocks.append(f'<div style="margin:0 0 6px">{"".join(lines)}</div>')
    return (
        f"<details><summary>show all ({total:,} problems kept, by kind)</summary>"
        '<div class="abbench-report-all" style="max-height:320px; overflow:auto; font-size:12px;'
        f' line-height:1.45; overflow-wrap:anywhere">{"".join(blocks)}</div></details>'
    )


# -- what the form shows of a profile but cannot edit ---------------------------------------------------


def profile_summary(profile: MappingProfile, where: str) -> str:
    """What a profile does that the dropdowns cannot show: templates, lookups, defaults, splits, recipe.

    Read-only: `where` names where the profile came from, to say where to edit it.
    """
    rows = []
    for name, source in profile.fields.items():
        if isinstance(source, Source) and source.kind not in ("column", "path"):
            rows.append((name, source.kind, clip(source_text(source), 160)))
    for name, lk in profile.lookups.items():
        table = lk.table or {}
        sample = ", ".join(f"{k} → {v}" for k, v in list(table.items())[:3])
        default = (
            f"; default {lk.default!r}" if lk.has_default else "; no default (a missing key is a problem)"
        )
        origin = f" from {lk.file}" if lk.file else ""
        rows.append((f"lookup {name}", "table", f"{len(table):,} keys{origin}{default}; e.g. {sample}"))
    for name, value in profile.defaults.items():
        rows.append((name, "default", clip(short(value), 120)))
    if profile.splits:
        rows.append(("splits", "read", ", ".join(profile.splits)))
    if profile.recipe:
        rows.append(("recipe", "read", profile.recipe))
    if not rows:
        return ""
    return note(f"kept as {where} gives them (edit them there and load it again):") + html_table(
        ["field", "kind", "source"], rows, nowrap=(0, 1), wide=(2,)
    )


# -- rows of the form --------------------------------------------------------------------------------------


class FieldRow:
    """One case field: where its value comes from (a column, a JSON path, or kept from a profile)."""

    def __init__(self, field: str):
        self.field = field
        self.choice = w.Dropdown(
            description=field, options=[("— not mapped —", NOT_MAPPED)], value=NOT_MAPPED
        )
        self.choice.layout.width = "320px"
        self.path = w.Text(
            placeholder="JSON path, e.g. data.query or input[-1].content", continuous_update=False
        )
        self.path.layout.width = "300px"
        self.path.layout.display = "none"
        self.reason = w.HTML()
        self.kept: Any = None
        self.kept_from = "the profile"
        self.box = w.HBox([self.choice, self.path, self.reason])

    def set_columns(self, columns: tuple[str, ...]) -> None:
        """Offer `columns` (and the profile's own source, when it is not one of them)."""
        options = [("— not mapped —", NOT_MAPPED), *((c, f"col:{c}") for c in columns), ("JSON path…", PATH)]
        if self.kept is not None:
            options.append((f"as in {self.kept_from}: {short(source_text(self.kept), 60)}", KEEP))
        self.choice.options = options

    def show(self, source: Any, columns: tuple[str, ...], kept_from: str = "the profile") -> None:
        """Point the row at `source` (the source for this field of a profile, or of `kept_from`)."""
        self.kept, self.kept_from = None, kept_from
        plain = isinstance(source, Source) and source.match is None  # a pattern is kept, never dropped
        if plain and source.kind == "column" and source.column in columns:
            source = source.column
        elif plain and source.kind == "path":
            source = source.path
        if isinstance(source, Source):
            self.kept = source
        self.set_columns(columns)
        if source is None:
            self.choice.value, self.path.value = NOT_MAPPED, ""
        elif isinstance(source, str) and source in columns:
            self.choice.value, self.path.value = f"col:{source}", ""
        elif isinstance(source, str):
            self.choice.value, self.path.value = PATH, source
        else:
            self.choice.value, self.path.value = KEEP, ""
        self.path.layout.display = "" if self.choice.value == PATH else "none"

    @property
    def source(self) -> Any:
        """The source this row maps the field from, or None."""
        value = self.choice.value
        if value == NOT_MAPPED:
            return None
        if value == PATH:
            return self.path.value.strip() or None
        if value == KEEP:
            return self.kept
        return value[4:]


class LabelRow:
    """One gold value (all spellings that compare equal) and the label it becomes."""

    def __init__(self, key: str, variants: dict[str, int], label: str):
        self.key = key
        self.variants = variants
        shown = ", ".join(f"{escape(repr(v))} ×{n}" for v, n in variants.items())
        self.values = w.HTML(f"<code>{shown}</code>")
        self.values.layout.width = "360px"
        self.label = w.Text(value=label, placeholder="label", continuous_update=False)
        self.label.layout.width = "200px"
        self.box = w.HBox([self.values, w.HTML("→"), self.label])

    @property
    def count(self) -> int:
        """Rows holding any of the spellings."""
        return sum(self.variants.values())


def fit_tag(matches: ProfileMatches | None, ref: str) -> str:
    """How a saved profile fits the open file, for its label in the Start from list."""
    fit: ProfileMatch | None = matches.get(ref) if matches is not None else None
    if fit is None:
        return ""
    if fit.fits:
        return " · matches this file"
    if fit.missing:
        return f" · lacks {', '.join(fit.missing[:2])}" + (" …" if len(fit.missing) > 2 else "")
    return " · does not fit"


def parse_label_set(text: str) -> list[str] | None:
    """The labels typed in the label-set box (commas, Chinese commas or 、 between them); None if empty."""
    labels = [t.strip() for t in text.replace("，", ",").replace("、", ",").split(",") if t.strip()]
    return labels or None


def edited_label_map(rows: Sequence[LabelRow], base: Mapping[str, str]) -> dict[str, str]:
    """The label map the editor's rows say, over the profile's own (`base`).

    The profile's entries for values the editor does not list (none read yet, or no editor for a gold
    value built by a template or lookup) are kept as they are: the form edits, it does not drop.
    """
    shown = {row.key for row in rows}
    out = {k: v for k, v in base.items() if label_key(k) not in shown}
    for row in rows:
        label = row.label.value.strip()
        if not label:
            continue
        differs = [v for v in row.variants if v.strip() != label]
        if differs:
            out[differs[0].strip() or differs[0]] = label
    return out


def group_spellings(counts: Mapping[str, int]) -> dict[str, dict[str, int]]:
    """Counted gold values grouped by `label_key` (spellings differing in case, width or spaces)."""
    groups: dict[str, dict[str, int]] = {}
    for value, n in counts.items():
        groups.setdefault(label_key(value), {})[value] = n
    return groups


def imported_html(info: DatasetInfo) -> str:
    """What an import stored: its fingerprint and cases, and whether the cases or the name were there before."""
    reused = " (these cases were already stored: nothing new written)" if info.reused else ""
    named = info.requested_name and f"; the name {info.requested_name!r} is not given to them"
    n = len(info.name_versions)  # the name alone means the last of them
    reused += named or (f"; version {info.version} of the {n} named {info.name!r}" if n > 1 else "")
    # the import's notes (a label set the mapping lacks, what was decided in reading) as the CLI's `·` lines
    # (a reused dataset's are those of its first import: not repeated)
    said = "" if info.reused else "".join(note(n, "warn") for n in info.validation.notes)
    return (
        note(f"imported {info.fingerprint}: {info.n_cases:,} cases, mapping {info.profile_ref}{reused}", "ok")
        + note(info.validation.summary())
        + said
    )


def gold_counts(table: Table, source: str, base: MappingProfile | None, limit: int) -> ValueCounts | None:
    """The gold column's values with counts, over the first `limit` rows; a recipe's gold is counted in the
    rows it makes (a dialogue file: one per user turn). None when the recipe reads the labels itself."""
    recipe = base.recipe if base is not None else None
    rows = get_recipe(recipe).transform(table, base) if recipe and base is not None else None
    try:
        return table.value_counts(source, limit=limit, rows=rows)
    except MappingError:
        if rows is None:
            raise
        return None

"""Commands for datasets and mapping profiles: import, datasets, profiles."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

import click

from abbench._text import clip, fit
from abbench.cli._app import Context, cli, emit, json_option, pass_ctx, read_options
from abbench.dataset import (
    RECIPES,
    declare_label_set,
    gold_kind,
    match_profiles,
    plan_import,
    preview_import,
    read_table,
    suggest_mapping,
)
from abbench.errors import ImportFailed, UsageError
from abbench.types import CASE_FIELDS

if TYPE_CHECKING:
    from abbench.dataset import DatasetInfo, LabelConflicts, MappingProfile, ValidationReport
    from abbench.store import Store
    from abbench.types import Case

_SHOW_PROBLEMS = 20


def _short(text: Any, width: int) -> str:
    """`text` on one line, cut to `width` terminal cells (at a word boundary) and padded to them."""
    return fit("" if text is None else str(text).replace("\n", " ⏎ "), width)


def _clip(value: Any, width: int = 40) -> str:
    text = " ".join(str(value).split())
    return clip(text, width)


def _counts_line(counts: dict[Any, int], top: int = 8) -> str:
    items = sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0])))
    shown = " · ".join(f"{'(none)' if k is None else _clip(k)} {n}" for k, n in items[:top])
    more = f" · … {len(items) - top} more" if len(items) > top else ""
    return f"{shown}{more}  ({len(items)} distinct)"


def _echo_report(
    report: ValidationReport, out: Callable[..., None] = click.echo, limit: int = _SHOW_PROBLEMS
) -> None:
    # Problems come grouped (one line per kind and value, with a count and the first rows) and the
    # label set once, so one misspelt label on many rows is one line, not a flood.
    out(f"  validation  {report.summary()}")
    for line in report.lines(limit):
        out(f"    {line}" + (" (see --json for all)" if line.startswith("… and") else ""))


def _echo_conflicts(conflicts: LabelConflicts, limit: int = 5) -> None:
    """The label conflicts of a dataset: how many, the first `limit` with their rows, then what no
    prompt shows of them, said once for all the conflicts it fits."""
    if not conflicts:
        return
    click.echo(
        f"  conflicts   {conflicts.total} inputs, with the same history and context, have different "
        "expected labels; review them:"
    )
    for conflict in conflicts[:limit]:
        click.echo(f"    ~ {conflict.location}: {_short(conflict.value, 40).rstrip()} — {conflict.rows_text}")
    if conflicts.total > limit:
        # --json lists the conflicts the library kept (its limit), not all of them when there are more
        listed = f"--json lists {len(conflicts) - limit} of them" if conflicts.more else "see --json"
        click.echo(f"    … and {conflicts.total - limit} more ({listed})")
    hidden: dict[tuple[str, str], int] = {}
    for conflict in conflicts:
        if conflict.hidden:
            hidden[conflict.hidden, conflict.hint] = hidden.get((conflict.hidden, conflict.hint), 0) + 1
    for (what, hint), n in hidden.items():
        of = (
            "all of them"
            if n == conflicts.total
            else f"{n} of the first {len(conflicts)}"
            if conflicts.more
            else f"{n} of them"
        )
        click.echo(f"    {of} differ only in {what}, which the agent's prompt does not show: {hint}")


def _echo_cases(
    cases: Sequence[Case], fields: tuple[str, ...] = ("case_id", "input", "expected", "domain")
) -> None:
    widths = {"case_id": 14, "input": 48, "expected": 18, "domain": 12}
    click.echo("  " + "  ".join(f"{f:<{widths[f]}}" for f in fields) + "  from")
    for case in cases:
        cells = [_short(getattr(case, f), widths[f]) for f in fields]
        click.echo("  " + "  ".join(cells) + f"  {case.source_line}")


def _case_dict(case: Case) -> dict[str, Any]:
    return {
        **{f: getattr(case, f) for f in CASE_FIELDS},
        "source_row": case.source_row,
        "source_line": case.source_line,
    }


def _read_options(given: dict[str, Any]) -> dict[str, Any]:
    """The read options the command line gave (those left out are detected from the file)."""
    options = {k: v for k, v in given.items() if v is not None and v != ()}
    if "splits" in options:
        options["splits"] = list(options["splits"])
    return options


@cli.command("import")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--mapping",
    "-m",
    metavar="PROFILE",
    help="Mapping profile: a saved name (name or name@version) or a .yaml/.json file. Default: the suggestion.",
)
@click.option("--suggest", is_flag=True, help="Show the suggested mapping with its reasons; import nothing.")
@click.option("--name", "-n", help="Dataset name (default: the file's stem).")
@read_options
@click.option(
    "--skip-invalid", is_flag=True, help="Import the valid rows and keep the report, instead of refusing."
)
@click.option(
    "--preview", type=click.IntRange(min=1), metavar="N", help="Show the first N cases; import nothing."
)
@click.option(
    "--save-profile", metavar="NAME", help="Save the mapping used under NAME (with --suggest: save it only)."
)
@json_option
@pass_ctx
def import_command(ctx: Context, file: Path, mapping: str | None, suggest: bool, name: str | None,
                   skip_invalid: bool, preview: int | None, save_profile: str | None, as_json: bool,
                   **read: Any) -> None:  # fmt: skip
    """Import a data file (CSV/TSV, XLSX, JSONL, JSON) as a dataset.

    The file is mapped to cases (with --mapping, or the suggested mapping), validated, fingerprinted
    and stored in one transaction; an invalid file is refused with the problems and their rows, and
    nothing is written (unless --skip-invalid). Importing identical cases again returns the stored
    dataset.

    \b
    Examples:
      abbench import cases.csv --suggest                  # what would be mapped, and why
      abbench import cases.csv --preview 5                # the first 5 cases, nothing stored
      abbench import cases.xlsx --sheet 标注 --mapping routing.yaml --name routing
      abbench import data_full.json --mapping clinc.yaml --split test
      abbench import intents.xlsx --recipe intent-blocks
      abbench import cases.csv --encoding gbk --skip-invalid --json
    """
    if mapping and suggest:
        raise UsageError(
            "--mapping and --suggest do not go together: --suggest shows what would be used without one"
        )
    options = _read_options(read)
    if ctx.server is not None and (suggest or preview or save_profile):
        raise UsageError(
            "--suggest, --preview and --save-profile work with a local store's profiles: drop --server"
        )
    if suggest:
        _suggest(ctx, file, options, save_profile, as_json)
        return
    if preview:
        _preview(file, ctx.store.profiles.resolve(mapping) if mapping else None, mapping, preview, options,
                 as_json)  # fmt: skip
        return
    try:
        info = ctx.backend.import_dataset(
            file, mapping, name=name, save_profile_as=save_profile, skip_invalid=skip_invalid, **options
        )
    except ImportFailed as exc:
        if exc.report is None:
            raise
        _refused(file, exc, exc.report, as_json)
    # what the stored cases say (labels, domains, conflicts): counted where they are, in a local store
    tally = _Tally.of(ctx.store, info) if ctx.server is None else None

    def human() -> None:
        if info.reused:
            click.echo(
                f"already imported: {info.fingerprint} holds the same {info.n_cases:,} cases; no case stored"
            )
            if save_profile:
                saved = ctx.store.profiles.get(save_profile)
                click.echo(f"saved the mapping as profile {saved.name}@{saved.version}")
        else:
            click.echo(f"imported {info.fingerprint}  ({info.n_cases:,} cases from {file.name})")
        for line in _name_lines(info):
            click.echo(f"  name        {line}")
        _echo_info(info, tally, ctx.store if tally is not None else None)

    emit(as_json, {**info.to_dict(), **(tally.as_dict() if tally is not None else {})}, human)


def _name_lines(info: DatasetInfo) -> list[str]:
    """What an import did with the dataset's name: a second version of it, or the name not given."""
    versions, version = info.name_versions, info.version
    fp, name = info.fingerprint, info.name
    if info.requested_name is not None:
        asked = info.requested_name
        return [
            f"{asked!r} is not given to these cases, stored before as {fp}: refer to them as {fp} "
            f"(--name {asked} stores a copy under that name, {asked}@{info.short}: experiments on the "
            f"copy and on {fp} are not compared with each other)"
        ]
    if version is None or len(versions) < 2:
        return []
    if version == len(versions):
        shown = list(enumerate(versions[:-1], 1))[-3:]  # the latest few: `abbench datasets` lists all
        earlier = ", ".join(f"{f} (version {i})" for i, f in shown)
        return [
            f"{name!r} already named other cases: this is version {version} of {name!r}, and the name "
            f"alone now means it; earlier: {'…, ' if len(versions) > 4 else ''}{earlier} — refer to each by "
            "its fingerprint"
        ]
    return [
        f"these cases are version {version} of {name!r}, but the name alone means {versions[-1]} "
        f"(version {len(versions)}, imported later): refer to these as {fp}"
    ]


class _Tally(NamedTuple):
    """What `import` and `datasets` show beside a dataset: its gold labels, its domains, label conflicts."""

    labels: dict[str | None, int]
    domains: dict[str | None, int]
    conflicts: LabelConflicts

    @classmethod
    def of(cls, store: Store, info: DatasetInfo) -> _Tally:
        return cls(
            store.datasets.value_counts(info, "expected"),
            store.datasets.value_counts(info, "domain"),
            store.datasets.label_conflicts(info),
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "labels": {"(none)" if k is None else k: v for k, v in self.labels.items()},
            "domains": {"(none)" if k is None else k: v for k, v in self.domains.items()},
            "label_conflicts": [p.to_dict() for p in self.conflicts],
        }


def _preview(file: Path, profile: MappingProfile | None, mapping: str | None, n: int, options: dict[str, Any],
             as_json: bool) -> None:  # fmt: skip
    """`import --preview N`: the first cases as mapped, and the validation report; nothing imported."""
    result = preview_import(file, profile, n=n, **options)

    def human() -> None:
        source = mapping or (
            "recipe " + result.profile.recipe if result.profile.recipe else "suggested mapping"
        )
        click.echo(f"preview of {file.name} with {source} (nothing imported)")
        _echo_cases(result.cases)
        _echo_report(result.report)

    emit(
        as_json,
        {
            "cases": [_case_dict(c) for c in result.cases],
            "report": result.report.to_dict(),
            "profile": result.profile.spec(),
            "read_options": result.read_options,
        },
        human,
    )


def _refused(file: Path, exc: ImportFailed, report: ValidationReport, as_json: bool) -> NoReturn:
    """An invalid file: the problems and what to do, then exit 2 (nothing was written)."""
    if as_json:
        emit(True, {"error": str(exc).splitlines()[0], "report": report.to_dict()})
    else:
        click.secho(f"error: {file.name} was not imported (nothing was written)", fg="red", err=True)
        _echo_report(report, out=lambda line: click.echo(line, err=True))
        hint = "fix the file or the mapping, or import the valid rows with --skip-invalid"
        click.echo(f"  {hint}" if report.n_invalid else f"  {str(exc).splitlines()[0]}", err=True)
    raise SystemExit(2) from None


def _suggest(
    ctx: Context, file: Path, options: dict[str, Any], save_profile: str | None, as_json: bool
) -> None:
    recipe = options.pop("recipe", None)
    splits = options.pop("splits", None)
    if recipe:
        plan = plan_import(file, None, recipe=recipe, splits=splits, **options)
        profile, reasons, notes, labels = plan.profile, {}, [f"recipe {recipe} supplies the mapping"], {}
    else:
        table = read_table(file, splits=splits, **options)
        suggestion = suggest_mapping(table)
        profile, reasons, notes, labels = (
            suggestion.profile,
            suggestion.reasons,
            list(suggestion.notes),
            suggestion.labels,
        )
        if save_profile:  # the profile is imported as the analyst's own: its labels are declared now
            profile, declared = declare_label_set(table, profile)
            notes += [declared] if declared else []
    saved = None
    if save_profile:
        saved = ctx.store.profiles.save(profile, name=save_profile)
    fitting = _fitting_profile(ctx, file, options, splits)  # after saving: a new version is the latest
    data = {
        "profile": profile.spec(),
        "reasons": reasons,
        "notes": notes,
        "labels": labels,
        "saved_as": saved.ref if saved else None,
        "saved_profile": fitting._asdict() if fitting is not None else None,
    }

    def human() -> None:
        click.echo(f"suggested mapping for {file.name}:")
        for field, why in reasons.items():
            click.echo(f"  {field:<10} ← {why}")
        for note in notes:
            click.echo(f"  note: {note}")
        click.echo("\nas a profile (save with --save-profile NAME, edit, then import with --mapping):")
        click.echo("  " + _profile_shown(profile).rstrip().replace("\n", "\n  "))
        if saved:
            click.echo(f"\nsaved as {saved.ref}")
        if fitting is not None and fitting.fits:
            click.secho(
                f"\na saved profile fits this file: {fitting.reason}; import with --mapping {fitting.ref}",
                fg="green",
            )
        elif fitting is not None:
            click.echo(f"\n{fitting.reason}")
        if "input" not in profile.fields:
            click.secho("no input column found: the import would be refused without a mapping", fg="yellow")

    emit(as_json, data, human)


_SHOWN_ITEMS = 20


def _profile_shown(profile: MappingProfile) -> str:
    """The profile as YAML for a person: each list of thousands of splits or columns (its own, its recorded
    shape's) cut to its first items and the rest counted, so a file of many parts gets a screenful; the
    shape's format stays (saving and --json keep everything)."""
    cut: list[str] = []

    def head(items: list[str], where: str) -> list[str]:
        if len(items) > _SHOWN_ITEMS:
            cut.append(
                f"# {where}: … and {len(items) - _SHOWN_ITEMS:,} more (--save-profile or --json keeps them all)\n"
            )
        return items[:_SHOWN_ITEMS]

    update: dict[str, Any] = {}
    if profile.splits:
        update["splits"] = head(profile.splits, "splits")
    if (shape := profile.shape) is not None:
        update["shape"] = shape.model_copy(
            update={
                "columns": head(shape.columns, "shape.columns"),
                "splits": head(shape.splits, "shape.splits"),
            }
        )
    return profile.model_copy(update=update).to_yaml() + "".join(cut)


class _Fitting(NamedTuple):
    """The saved profile closest to a file: its reference, whether it fits, and why (or why not)."""

    ref: str
    fits: bool
    reason: str


def _fitting_profile(ctx: Context, file: Path, options: dict[str, Any], splits: Any) -> _Fitting | None:
    """The saved profile that fits the file best (`match_profiles`), or why none does; None without any."""
    saved = ctx.store.profiles.all()
    if not saved:
        return None
    matches = match_profiles(read_table(file, splits=splits, **options), [p.profile for p in saved])
    best = matches.best
    closest = best or matches.matches[0]
    return _Fitting(ref=closest.ref, fits=best is not None, reason=matches.explain())


def _source_text(source: Any) -> str:
    if isinstance(source, str):
        return source
    spec = source.model_dump(exclude_unset=True)
    kind = source.kind
    # written as in a profile (JSON flow style), not as Python's repr of a dict
    text = (
        f"{kind} {json.dumps(spec.get(kind), ensure_ascii=False, default=str)}"
        if kind != "unmapped"
        else "the other columns"
    )
    return text if source.match is None else f"{text}, match `{source.match}`"


def read_text(opts: dict[str, Any]) -> str:
    """How a file was read, as `import` and `datasets` say it: format, sheet, encoding, delimiter …"""
    return ", ".join(
        str(x)
        for x in (
            opts.get("format"),
            f"sheet {opts['sheet']}" if opts.get("sheet") is not None else None,
            f"{opts['encoding']} ({opts.get('encoding_detected', 'named')})"
            if opts.get("encoding")
            else None,
            f"delimiter {opts['delimiter']!r}" if opts.get("delimiter") else None,
            "quotes as text (quoting none)" if opts.get("quoting") == "none" else None,
            f"header row {opts['header_row']}" if opts.get("header_row") is not None else None,
            f"splits {', '.join(opts['splits'])}" if opts.get("splits") else None,
            f"recipe {opts['recipe']}" if opts.get("recipe") else None,
        )
        if x
    )


def _echo_info(info: DatasetInfo, tally: _Tally | None = None, store: Store | None = None) -> None:
    """A dataset as `import` and `datasets` show it: the mapping, how it was read, the gold and the
    domains (with `tally`, the stored cases' counts), the validation and the label conflicts."""
    how = read_text(info.read_options)
    if info.profile_ref:
        click.echo(f"  mapping     {info.profile_ref}")
    if store is not None and info.profile_name:
        profile = store.profiles.get(info.profile_name, info.profile_version)
        fields = " · ".join(f"{f} ← {_source_text(src)}" for f, src in profile.fields.items())
        click.echo(f"  fields      {fields}" + (f"  (recipe {profile.recipe})" if profile.recipe else ""))
    click.echo(f"  read        {how}")
    stored = f"  → {info.upload_path}" if info.upload_path else ""  # a server keeps its paths
    click.echo(f"  source      {info.source_file}  sha256 {(info.source_sha256 or '')[:12]}{stored}")
    if info.label_set:
        click.echo(f"  label set   {', '.join(info.label_set)}")
    labels = tally.labels if tally is not None else {}
    has_gold = bool(labels) and set(labels) != {None}
    # the import's kind (declared, or decided from every value), else the stored gold's; a server's
    # import tells the kind without the counts
    kind = info.expected_kind if tally is None or has_gold else None
    if kind is None and has_gold:
        kind = gold_kind(labels)
    if kind is not None and kind.kind:
        how = "declared by the mapping" if kind.declared else "from the values"
        click.echo(f"  gold kind   {kind.kind}s ({how}: {kind.reason})")
    if has_gold and kind is not None:
        if not kind.is_label:  # answers to compare against (exact, contains, a judge)
            sample = " · ".join(f"«{_clip(k)}»" for k in list(labels)[:3] if k is not None)
            each = ", each different" if all(n == 1 for n in labels.values()) else ""
            click.echo(f"  gold        {len(labels)} free-text answers{each}: {sample}")
        else:
            click.echo(f"  labels      {_counts_line(labels)}")
    if tally is not None and tally.domains and set(tally.domains) != {None}:
        click.echo(f"  domains     {_counts_line(tally.domains)}")
    _echo_report(info.validation)
    if tally is not None:
        _echo_conflicts(tally.conflicts)


@cli.command("datasets")
@click.argument("ref", required=False)
@click.option(
    "--cases",
    "n_cases",
    type=click.IntRange(min=0),
    default=5,
    show_default=True,
    help="Cases to show with REF.",
)
@click.option("--all", "show_all", is_flag=True, help="Include the datasets only tries (abbench try) use.")
@json_option
@pass_ctx
def datasets_command(ctx: Context, ref: str | None, n_cases: int, show_all: bool, as_json: bool) -> None:
    """List the stored datasets, or show one (REF: fingerprint, name, hash prefix or id).

    \b
    Examples:
      abbench datasets
      abbench datasets banking77                 # the latest import named banking77
      abbench datasets banking77@109face48c76 --cases 20 --json
    """
    store = ctx.store
    if ref is None:
        infos = store.datasets.all(include_tries=show_all)

        def human() -> None:
            if not infos:
                click.echo("no datasets yet; import one with: abbench import FILE")
                return
            click.echo(f"{'fingerprint':<40} {'cases':>7}  {'mapping':<24} {'source':<28} created")
            for i in infos:
                click.echo(
                    f"{_short(i.fingerprint, 40)} {i.n_cases:>7}  {_short(i.profile_ref, 24)} "
                    f"{_short(i.source_file, 28)} {i.created_at}"
                )

        emit(as_json, [i.to_dict() for i in infos], human)
        return
    info = store.datasets.get(ref)
    cases: list[Case] = []
    for case in store.datasets.iter_cases(info, batch=max(n_cases, 1)):
        if len(cases) >= n_cases:
            break
        cases.append(case)
    tally = _Tally.of(store, info)

    def show() -> None:
        click.echo(
            f"{info.fingerprint}  ({info.n_cases} cases, imported {info.created_at} by {info.created_by})"
        )
        _echo_info(info, tally, store)
        if cases:
            click.echo("")
            _echo_cases(cases)

    emit(as_json, {**info.to_dict(), **tally.as_dict(), "cases": [_case_dict(c) for c in cases]}, show)


@cli.command("profiles")
@click.argument("name", required=False)
@click.option("--all", "all_versions", is_flag=True, help="List every version, not only the latest.")
@click.option(
    "--export",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the profile to a .yaml/.json file.",
)
@click.option("--recipes", is_flag=True, help="List the built-in recipes instead.")
@json_option
@pass_ctx
def profiles_command(
    ctx: Context, name: str | None, all_versions: bool, export: Path | None, recipes: bool, as_json: bool
) -> None:
    """List the saved mapping profiles, or show one (NAME or NAME@VERSION).

    \b
    Examples:
      abbench profiles
      abbench profiles routing                     # the latest version, as YAML
      abbench profiles routing@2 --export routing.yaml
      abbench profiles --recipes
    """
    if recipes:

        def listing() -> None:
            for r in RECIPES.values():
                click.echo(f"{r.name:<24} {r.description}")

        emit(
            as_json,
            [
                {"name": r.name, "description": r.description, "profile": r.profile.spec()}
                for r in RECIPES.values()
            ],
            listing,
        )
        return
    store = ctx.store
    if name is None:
        if export:
            raise UsageError("--export needs a profile NAME")
        infos = store.profiles.all(all_versions=all_versions)

        def human() -> None:
            if not infos:
                click.echo(
                    "no saved profiles; save one with: abbench import FILE --suggest --save-profile NAME"
                )
                return
            click.echo(f"{'profile':<32} {'versions':>8} {'datasets':>8}  created")
            for i in infos:
                click.echo(
                    f"{_short(i.ref, 32):<32} {i.n_versions:>8} {i.n_datasets:>8}  {i.created_at} by {i.created_by}"
                )

        emit(as_json, [i.to_dict() for i in infos], human)
        return
    profile = store.profiles.get(name)
    if export:
        profile.save(export)
    data = {"ref": profile.ref, "spec": profile.spec(), "exported_to": str(export) if export else None}

    def show() -> None:
        click.echo(f"# {profile.ref}")
        click.echo(profile.to_yaml().rstrip())
        if export:
            click.echo(f"# written to {export}")

    emit(as_json, data, show)

"""From a file and a mapping to cases: the import plan, `preview_import`, and store-less `convert_file`."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from abbench.dataset._canonical import ContentHasher, fingerprint
from abbench.dataset._formats import RowChunk, sniff_format
from abbench.dataset._mapping import Mapper, MemoryIds
from abbench.dataset._profile import MappingProfile, ReadOptions, ReadSpec, Shape, check_read_options
from abbench.dataset._readers import CHUNK_SIZE, Table, read_table
from abbench.dataset._recipes import Recipe, RowStream, get_recipe, table_stream
from abbench.dataset._suggest import Suggestion, suggest_mapping
from abbench.dataset._validate import ReportBuilder, ValidationReport
from abbench.errors import ImportFailed, MappingError
from abbench.types import CASE_FIELDS, Case

if TYPE_CHECKING:  # pandas loads only when a frame is asked for
    import pandas as pd

MAX_COLUMNS = 16_384
"""The most columns (or keys of a JSON row) a data file may have: Excel's own limit. A file ten times
as wide took minutes to map, a column at a time."""

ProfileLike = MappingProfile | dict[str, Any] | str | os.PathLike[str] | None
"""What a mapping can be given as: a profile, a dict of one, a path to a JSON/YAML file, or None."""


def load_profile(profile: MappingProfile | dict[str, Any] | str | os.PathLike[str]) -> MappingProfile:
    """A `MappingProfile` from a profile, a dict, or a ``.json``/``.yaml`` file.

    Raises:
        MappingError: the file is missing or the profile is invalid.
    """
    if isinstance(profile, MappingProfile):
        return profile
    if isinstance(profile, dict):
        return MappingProfile.from_dict(profile)
    path = Path(profile).expanduser()
    if not path.exists():
        raise MappingError(f"no mapping profile file {path}")
    return MappingProfile.from_file(path)


@dataclass(frozen=True)
class ImportPlan:
    """Everything decided before the first row is converted.

    Attributes:
        path: The data file.
        table: The opened file.
        profile: The effective profile (recipe defaults merged, lookups loaded, shape recorded).
        recipe: The recipe applied, if any.
        stream: The rows the mapping reads (the table's, or the recipe's).
        mapper: The compiled mapping.
        suggestion: The suggestion the profile came from, when none was given.
    """

    path: Path
    table: Table
    profile: MappingProfile
    recipe: Recipe | None
    stream: RowStream
    mapper: Mapper
    suggestion: Suggestion | None = None

    @property
    def read_options(self) -> dict[str, Any]:
        """How the file was read (format, encoding, delimiter, sheet, header row, splits, recipe)."""
        options = dict(self.table.options)
        if self.recipe is not None:
            options["recipe"] = self.recipe.name
        if self.mapper.source_columns is not None:
            options["columns"] = list(self.mapper.source_columns)  # the names of stored source-row cells
        return options

    def chunks(self, size: int = CHUNK_SIZE) -> Iterator[RowChunk]:
        """The rows the mapping reads, in chunks."""
        return self.stream.chunks(size)

    def new_report(self, max_problems: int = 10_000) -> ReportBuilder:
        """A report builder holding the plan's file-level warnings (shape differences)."""
        report = ReportBuilder(max_problems)
        if self.profile.label_set is not None:
            report.label_set = tuple(self.profile.label_set)
        report.notes = list(self.table.notes)
        for kind, message in self.mapper.warnings:
            report.add(kind, "file", None, None, message, severity="warning")
        return report


def plan_import(
    path: str | os.PathLike[str],
    profile: ProfileLike = None,
    *,
    recipe: str | None = None,
    splits: list[str] | tuple[str, ...] | None = None,
    read: ReadSpec | None = None,
    **options: Unpack[ReadOptions],
) -> ImportPlan:
    """Open the file, settle the profile (given, from its recipe, or suggested) and compile it.

    Read options given here (one by one as in `read_table`, or as `read`) win over the profile's
    ``read`` section, which wins over the recipe's.

    Raises:
        ImportFailed: the file cannot be read, or no input column can be suggested.
        MappingError: the profile is invalid or does not fit the file.
        UsageError: an option does not fit the file.
    """
    p = Path(path).expanduser()
    prof = load_profile(profile) if profile is not None else None
    recipe_name = recipe or (prof.recipe if prof is not None else None)
    rcp = get_recipe(recipe_name) if recipe_name else None
    check_read_options(options)
    given = (read or ReadSpec()).updated(options)
    chosen_splits = list(splits) if splits else (prof.splits if prof is not None else None)
    table = read_table(p, read=_read_spec(p, rcp, prof, given), splits=chosen_splits)
    if len(table.columns) > MAX_COLUMNS:
        raise ImportFailed(
            f"{p.name} has {len(table.columns):,} columns, more than the {MAX_COLUMNS:,} a data file may have "
            "(Excel's own limit); keep the columns the cases need (input, gold, id, context) and import that"
        )
    suggestion = None
    if prof is None and rcp is None:
        suggestion = _suggest(p, table)
        prof = suggestion.profile
        if prof.recipe:  # the suggestion recognised a layout that has a recipe
            rcp = get_recipe(prof.recipe)
    prof, stream = _apply_recipe(rcp, prof, table)
    prof = prof.with_lookups_loaded(Path.cwd())
    if prof.shape is None:
        prof = prof.model_copy(update={"shape": Shape(**table.shape)})
    mapper = Mapper(prof, stream.columns, tabular=stream.tabular, file_name=p.name, label=_label(prof))
    if splits:
        prof = prof.model_copy(update={"splits": list(splits)})
    return ImportPlan(p, table, prof, rcp, stream, mapper, suggestion)


def _read_spec(p: Path, rcp: Recipe | None, prof: MappingProfile | None, given: ReadSpec) -> ReadSpec:
    """The read options: the recipe's, then the profile's ``read``, then those given."""
    read = ReadSpec().updated(rcp.read if rcp is not None else None)
    read = read.updated(prof.read if prof is not None else None).updated(given)
    # A profile or recipe made for sheets says nothing about the header of a JSON file, nor one made
    # for CSV files about the quotes of a workbook.
    inherited_header = given.header_row is None and read.header_row is not None
    inherited_quoting = given.quoting is None and read.quoting is not None
    if (inherited_header or inherited_quoting) and p.is_file():
        fmt = read.format or sniff_format(p)
        if inherited_header and fmt not in ("csv", "xlsx"):
            read = read.model_copy(update={"header_row": None})
        if inherited_quoting and fmt != "csv":
            read = read.model_copy(update={"quoting": None})
    return read


def _suggest(p: Path, table: Table) -> Suggestion:
    """The suggested mapping for a file given without one; a file with no input to suggest is refused."""
    suggestion = suggest_mapping(table)
    if not suggestion.has_input and not table.head(1):
        if table.tabular and table.columns:
            what = f"a header ({', '.join(table.columns)}) but no rows under it"
        else:
            what = "no rows (blank lines only)" if table.tabular else "no rows"
        raise ImportFailed(f"{p.name} holds {what}; nothing to import")
    if not suggestion.has_input:
        raise ImportFailed(
            f"{p.name}: no mapping given and none could be suggested: "
            + "; ".join(suggestion.notes)
            + ". Give one with profile= (CLI: --mapping FILE.yaml), or see the suggestion with --suggest"
        )
    return suggestion


def _apply_recipe(
    rcp: Recipe | None, prof: MappingProfile | None, table: Table
) -> tuple[MappingProfile, RowStream]:
    """The profile with the recipe's fields and defaults beneath its own, and the rows it reads."""
    if rcp is None:
        assert prof is not None  # plan_import suggests one when neither is given
        return prof, table_stream(table)
    base = rcp.profile
    if prof is None:
        prof = base
    else:
        prof = prof.evolve(
            recipe=rcp.name,
            fields={**base.fields, **prof.fields},
            defaults={**base.defaults, **prof.defaults},
            label_set=prof.label_set if prof.label_set is not None else base.label_set,
        )
    return prof, rcp.transform(table, prof)


def _label(profile: MappingProfile) -> str:
    if profile.name:
        return f"mapping {profile.ref}"
    if profile.recipe:
        return f"recipe {profile.recipe}"
    return "the mapping"


@dataclass(frozen=True)
class Preview:
    """The first cases a file would give, with the validation report so far (nothing imported).

    Attributes:
        cases: Up to N converted cases.
        report: Problems in the rows read so far (``complete`` is False).
        profile: The profile used (given, recipe or suggested).
        read_options: How the file was read.
        columns: The columns (or keys) of the rows the mapping read.
        suggestion: The suggestion, when no profile was given.
    """

    cases: tuple[Case, ...]
    report: ValidationReport
    profile: MappingProfile
    read_options: dict[str, Any] = field(default_factory=dict)
    columns: tuple[str, ...] = ()
    suggestion: Suggestion | None = None

    def to_pandas(self) -> pd.DataFrame:
        """The previewed cases as a DataFrame."""
        return _cases_frame(self.cases)


def preview_import(
    path: str | os.PathLike[str], profile: ProfileLike = None, *, n: int = 10, **options: Any
) -> Preview:
    """Convert the first `n` cases of a file without importing anything.

    Args:
        path: The data file.
        profile: A profile, dict, profile file, or None to use the suggestion.
        n: How many cases to show.
        **options: ``recipe``, ``splits`` and the read options (`ReadOptions`: ``format``, ``sheet``,
            ``header_row``, ``encoding``, ``delimiter``, ``quoting``).

    Returns:
        A `Preview` with the cases and the validation report of the rows read.
    """
    plan = plan_import(path, profile, **options)
    report = plan.new_report()
    ids = MemoryIds()
    cases: list[Case] = []
    for chunk in plan.chunks(max(n, 50)):
        done = ids.take(plan.mapper, plan.mapper.convert(chunk, report), report)
        report.n_valid += len(done.rows)
        cases.extend(plan.mapper.to_case(r) for r in done.rows[: n - len(cases)])
        if len(cases) >= n:
            break
    return Preview(
        tuple(cases),
        report.build(complete=False),
        plan.profile,
        plan.read_options,
        plan.stream.columns,
        plan.suggestion,
    )


@dataclass(frozen=True)
class Conversion:
    """A whole file converted in memory (what `import_dataset` stores, without a store).

    Attributes:
        cases: Every valid case, in file order.
        report: The validation report.
        content_hash: sha256 over the canonical cases.
        fingerprint: ``name@<12 hex>``.
        profile: The profile used.
        read_options: How the file was read.
    """

    cases: tuple[Case, ...]
    report: ValidationReport
    content_hash: str
    fingerprint: str
    profile: MappingProfile
    read_options: dict[str, Any] = field(default_factory=dict)


def convert_file(
    path: str | os.PathLike[str],
    profile: ProfileLike = None,
    *,
    name: str | None = None,
    skip_invalid: bool = False,
    **options: Any,
) -> Conversion:
    """Convert a whole file into cases in memory, validated and fingerprinted like an import.

    Raises:
        ImportFailed: the file has invalid rows and `skip_invalid` is False (the report is attached),
            or no valid case at all.
    """
    plan = plan_import(path, profile, **options)
    report = plan.new_report()
    ids = MemoryIds()
    hasher = ContentHasher()
    cases: list[Case] = []
    for chunk in plan.chunks():
        done = ids.take(plan.mapper, plan.mapper.convert(chunk, report, len(cases)), report)
        report.n_valid += len(done.rows)
        hasher.add_lines(done.lines, done.hashed)
        cases.extend(map(plan.mapper.to_case, done.rows))
    result = report.build(skipped=skip_invalid)
    check_report(plan.path, result, skip_invalid)
    digest = hasher.hexdigest()
    return Conversion(
        tuple(cases),
        result,
        digest,
        fingerprint(name or default_name(plan.path), digest),
        plan.profile,
        plan.read_options,
    )


def check_report(path: Path, report: ValidationReport, skip_invalid: bool) -> None:
    """Refuse an import whose report has invalid rows (unless skipping) or no valid case.

    Raises:
        ImportFailed: carrying the report; the message holds the summary and the first problems.
    """
    if report.n_invalid and not skip_invalid:
        raise ImportFailed(
            f"{path.name} was not imported: {report.describe(limit=8)}\n"
            "Fix the file or the mapping, or import the valid rows with skip_invalid=True (CLI: --skip-invalid)",
            report,
        )
    if report.n_rows == 0:
        raise ImportFailed(
            f"{path.name} holds no rows (a header only, or blank lines); nothing to import", report
        )
    if report.n_valid == 0:
        raise ImportFailed(f"{path.name} has no valid case: {report.describe(limit=8)}", report)


def default_name(path: Path) -> str:
    """The dataset name a file gets when none is given: its stem, without ``@``."""
    return path.stem.replace("@", "_").strip() or "dataset"


def _cases_frame(cases: Sequence[Case]) -> pd.DataFrame:
    import pandas as pd

    return pd.DataFrame.from_records(
        [{**{f: getattr(c, f) for f in CASE_FIELDS}, "source_line": c.source_line} for c in cases],
        columns=[*CASE_FIELDS, "source_line"],
    )

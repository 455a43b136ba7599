"""Which saved mapping profile fits a file: `match_profiles` compares the columns each profile reads.

A saved profile is proposed for a file only when every column it reads is there (and, for a
workbook, the sheet it reads); the answer says why, in words a person can check: ``profile
'banking77@1' matches: columns text, category``, or ``no saved profile matches: the closest,
'askubuntu@1', needs columns 'text', 'intent', which this file lacks``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from abbench.dataset._jsonpath import PathError, parse_path
from abbench.dataset._profile import SPECIAL_SOURCES, MappingProfile, SourceLike
from abbench.dataset._readers import Table, read_table, sheet_names
from abbench.dataset._recipes import get_recipe
from abbench.errors import AbbenchError

_SHOWN = 4
"""Columns named in a reason at most (the rest are counted)."""


@dataclass(frozen=True)
class ProfileMatch:
    """How one saved profile fits one file.

    Attributes:
        profile: The profile.
        fits: Every column the profile reads without a default is in the file (and its sheet is).
        same_shape: The file has exactly the columns of the file the profile was made for.
        reads: The columns (or top-level keys) the profile reads, in field order.
        missing: Those the file lacks (a field with a default does not need its column).
        reason: Why it fits or not, in one sentence.
    """

    profile: MappingProfile
    fits: bool
    same_shape: bool
    reads: tuple[str, ...]
    missing: tuple[str, ...]
    reason: str

    @property
    def ref(self) -> str:
        """The profile's ``name@version`` (or its name)."""
        return self.profile.ref or "(unnamed)"

    @property
    def rank(self) -> tuple[bool, bool, int, int, int]:
        """Sort key, best first: fits, same shape, most of its columns present, fewest missing, newest."""
        present = len(self.reads) - len(self.missing)
        return (not self.fits, not self.same_shape, -present, len(self.missing), -(self.profile.version or 0))


@dataclass(frozen=True)
class ProfileMatches:
    """Every saved profile held against one file, best first (`match_profiles`).

    Attributes:
        matches: One `ProfileMatch` per profile, the best first.
    """

    matches: tuple[ProfileMatch, ...]

    @property
    def best(self) -> ProfileMatch | None:
        """The profile to propose: the best one that fits, or None when none does."""
        first = self.matches[0] if self.matches else None
        return first if first is not None and first.fits else None

    @property
    def fitting(self) -> tuple[ProfileMatch, ...]:
        """The profiles that fit, best first."""
        return tuple(m for m in self.matches if m.fits)

    def get(self, ref: str) -> ProfileMatch | None:
        """The match of the profile saved as `ref` (``name@version``), if it was held against the file."""
        return next((m for m in self.matches if m.ref == ref), None)

    def explain(self) -> str:
        """One sentence: which profile is proposed and why, or why none is."""
        if not self.matches:
            return "no saved profile to compare with"
        best = self.best
        if best is not None:
            return best.reason
        closest = self.matches[0]
        return f"no saved profile matches: the closest, {closest.reason}"


def match_profile(table: Table, profile: MappingProfile) -> ProfileMatch:
    """How `profile` fits the opened file `table` (read again with the profile's sheet and header row
    when they differ from how `table` was read).

    Never raises for a profile that does not fit: the match says why.
    """
    name = f"profile {profile.ref or '(unnamed)'!r}"
    try:
        columns, opened = _columns_for(table, profile)
    except _Misfit as exc:
        return ProfileMatch(profile, False, False, (), (), f"{name} {exc}")
    have = set(columns)
    reads, optional = _read_columns(profile, have)
    missing = tuple(c for c in reads if c not in have and c not in optional)
    shape = profile.shape
    same = shape is not None and bool(shape.columns) and set(shape.columns) == have
    if missing:
        what = "column" if len(missing) == 1 else "columns"
        return ProfileMatch(
            profile,
            False,
            same,
            reads,
            missing,
            f"{name} needs {what} {_names(missing)}, which this file lacks"
            f" (it has {_names(columns, quoted=False) or 'no columns'})",
        )
    if not reads and not profile.recipe:
        return ProfileMatch(profile, False, same, reads, missing, f"{name} reads no column of the file")
    how = " (the same columns as the file it was made for)" if same else ""
    sheet = f" on sheet {opened.options['sheet']!r}" if opened.options.get("sheet") is not None else ""
    recipe = f"recipe {profile.recipe}, " if profile.recipe else ""
    shown = _names(reads, quoted=False) if reads else "the recipe's"
    return ProfileMatch(
        profile, True, same, reads, missing, f"{name} matches: {recipe}columns {shown}{sheet}{how}"
    )


def match_profiles(table: Table, profiles: Iterable[MappingProfile]) -> ProfileMatches:
    """Hold every profile against the opened file; the best fitting one first.

    Args:
        table: The opened file (`read_table`).
        profiles: Saved profiles (``[p.profile for p in store.profiles.all()]``).

    Returns:
        The matches, best first; ``.best`` is the profile to propose (None when none fits) and
        ``.explain()`` says why in one sentence.
    """
    found = [match_profile(table, p) for p in profiles]
    return ProfileMatches(tuple(sorted(found, key=lambda m: m.rank)))


class _Misfit(Exception):
    """Raised inside matching when the file cannot be read the way the profile reads it."""


def _columns_for(table: Table, profile: MappingProfile) -> tuple[tuple[str, ...], Table]:
    """The columns the profile's fields would see in this file, and the table read as it reads it."""
    read = profile.read
    opened = table
    wanted: dict[str, Any] = {}
    if table.format == "xlsx" and read.sheet is not None and read.sheet != table.options.get("sheet"):
        sheets = sheet_names(table.path)
        if isinstance(read.sheet, str) and read.sheet not in sheets:
            raise _Misfit(f"reads sheet {read.sheet!r}, which this file lacks (sheets: {', '.join(sheets)})")
        if isinstance(read.sheet, int) and not 0 <= read.sheet < len(sheets):
            raise _Misfit(f"reads sheet {read.sheet}, and this file has {len(sheets)}")
        wanted["sheet"] = read.sheet
    if table.tabular and read.header_row is not None and read.header_row != table.options.get("header_row"):
        wanted["header_row"] = read.header_row
    if wanted:
        if table.format == "xlsx" and "sheet" not in wanted and table.options.get("sheet") is not None:
            wanted["sheet"] = table.options["sheet"]
        try:
            opened = read_table(table.path, format=table.format, **wanted)
        except AbbenchError as exc:
            raise _Misfit(f"cannot read this file as it says ({exc})") from None
    if profile.recipe:
        try:
            stream = get_recipe(profile.recipe).transform(opened, profile)
        except AbbenchError as exc:
            raise _Misfit(f"uses recipe {profile.recipe}, which does not fit this file ({exc})") from None
        return tuple(stream.columns), opened
    return tuple(opened.columns), opened


def _read_columns(profile: MappingProfile, have: set[str]) -> tuple[tuple[str, ...], set[str]]:
    """The columns the profile's fields read, and those only fields with a default read."""
    reads: dict[str, None] = {}
    needed: set[str] = set()
    for field, source in profile.fields.items():
        found = list(_columns_of(source, have))
        reads.update(dict.fromkeys(found))
        if field not in profile.defaults:
            needed.update(found)
    return tuple(reads), set(reads) - needed


def _columns_of(source: SourceLike, have: set[str]) -> Iterable[str]:
    if isinstance(source, str):
        yield from _name_columns(source, have)
        return
    # A source's kind says which of its fields is set (validated when the profile is read).
    kind = source.kind
    if kind == "column" and source.column is not None:
        yield source.column
    elif kind == "path" and source.path is not None:
        yield from _path_head(source.path)
    elif kind == "template" and source.template is not None:
        for name in _placeholders(source.template):
            yield from _name_columns(name, have)
    elif kind == "concat" and source.concat is not None:
        for sub in source.concat:
            yield from _columns_of(sub, have)
    elif kind == "join" and source.join is not None:
        yield from _columns_of(source.join, have)
    elif kind == "lookup" and source.key is not None:
        yield from _columns_of(source.key, have)
    elif kind == "object" and source.object is not None:
        for sub in source.object.values():
            yield from _columns_of(sub, have)
    elif kind == "columns" and source.columns is not None:
        yield from source.columns


def _name_columns(name: str, have: set[str]) -> Iterable[str]:
    if name in SPECIAL_SOURCES or (name.startswith("$") and not name.startswith(("$.", "$["))):
        return
    if name in have:  # a column named so, dots and all, before any path
        yield name
        return
    yield from _path_head(name, whole=name)


def _path_head(text: str, whole: str | None = None) -> Iterable[str]:
    """The column a path starts from: its first key, or (JSON array rows) its first index as ``"0"``."""
    try:
        path = parse_path(text)
    except PathError:
        if whole is not None:
            yield whole  # a column name no path can spell: the column itself
        return
    first = path.steps[0] if path.steps else None
    if first is None:
        return
    if first.kind == "key" and first.key is not None:
        yield first.key
    elif first.kind == "index" and first.index is not None and first.index >= 0:
        yield str(first.index)


def _placeholders(template: str) -> list[str]:
    names, i = [], 0
    while i < len(template):
        ch = template[i]
        if ch in "{}" and template[i + 1 : i + 2] == ch:
            i += 2
        elif ch == "{":
            end = template.find("}", i)
            if end < 0:
                break
            names.append(template[i + 1 : end].strip())
            i = end + 1
        else:
            i += 1
    return names


def _names(columns: Iterable[str], *, quoted: bool = True) -> str:
    cols = list(columns)
    shown = [repr(c) if quoted else str(c) for c in cols[:_SHOWN]]
    more = f" and {len(cols) - _SHOWN} more" if len(cols) > _SHOWN else ""
    return ", ".join(shown) + more

"""The validation report: every problem found in a file, with where it sits, and a summary by kind."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from abbench._result import Result, plain
from abbench._text import clip

PROBLEM_KINDS: dict[str, str] = {
    "unreadable_row": "the row cannot be read (bad JSON line, more cells than the header)",
    "path_failed": "a column or JSON path of the mapping finds nothing in the row",
    "empty_input": "the input is missing or blank",
    "not_text": "a text field got a list or object",
    "missing_expected": "a label set is declared but the row has no expected label",
    "label_not_in_set": "the expected label is not in the declared label set",
    "lookup_missing": "a lookup table has no entry for the row's key",
    "no_match": "a field's pattern (match:) finds nothing in the row's value",
    "unknown_speaker": "a history turn's speaker is no chat role the mapping (roles:) or abbench knows",
    "dialogue_too_long": "a dialogue holds more turns than one dialogue may (MAX_DIALOGUE_TURNS)",
    "empty_case_id": "the case id column is blank",
    "duplicate_case_id": "the case id was already used by an earlier row",
    "shape": "the file differs from the shape the mapping profile was made for",
    "conflicting_labels": "the same input appears with different expected labels (store.datasets.label_conflicts)",
    "missing_expected_skill": "some cases say which skill should activate and others do not",
}
"""Every kind of problem a validation report may hold, with what it means."""

_MAX_VALUE = 200


@dataclass(frozen=True, slots=True)
class Problem(Result):
    """One thing wrong with one row (or, for ``shape``, with the file).

    Attributes:
        kind: One of `PROBLEM_KINDS`.
        location: Where: ``"line 12"``, ``"Sheet1!row 5"``, ``"split test #3"``, or ``"file"``.
        field: The case field concerned (``"input"``, ``"expected"`` ...), or None.
        value: The offending value, shortened for display.
        message: What is wrong and what to do, in words.
        severity: ``"error"`` (the row is invalid) or ``"warning"`` (reported, the row is kept).
        case_id: The row's case id, when the mapping reads one from the file.
    """

    kind: str
    location: str
    field: str | None
    value: Any
    message: str
    severity: str = "error"
    case_id: str | None = None

    def __str__(self) -> str:
        where = f"{self.location}: {self.field}" if self.field else self.location
        return f"{where}: {self.message}"

    to_dict = Result.as_dict


@dataclass(frozen=True, slots=True)
class ProblemGroup:
    """Problems of one kind with one value (a misspelt label on 19 rows), told once.

    Attributes:
        kind: One of `PROBLEM_KINDS`.
        field: The case field concerned, or None.
        value: The offending value shared by the group (None when the rows have none).
        message: What is wrong and what to do (the first row's message).
        severity: ``"error"`` or ``"warning"``.
        count: How many kept problems the group holds.
        locations: Where the first of them sit (at most five).
    """

    kind: str
    field: str | None
    value: Any
    message: str
    severity: str
    count: int
    locations: tuple[str, ...]

    def __str__(self) -> str:
        where = compact_locations(self.locations)
        if self.count > len(self.locations):
            where += ", …"
        times = f" ({self.count}×)" if self.count > 1 else ""
        field = f": {self.field}" if self.field else ""
        return f"{where}{times}{field}: {self.message}"


PROBLEM_HINTS: dict[str, str] = {
    "unreadable_row": "fix the row in the file (quote cells that hold the delimiter), or skip invalid rows",
    "path_failed": "point the field at a column or path every row has, or give the field a default",
    "empty_input": "fill in the input, or skip invalid rows",
    "not_text": "point the field at a text inside the value (e.g. messages[-1].content), or join its items",
    "missing_expected": "fill in the label, or drop the label set if not every case has one",
    "label_not_in_set": "map each value to a label (label_map, e.g. 快: fast), or add it to the label set",
    "lookup_missing": "add the keys to the lookup table, or give the lookup a default",
    "no_match": "fix the pattern (its one group is the value kept), or fix the rows it does not fit",
    "unknown_speaker": "say which side each speaker is in the mapping: roles: {NAME: user} or {NAME: assistant}",
    "dialogue_too_long": "split the dialogue into shorter ones (sessions), or skip invalid rows",
    "empty_case_id": "fill in the case ids, or leave case_id unmapped to generate ids from the content",
    "duplicate_case_id": "make the ids unique, or leave case_id unmapped to generate ids from the content",
    "shape": "check that the mapping still fits this file",
    "conflicting_labels": "review these inputs: at most one of their labels is right",
}
"""What to do about each kind of problem, in a few words."""


@dataclass(frozen=True, slots=True)
class ProblemKind:
    """Every problem of one kind on one field, told once (`ValidationReport.kinds`).

    Attributes:
        kind: One of `PROBLEM_KINDS`.
        field: The case field concerned, or None.
        severity: ``"error"`` or ``"warning"``.
        count: How many problems (complete, also when the report kept only the first ones).
        locations: Where the kept ones sit, in file order.
        case_ids: The distinct case ids of those rows, when the mapping reads ids from the file.
        values: The offending values with how many kept problems hold each, most common first.
        message: The first problem's message (each value's own message differs only in the value).
        hint: What to do about it.
    """

    kind: str
    field: str | None
    severity: str
    count: int
    locations: tuple[str, ...]
    case_ids: tuple[str, ...]
    values: tuple[tuple[Any, int], ...]
    message: str
    hint: str

    @property
    def what(self) -> str:
        """What the kind means, in words."""
        return PROBLEM_KINDS.get(self.kind, self.kind)

    def where(self, limit: int = 5) -> str:
        """The first `limit` locations, compactly: ``line 3, 7, 12 … (+40 more)``."""
        shown = compact_locations(self.locations[:limit])
        rest = self.count - min(limit, len(self.locations))
        return f"{shown} … (+{rest:,} more)" if rest > 0 else shown


def compact_locations(locations: tuple[str, ...] | list[str]) -> str:
    """``line 3, 5, 9`` for ``line 3``, ``line 5``, ``line 9``: a shared prefix written once."""
    if not locations:
        return ""
    prefixes = {loc.rstrip("0123456789") for loc in locations}
    if len(prefixes) == 1 and len(locations) > 1:
        prefix = prefixes.pop()
        if prefix and all(loc[len(prefix) :].isdigit() for loc in locations):
            return prefix + ", ".join(loc[len(prefix) :] for loc in locations)
    return ", ".join(locations)


@dataclass(frozen=True)
class ValidationReport(Result):
    """What validation found in a file: counts, each problem with its location, and a summary.

    Attributes:
        n_rows: Rows read from the file (after any recipe), blank rows not counted.
        n_valid: Rows that became cases.
        n_invalid: Rows with at least one error.
        n_skipped: Invalid rows left out because ``skip_invalid`` was asked for (0 when refused).
        problems: Problems in file order, errors and warnings, at most `max_problems` of them.
        counts: Number of problems per kind, complete even when `problems` was cut short.
        truncated: How many problems were not kept in `problems`.
        complete: False for a preview, which reads only the first rows.
        label_set: The profile's label set, told once beside ``label_not_in_set`` problems rather
            than in each of them.
        notes: How the file was read, where it took a decision a person should know of: the only
            sheet holding data, a title row skipped, two header rows joined, a column renamed.
    """

    n_rows: int = 0
    n_valid: int = 0
    n_invalid: int = 0
    n_skipped: int = 0
    problems: tuple[Problem, ...] = ()
    counts: Mapping[str, int] = field(default_factory=dict)
    truncated: int = 0
    complete: bool = True
    label_set: tuple[str, ...] | None = None
    notes: tuple[str, ...] = ()

    _keys = "n_rows n_valid n_invalid n_skipped counts truncated complete label_set notes"

    @property
    def errors(self) -> tuple[Problem, ...]:
        """The problems that make a row invalid."""
        return tuple(p for p in self.problems if p.severity == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        """The problems reported without rejecting a row."""
        return tuple(p for p in self.problems if p.severity == "warning")

    @property
    def ok(self) -> bool:
        """True when no row is invalid."""
        return self.n_invalid == 0

    def summary(self) -> str:
        """One line: rows, valid, invalid, skipped, and problems by kind."""
        head = f"{self.n_rows:,} rows: {self.n_valid:,} valid, {self.n_invalid:,} invalid"
        if self.n_skipped:
            head += f", {self.n_skipped:,} skipped"
        if self.counts:
            head += "; " + ", ".join(f"{kind} ×{n:,}" for kind, n in sorted(self.counts.items()))
        if not self.complete:
            head += " (preview: first rows only)"
        return head

    def groups(self) -> list[ProblemGroup]:
        """The problems grouped by severity, kind, field and value, in order of first appearance."""
        found: dict[tuple[str, str, str | None, str], list[Problem]] = {}
        for p in self.problems:
            value = p.value if p.value is not None else p.message
            found.setdefault((p.severity, p.kind, p.field, repr(value)), []).append(p)
        return [
            ProblemGroup(
                ps[0].kind,
                ps[0].field,
                ps[0].value,
                ps[0].message,
                ps[0].severity,
                len(ps),
                tuple(p.location for p in ps[:5]),
            )
            for ps in found.values()
        ]

    def kinds(self) -> list[ProblemKind]:
        """The problems grouped by severity, kind and field — one entry per kind of problem, errors first.

        Where `groups` tells each offending value apart (a misspelt label is one line), this tells one
        kind once, with its values counted inside: 77 unmapped labels are one entry, not 77.
        """
        found: dict[tuple[str, str, str | None], list[Problem]] = {}
        for p in self.problems:
            found.setdefault((p.severity, p.kind, p.field), []).append(p)
        per_kind = Counter(kind for _, kind, _ in found)
        out = []
        for (severity, kind, fld), ps in found.items():
            # The counts are complete; the kept problems may not be. One entry per kind takes the count.
            count = self.counts.get(kind, len(ps)) if per_kind[kind] == 1 else len(ps)
            values = Counter(_hashable(p.value) for p in ps if p.value is not None)
            ids = tuple(dict.fromkeys(p.case_id for p in ps if p.case_id))
            out.append(
                ProblemKind(
                    kind,
                    fld,
                    severity,
                    max(count, len(ps)),
                    tuple(p.location for p in ps),
                    ids,
                    tuple(values.most_common()),
                    ps[0].message,
                    PROBLEM_HINTS.get(kind, ""),
                )
            )
        out.sort(key=lambda k: k.severity != "error")
        return out

    @property
    def n_errors(self) -> int:
        """Errors found (complete, also when the report kept only the first problems)."""
        warning_kinds = {p.kind for p in self.problems if p.severity == "warning"}
        error_kinds = {p.kind for p in self.problems if p.severity == "error"}
        return sum(n for k, n in self.counts.items() if k in error_kinds or k not in warning_kinds)

    def outcome(self, *, skip_invalid: bool = False) -> str:
        """What an import of this file would do, in one line: refused (and why) or how many cases.

        ``import refused: 401 errors in 1 kind on 401 rows; nothing stored`` or ``would import 80
        cases, 3 skipped (skip invalid rows)``. A preview says that it read the first rows only.
        """
        kinds = {(p.kind, p.field) for p in self.problems if p.severity == "error"}
        errors = f"{_plural(self.n_errors, 'error')} in {_plural(len(kinds), 'kind')}"
        if not self.complete:
            found = f"{errors} in" if self.n_invalid else "no error in"
            return f"{found} the first {self.n_rows:,} rows; check the whole file to see what an import does"
        if self.n_rows == 0:
            return "import refused: the file holds no rows; nothing stored"
        if self.n_invalid and not skip_invalid:
            return f"import refused: {errors} on {self.n_invalid:,} of {self.n_rows:,} rows; nothing stored"
        if self.n_valid == 0:
            return f"import refused: no valid case ({errors}); nothing stored"
        skipped = f", {self.n_invalid:,} skipped (skip invalid rows)" if self.n_invalid else ""
        return f"would import {self.n_valid:,} cases{skipped}"

    def lines(self, limit: int = 20) -> list[str]:
        """The grouped problems, at most `limit` groups, then the label set once when a label missed it."""
        groups = self.groups()
        out = [f"· {n}" for n in self.notes]
        out += [f"{'!' if g.severity == 'error' else '~'} {g}" for g in groups[:limit]]
        rest = sum(g.count for g in groups[limit:]) + self.truncated
        if rest > 0:
            out.append(
                f"… and {rest} more problems" + (f" ({self.truncated} not kept)" if self.truncated else "")
            )
        if self.label_set and self.counts.get("label_not_in_set"):
            out.append(f"label set ({len(self.label_set)}): {', '.join(self.label_set)}")
        return out

    def describe(self, limit: int = 10) -> str:
        """The summary and the first `limit` groups of problems (see `groups`), one per line."""
        return "\n".join([self.summary(), *(f"  {line}" for line in self.lines(limit))])

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (what the store keeps with the dataset): `_keys`, the summary, the problems."""
        return Result.as_dict(self) | {"summary": self.summary(), "problems": plain(self.problems)}

    to_dict = as_dict

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> ValidationReport:
        """The report `to_dict` wrote."""
        if not data:
            return cls()
        return cls(
            n_rows=data.get("n_rows", 0),
            n_valid=data.get("n_valid", 0),
            n_invalid=data.get("n_invalid", 0),
            n_skipped=data.get("n_skipped", 0),
            problems=tuple(Problem(**p) for p in data.get("problems", ())),
            counts=dict(data.get("counts", {})),
            truncated=data.get("truncated", 0),
            complete=data.get("complete", True),
            label_set=tuple(data["label_set"]) if data.get("label_set") is not None else None,
            notes=tuple(data.get("notes", ())),
        )


class ReportBuilder:
    """Collects problems while rows stream by; `build()` freezes them into a `ValidationReport`."""

    def __init__(self, max_problems: int = 10_000):
        self.max_problems = max_problems
        self.problems: list[Problem] = []
        self.counts: Counter[str] = Counter()
        self.truncated = 0
        self.n_rows = 0
        self.n_invalid = 0
        self.n_valid = 0
        self.label_set: tuple[str, ...] | None = None
        self.notes: list[str] = []

    def add(
        self,
        kind: str,
        location: str,
        field: str | None,
        value: Any,
        message: str,
        severity: str = "error",
        case_id: str | None = None,
    ) -> None:
        """Record one problem."""
        self.counts[kind] += 1
        if len(self.problems) >= self.max_problems:
            self.truncated += 1
            return
        self.problems.append(Problem(kind, location, field, _shorten(value), message, severity, case_id))

    @property
    def n_errors(self) -> int:
        """Errors recorded so far."""
        return sum(1 for p in self.problems if p.severity == "error") + self.truncated

    def build(self, *, skipped: bool = False, complete: bool = True) -> ValidationReport:
        """The report as it stands; `skipped` says whether invalid rows were left out of an import."""
        return ValidationReport(
            n_rows=self.n_rows,
            n_valid=self.n_valid,
            n_invalid=self.n_invalid,
            n_skipped=self.n_invalid if skipped else 0,
            problems=tuple(self.problems),
            counts=dict(self.counts),
            truncated=self.truncated,
            complete=complete,
            label_set=self.label_set,
            notes=tuple(self.notes),
        )


def _shorten(value: Any) -> Any:
    if isinstance(value, str) and len(value) > _MAX_VALUE:
        return clip(value, _MAX_VALUE)
    if isinstance(value, (list, dict)):
        return clip(repr(value), _MAX_VALUE)
    return value


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool)) else repr(value)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"

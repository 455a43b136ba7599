"""The checks and rows of a dataset import: names, labels, kinds, cases, and the rows written."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abbench._text import control_character
from abbench.dataset import EXPECTED_KINDS, ContentHasher, DatasetInfo, ReportBuilder
from abbench.errors import UsageError
from abbench.store._base import dumps
from abbench.types import Case

if TYPE_CHECKING:
    from abbench.dataset import ImportPlan, MappingProfile

log = logging.getLogger("abbench.store")


_DECLARE_SHOWN = 12
"""Labels written out in the `label_set:` line a note proposes (the rest as ``...``)."""


@dataclass(frozen=True)
class _ImportJob:
    """What one import writes: the planned file, the dataset name and the profile to save with it."""

    src: Path
    plan: ImportPlan
    ds_name: str
    to_save: MappingProfile
    skip_invalid: bool
    max_problems: int
    any_name: bool
    """Reuse a stored dataset with the same cases under any name (no name was given)."""
    chosen: bool = False
    """abbench chose the mapping (the suggestion, or a recipe's own): it may declare the labels it finds."""


def _with_labels(job: _ImportJob, counts: dict[Any, int], report: ReportBuilder) -> MappingProfile:
    """The profile to save: the labels the gold values make declared, when abbench chose the mapping.

    An analyst who gave no mapping gets the label set the values make (`infer_label_set`), said in a
    note: without one the agents are not told the labels and a reply of ``False.`` is compared as
    written. A mapping the analyst gave is never changed: when its gold values read as labels and it
    declares neither ``label_set:`` nor ``expected_kind:``, a note says how to declare them.
    """
    from abbench.dataset import infer_label_set

    profile = job.to_save
    if profile.label_set is not None or profile.expected_kind is not None:
        return profile
    inferred = infer_label_set(counts)
    if not inferred.kind.is_label:
        return profile
    if job.chosen and inferred.labels is not None:
        report.label_set = inferred.labels
        report.notes.append(
            f"label set declared from the gold values: {inferred.reason}; agents choose among them. If they "
            "are answers, import with a mapping that says `expected_kind: answer` (save this one with "
            "--suggest --save-profile NAME, edit it, then import with --mapping NAME)"
        )
        return profile.evolve(label_set=list(inferred.labels))
    labels = inferred.labels or tuple(sorted(str(v) for v in counts if v is not None and str(v).strip()))
    listed = ", ".join(json.dumps(v, ensure_ascii=False) for v in labels[:_DECLARE_SHOWN])
    declare = f"label_set: [{listed}{', ...' if len(labels) > _DECLARE_SHOWN else ''}]"
    why = (
        f"the gold values read as labels, {inferred.reason}, but the mapping declares no label set"
        if inferred.labels is not None
        else f"{inferred.reason}, so no label set was declared"
    )
    report.notes.append(
        f"{why}: agents are not told the labels, and a reply is compared as written ({labels[0] + '.'!r} is "
        f"not {labels[0]!r}). Declare them in the mapping, `{declare}`, or say `expected_kind: answer` if they are answers"
        # the same cases imported again return this dataset unchanged: a new label set needs a new name
        f", then import under another name (--name {job.ds_name}-labelled): {job.ds_name!r} keeps these cases as stored"
    )
    return profile


def _named(profile: MappingProfile, name: str) -> MappingProfile:
    """The profile an import saves, under `name` (a new version when renamed)."""
    if profile.name == name:
        return profile
    return profile.model_copy(update={"name": name, "version": None})


def _reused(stored: DatasetInfo, profile: MappingProfile, file: str, name: str) -> None:
    """Log what an import that found the file's cases stored (`stored`, which it returns) leaves as it was."""
    log.info("%s holds the same cases as %s; nothing stored", file, stored.fingerprint)
    if name != stored.name:
        log.info("the name %r is not given to them: they are %s", name, stored.fingerprint)
    _warn_if_labels_differ(stored, profile, file, name)


def _dataset_name(name: str) -> str:
    name = name.strip()
    if not name or "@" in name:
        raise UsageError(f"a dataset name is non-empty text without '@', got {name!r}")
    bad = control_character(name)
    if bad is not None:
        raise UsageError(f"the dataset name {name!r} holds {bad}; a name is one line of text")
    return name


def _check_cases(
    name: str,
    cases: list[Case],
    label_set: Sequence[str] | None,
    label_map: dict[str, str] | None,
    expected_kind: str | None,
) -> None:
    """Refuse cases that cannot form a dataset: none, an empty input, a repeated id, an unknown label."""
    if not cases:
        raise UsageError(f"dataset {name!r} has no cases")

    def fold(v: Any) -> str:
        return " ".join(str(v).split()).casefold()

    if expected_kind is not None and expected_kind not in EXPECTED_KINDS:
        raise UsageError(f"expected_kind is one of {', '.join(EXPECTED_KINDS)}; got {expected_kind!r}")
    if expected_kind == "answer" and label_set:
        raise UsageError("expected_kind 'answer' says the gold values are free text; give no label_set")
    labels = {fold(v) for v in label_set} if label_set else None
    mapped = {fold(k): fold(v) for k, v in (label_map or {}).items()}
    seen: set[str] = set()
    for n, case in enumerate(cases):
        if not isinstance(case, Case):
            raise UsageError(f"case #{n} of {name!r} is a {type(case).__name__}, not an abbench Case")
        if not str(case.input or "").strip():
            raise UsageError(f"case {case.case_id!r} (#{n}) has an empty input")
        if case.case_id in seen:
            raise UsageError(f"case id {case.case_id!r} repeats (#{n}); case ids must be unique")
        seen.add(case.case_id)
        gold = None if case.expected is None else mapped.get(fold(case.expected), fold(case.expected))
        if labels is not None and gold is not None and gold not in labels:
            raise UsageError(
                f"case {case.case_id!r}: gold label {case.expected!r} is not in the label set {sorted(labels)}"
            )


def _warn_unassessed_skills(conn: sqlite3.Connection, ds_id: int, report: ReportBuilder) -> None:
    """Warn when some cases say which skill should activate and others do not (activation is then not
    assessed on those): a should-trigger row whose skill the file does not name, say."""
    with_skill, without = conn.execute(
        "SELECT COUNT(expected_skill), COUNT(*) - COUNT(expected_skill) FROM cases WHERE dataset_id = ?",
        (ds_id,),
    ).fetchone()
    if with_skill and without:
        report.add(
            "missing_expected_skill",
            "file",
            "expected_skill",
            None,
            f"{without} of {with_skill + without} cases have no expected_skill, so activation is not "
            "assessed on them; map it for every case, or give the mapping `defaults: {expected_skill: "
            "NAME}` (a trigger eval set names no skill: its should-trigger cases need one)",
            severity="warning",
        )


def _case_row(ds_id: int, i: int, c: Case) -> tuple[Any, ...]:
    """The ``cases`` row of case number `i` saved from Python."""
    return (
        ds_id,
        i,
        c.case_id,
        c.input,
        c.expected,
        dumps(c.history),
        dumps(c.context),
        c.domain,
        c.request_id,
        dumps(c.metadata),
        dumps(c.source_row),
        c.source_line or f"case #{i}",
        c.expected_skill,
    )


def _insert_cases(
    conn: sqlite3.Connection, ds_id: int, plan: ImportPlan, report: ReportBuilder
) -> tuple[int, ContentHasher]:
    """Map, validate and insert the file's rows chunk by chunk; how many cases, and their hashes.

    A chunk goes in with one ``executemany``; when a case id repeats in it, the chunk is redone row
    by row so that the repeats are renamed or reported (`resolve_duplicates`).
    """
    mapper = plan.mapper
    # Only the columns the mapping fills are inserted: binding None costs more than the rest of
    # the row in CPython's sqlite3, and NULL is their default anyway.
    sql = (
        f"INSERT INTO cases (dataset_id, {', '.join(mapper.columns)}) "
        f"VALUES ({int(ds_id)}, {', '.join('?' * len(mapper.columns))})"
    )
    hasher = ContentHasher()
    n = 0

    def claim(case_id: str, row: tuple[Any, ...]) -> str | None:
        nonlocal n
        try:
            conn.execute(sql, (n, case_id, *row[2:]))
        except sqlite3.IntegrityError:
            held = conn.execute(
                "SELECT source_line FROM cases WHERE dataset_id = ? AND case_id = ?", (ds_id, case_id)
            ).fetchone()
            return held[0] if held is not None else "an earlier row"
        n += 1
        return None

    for chunk in plan.chunks():
        done = mapper.convert(chunk, report, n)
        if not done.rows:
            continue
        conn.execute("SAVEPOINT import_chunk")
        try:
            conn.executemany(sql, done.rows)
        except sqlite3.IntegrityError:
            # A case id repeats: redo this chunk row by row to find (and rename or report) them.
            conn.execute("ROLLBACK TO import_chunk")
            from abbench.dataset import resolve_duplicates

            rows = resolve_duplicates(mapper, done.rows, claim, report)
            lines, hashed = [mapper.line(r) for r in rows], None  # the hasher reads these lines itself
        else:
            n += len(done.rows)
            # no hashed lines: the mapper found no number to read as text, the lines hash as they are
            rows, lines = done.rows, done.lines
            hashed = done.hashed if done.hashed is not None else lines
        conn.execute("RELEASE import_chunk")
        hasher.add_lines(lines, hashed)
        report.n_valid += len(rows)
    return n, hasher


def _warn_if_labels_differ(stored: DatasetInfo, profile: MappingProfile, file: str, name: str) -> None:
    """Say so when a re-import's mapping declares other labels than the stored dataset it returns.

    The fingerprint covers the cases only, so adding ``label_set:`` to a profile and importing the
    same file again returns the stored dataset unchanged; without this warning the new labels would
    be ignored in silence.
    """
    wanted_set = sorted(profile.label_set) if profile.label_set else None
    held_set = sorted(stored.label_set) if stored.label_set else None
    wanted_map, held_map = dict(profile.label_map or {}), dict(stored.label_map or {})
    _warn_if_kind_differs(stored, profile, file, name)
    if wanted_set == held_set and wanted_map == held_map:
        return
    what = " and ".join(
        w
        for w, differs in (("label set", wanted_set != held_set), ("label map", wanted_map != held_map))
        if differs
    )
    held = f"{len(held_set)} labels" if held_set else "none"
    # Another label set changes what agents choose among: worth a warning. Another label map alone
    # only changes how predictions are normalised (the gold labels came out the same, or the cases
    # would differ): said at info level, so a file imported twice under two mappings stays quiet.
    log.log(
        logging.WARNING if wanted_set != held_set else logging.INFO,
        "%s holds the same cases as %s, which is kept as it was stored (label set: %s): this mapping's "
        "%s is not applied, as a stored dataset never changes. To use it, import under another name "
        "(--name %s-labelled), or give a builtin arm `labels: [...]`",
        file,
        stored.fingerprint,
        held,
        what,
        name,
    )


def _warn_if_kind_differs(stored: DatasetInfo, profile: MappingProfile, file: str, name: str) -> None:
    """Say so when a re-import's mapping declares another `expected_kind` than the stored dataset has."""
    held = stored.expected_kind
    wanted = profile.expected_kind
    if wanted is None or held is None or held.kind == wanted:
        return
    log.warning(
        "%s holds the same cases as %s, whose gold values are stored as %ss (%s): this mapping's "
        "expected_kind: %s is not applied, as a stored dataset never changes. To use it, import under "
        "another name (--name %s-%ss)",
        file,
        stored.fingerprint,
        held.kind,
        held.reason,
        wanted,
        name,
        wanted,
    )

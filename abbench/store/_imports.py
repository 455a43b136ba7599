"""Store methods that write datasets: a file imported in one transaction, or cases built in Python."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import json
import logging
import os
import shutil
import sqlite3
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abbench._files import claimed_temp, sweep_stale
from abbench._text import control_character
from abbench.dataset import EXPECTED_KINDS, ContentHasher, DatasetInfo, ReportBuilder, fingerprint, gold_kind
from abbench.errors import ImportFailed, UsageError
from abbench.store._base import current_user, dumps, inserted_id, now_iso
from abbench.store._noun import Noun
from abbench.types import Case

if TYPE_CHECKING:
    from abbench.dataset import ImportPlan, MappingProfile

# The readers and mappers (and pydantic behind the mapping profile) are imported where a file is
# imported: opening a store to run an experiment loads none of them.

log = logging.getLogger(__name__)

_DECLARE_SHOWN = 12
"""Labels written out in the `label_set:` line a note proposes (the rest as ``...``)."""


class _Reuse(Exception):
    """Raised inside an import transaction to roll it back and return an identical stored dataset."""

    def __init__(self, info: DatasetInfo):
        self.info = info


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector: an import allocates millions of short-lived, acyclic tuples
    and strings, which it scans for nothing (measured: 739 collections, 0.41 s of a 200k-row import)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


@contextlib.contextmanager
def _foreign_keys_off(conn: sqlite3.Connection) -> Iterator[None]:
    """Skip the foreign-key probe of every inserted case (~9% of the insert time, measured): each case
    row references the dataset row its own transaction inserted just before, so it cannot dangle.
    SQLite only changes the setting outside a transaction; inside one (a nested import) it stays on."""
    switch = not conn.in_transaction
    if switch:
        conn.execute("PRAGMA foreign_keys=OFF")
    try:
        yield
    finally:
        if switch:
            conn.execute("PRAGMA foreign_keys=ON")


def _sha256_copy(src: Path, dst: Path | None) -> str:
    sha = hashlib.sha256()
    with src.open("rb") as fh, dst.open("wb") if dst is not None else contextlib.nullcontext() as out:
        while block := fh.read(1 << 20):
            sha.update(block)
            if out is not None:
                out.write(block)
    return sha.hexdigest()


class DatasetImports(Noun):
    """Importing files and saving cases as datasets; mixed into `Store`."""

    def import_file(
        self,
        path: str | os.PathLike[str],
        profile: MappingProfile | dict[str, Any] | str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
        sheet: str | int | None = None,
        header_row: int | None = None,
        encoding: str | None = None,
        delimiter: str | None = None,
        format: str | None = None,
        skip_invalid: bool = False,
        recipe: str | None = None,
        splits: list[str] | tuple[str, ...] | None = None,
        save_profile_as: str | None = None,
        max_problems: int = 10_000,
    ) -> DatasetInfo:
        """Import a data file as a dataset, in one transaction.

        The file is read in chunks, mapped, validated and written; the original bytes are copied into
        ``uploads/`` (content-addressed) only when everything succeeded. An invalid file is refused
        and leaves nothing behind; importing cases identical to a stored dataset returns that one
        (``reused=True``) instead of storing them twice.

        Args:
            path: A CSV/TSV, Excel, JSONL or JSON file.
            profile: A `MappingProfile`, a dict, a saved profile name (``name`` or ``name@version``),
                a path to a profile ``.json``/``.yaml`` file, or None to use the suggested mapping.
            name: The dataset name (default: the file's stem). Without a name, cases identical to
                any stored dataset return it; with one, only a dataset of that name is reused.
            sheet: Excel sheet name or 0-based index.
            header_row: 1-based header row (0: no header).
            encoding: Text encoding (default: detected).
            delimiter: CSV delimiter (default: sniffed).
            format: ``csv``, ``xlsx``, ``jsonl`` or ``json`` (default: from the suffix).
            skip_invalid: Import the valid rows and keep the report, instead of refusing the file.
            recipe: A recipe for layouts that are not one row per case (see `abbench.dataset.RECIPES`).
            splits: For JSON objects of named splits, the splits to import.
            save_profile_as: Save the profile used under this name (default: its own name, else the
                dataset name).
            max_problems: How many problems the report keeps in detail (counts are always complete).

        Returns:
            The stored dataset's `DatasetInfo`.

        Raises:
            ImportFailed: the file cannot be read, or has invalid rows (``exc.report``), or no case.
            MappingError: the profile is invalid or does not fit the file.
            NotFoundError: a named profile does not exist.
            UsageError: an option does not fit the file.
        """
        from abbench.dataset import check_data_file, default_name, plan_import

        src = Path(path).expanduser()
        check_data_file(src)
        if self._store.read_only:
            raise self._store.refuse_write(f"a dataset imported from {src.name}")
        if name is not None:
            name = _dataset_name(name)
        given = self._store.profiles.resolve(profile)
        plan = plan_import(src, given, recipe=recipe, format=format, sheet=sheet, header_row=header_row,
                           encoding=encoding, delimiter=delimiter, splits=splits)  # fmt: skip
        ds_name = name or default_name(src)
        to_save = _named(plan.profile, save_profile_as or plan.profile.name or ds_name)
        # any name reuses a stored dataset of these cases when none was given; no mapping: labels inferred
        job = _ImportJob(src, plan, ds_name, to_save, skip_invalid, max_problems, name is None, given is None)
        try:
            ds_id = self._import_file(job)
        except _Reuse as reuse:
            return _reused(reuse.info, to_save, src.name, ds_name)
        result = self._store.datasets.get(ds_id)
        log.info("imported %s: %d cases from %s", result.fingerprint, result.n_cases, src.name)
        return result

    def _import_file(self, job: _ImportJob) -> int:
        """Write the dataset in one transaction and keep the file's bytes in ``uploads/``; its id.

        The bytes are copied (and hashed) first, under a temporary name that becomes the
        content-addressed one only when the transaction commits.
        """
        src = job.src
        uploads = self._store.path / "uploads"
        uploads.mkdir(exist_ok=True)
        sweep_stale(uploads, ".import-*")  # copies a killed import left (never a live import's)
        held, tmp = claimed_temp(uploads, prefix=".import-", suffix=src.suffix.lower())
        created: Path | None = None
        try:
            before = src.stat()
            source_sha = _sha256_copy(src, tmp)
            with _gc_paused(), _foreign_keys_off(self._store.conn), self._store.transaction() as conn:
                ds_id = self._write_dataset(conn, job, source_sha)
                after = src.stat()
                if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
                    raise ImportFailed(f"{src.name} changed while it was being imported; import it again")
                final = uploads / f"{source_sha}{src.suffix.lower()}"
                if not final.exists():
                    os.replace(tmp, final)
                    created = final
                conn.execute(
                    "UPDATE datasets SET upload_path = ? WHERE id = ?", (self._store.relpath(final), ds_id)
                )
            return ds_id
        except BaseException:
            if created is not None:
                created.unlink(missing_ok=True)
            raise
        finally:
            tmp.unlink(missing_ok=True)
            os.close(held)

    def discard_partial(self, pid: int) -> int:
        """Remove what process `pid` left half-written in the store when it was killed part way: the copy
        of a file it was importing, a snapshot folder it was writing. Its database writes need nothing:
        a transaction that did not commit is not there. Returns how many were removed.

        Only for a process that has ended (a server's work process past its limits): a live one's
        files would be taken from under it.
        """
        folders = list((self._store.path / "snapshots").glob(f".tmp-{pid}-*"))
        for path in folders:
            shutil.rmtree(path, ignore_errors=True)
        # the copies of imported files no live process holds (`claimed_temp`): the stopped one's among them
        return len(folders) + sweep_stale(self._store.path / "uploads", ".import-*")

    def save(
        self,
        name: str,
        cases: Iterable[Case],
        *,
        label_set: Sequence[str] | None = None,
        label_map: dict[str, str] | None = None,
        expected_kind: str | None = None,
    ) -> DatasetInfo:
        """Store cases built in Python (a notebook, a DataFrame, a try) as a dataset.

        The same cases under the same name return the stored dataset (``reused=True``), exactly as an
        import of the same content does; the fingerprint is computed the same way. `expected_kind`
        (``label`` or ``answer``) says what the gold values are, as a mapping's ``expected_kind:``
        does; None lets `label_set`, else the values, decide (`abbench.dataset.gold_kind`).

        Raises:
            UsageError: no cases, an empty input, a repeated case id, or a gold label outside `label_set`.
        """
        name = _dataset_name(name or "")
        cases = list(cases)
        _check_cases(name, cases, label_set, label_map, expected_kind)
        hasher = ContentHasher()
        for case in cases:
            hasher.add_case(case)
        digest = hasher.hexdigest()
        kind = gold_kind(
            Counter(c.expected for c in cases), declared=expected_kind, label_set=label_set
        ).to_json()
        fp = fingerprint(name, digest)
        held = self._store.query_one("SELECT id FROM datasets WHERE fingerprint = ?", (fp,))
        if held is not None:
            return DatasetInfo(**{**self._store.datasets.get(held[0]).__dict__, "reused": True})
        with self._store.transaction() as conn:
            # Looked up again under the write lock: another process may have saved the same cases since.
            held = conn.execute("SELECT id FROM datasets WHERE fingerprint = ?", (fp,)).fetchone()
            if held is not None:
                return DatasetInfo(**{**self._store.datasets.get(held[0]).__dict__, "reused": True})
            cur = conn.execute(
                "INSERT INTO datasets (fingerprint, name, content_hash, n_cases, label_set, label_map, "
                "expected_kind, read_options, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    fp,
                    name,
                    digest,
                    len(cases),
                    dumps(list(label_set) if label_set else None),
                    dumps(label_map or None),
                    kind,
                    dumps({"format": "python"}),
                    now_iso(),
                    current_user(),
                ),
            )
            ds_id = inserted_id(cur)
            conn.executemany(
                "INSERT INTO cases (dataset_id, idx, case_id, input, expected, history, context, domain, "
                "request_id, metadata, source_row, source_line, expected_skill) "
                "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                [_case_row(ds_id, i, c) for i, c in enumerate(cases)],
            )
        return self._store.datasets.get(ds_id)

    def _write_dataset(self, conn: sqlite3.Connection, job: _ImportJob, source_sha: str) -> int:
        """Insert the dataset of an import and its cases; its id.

        Raises:
            _Reuse: the cases are those of a stored dataset (the transaction must roll back).
        """
        ds_id = self._insert_pending_dataset(conn, job, source_sha)
        plan = job.plan
        report = plan.new_report(job.max_problems)
        n, digest = _insert_cases(conn, ds_id, plan, report)
        _warn_unassessed_skills(conn, ds_id, report)
        counts = dict(
            conn.execute(
                "SELECT expected, COUNT(*) FROM cases WHERE dataset_id = ? GROUP BY expected", (ds_id,)
            ).fetchall()
        )
        profile = _with_labels(job, counts, report)
        result = report.build(skipped=job.skip_invalid)
        from abbench.dataset import check_report

        check_report(plan.path, result, job.skip_invalid)
        fp = fingerprint(job.ds_name, digest)
        existing = conn.execute(
            "SELECT id FROM datasets WHERE content_hash = ? AND id != ? AND (fingerprint = ? OR ?) "
            "ORDER BY id DESC LIMIT 1",
            (digest, ds_id, fp, job.any_name),
        ).fetchone()
        if existing is not None:
            raise _Reuse(self._store.datasets.get(existing[0]))
        kind = gold_kind(counts, declared=profile.expected_kind, label_set=profile.label_set)
        if profile.label_set is not None and job.to_save.label_set is None:  # declared from the values
            kind = gold_kind(counts)
            kind = dataclasses.replace(kind, reason=f"{kind.reason}, declared as the label set at import")
        # Saved once the labels are settled, so that an import never leaves a version it did not use.
        saved = self._store.profiles.save(profile)
        profile_id = conn.execute(
            "SELECT id FROM mapping_profiles WHERE name = ? AND version = ?", (saved.name, saved.version)
        ).fetchone()[0]
        conn.execute(
            "UPDATE datasets SET fingerprint = ?, content_hash = ?, n_cases = ?, validation = ?, "
            "expected_kind = ?, profile_id = ?, label_set = ?, label_map = ? WHERE id = ?",
            (fp, digest, n, dumps(result.to_dict()), kind.to_json(), profile_id, dumps(saved.label_set),
             dumps(saved.label_map or None), ds_id),
        )  # fmt: skip
        return ds_id

    def _insert_pending_dataset(self, conn: sqlite3.Connection, job: _ImportJob, source_sha: str) -> int:
        """The dataset row of an import, under a placeholder fingerprint until its cases are in; its id."""
        cur = conn.execute(
            "INSERT INTO datasets (fingerprint, name, content_hash, n_cases, source_file, source_sha256, "
            "read_options, created_at, created_by) VALUES (?, ?, '', 0, ?, ?, ?, ?, ?)",
            (
                f"{job.ds_name}@pending-{uuid.uuid4().hex}",
                job.ds_name,
                job.plan.path.name,
                source_sha,
                dumps(job.plan.read_options),
                now_iso(),
                current_user(),
            ),
        )
        return inserted_id(cur)


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
    )
    return profile


def _named(profile: MappingProfile, name: str) -> MappingProfile:
    """The profile an import saves, under `name` (a new version when renamed)."""
    if profile.name == name:
        return profile
    return profile.model_copy(update={"name": name, "version": None})


def _reused(stored: DatasetInfo, profile: MappingProfile, file: str, name: str) -> DatasetInfo:
    """What an import returns when the file holds the cases of a stored dataset: that one, reused."""
    log.info("%s holds the same cases as %s; nothing stored", file, stored.fingerprint)
    _warn_if_labels_differ(stored, profile, file, name)
    return DatasetInfo(**{**stored.__dict__, "reused": True})


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
) -> tuple[int, str]:
    """Map, validate and insert the file's rows chunk by chunk; how many cases, and their content hash.

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
            lines = [mapper.line(r) for r in rows]
        else:
            n += len(done.rows)
            rows, lines = done.rows, done.lines
        conn.execute("RELEASE import_chunk")
        hasher.add_lines(lines)
        report.n_valid += len(rows)
    return n, hasher.hexdigest()


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

"""Store methods that write datasets: a file imported in one transaction, or cases built in Python."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import hashlib
import logging
import os
import shutil
import sqlite3
import uuid
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from abbench._files import claimed_temp, sweep_stale
from abbench.dataset import ContentHasher, DatasetInfo, canonical_json, case_line, fingerprint, gold_kind
from abbench.errors import ImportFailed
from abbench.store._base import current_user, dumps, inserted_id, now_iso
from abbench.store._import_checks import (
    _case_row,
    _check_cases,
    _dataset_name,
    _ImportJob,
    _insert_cases,
    _named,
    _reused,
    _warn_unassessed_skills,
    _with_labels,
)
from abbench.store._noun import Noun
from abbench.types import Case

if TYPE_CHECKING:
    from abbench.dataset import MappingProfile, ReadOptions

# The readers and mappers (and pydantic behind the mapping profile) are imported where a file is
# imported: opening a store to run an experiment loads none of them.

log = logging.getLogger(__name__)


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
    """Importing files and saving cases as datasets (part of ``store.datasets``)."""

    def import_file(
        self,
        path: str | os.PathLike[str],
        profile: MappingProfile | dict[str, Any] | str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
        skip_invalid: bool = False,
        recipe: str | None = None,
        splits: list[str] | tuple[str, ...] | None = None,
        save_profile_as: str | None = None,
        max_problems: int = 10_000,
        **options: Unpack[ReadOptions],
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
            skip_invalid: Import the valid rows and keep the report, instead of refusing the file.
            recipe: A recipe for layouts that are not one row per case (see `abbench.dataset.RECIPES`).
            splits: For JSON objects of named splits, the splits to import.
            save_profile_as: Save the profile used under this name (default: its own name, else the
                dataset name).
            max_problems: How many problems the report keeps in detail (counts are always complete).
            **options: The read options (`abbench.dataset.ReadOptions`): ``format``, ``sheet``,
                ``header_row``, ``encoding``, ``delimiter``, ``quoting``; those left out are detected.

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
        plan = plan_import(src, given, recipe=recipe, splits=splits, **options)
        ds_name = name or default_name(src)
        to_save = _named(plan.profile, save_profile_as or plan.profile.name or ds_name)
        # any name reuses a stored dataset of these cases when none was given; no mapping: labels inferred
        job = _ImportJob(src, plan, ds_name, to_save, skip_invalid, max_problems, name is None, given is None)
        try:
            ds_id = self._import_file(job)
        except _Reuse as reuse:
            if save_profile_as is not None:  # asked for by name: saved though no case is stored
                self._store.profiles.save(to_save)
            _reused(reuse.info, to_save, src.name, ds_name)
            return self._store.datasets.imported(reuse.info.id, reused=True, requested_name=ds_name)
        result = self._store.datasets.imported(ds_id)
        log.info("imported %s: %d cases from %s", result.fingerprint, result.n_cases, src.name)
        if (result.version or 1) > 1:
            log.info(
                "%s is version %d of the name %r, which now means it; version %d is %s",
                result.fingerprint, result.version, result.name, (result.version or 1) - 1,
                result.name_versions[-2],
            )  # fmt: skip
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
        # the same cases saved before numbers were hashed as text carry the earlier fingerprint: worked
        # out (a second pass over the cases) only when it differs and a dataset of that name could have it
        held_sql = "SELECT id FROM datasets WHERE fingerprint IN (?, ?) ORDER BY id DESC LIMIT 1"
        earlier = digest
        if hasher.earlier_differs and self._store.query_one(*_may_hold_earlier(name, len(cases), None)):
            earlier = hasher.earlier_hexdigest(canonical_json(c.canonical()) for c in cases)
        fps = (fp, fingerprint(name, earlier))
        held = self._store.query_one(held_sql, fps)
        if held is not None:
            return self._store.datasets.imported(held[0], reused=True)
        with self._store.transaction() as conn:
            # Looked up again under the write lock: another process may have saved the same cases since.
            held = conn.execute(held_sql, fps).fetchone()
            if held is not None:
                return self._store.datasets.imported(held[0], reused=True)
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
        return self._store.datasets.imported(ds_id)

    def _write_dataset(self, conn: sqlite3.Connection, job: _ImportJob, source_sha: str) -> int:
        """Insert the dataset of an import and its cases; its id.

        Raises:
            _Reuse: the cases are those of a stored dataset (the transaction must roll back).
        """
        ds_id = self._insert_pending_dataset(conn, job, source_sha)
        plan = job.plan
        report = plan.new_report(job.max_problems)
        n, hasher = _insert_cases(conn, ds_id, plan, report)
        digest = hasher.hexdigest()
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
        held_sql = (
            "SELECT id FROM datasets WHERE content_hash = ? AND id != ? AND (fingerprint = ? OR ?) "
            "ORDER BY id DESC LIMIT 1"
        )
        existing = conn.execute(held_sql, (digest, ds_id, fp, job.any_name)).fetchone()
        # A dataset stored before numbers were hashed as text carries the earlier hash: found by it too.
        # Every dataset stored since has the content hash, so the earlier one is looked for only when
        # it differs and a stored dataset of that name and size could carry it, from a second pass
        # over the cases just written.
        if (
            existing is None
            and hasher.earlier_differs
            and conn.execute(*_may_hold_earlier(job.ds_name, n, ds_id, job.any_name)).fetchone()
        ):
            earlier = hasher.earlier_hexdigest(_stored_lines(conn, ds_id))
            efp = fingerprint(job.ds_name, earlier)
            existing = conn.execute(held_sql, (earlier, ds_id, efp, job.any_name)).fetchone()
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


def _may_hold_earlier(
    name: str, n_cases: int, ds_id: int | None, any_name: bool = False
) -> tuple[str, tuple[Any, ...]]:
    """The query of whether a stored dataset (but `ds_id`) of `name` (any name with `any_name`) holds
    `n_cases` cases: only such a one can carry the earlier content hash of these cases."""
    prefix = f"{name}@"
    return (
        "SELECT 1 FROM datasets WHERE n_cases = ? AND id IS NOT ? AND (? OR substr(fingerprint, 1, ?) = ?) "
        "LIMIT 1",
        (n_cases, ds_id, any_name, len(prefix), prefix),
    )


def _stored_lines(conn: sqlite3.Connection, ds_id: int) -> Iterator[str]:
    """The canonical lines of a dataset's stored cases, in order (the second pass of the earlier hash):
    its JSON fields are stored as the canonical text its lines were made of."""
    cur = conn.execute(
        "SELECT case_id, input, expected, history, context, domain, request_id, metadata, expected_skill "
        "FROM cases WHERE dataset_id = ? ORDER BY idx",
        (ds_id,),
    )
    for row in cur:
        yield case_line(*row)

"""Store methods for datasets and mapping profiles: import (one transaction), look-up, loading cases."""

from __future__ import annotations

import contextlib
import difflib
import gc
import hashlib
import logging
import os
import sqlite3
import uuid
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abbench.dataset import (
    ContentHasher,
    Dataset,
    DatasetInfo,
    MappingProfile,
    Problem,
    ProfileInfo,
    ValidationReport,
    check_report,
    default_name,
    fingerprint,
    load_profile,
    plan_import,
    resolve_duplicates,
    unpack_source_row,
)
from abbench.errors import ImportFailed, MappingError, NotFoundError, UsageError
from abbench.store._base import current_user, dumps, loads, now_iso
from abbench.types import CASE_FIELDS, Case

if TYPE_CHECKING:
    from abbench.store import Store

log = logging.getLogger(__name__)

_CASE_COLUMNS = (*CASE_FIELDS, "source_row", "source_line")
_DATASET_COLUMNS = (
    "d.id, d.fingerprint, d.name, d.content_hash, d.n_cases, d.label_set, d.label_map, d.source_file, "
    "d.source_sha256, d.upload_path, d.read_options, d.validation, d.created_at, d.created_by, "
    "p.name AS profile_name, p.version AS profile_version"
)
_HEX = set("0123456789abcdef")


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


class DatasetsMixin:
    """Reading and writing datasets and mapping profiles; mixed into `Store`."""

    # -- mapping profiles ----------------------------------------------------------------------------

    def save_profile(self: Store, profile: MappingProfile, *, name: str | None = None) -> MappingProfile:
        """Save a mapping profile under its name; return it with its version.

        Saving a profile that differs from the latest version of its name makes version n+1;
        saving one identical to the latest version returns that version. Lookup files are read and
        kept inline, so the saved profile works after they move.

        Args:
            profile: The profile.
            name: The name to save it under (default: ``profile.name``).

        Raises:
            UsageError: the profile has no name and none is given.
        """
        if name is not None:
            profile = profile.evolve(name=name)
        if not profile.name:
            raise UsageError("a profile needs a name to be saved: save_profile(profile, name='...')")
        profile = profile.with_lookups_loaded(Path.cwd()).model_copy(update={"version": None})
        with self.transaction() as conn:
            latest = conn.execute(
                "SELECT version, spec FROM mapping_profiles WHERE name = ? ORDER BY version DESC LIMIT 1",
                (profile.name,),
            ).fetchone()
            if latest is not None:
                stored = MappingProfile.from_dict(
                    loads(latest["spec"]), where=f"stored profile {profile.name}"
                )
                if stored.identity() == profile.identity():
                    return stored.model_copy(update={"version": latest["version"]})
            version = (latest["version"] if latest is not None else 0) + 1
            saved = profile.model_copy(update={"version": version})
            shape = saved.shape.model_dump(mode="json") if saved.shape is not None else None
            conn.execute(
                "INSERT INTO mapping_profiles (name, version, spec, shape, created_at, created_by) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (saved.name, version, saved.to_json(), dumps(shape), now_iso(), current_user()),
            )
        log.info("saved mapping profile %s", saved.ref)
        return saved

    def get_profile(self: Store, name: str, version: int | None = None) -> MappingProfile:
        """A saved profile: ``name`` (latest version), ``name@3``, or `name` with `version`.

        Raises:
            NotFoundError: no such profile or version; the message lists what exists.
        """
        row = self._profile_row(name, version)
        profile = MappingProfile.from_dict(loads(row["spec"]), where=f"stored profile {row['name']}")
        return profile.model_copy(update={"version": row["version"]})

    def _profile_row(self: Store, name: str, version: int | None = None) -> sqlite3.Row:
        if version is None and "@" in name:
            name, _, v = name.rpartition("@")
            if not v.isdigit():
                raise UsageError(f"a profile version is a number: {name}@{v} → e.g. {name}@1")
            version = int(v)
        if version is None:
            row = self.query_one(
                "SELECT * FROM mapping_profiles WHERE name = ? ORDER BY version DESC LIMIT 1", (name,)
            )
        else:
            row = self.query_one(
                "SELECT * FROM mapping_profiles WHERE name = ? AND version = ?", (name, version)
            )
        if row is None:
            versions = [
                r[0] for r in self.query("SELECT version FROM mapping_profiles WHERE name = ?", (name,))
            ]
            if versions:
                raise NotFoundError(f"profile {name!r} has no version {version}; versions: {versions}")
            names = [r[0] for r in self.query("SELECT DISTINCT name FROM mapping_profiles ORDER BY name")]
            close = difflib.get_close_matches(name, names, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise NotFoundError(
                f"no saved mapping profile {name!r}{hint}; saved: {', '.join(names) or 'none'}. "
                "Save one with abbench import FILE --save-profile NAME, or pass a .yaml/.json profile file"
            )
        return row

    def list_profiles(self: Store, *, all_versions: bool = False) -> list[ProfileInfo]:
        """Saved profiles, by name: the latest version of each (or every version)."""
        rows = self.query(
            "SELECT p.*, (SELECT COUNT(*) FROM mapping_profiles q WHERE q.name = p.name) AS n_versions, "
            "(SELECT COUNT(*) FROM datasets d WHERE d.profile_id = p.id) AS n_datasets "
            "FROM mapping_profiles p "
            + (
                ""
                if all_versions
                else "WHERE p.version = (SELECT MAX(version) FROM mapping_profiles q WHERE q.name = p.name) "
            )
            + "ORDER BY p.name, p.version"
        )
        out = []
        for row in rows:
            profile = MappingProfile.from_dict(loads(row["spec"]), where=f"stored profile {row['name']}")
            out.append(
                ProfileInfo(
                    profile.model_copy(update={"version": row["version"]}),
                    row["created_at"],
                    row["created_by"],
                    row["n_versions"],
                    row["n_datasets"],
                )
            )
        return out

    def resolve_profile(self: Store, profile: Any) -> MappingProfile | None:
        """The profile meant by `profile`: a `MappingProfile`, a dict, a ``.yaml``/``.json`` file, or a
        saved name (``name`` for the latest version, ``name@3``); None stays None.

        Raises:
            MappingError: a profile file is missing or invalid.
            NotFoundError: no saved profile has that name or version.
        """
        if profile is None or isinstance(profile, (MappingProfile, dict)):
            return load_profile(profile) if profile is not None else None
        text = os.fspath(profile)
        path = Path(text).expanduser()
        if path.is_file():
            return MappingProfile.from_file(path)
        if path.suffix.lower() in (".json", ".yaml", ".yml"):
            raise MappingError(f"no mapping profile file {path}")
        return self.get_profile(text)

    # -- import ------------------------------------------------------------------------------------

    def import_dataset(
        self: Store,
        path: str | os.PathLike,
        profile: MappingProfile | dict | str | os.PathLike | None = None,
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
        src = Path(path).expanduser()
        if not src.is_file():
            raise ImportFailed(f"no such file: {src}" if not src.exists() else f"{src} is not a file")
        if self.read_only:
            raise self.refuse_write(f"a dataset imported from {src.name}")
        if name is not None:
            name = name.strip()
            if not name or "@" in name:
                raise UsageError(f"a dataset name is non-empty text without '@', got {name!r}")
        plan = plan_import(
            src,
            self.resolve_profile(profile),
            recipe=recipe,
            format=format,
            sheet=sheet,
            header_row=header_row,
            encoding=encoding,
            delimiter=delimiter,
            splits=splits,
        )
        ds_name = name or default_name(src)
        to_save = plan.profile
        profile_name = save_profile_as or to_save.name or ds_name
        if to_save.name != profile_name:
            to_save = to_save.model_copy(update={"name": profile_name, "version": None})

        uploads = self.path / "uploads"
        uploads.mkdir(exist_ok=True)
        tmp = uploads / f".import-{uuid.uuid4().hex}{src.suffix.lower()}"
        created: Path | None = None
        try:
            before = src.stat()
            source_sha = _sha256_copy(src, tmp)
            try:
                with _gc_paused(), _foreign_keys_off(self.conn), self.transaction() as conn:
                    ds_id = self._write_dataset(
                        conn,
                        plan,
                        ds_name,
                        to_save,
                        source_sha,
                        skip_invalid,
                        max_problems,
                        any_name=name is None,
                    )
                    after = src.stat()
                    if (after.st_size, after.st_mtime_ns) != (before.st_size, before.st_mtime_ns):
                        raise ImportFailed(f"{src.name} changed while it was being imported; import it again")
                    final = uploads / f"{source_sha}{src.suffix.lower()}"
                    if not final.exists():
                        os.replace(tmp, final)
                        created = final
                    conn.execute(
                        "UPDATE datasets SET upload_path = ? WHERE id = ?", (self.relpath(final), ds_id)
                    )
            except _Reuse as reuse:
                log.info("%s holds the same cases as %s; nothing stored", src.name, reuse.info.fingerprint)
                _warn_if_labels_differ(reuse.info, to_save, src.name, ds_name)
                return DatasetInfo(**{**reuse.info.__dict__, "reused": True})
            except BaseException:
                if created is not None:
                    created.unlink(missing_ok=True)
                raise
        finally:
            tmp.unlink(missing_ok=True)
        result = self.get_dataset(ds_id)
        log.info("imported %s: %d cases from %s", result.fingerprint, result.n_cases, src.name)
        return result

    def save_dataset(
        self: Store,
        name: str,
        cases: Iterable[Case],
        *,
        label_set: Sequence[str] | None = None,
        label_map: dict[str, str] | None = None,
    ) -> DatasetInfo:
        """Store cases built in Python (a notebook, a DataFrame, a try) as a dataset.

        The same cases under the same name return the stored dataset (``reused=True``), exactly as an
        import of the same content does; the fingerprint is computed the same way.

        Raises:
            UsageError: no cases, an empty input, a repeated case id, or a gold label outside `label_set`.
        """
        name = (name or "").strip()
        if not name or "@" in name:
            raise UsageError(f"a dataset name is non-empty text without '@', got {name!r}")
        cases = list(cases)
        if not cases:
            raise UsageError(f"dataset {name!r} has no cases")
        seen: set[str] = set()

        def fold(v: Any) -> str:
            return " ".join(str(v).split()).casefold()

        labels = {fold(v) for v in label_set} if label_set else None
        mapped = {fold(k): fold(v) for k, v in (label_map or {}).items()}
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
                    f"case {case.case_id!r}: gold label {case.expected!r} is not in the label set "
                    f"{sorted(labels)}"
                )
        hasher = ContentHasher()
        for case in cases:
            hasher.add_case(case)
        digest = hasher.hexdigest()
        fp = fingerprint(name, digest)
        held = self.query_one("SELECT id FROM datasets WHERE fingerprint = ?", (fp,))
        if held is not None:
            return DatasetInfo(**{**self.get_dataset(held[0]).__dict__, "reused": True})
        with self.transaction() as conn:
            cur = conn.execute(
                "INSERT INTO datasets (fingerprint, name, content_hash, n_cases, label_set, label_map, "
                "read_options, created_at, created_by) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    fp,
                    name,
                    digest,
                    len(cases),
                    dumps(list(label_set) if label_set else None),
                    dumps(label_map or None),
                    dumps({"format": "python"}),
                    now_iso(),
                    current_user(),
                ),
            )
            conn.executemany(
                "INSERT INTO cases (dataset_id, idx, case_id, input, expected, history, context, domain, "
                "request_id, metadata, source_row, source_line) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        cur.lastrowid,
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
                    )
                    for i, c in enumerate(cases)
                ],
            )
        return self.get_dataset(cur.lastrowid)

    def _write_dataset(
        self: Store,
        conn: sqlite3.Connection,
        plan,
        ds_name: str,
        to_save: MappingProfile,
        source_sha: str,
        skip_invalid: bool,
        max_problems: int,
        *,
        any_name: bool,
    ) -> int:
        saved = self.save_profile(to_save)
        profile_id = self.query_one(
            "SELECT id FROM mapping_profiles WHERE name = ? AND version = ?", (saved.name, saved.version)
        )[0]
        pending = f"{ds_name}@pending-{uuid.uuid4().hex}"
        cur = conn.execute(
            "INSERT INTO datasets (fingerprint, name, content_hash, n_cases, label_set, label_map, profile_id, "
            "source_file, source_sha256, read_options, created_at, created_by) "
            "VALUES (?, ?, '', 0, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                pending,
                ds_name,
                dumps(saved.label_set),
                dumps(saved.label_map or None),
                profile_id,
                plan.path.name,
                source_sha,
                dumps(plan.read_options),
                now_iso(),
                current_user(),
            ),
        )
        ds_id = cur.lastrowid
        mapper = plan.mapper
        # Only the columns the mapping fills are inserted: binding None costs more than the rest of
        # the row in CPython's sqlite3, and NULL is their default anyway.
        sql = (
            f"INSERT INTO cases (dataset_id, {', '.join(mapper.columns)}) "
            f"VALUES ({int(ds_id)}, {', '.join('?' * len(mapper.columns))})"
        )
        report = plan.new_report(max_problems)
        hasher = ContentHasher()
        n = 0

        def claim(case_id: str, row: tuple) -> str | None:
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
                rows = resolve_duplicates(mapper, done.rows, claim, report)
                lines = [mapper.line(r) for r in rows]
            else:
                n += len(done.rows)
                rows, lines = done.rows, done.lines
            conn.execute("RELEASE import_chunk")
            hasher.add_lines(lines)
            report.n_valid += len(rows)

        result = report.build(skipped=skip_invalid)
        check_report(plan.path, result, skip_invalid)
        digest = hasher.hexdigest()
        fp = fingerprint(ds_name, digest)
        existing = conn.execute(
            "SELECT id FROM datasets WHERE content_hash = ? AND id != ? AND (fingerprint = ? OR ?) "
            "ORDER BY id DESC LIMIT 1",
            (digest, ds_id, fp, any_name),
        ).fetchone()
        if existing is not None:
            raise _Reuse(self.get_dataset(existing[0]))
        conn.execute(
            "UPDATE datasets SET fingerprint = ?, content_hash = ?, n_cases = ?, validation = ? WHERE id = ?",
            (fp, digest, n, dumps(result.to_dict()), ds_id),
        )
        return ds_id

    # -- reading -------------------------------------------------------------------------------------

    def get_dataset(self: Store, ref: str | int | DatasetInfo) -> DatasetInfo:
        """A stored dataset by fingerprint (``name@abc123def456``), name (its latest import), content
        hash prefix (at least 6 hex), or id.

        Raises:
            NotFoundError: nothing matches, or a hash prefix matches several datasets.
        """
        if isinstance(ref, DatasetInfo):
            ref = ref.id
        select = (
            f"SELECT {_DATASET_COLUMNS} FROM datasets d LEFT JOIN mapping_profiles p ON p.id = d.profile_id "
        )
        done = " AND d.fingerprint NOT LIKE '%@pending-%'"
        if isinstance(ref, int):
            row = self.query_one(select + "WHERE d.id = ?" + done, (ref,))
            if row is None:
                raise NotFoundError(f"no dataset with id {ref}; {self._dataset_listing()}")
            return _info(row)
        text = str(ref).strip()
        row = None
        if "@" in text:
            row = self.query_one(select + "WHERE d.fingerprint = ?" + done, (text,))
            if row is None:
                nm, _, prefix = text.rpartition("@")
                if len(prefix) >= 4 and set(prefix.lower()) <= _HEX:
                    rows = self.query(
                        select + "WHERE d.name = ? AND d.content_hash LIKE ?" + done + " ORDER BY d.id DESC",
                        (nm, prefix.lower() + "%"),
                    )
                    row = rows[0] if rows else None
        if row is None:
            row = self.query_one(select + "WHERE d.name = ?" + done + " ORDER BY d.id DESC LIMIT 1", (text,))
        if row is None and len(text) >= 6 and set(text.lower()) <= _HEX:
            rows = self.query(
                select + "WHERE d.content_hash LIKE ?" + done + " ORDER BY d.id DESC", (text.lower() + "%",)
            )
            if len({r["content_hash"] for r in rows}) > 1:
                raise NotFoundError(
                    f"{text!r} matches several datasets: {', '.join(r['fingerprint'] for r in rows)}; give more hex"
                )
            row = rows[0] if rows else None
        if row is None and text.isdigit():
            row = self.query_one(select + "WHERE d.id = ?" + done, (int(text),))
        if row is None:
            raise NotFoundError(f"no dataset {text!r}; {self._dataset_listing(text)}")
        return _info(row)

    def _dataset_listing(self: Store, near: str | None = None) -> str:
        rows = self.query(
            "SELECT fingerprint, name FROM datasets WHERE fingerprint NOT LIKE '%@pending-%' ORDER BY id"
        )
        if not rows:
            return "the store has no datasets yet; import one with abbench import FILE"
        if near:
            names = {r["name"]: r["fingerprint"] for r in rows}  # the latest fingerprint per name
            close = difflib.get_close_matches(near.partition("@")[0], list(names), n=3, cutoff=0.6)
            if close:
                return f"did you mean {', '.join(names[c] for c in close)}?"
        shown = [r["fingerprint"] for r in rows[-10:]]
        return "datasets: " + ", ".join(shown) + (" ..." if len(rows) > 10 else "")

    def list_datasets(self: Store) -> list[DatasetInfo]:
        """Every stored dataset, oldest first."""
        rows = self.query(
            f"SELECT {_DATASET_COLUMNS} FROM datasets d LEFT JOIN mapping_profiles p ON p.id = d.profile_id "
            "WHERE d.fingerprint NOT LIKE '%@pending-%' ORDER BY d.id"
        )
        return [_info(r) for r in rows]

    def load_cases(self: Store, ref: str | int | DatasetInfo, *, source_rows: bool = True) -> list[Case]:
        """Every case of a dataset, in file order.

        Args:
            ref: Fingerprint, name, hash prefix or id (see `get_dataset`).
            source_rows: Also parse each case's raw source row (set False when only the fields matter).
        """
        info = self.get_dataset(ref)
        cur = self.conn.execute(_cases_sql(source_rows), (info.id,))
        return _to_cases(cur.fetchall(), info.read_options.get("columns"))

    def iter_cases(
        self: Store, ref: str | int | DatasetInfo, *, batch: int = 1000, source_rows: bool = True
    ) -> Iterator[Case]:
        """The cases of a dataset one at a time, in file order, read `batch` rows at a time."""
        info = self.get_dataset(ref)
        cur = self.conn.execute(_cases_sql(source_rows), (info.id,))
        columns = info.read_options.get("columns")
        while rows := cur.fetchmany(batch):
            yield from _to_cases(rows, columns)

    def get_case(self: Store, ref: str | int | DatasetInfo, case_id: str) -> Case:
        """One case of a dataset by its id.

        Raises:
            NotFoundError: no such case; the message names close ids.
        """
        info = self.get_dataset(ref)
        row = self.query_one(
            f"SELECT {', '.join(_CASE_COLUMNS)} FROM cases WHERE dataset_id = ? AND case_id = ?",
            (info.id, str(case_id)),
        )
        if row is None:
            ids = [
                r[0]
                for r in self.query(
                    "SELECT case_id FROM cases WHERE dataset_id = ? AND case_id LIKE ? LIMIT 200",
                    (info.id, str(case_id)[:2] + "%"),
                )
            ]
            close = difflib.get_close_matches(str(case_id), ids, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise NotFoundError(f"{info.fingerprint} has no case {case_id!r}{hint}")
        return _to_cases([row], info.read_options.get("columns"))[0]

    def label_conflicts(self: Store, ref: str | int | DatasetInfo, limit: int = 200) -> list[Problem]:
        """Inputs that occur with different expected labels: gold labels worth a look by a person.

        Kept out of `import_dataset` (it sorts every input, ~0.3 s per 200,000 cases); the CLI shows
        it after an import and in ``abbench datasets REF``.

        Returns:
            One warning (kind ``conflicting_labels``) per such input, at its first row, in file order;
            at most `limit`. The message names two of its labels.
        """
        info = self.get_dataset(ref)
        # MIN <> MAX finds the groups with two labels without tracking distinct values per group.
        rows = self.query(
            "SELECT input, MIN(expected) AS low, MAX(expected) AS high, MIN(idx) AS first FROM cases "
            "WHERE dataset_id = ? AND expected IS NOT NULL "
            "GROUP BY input HAVING low <> high ORDER BY first LIMIT ?",
            (info.id, limit),
        )
        out = []
        for row in rows:
            where = self.query_one(
                "SELECT source_line FROM cases WHERE dataset_id = ? AND idx = ?", (info.id, row["first"])
            )[0]
            out.append(
                Problem(
                    "conflicting_labels",
                    where,
                    "expected",
                    row["input"],
                    f"the same input has different expected labels ({row['low']!r}, {row['high']!r}); "
                    "review the gold labels",
                    severity="warning",
                )
            )
        return out

    def value_counts(
        self: Store, ref: str | int | DatasetInfo, field: str = "expected"
    ) -> dict[str | None, int]:
        """How many cases have each value of a text field (``expected``, ``domain``), most common first."""
        if field not in ("expected", "domain", "request_id", "case_id"):
            raise UsageError(
                f"value_counts counts a text field: expected, domain, request_id or case_id; got {field!r}"
            )
        info = self.get_dataset(ref)
        rows = self.query(
            f"SELECT {field}, COUNT(*) FROM cases WHERE dataset_id = ? GROUP BY {field} ORDER BY COUNT(*) DESC, {field}",
            (info.id,),
        )
        return {r[0]: r[1] for r in rows}


def _cases_sql(source_rows: bool) -> str:
    cols = _CASE_COLUMNS if source_rows else (*CASE_FIELDS, "NULL", "source_line")
    return f"SELECT {', '.join(cols)} FROM cases WHERE dataset_id = ? ORDER BY idx"


def _to_cases(rows: list[sqlite3.Row], columns: list[str] | None) -> list[Case]:
    out = []
    append = out.append
    for r in rows:
        cid, inp, exp, hist, ctx, dom, rid, meta, src, line = tuple(r)
        append(
            Case(
                cid,
                inp,
                exp,
                loads(hist) if hist is not None else None,
                loads(ctx) if ctx is not None else None,
                dom,
                rid,
                loads(meta) if meta is not None else None,
                unpack_source_row(loads(src), columns) if src is not None else None,
                line,
            )
        )
    return out


def _info(row: sqlite3.Row) -> DatasetInfo:
    label_set = loads(row["label_set"])
    return DatasetInfo(
        id=row["id"],
        fingerprint=row["fingerprint"],
        name=row["name"],
        content_hash=row["content_hash"],
        n_cases=row["n_cases"],
        label_set=tuple(label_set) if label_set is not None else None,
        label_map=loads(row["label_map"]) or {},
        profile_name=row["profile_name"],
        profile_version=row["profile_version"],
        source_file=row["source_file"],
        source_sha256=row["source_sha256"],
        upload_path=row["upload_path"],
        read_options=loads(row["read_options"]) or {},
        validation=ValidationReport.from_dict(loads(row["validation"])),
        created_at=row["created_at"],
        created_by=row["created_by"],
    )


# -- the public functions (store optional) -------------------------------------------------------------


@contextlib.contextmanager
def _using(store: Any) -> Iterator[Store]:
    from abbench.store import Store, open_store

    if isinstance(store, Store):
        yield store
        return
    s = open_store(store)
    try:
        yield s
    finally:
        s.close()


def _warn_if_labels_differ(stored: DatasetInfo, profile: MappingProfile, file: str, name: str) -> None:
    """Say so when a re-import's mapping declares other labels than the stored dataset it returns.

    The fingerprint covers the cases only, so adding ``label_set:`` to a profile and importing the
    same file again returns the stored dataset unchanged; without this warning the new labels would
    be ignored in silence.
    """
    wanted_set = sorted(profile.label_set) if profile.label_set else None
    held_set = sorted(stored.label_set) if stored.label_set else None
    wanted_map, held_map = dict(profile.label_map or {}), dict(stored.label_map or {})
    if wanted_set == held_set and wanted_map == held_map:
        return
    what = " and ".join(
        w
        for w, differs in (("label set", wanted_set != held_set), ("label map", wanted_map != held_map))
        if differs
    )
    held = f"{len(held_set)} labels" if held_set else "none"
    log.warning(
        "%s holds the same cases as %s, which is kept as it was stored (label set: %s): this mapping's "
        "%s is not applied, as a stored dataset never changes. To use it, import under another name "
        "(--name %s-labelled), or give a builtin arm `labels: [...]`",
        file,
        stored.fingerprint,
        held,
        what,
        name,
    )


def import_dataset(
    path: str | os.PathLike,
    profile: MappingProfile | dict | str | os.PathLike | None = None,
    *,
    store: Any = None,
    **options: Any,
) -> DatasetInfo:
    """Import a data file into a store (default ./.abbench or $ABBENCH_STORE); see `Store.import_dataset`.

    Example:
        >>> info = import_dataset("banking77/test.csv", name="banking77")
        >>> info.fingerprint
        'banking77@3f0c...'
    """
    with _using(store) as s:
        return s.import_dataset(path, profile, **options)


def load_dataset(ref: str | int | DatasetInfo, store: Any = None) -> Dataset:
    """A stored dataset with its cases (fingerprint, name, hash prefix or id)."""
    with _using(store) as s:
        info = s.get_dataset(ref)
        return Dataset(info, tuple(s.load_cases(info)))


def load_cases(ref: str | int | DatasetInfo, store: Any = None) -> list[Case]:
    """The cases of a stored dataset, in file order."""
    with _using(store) as s:
        return s.load_cases(ref)


def list_datasets(store: Any = None) -> list[DatasetInfo]:
    """Every dataset in a store, oldest first."""
    with _using(store) as s:
        return s.list_datasets()

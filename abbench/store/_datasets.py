"""Store methods that read datasets (look up, list, load, count cases), and the store-optional functions."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import sqlite3
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from abbench import _actions as do
from abbench.dataset import (
    ConflictRow,
    Dataset,
    DatasetInfo,
    ExpectedKind,
    LabelConflict,
    LabelConflicts,
    ValidationReport,
    unpack_source_row,
)
from abbench.errors import Action, NotFoundError, UsageError
from abbench.store._base import loads
from abbench.store._experiments import IS_TRY_SQL
from abbench.store._noun import Noun
from abbench.types import CASE_FIELDS, Case

if TYPE_CHECKING:
    from abbench.dataset import MappingProfile
    from abbench.store import Store

# expected_skill (the last case field) is read last, after the source row and its place in the file
_CASE_COLUMNS = (*CASE_FIELDS[:-1], "source_row", "source_line", CASE_FIELDS[-1])
_DATASET_COLUMNS = (
    "d.id, d.fingerprint, d.name, d.content_hash, d.n_cases, d.label_set, d.label_map, d.expected_kind, "
    "d.source_file, d.source_sha256, d.upload_path, d.read_options, d.validation, d.created_at, d.created_by, "
    "p.name AS profile_name, p.version AS profile_version"
)
_HEX = set("0123456789abcdef")
TRY_DATASET = "try"
"""The name of the datasets a try saves (``try``, or ``try-<8 hex>`` naming its label set)."""
_IS_TRY_DATASET_SQL = (
    f"(d.source_file IS NULL AND (d.name = '{TRY_DATASET}' OR d.name GLOB '{TRY_DATASET}-{'[0-9a-f]' * 8}') "
    f"AND NOT EXISTS (SELECT 1 FROM experiments e WHERE e.dataset_id = d.id AND NOT {IS_TRY_SQL}))"
)
"""SQL true for a dataset `d` that only tries use (saved by a try, no other experiment runs on it)."""


class DatasetReads(Noun):
    """Reading stored datasets and their cases (part of ``store.datasets``)."""

    def get(self, ref: str | int | DatasetInfo) -> DatasetInfo:
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
            row = self._store.query_one(select + "WHERE d.id = ?" + done, (ref,))
            if row is None:
                raise NotFoundError(
                    f"no dataset with id {ref}; ", *self._dataset_listing(), kind="dataset", name=str(ref)
                )
            return _info(row)
        text = str(ref).strip()
        row = None
        if "@" in text:
            row = self._store.query_one(select + "WHERE d.fingerprint = ?" + done, (text,))
            if row is None:
                nm, _, prefix = text.rpartition("@")
                if len(prefix) >= 4 and set(prefix.lower()) <= _HEX:
                    rows = self._store.query(
                        select + "WHERE d.name = ? AND d.content_hash LIKE ?" + done + " ORDER BY d.id DESC",
                        (nm, prefix.lower() + "%"),
                    )
                    row = rows[0] if rows else None
        if row is None:
            row = self._store.query_one(
                select + "WHERE d.name = ?" + done + " ORDER BY d.id DESC LIMIT 1", (text,)
            )
        if row is None and len(text) >= 6 and set(text.lower()) <= _HEX:
            rows = self._store.query(
                select + "WHERE d.content_hash LIKE ?" + done + " ORDER BY d.id DESC", (text.lower() + "%",)
            )
            if len({r["content_hash"] for r in rows}) > 1:
                raise NotFoundError(
                    f"{text!r} matches several datasets: {', '.join(r['fingerprint'] for r in rows)}; give more hex"
                )
            row = rows[0] if rows else None
        if row is None and text.isdigit():
            row = self._store.query_one(select + "WHERE d.id = ?" + done, (int(text),))
        if row is None:
            raise NotFoundError(
                f"no dataset {text!r}; ", *self._dataset_listing(text), kind="dataset", name=text
            )
        return _info(row)

    def imported(
        self, ref: str | int | DatasetInfo, *, reused: bool = False, requested_name: str | None = None
    ) -> DatasetInfo:
        """A dataset as an import returns it: with the versions of its name (`DatasetInfo.name_versions`),
        whether the import found it stored (`reused`) and the name it asked for when that differs."""
        info = self.get(ref)
        rows = self._store.query(
            "SELECT fingerprint FROM datasets WHERE name = ? AND fingerprint NOT LIKE '%@pending-%' ORDER BY id",
            (info.name,),
        )
        asked = requested_name if requested_name is not None and requested_name != info.name else None
        return dataclasses.replace(
            info, reused=reused, name_versions=tuple(r[0] for r in rows), requested_name=asked
        )

    def _dataset_listing(self, near: str | None = None) -> tuple[str | Action, ...]:
        rows = self._store.query(
            "SELECT fingerprint, name FROM datasets WHERE fingerprint NOT LIKE '%@pending-%' ORDER BY id"
        )
        if not rows:
            return ("the store has no datasets yet; import one with ", do.import_dataset())
        if near:
            import difflib  # here: only a mistyped name needs it

            names = {r["name"]: r["fingerprint"] for r in rows}  # the latest fingerprint per name
            close = difflib.get_close_matches(near.partition("@")[0], list(names), n=3, cutoff=0.6)
            if close:
                return (f"did you mean {', '.join(names[c] for c in close)}?",)
        shown = [r["fingerprint"] for r in rows[-10:]]
        return ("datasets: " + ", ".join(shown) + (" ..." if len(rows) > 10 else ""),)

    def all(self, *, include_tries: bool = False) -> list[DatasetInfo]:
        """Every stored dataset, oldest first; those only tries use are left out unless `include_tries`."""
        rows = self._store.query(
            f"SELECT {_DATASET_COLUMNS} FROM datasets d LEFT JOIN mapping_profiles p ON p.id = d.profile_id "
            "WHERE d.fingerprint NOT LIKE '%@pending-%'"
            + ("" if include_tries else f" AND NOT {_IS_TRY_DATASET_SQL}")
            + " ORDER BY d.id"
        )
        return [_info(r) for r in rows]

    def load_cases(self, ref: str | int | DatasetInfo, *, source_rows: bool = True) -> list[Case]:
        """Every case of a dataset, in file order.

        Args:
            ref: Fingerprint, name, hash prefix or id (see `get_dataset`).
            source_rows: Also parse each case's raw source row (set False when only the fields matter).
        """
        info = self.get(ref)
        return _to_cases(
            _plain_cursor(self._store.conn).execute(_cases_sql(source_rows), (info.id,)).fetchall(),
            info.source_columns,
        )

    def iter_cases(
        self, ref: str | int | DatasetInfo, *, batch: int = 1000, source_rows: bool = True
    ) -> Iterator[Case]:
        """The cases of a dataset one at a time, in file order, read `batch` rows at a time."""
        info = self.get(ref)
        cur = _plain_cursor(self._store.conn).execute(_cases_sql(source_rows), (info.id,))
        columns = info.source_columns
        while rows := cur.fetchmany(batch):
            yield from _to_cases(rows, columns)

    def cases_between(
        self, ref: str | int | DatasetInfo, start: int, stop: int, *, source_rows: bool = True
    ) -> dict[int, Case]:
        """The cases of a dataset at positions `start` to `stop` (excluded), by position: what a runner
        pass reads a page at a time instead of every case at once."""
        info = self.get(ref)
        sql = (
            f"SELECT idx, {_case_columns(source_rows)} FROM cases "
            "WHERE dataset_id = ? AND idx >= ? AND idx < ? ORDER BY idx"
        )
        rows = _plain_cursor(self._store.conn).execute(sql, (info.id, int(start), int(stop))).fetchall()
        cases = _to_cases([r[1:] for r in rows], info.source_columns)
        return {r[0]: case for r, case in zip(rows, cases, strict=True)}

    def case_inputs(self, ref: str | int | DatasetInfo, case_ids: Iterable[str]) -> dict[str, Any]:
        """The inputs of some cases of a dataset by id (ids it does not hold are left out), read in chunks:
        what a list of a few thousand cases shows beside each id, without loading every case."""
        info = self.get(ref)
        wanted = list(dict.fromkeys(str(c) for c in case_ids))
        out: dict[str, Any] = {}
        for start in range(0, len(wanted), 500):
            chunk = wanted[start : start + 500]
            rows = self._store.query(
                f"SELECT case_id, input FROM cases WHERE dataset_id = ? AND case_id IN ({','.join('?' * len(chunk))})",
                (info.id, *chunk),
            )
            out.update((r[0], r[1]) for r in rows)
        return out

    def get_case(self, ref: str | int | DatasetInfo, case_id: str) -> Case:
        """One case of a dataset by its id.

        Raises:
            NotFoundError: no such case; the message names close ids.
        """
        info = self.get(ref)
        row = self._store.query_one(
            f"SELECT {', '.join(_CASE_COLUMNS)} FROM cases WHERE dataset_id = ? AND case_id = ?",
            (info.id, str(case_id)),
        )
        if row is None:
            ids = [
                r[0]
                for r in self._store.query(
                    "SELECT case_id FROM cases WHERE dataset_id = ? AND case_id LIKE ? LIMIT 200",
                    (info.id, str(case_id)[:2] + "%"),
                )
            ]
            import difflib  # here: only a mistyped case id needs it

            close = difflib.get_close_matches(str(case_id), ids, n=3)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise NotFoundError(f"{info.fingerprint} has no case {case_id!r}{hint}")
        return _to_cases([tuple(row)], info.source_columns)[0]

    def label_conflicts(self, ref: str | int | DatasetInfo, limit: int = 200) -> LabelConflicts:
        """Cases an agent is shown alike that have different expected labels: gold worth a look by a person.

        Cases are alike when their input, history and context are equal — all an agent is shown of a
        case but its domain — so the same sentence asked about two aspects (the aspect in the context),
        or the same short reply after two histories, is no conflict. Rows that differ only in what no
        prompt shows (metadata, domain) are, and the conflict names those differences.

        Kept out of `import_dataset` (it sorts every case, ~0.3 s per 200,000 cases); the CLI shows it
        after an import and in ``abbench datasets REF``.

        Returns:
            One `abbench.dataset.LabelConflict` (a warning of kind ``conflicting_labels``) per group of
            such cases, at its first row, in file order; at most `limit`, with how many there are in all
            (`LabelConflicts.total`). Each holds its labels with their rows and case ids (the first few),
            the file, and what tells its rows apart that no prompt shows, as fields; its message words them.
        """
        info = self.get(ref)
        # Windows over (input, history, context): every row of a group whose MIN and MAX gold differ,
        # the groups ranked by their first row (and counted), in one sort of the dataset.
        rows = self._store.query(
            "SELECT * FROM (SELECT *, MAX(grp) OVER () AS n_groups FROM ("
            "SELECT *, DENSE_RANK() OVER (ORDER BY first) AS grp FROM ("
            "SELECT idx, case_id, input, expected, source_line, domain, metadata, "
            "MIN(expected) OVER w AS low, MAX(expected) OVER w AS high, MIN(idx) OVER w AS first "
            "FROM cases WHERE dataset_id = ? AND expected IS NOT NULL "
            "WINDOW w AS (PARTITION BY input, history, context)) WHERE low <> high)) "
            "WHERE grp <= ? ORDER BY first, idx",
            (info.id, limit),
        )
        groups: dict[int, list[sqlite3.Row]] = {}
        for row in rows:
            groups.setdefault(row["grp"], []).append(row)
        found = [_conflict(group, info.source_file) for group in groups.values()]
        return LabelConflicts(found, total=rows[0]["n_groups"] if rows else 0, limit=limit)

    def value_counts(self, ref: str | int | DatasetInfo, field: str = "expected") -> dict[str | None, int]:
        """How many cases have each value of a text field (``expected``, ``domain``), most common first."""
        if field not in ("expected", "domain", "request_id", "case_id"):
            raise UsageError(
                f"value_counts counts a text field: expected, domain, request_id or case_id; got {field!r}"
            )
        info = self.get(ref)
        rows = self._store.query(
            f"SELECT {field}, COUNT(*) FROM cases WHERE dataset_id = ? GROUP BY {field} ORDER BY COUNT(*) DESC, {field}",
            (info.id,),
        )
        return {r[0]: r[1] for r in rows}


def _conflict(rows: list[sqlite3.Row], source_file: str | None) -> LabelConflict:
    """The conflict of one group of alike cases with different labels: each label with its rows."""
    by_label: dict[str, list[ConflictRow]] = {}
    for row in rows:
        by_label.setdefault(row["expected"], []).append(ConflictRow(_where(row), row["case_id"]))
    keys, domain = _hidden_difference(rows)
    return LabelConflict.of(
        rows[0]["input"],
        by_label.items(),
        source_file=source_file,
        hidden_metadata=keys,
        hidden_domain=domain,
    )


def _where(row: sqlite3.Row) -> str:
    """Where a case sits in its file (``line 12``), or its place in a dataset saved from Python."""
    return str(row["source_line"] or f"case #{row['idx'] + 1}")


def _hidden_difference(rows: list[sqlite3.Row]) -> tuple[tuple[str, ...], bool]:
    """What tells the rows of a conflict apart that no prompt shows: the metadata keys whose values
    differ, and whether the domains do."""
    metas = [loads(r["metadata"]) if r["metadata"] is not None else {} for r in rows]
    metas = [m if isinstance(m, dict) else {"metadata": m} for m in metas]
    keys = sorted(
        {k for m in metas for k in m if len({json.dumps(x.get(k), sort_keys=True) for x in metas}) > 1}
    )
    return tuple(keys), len({r["domain"] for r in rows}) > 1


def _case_columns(source_rows: bool) -> str:
    cols = _CASE_COLUMNS if source_rows else (*CASE_FIELDS[:-1], "NULL", "source_line", CASE_FIELDS[-1])
    return ", ".join(cols)


def _cases_sql(source_rows: bool) -> str:
    return f"SELECT {_case_columns(source_rows)} FROM cases WHERE dataset_id = ? ORDER BY idx"


def _plain_cursor(conn: sqlite3.Connection) -> sqlite3.Cursor:
    """A cursor giving plain tuples: a `sqlite3.Row` per case cost more than the case made of it."""
    cur = conn.cursor()
    cur.row_factory = None
    return cur


def _to_cases(rows: list[tuple[Any, ...]], columns: list[str] | None) -> list[Case]:
    out: list[Case] = []
    append = out.append
    # Every source row in one parse (as the elements of one JSON array, each parsed as alone): a
    # `json.loads` per row cost more than the text it read.
    sources = iter(_load_all(r[8] for r in rows))
    for cid, inp, exp, hist, ctx, dom, rid, meta, src, line, skill in rows:
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
                unpack_source_row(next(sources), columns) if src is not None else None,
                line,
                skill,
            )
        )
    return out


def _load_all(texts: Iterable[str | None]) -> list[Any]:
    """The values of the JSON `texts` that are not None, in their order, parsed at once."""
    present = [t for t in texts if t is not None]
    return json.loads("[" + ",".join(present) + "]") if present else []


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
        expected_kind=ExpectedKind.from_dict(loads(row["expected_kind"])),
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
def using_store(store: Any, *, create: bool = True) -> Iterator[Store]:
    """`store` itself when it is an open `Store`, else the store it names, opened for the block and closed."""
    from abbench.store import Store, open_store

    if isinstance(store, Store):
        yield store
        return
    s = open_store(store, create=create)
    try:
        yield s
    finally:
        s.close()


def import_dataset(
    path: str | os.PathLike[str],
    profile: MappingProfile | dict[str, Any] | str | os.PathLike[str] | None = None,
    *,
    store: Any = None,
    **options: Any,
) -> DatasetInfo:
    """Import a data file into a store (default ./.abbench or $ABBENCH_STORE); see `store.datasets.import_file`.

    Example:
        >>> info = import_dataset("banking77/test.csv", name="banking77")
        >>> info.fingerprint
        'banking77@3f0c...'
    """
    with using_store(store) as s:
        return s.datasets.import_file(path, profile, **options)


def load_dataset(ref: str | int | DatasetInfo, store: Any = None) -> Dataset:
    """A stored dataset with its cases (fingerprint, name, hash prefix or id)."""
    with using_store(store) as s:
        info = s.datasets.get(ref)
        return Dataset(info, tuple(s.datasets.load_cases(info)))


def load_cases(ref: str | int | DatasetInfo, store: Any = None) -> list[Case]:
    """The cases of a stored dataset, in file order."""
    with using_store(store) as s:
        return s.datasets.load_cases(ref)


def list_datasets(store: Any = None, *, include_tries: bool = False) -> list[DatasetInfo]:
    """Every dataset in a store, oldest first (those only tries use when `include_tries`)."""
    with using_store(store) as s:
        return s.datasets.all(include_tries=include_tries)

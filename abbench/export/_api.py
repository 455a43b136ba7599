"""`export()`: an experiment's runs, grades, reviews or comparison written to a CSV, XLSX or JSONL file."""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from abbench._files import atomic_path
from abbench._result import Result
from abbench.errors import UnknownName, UsageError
from abbench.export._pairwise import pairwise_result
from abbench.export._runs import runs_table
from abbench.export._tables import Table, comparison_table, grades_table, reviews_table
from abbench.export._writers import write_csv, write_jsonl
from abbench.export._xlsx import write_xlsx
from abbench.store import open_store

if TYPE_CHECKING:
    from abbench.store import Experiment, Store

log = logging.getLogger(__name__)

EXPORT_KINDS = ("runs", "grades", "reviews", "comparison", "pairwise")
"""What `export` can write (``pairwise``: one JSON document, `pairwise_result`)."""

EXPORT_FORMATS = ("csv", "xlsx", "jsonl", "json")
"""The file formats `export` writes (``json`` for ``pairwise`` only)."""

RUNS_PROFILE: dict[str, Any] = {
    "name": "abbench-runs",
    "description": "Cases back from an abbench runs export (JSONL); keep the first row of each case id.",
    "read": {"format": "jsonl"},
    "fields": {
        "case_id": {"column": "case_id"},
        "input": {"column": "input"},
        "expected": {"column": "expected"},
        "history": {"column": "history"},
        "context": {"column": "context"},
        "domain": {"column": "domain"},
        "request_id": {"column": "request_id"},
        "metadata": {"column": "metadata"},
    },
    "normalize_input": False,
}
"""The mapping profile that turns a runs JSONL export back into the experiment's cases.

The export lists the first arm's first round first, in dataset order, so importing with this profile
and ``skip_invalid=True`` (the later rows repeat case ids and are skipped) under the dataset's name
gives the same cases and the same fingerprint::

    abbench import routing-v2-runs.jsonl --mapping abbench-runs.yaml --name demo --skip-invalid
"""


@dataclass(frozen=True)
class ExportResult(Result):
    """What `export` wrote.

    Attributes:
        path: The file written.
        what: ``runs``, ``grades``, ``reviews`` or ``comparison``.
        format: ``csv``, ``xlsx`` or ``jsonl``.
        rows: Data rows written (the header not counted).
        columns: The column headers written.
        size_bytes: The file's size.
        seconds: How long writing took.
        notes: Things a reader of the file should know.
    """

    path: Path
    what: str
    format: str
    rows: int
    columns: tuple[str, ...]
    size_bytes: int
    seconds: float
    notes: tuple[str, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: the fields, the path as text, the time rounded."""
        return Result.as_dict(self) | {"path": str(self.path), "seconds": round(self.seconds, 3)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExportResult:
        """The result `as_dict` gave (a server's, with `path` where the client wrote the file)."""
        return cls(
            path=Path(data["path"]),
            what=str(data["what"]),
            format=str(data["format"]),
            rows=int(data["rows"]),
            columns=tuple(data.get("columns") or ()),
            size_bytes=int(data["size_bytes"]),
            seconds=float(data.get("seconds") or 0.0),
            notes=tuple(data.get("notes") or ()),
        )


def _stem(name: str) -> str:
    """A file name from an experiment name: CJK and letters kept, path and shell-hostile characters dropped."""
    stem = re.sub(r"[\\/:*?\"<>|\s]+", "-", name).strip("-.")
    return stem[:120] or "experiment"


def export_table(
    experiment: int | str | Experiment,
    what: str = "runs",
    *,
    store: str | os.PathLike[str] | Store | None = None,
    **options: Any,
) -> Table:
    """The table `export` would write, without writing it (``.to_pandas()`` gives a DataFrame).

    Args:
        experiment: The experiment: id, ``#id``, name, or an `Experiment`.
        what: One of `EXPORT_KINDS`.
        store: A `Store`, a store folder, or None for $ABBENCH_STORE / ./.abbench.
        **options: For ``comparison``: ``arms=(a, b)`` and/or ``vs=`` a baseline experiment (see
            `abbench.export.comparison_table`).

    Raises:
        UsageError: an unknown `what` (the message lists the choices), or options for another export.
        NotFoundError: no such experiment.
    """
    if what not in EXPORT_KINDS:
        raise UsageError(
            f"cannot export {what!r}; choose one of {', '.join(EXPORT_KINDS)}",
            kind="export",
            name=what,
            choices=EXPORT_KINDS,
        )
    if what == "pairwise":
        raise UsageError(
            "a pairwise export is one JSON document, not a table: use export(..., 'pairwise', 'json') "
            "or abbench.export.pairwise_result"
        )
    if options and what != "comparison":
        raise UsageError(f"{', '.join(sorted(options))} only apply to the comparison export, not to {what}")
    s = open_store(store)
    exp = s.experiments.get(experiment)
    if what == "runs":
        return runs_table(s, exp)
    if what == "grades":
        return grades_table(s, exp)
    if what == "reviews":
        return reviews_table(s, exp)
    return comparison_table(s, exp, **options)


def export(
    experiment: int | str | Experiment,
    what: str = "runs",
    format: str | None = None,
    out: str | os.PathLike[str] | None = None,
    *,
    store: str | os.PathLike[str] | Store | None = None,
    **options: Any,
) -> ExportResult:
    """Write an experiment's runs, grades, reviews or comparison lists to a file.

    - **runs**: one row per run (case × round × arm) with the case fields, arm, round, prediction,
      reason, confidence, evidence, state, failure type, the latest grade of each grader (one column
      per grader, ``grade.<name>``), tokens, cost and latency.
    - **grades**: every grade, older ones included, with its batch id and a ``latest`` flag.
    - **reviews**: every human review with the case and the reviewed answer.
    - **comparison**: the fixed and regressed cases between two arms.
    - **pairwise**: a pairwise judge's contest as one JSON document in the double-blind workflow's
      shape (`pairwise_result`; format ``json`` only; option ``grader=`` names the judge).

    Formats: **csv** is UTF-8 with a byte-order mark (Excel then reads Chinese correctly), and text
    cells beginning with ``= + - @``, a tab or a carriage return get a leading ``'`` so no spreadsheet
    runs them as formulas (numbers stay numbers). **xlsx** has typed cells (numbers, booleans, dates
    in UTC), a bold frozen header with a filter, and text stored as text, never as formulas. **jsonl**
    is lossless: every value as stored, nested values as JSON, the raw rows and full grades included;
    a runs JSONL imports back to the dataset's cases with `RUNS_PROFILE`.

    Args:
        experiment: The experiment: id, ``#id``, name, or an `Experiment`.
        what: One of `EXPORT_KINDS`.
        format: One of `EXPORT_FORMATS`; default: from `out`'s suffix, else csv.
        out: The file to write; default ``<experiment>-<what>.<format>`` in the working folder.
            The file is replaced only once it is complete.
        store: A `Store`, a store folder, or None for $ABBENCH_STORE / ./.abbench.
        **options: For ``comparison``: ``arms=(a, b)`` or ``vs=`` another experiment.

    Example:
        >>> export("routing-v2", "runs", "xlsx", "exports/routing-v2.xlsx")   # doctest: +SKIP
        ExportResult(path=PosixPath('exports/routing-v2.xlsx'), what='runs', format='xlsx', rows=2388, ...)

    Raises:
        UsageError: an unknown `what` or `format` (the message lists the choices), or more rows than
            an XLSX sheet holds.
        NotFoundError: no such experiment.
    """
    started = time.perf_counter()
    if what == "pairwise":
        return _export_pairwise(experiment, format, out, store, options, started)
    fmt = _format(format, out)
    if fmt == "json":
        raise UsageError(f"json is the pairwise export's format; {what} is written as csv, xlsx or jsonl")
    table = export_table(experiment, what, store=store, **options)
    path = Path(out) if out is not None else Path.cwd() / f"{_stem(table.experiment)}-{what}.{fmt}"
    path = path.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    # Write beside the target, then rename: a failed export never leaves half a file behind.
    with atomic_path(path) as tmp:
        if fmt == "csv":
            rows = write_csv(table, tmp)
        elif fmt == "xlsx":
            rows = write_xlsx(table, tmp)
        else:
            rows = write_jsonl(table, tmp)
    columns = tuple(c.name for c in table.columns if fmt == "jsonl" or not c.jsonl_only)
    result = ExportResult(
        path=path,
        what=what,
        format=fmt,
        rows=rows,
        columns=columns,
        size_bytes=path.stat().st_size,
        seconds=time.perf_counter() - started,
        notes=table.notes,
    )
    log.info("exported %d %s of %s to %s", rows, what, table.experiment, path)
    return result


def _export_pairwise(
    experiment: Any, format: str | None, out: Any, store: Any, options: dict[str, Any], started: float
) -> ExportResult:
    """`export(..., "pairwise")`: the contest as one JSON document."""
    if format is not None and format.lower().lstrip(".") != "json":
        raise UsageError(f"the pairwise export is written as json, not {format}")
    unknown = sorted(set(options) - {"grader"})
    if unknown:
        raise UsageError(f"{', '.join(unknown)} do not apply to the pairwise export (only grader=)")
    doc = pairwise_result(experiment, grader=options.get("grader"), store=store)
    name = doc["test_summary"]["task"]
    path = Path(out) if out is not None else Path.cwd() / f"{_stem(name)}-pairwise.json"
    path = path.expanduser()
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        Path(tmp).write_text(json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    return ExportResult(
        path=path,
        what="pairwise",
        format="json",
        rows=len(doc["rounds"]),
        columns=tuple(doc),
        size_bytes=path.stat().st_size,
        seconds=time.perf_counter() - started,
    )


def _format(format: str | None, out: str | os.PathLike[str] | None) -> str:
    if format is None:
        suffix = Path(out).suffix.lower().lstrip(".") if out is not None else ""
        format = {"xls": "xlsx", "json": "jsonl", "ndjson": "jsonl"}.get(suffix, suffix) or "csv"
        # a .json file of a table is JSON lines, as before; only the pairwise export writes one document
        if format not in EXPORT_FORMATS:
            raise UsageError(
                f"cannot tell the format from {str(out)!r}; give format= one of {', '.join(EXPORT_FORMATS)}"
            )
    fmt = format.lower().lstrip(".")
    if fmt not in EXPORT_FORMATS:
        raise UnknownName("export format", format, EXPORT_FORMATS)
    return fmt

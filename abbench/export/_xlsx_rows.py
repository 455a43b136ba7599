"""Sheet rows of a runs XLSX built inside SQLite (`abbench.store.bulk.sheet_rows`).

The store writes each ``<row>`` by the cell markup of `abbench.export._xlsx` (its printf formats made
here from the writer's own cell functions) and hands every cell it cannot write exactly to
`_GeneralCell`, which is the writer's compiled cell with its block clean-up: the rows are byte for
byte what `write_xlsx` writes from the same table (the export tests compare both on every kind of
value).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from abbench.dataset import column_letter
from abbench.export._tables import Column, JsonText
from abbench.export._xlsx import (
    XLSX_MAX_CELL,
    _bool_cell,
    _clean,
    _Dates,
    _number_cell,
    _string_cell,
    cells_writer,
)
from abbench.store import SheetCells, bulk
from abbench.types import OUTCOME_WORDS

if TYPE_CHECKING:
    from abbench.store import Experiment, Store

UNSAFE = "*[&<>\r\x01-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]*"
"""GLOB of the text `_xlsx._text` escapes or `_xlsx._clean` replaces, NUL aside (a GLOB cannot hold
it; SQL tests it apart, as it does Excel's ``_x`` escapes, one of `MARKS`)."""
MARKS = ("&", "<", ">", "_x", "\ufffe", "\uffff")
"""Text `_xlsx._text` escapes or `_xlsx._clean` changes, sought as it is."""


class _GeneralCell:
    """The cell function the store calls for the cells from `n` (of `columns`) of sheet row `row`: a
    value converted as the runs table converts it (verdicts to booleans, JSON text kept as text), then
    the writer's own cells, cleaned as the writer cleans its blocks (only text can need it). A class,
    not a closure, so that an export's worker processes can be handed it (without its compiled cells,
    which each process makes again)."""

    def __init__(self, columns: Sequence[Column], dates: _Dates) -> None:
        self.columns, self.dates = list(columns), dates
        self.kinds = [c.kind for c in columns]
        self.writers: dict[tuple[int, int], Callable[[tuple[Any, ...], int], str]] = {}

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "writers": {}}

    def __call__(self, n: int, row: int, *values: Any) -> str:
        write = self.writers.get((n, len(values)))
        if write is None:
            write = self.writers[n, len(values)] = cells_writer(self.columns, n, len(values), self.dates)
        kind = self.kinds[n]
        if kind in ("bool", "json") and values[0] is not None:
            values = (bool(values[0]) if kind == "bool" else JsonText(values[0]),)
        xml = write(values, row)
        return _clean(xml) if "inlineStr" in xml else xml


def _formats(n: int, column: Column) -> tuple[str, ...]:
    """The printf formats of the cells SQL writes in sheet column `n` (see `SheetCells.formats`)."""
    ref = f"{column_letter(n)}%d"
    if column.kind in ("text", "json"):
        return (_string_cell(ref, "%s"),)
    if column.kind in ("int", "float"):
        return (_number_cell(ref, "%d"),)
    if column.kind == "bool":
        return (_bool_cell(ref, "1"), _bool_cell(ref, "0"))
    return ()


def sheet_cells(columns: Sequence[Column]) -> SheetCells:
    """How the store writes the cells of `columns` (a runs table's spreadsheet columns)."""
    return SheetCells(
        kinds=[c.kind for c in columns],
        formats=[_formats(n, c) for n, c in enumerate(columns)],
        row='<row r="%d">%s</row>',
        unsafe=UNSAFE,
        marks=MARKS,
        max_text=XLSX_MAX_CELL,
        cell=_GeneralCell(columns, _Dates()),
    )


def run_sheet_rows(
    store: Store, exp: Experiment, columns: Sequence[Column], graders: Sequence[tuple[str, str, int]]
) -> Callable[[], Iterator[list[bytes]]]:
    """A function returning the runs sheet's data rows (UTF-8 ``<row>`` elements from row 2), a chunk
    at a time.

    `columns` are the runs table's spreadsheet columns (the run id, experiment and arm first);
    `graders` each grader's ``(name, kind of its first cell, cells)``.
    """

    def rows() -> Iterator[list[bytes]]:
        return bulk.sheet_rows(
            store,
            exp.id,
            exp.dataset_id,
            graders,
            experiment=exp.name,
            cells=sheet_cells(columns),
            outcome_words=OUTCOME_WORDS,
        )

    return rows

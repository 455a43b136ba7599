"""CSV lines of a runs export built inside SQLite (`abbench.store.bulk.csv_lines`).

The store builds each line in C by the rules of `abbench.export.write_csv`'s cells and hands every
cell it cannot write exactly (values of an unexpected type, text holding a NUL) to `_GeneralCell`
here, which is the Python writer's own rule: the lines are byte for byte what the Python writer
writes from the same table (the export tests compare both on every kind of value).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, BinaryIO

from abbench.export._tables import Column, JsonText
from abbench.export._writers import _text_cell
from abbench.store import bulk, mark_line
from abbench.types import OUTCOME_WORDS

if TYPE_CHECKING:
    from abbench.store import Experiment, Store

_QUOTED = frozenset(',"\r\n')


def csv_field(text: str) -> str:
    """`text` as the csv module's excel dialect writes a field: quoted, quotes doubled, when it holds
    a comma, a quote or a line break."""
    if _QUOTED.isdisjoint(text):
        return text
    return '"' + text.replace('"', '""') + '"'


class _GeneralCell:
    """The cell function the store calls for cell `n` (of `columns`) of a line: the value converted
    as the runs table converts it (verdicts to booleans, JSON text kept as text), then `_text_cell`.
    A class, not a closure, so that an export's worker processes can be handed it."""

    def __init__(self, columns: Sequence[Column]) -> None:
        self.columns = list(columns)
        self.kinds = [c.kind for c in columns]

    def __call__(self, n: int, value: Any) -> str:
        kind = self.kinds[n]
        if value is not None and kind == "bool":
            value = bool(value)
        elif value is not None and kind == "json":
            value = JsonText(value)
        return mark_line(csv_field(_text_cell(self.columns[n], value)))


def run_csv_lines(
    store: Store, exp: Experiment, columns: Sequence[Column], graders: Sequence[tuple[str, str, int]]
) -> Callable[..., Iterator[tuple[bytes, int]]]:
    """A function returning the runs CSV's data lines, ``(UTF-8 lines each ended by CRLF, how many)`` a
    chunk at a time; given the binary file they go to, worker processes may write them into it
    themselves (see `abbench.store.bulk.csv_lines`).

    `columns` are the runs table's spreadsheet columns (the run id, experiment and arm first);
    `graders` each grader's ``(name, kind of its first cell, cells)``.
    """
    experiment = csv_field(_text_cell(columns[1], exp.name))

    def head(arm: str) -> str:
        return experiment + "," + csv_field(_text_cell(columns[2], arm))

    def lines(out: BinaryIO | None = None) -> Iterator[tuple[bytes, int]]:
        return bulk.csv_lines(
            store,
            exp.id,
            exp.dataset_id,
            graders,
            head=head,
            cell=_GeneralCell(columns[3:]),
            outcome_words=OUTCOME_WORDS,
            out=out,
        )

    return lines

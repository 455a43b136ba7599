"""CSV lines of a runs export built inside SQLite (`abbench.store.Store.export_run_csv_lines`).

The store builds each line in C by the rules of `abbench.export.write_csv`'s cells and hands every
cell it cannot write exactly (most floats, zeros, values of an unexpected type) to `_general_cell`
here, which is the Python writer's own rule: the lines are byte for byte what the Python writer
writes from the same table (the export tests compare both on every kind of value).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from abbench.export._tables import Column, JsonText
from abbench.export._writers import _text_cell
from abbench.types import OUTCOME_WORDS

if TYPE_CHECKING:
    from abbench.store import Experiment, Store

_QUOTED = frozenset(',"\r\n')
MARK = "\ufffe"
"""SQLite's printf ends its text at a NUL: a cell from `_general_cell` writes NUL as MARK + "0" (and
MARK itself as MARK + "1", so the marks can be undone exactly); `unmark` gives the text back."""
_MARKED = re.compile(MARK + "([01])")


def unmark(text: str) -> str:
    """`text` with the marks of `_general_cell` undone (NUL and MARK as they were)."""
    if MARK not in text:
        return text
    return _MARKED.sub(lambda m: "\x00" if m[1] == "0" else MARK, text)


def csv_field(text: str) -> str:
    """`text` as the csv module's excel dialect writes a field: quoted, quotes doubled, when it holds
    a comma, a quote or a line break."""
    if _QUOTED.isdisjoint(text):
        return text
    return '"' + text.replace('"', '""') + '"'


def _general_cell(columns: Sequence[Column]) -> Callable[[int, Any], str]:
    """The cell function the store calls for cell `n` (of `columns`) of a line: the value converted
    as the runs table converts it (verdicts to booleans, JSON text kept as text), then `_text_cell`."""

    kinds = [c.kind for c in columns]

    def cell(n: int, value: Any) -> str:
        kind = kinds[n]
        if type(value) is float and kind not in ("bool", "json"):  # the common call: a float cell
            return repr(value) if value - value == 0 else ""
        if value is not None and kind == "bool":
            value = bool(value)
        elif value is not None and kind == "json":
            value = JsonText(value)
        text = csv_field(_text_cell(columns[n], value))
        if "\x00" in text or MARK in text:
            text = text.replace(MARK, MARK + "1").replace("\x00", MARK + "0")
        return text

    return cell


def run_csv_lines(
    store: Store, exp: Experiment, columns: Sequence[Column], graders: Sequence[tuple[str, str, int]]
) -> Callable[[], Iterator[list[str]]]:
    """A function returning the runs CSV's data lines (no line ends), a chunk at a time.

    `columns` are the runs table's spreadsheet columns (the run id, experiment and arm first);
    `graders` each grader's ``(name, kind of its first cell, cells)``.
    """
    experiment = csv_field(_text_cell(columns[1], exp.name))

    def head(arm: str) -> str:
        return experiment + "," + csv_field(_text_cell(columns[2], arm))

    def lines() -> Iterator[list[str]]:
        return store.export_run_csv_lines(
            exp.id,
            exp.dataset_id,
            graders,
            head=head,
            cell=_general_cell(columns[3:]),
            outcome_words=OUTCOME_WORDS,
        )

    return lines

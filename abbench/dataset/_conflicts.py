"""Label conflicts: cases an agent is shown alike with different gold labels, as facts each view words.

`abbench.store.Datasets.label_conflicts` finds them; a conflict carries its rows, labels, what tells the
rows apart that no prompt shows, and what to do, as fields (as click's ``NoSuchOption`` carries the
option and its possibilities), so a view formats them and never reads them back out of the message.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from abbench._result import Result
from abbench.dataset._validate import Problem

REVIEW_HINT = "review the gold labels"
"""What to do about a conflict whose rows differ in nothing but their labels."""
CONTEXT_HINT = (
    "if that tells the cases apart, map it to context (fields: context: <column>) so the agent sees it"
)
"""What to do about a conflict whose rows differ in something no prompt shows (metadata, the domain)."""


@dataclass(frozen=True, slots=True)
class ConflictRow(Result):
    """One row of a label conflict.

    Attributes:
        location: Where it sits in its file (``line 12``), or its place in a dataset saved from Python
            (``case #3``).
        case_id: Its case id.
    """

    location: str
    case_id: str


@dataclass(frozen=True, slots=True)
class ConflictLabel(Result):
    """One gold label of a label conflict, with the rows that hold it.

    Attributes:
        label: The gold label.
        rows: The first rows holding it, in file order (at most `LabelConflict.ROWS_KEPT`).
        n_rows: How many rows of the conflict hold it (all of them, also those not kept in `rows`).
    """

    label: str
    rows: tuple[ConflictRow, ...]
    n_rows: int


@dataclass(frozen=True, slots=True, kw_only=True)
class LabelConflict(Problem):
    """A `Problem` of kind ``conflicting_labels``: alike cases (same input, history and context) whose
    gold labels differ. `location`, `case_id` and `value` are its first row's; `message` words the
    fields below, which views format themselves.

    Attributes:
        labels: The first labels, in file order of their first rows (at most `LABELS_KEPT`).
        n_labels: How many labels the conflict holds (all of them).
        source_file: The file the rows were imported from, when there is one.
        hidden_metadata: The metadata keys whose values tell the rows apart (no prompt shows them).
        hidden_domain: True when the rows' domains differ (no prompt shows it).
        hint: What to do about it: `CONTEXT_HINT` when something hidden tells the rows apart, else
            `REVIEW_HINT`.
    """

    LABELS_KEPT = 4
    ROWS_KEPT = 3

    labels: tuple[ConflictLabel, ...] = ()
    n_labels: int = 0
    source_file: str | None = None
    hidden_metadata: tuple[str, ...] = ()
    hidden_domain: bool = False
    hint: str = REVIEW_HINT

    @classmethod
    def of(
        cls,
        input: str,
        labels: Iterable[tuple[str, list[ConflictRow]]],
        *,
        source_file: str | None = None,
        hidden_metadata: Iterable[str] = (),
        hidden_domain: bool = False,
    ) -> LabelConflict:
        """The conflict of rows showing `input`: each label with all its rows, in file order."""
        held = list(labels)
        kept = tuple(
            ConflictLabel(label, tuple(rows[: cls.ROWS_KEPT]), len(rows))
            for label, rows in held[: cls.LABELS_KEPT]
        )
        keys = tuple(hidden_metadata)
        hint = CONTEXT_HINT if keys or hidden_domain else REVIEW_HINT
        first = kept[0].rows[0]
        return cls(
            "conflicting_labels",
            first.location,
            "expected",
            input,
            _message(kept, len(held), source_file, keys, hidden_domain, hint),
            severity="warning",
            case_id=first.case_id,
            labels=kept,
            n_labels=len(held),
            source_file=source_file,
            hidden_metadata=keys,
            hidden_domain=hidden_domain,
            hint=hint,
        )

    @property
    def rows_text(self) -> str:
        """``'a' at line 2 (case c1); 'b' at line 3 (case c2) of file.csv``: each label with its rows."""
        return _rows_text(self.labels, self.n_labels, self.source_file)

    @property
    def hidden(self) -> str:
        """What tells the rows apart that no prompt shows, in words (``metadata 'aspect'``), or ""."""
        return hidden_words(self.hidden_metadata, self.hidden_domain)


def hidden_words(metadata_keys: tuple[str, ...], domain: bool) -> str:
    """``metadata 'a', 'b' and domain``: what differs between a conflict's rows that no prompt shows."""
    what = [f"metadata {', '.join(repr(k) for k in metadata_keys[:5])}"] if metadata_keys else []
    if domain:
        what.append("domain")
    return " and ".join(what)


def _rows_text(labels: tuple[ConflictLabel, ...], n_labels: int, source_file: str | None) -> str:
    parts = []
    for held in labels:
        shown = ", ".join(f"{r.location} (case {r.case_id})" for r in held.rows)
        more = f" and {held.n_rows - len(held.rows)} more rows" if held.n_rows > len(held.rows) else ""
        parts.append(f"{held.label!r} at {shown}{more}")
    if n_labels > len(labels):
        parts.append(f"and {n_labels - len(labels)} more labels")
    return "; ".join(parts) + (f" of {source_file}" if source_file else "")


def _message(
    labels: tuple[ConflictLabel, ...],
    n_labels: int,
    source_file: str | None,
    hidden_metadata: tuple[str, ...],
    hidden_domain: bool,
    hint: str,
) -> str:
    hidden = hidden_words(hidden_metadata, hidden_domain)
    said = f". They differ only in {hidden}, which the agent's prompt does not show: {hint}" if hidden else ""
    return (
        "the same input, history and context have different expected labels: "
        f"{_rows_text(labels, n_labels, source_file)}; {REVIEW_HINT}{said}"
    )


class LabelConflicts(list[LabelConflict]):
    """The first label conflicts of a dataset, in file order of their first rows, and how many there are.

    A list (what `label_conflicts` returns) with the facts a view needs beside it.

    Attributes:
        total: How many conflicts the dataset holds (also those beyond `limit`).
        limit: At most how many were kept.
    """

    __slots__ = ("limit", "total")

    def __init__(self, conflicts: Iterable[LabelConflict] = (), *, total: int = 0, limit: int = 0) -> None:
        super().__init__(conflicts)
        self.total = max(total, len(self))
        self.limit = limit

    @property
    def more(self) -> int:
        """How many conflicts were not kept."""
        return self.total - len(self)

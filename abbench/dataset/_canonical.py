"""The canonical encoding of cases, the dataset content hash and fingerprint, and generated case ids.

The canonical form of a case is the JSON object of its `CASE_FIELDS` (never its source row or where
it sat in the file) with sorted keys, no insignificant whitespace, non-ASCII kept as UTF-8 (not
``\\u`` escapes), and ``null`` for absent fields (but ``expected_skill``, left out when absent, so that datasets without it
keep their fingerprints). The content hash is the sha256 of the canonical
lines of every case in dataset order, each followed by ``\\n``. Two files holding the same cases —
a CSV and an XLSX with different column names, say — therefore hash the same; one changed character
in any case field changes the hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from json.encoder import encode_basestring as _enc  # the C string encoder json.dumps uses (non-ASCII kept)
from typing import Any

from abbench.types import Case


def canonical_json(value: Any) -> str:
    """`value` as canonical JSON: sorted keys, compact separators, non-ASCII kept as is."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def _str(value: str | None) -> str:
    return "null" if value is None else _enc(value)


def case_line(
    case_id: str,
    input: str,
    expected: str | None,
    history_json: str | None,
    context_json: str | None,
    domain: str | None,
    request_id: str | None,
    metadata_json: str | None,
    expected_skill: str | None = None,
) -> str:
    """The canonical line of one case, from its text fields and the canonical JSON of its JSON fields.

    Equal to ``canonical_json(case.canonical())``, built without a dict because it runs for every row
    of every import.
    """
    return (
        '{"case_id":'
        + _enc(case_id)
        + ',"context":'
        + (context_json or "null")
        + ',"domain":'
        + _str(domain)
        + ',"expected":'
        + _str(expected)
        + ("" if expected_skill is None else ',"expected_skill":' + _enc(expected_skill))
        + ',"history":'
        + (history_json or "null")
        + ',"input":'
        + _enc(input)
        + ',"metadata":'
        + (metadata_json or "null")
        + ',"request_id":'
        + _str(request_id)
        + "}"
    )


class ContentHasher:
    """Accumulates the content hash of a dataset, one case (or canonical line) at a time, in order."""

    __slots__ = ("_sha",)

    def __init__(self) -> None:
        self._sha = hashlib.sha256()

    def add_lines(self, lines: Iterable[str]) -> None:
        """Add canonical lines (see `case_line`)."""
        lines = lines if isinstance(lines, list) else list(lines)
        if not lines:
            return
        text = "\n".join(lines) + "\n"
        # surrogatepass: a lone surrogate read from a JSON file must hash, not crash the import.
        self._sha.update(text.encode("utf-8", "surrogatepass"))

    def add_case(self, case: Case) -> None:
        """Add one case."""
        self.add_lines([canonical_json(case.canonical())])

    def hexdigest(self) -> str:
        """The sha256 (hex) of everything added so far."""
        return self._sha.hexdigest()


def content_hash(cases: Iterable[Case]) -> str:
    """The sha256 (hex) over the canonical lines of `cases`, in order."""
    hasher = ContentHasher()
    hasher.add_lines(canonical_json(case.canonical()) for case in cases)
    return hasher.hexdigest()


def fingerprint(name: str, content_hash: str) -> str:
    """``name@<first 12 hex of the content hash>``, the identity people use for a dataset."""
    return f"{name}@{content_hash[:12]}"


def generated_case_id(input: str, history_json: str | None = None, context_json: str | None = None) -> str:
    """A stable id for a case whose file has none: 12 hex of BLAKE2b over what the agent is shown.

    Only the input, history and context count, so correcting a gold label keeps the case's id.
    Identical cases are told apart by the importer with ``-2``, ``-3``... in file order.
    """
    key = (
        input
        if history_json is None and context_json is None
        else f"{input}\x1e{history_json}\x1e{context_json}"
    )
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def unpack_source_row(stored: Any, columns: tuple[str, ...] | list[str] | None) -> Any:
    """A stored source row as the user sees it: a table row's cells back under their column names."""
    if columns is not None and isinstance(stored, list):
        return dict(zip(columns, stored, strict=False))
    return stored

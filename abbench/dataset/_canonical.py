"""The canonical encoding of cases, the dataset content hash and fingerprint, and generated case ids.

The canonical form of a case is the JSON object of its `CASE_FIELDS` (never its source row or where
it sat in the file) with sorted keys, no insignificant whitespace, non-ASCII kept as UTF-8 (not
``\\u`` escapes), and ``null`` for absent fields (but ``expected_skill``, left out when absent, so that datasets without it
keep their fingerprints). The content hash is the sha256 of the canonical
lines of every case in dataset order, each followed by ``\\n``, where the hash reads a number or
boolean as the text that writes it wherever no agent is shown the difference (`hash_line`): anywhere
in ``metadata``, and as the whole ``context`` or ``history``. A CSV cell is text, ``1``, where a
workbook cell or a JSON value is the number ``1``. Two files holding the same cases — a CSV and an
XLSX with different column names, say — therefore hash the same; one changed character in any case
field changes the hash.

Datasets stored before that reading keep the fingerprints they were given (experiments, reports,
exports and access grants cite them): `ContentHasher.earlier_hexdigest` is the hash under the earlier
rule, by which an import finds them again; worked out only when the cases hold a number it reads
otherwise and a stored dataset could carry it.
"""

from __future__ import annotations

import hashlib
import json
import re
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


# In a canonical line (compact JSON, text fields quoted) a number or boolean value follows `:`, `[` or
# `,` at once; so does a `:1` inside a text ("10:30"), which only costs that line a parse.
_SCALAR_VALUE = re.compile(r"[:\[,][-0-9tf]")


def _as_text(value: Any) -> Any:
    """`value` with every number and boolean inside it as text: what a CSV cell holding it reads as."""
    t = type(value)
    if t is dict:
        return {k: _as_text(v) for k, v in value.items()}
    if t is list:
        return [_as_text(v) for v in value]
    if t is bool:
        return "true" if value else "false"
    if t is int:
        return str(value)
    if t is float:  # as `text_of` writes a cell: 1.0 is "1", 0.5 is "0.5"
        return str(int(value)) if value.is_integer() else repr(value)
    return value


def _scalar_as_text(value: Any) -> Any:
    """A context or history that is one number or boolean as its text (the prompt shows it so); any
    other value as it is: inside an object or a list, an agent is shown `1` and `"1"` apart."""
    return _as_text(value) if type(value) in (bool, int, float) else value


def hash_line(line: str) -> str:
    """A canonical line (see `case_line`) as the content hash reads it: a number or boolean written as
    text, as `text_of` writes a cell (``1`` and ``1.0`` as ``"1"``, ``0.5`` as ``"0.5"``, ``true`` as
    ``"true"``), anywhere in its metadata (which no agent sees) and as its whole context or history
    (which a prompt shows as that text). Texts stay as written: ``"01"`` and ``"1.50"`` are not ``1``.

    The plain path, which parses the whole line; an import's `Mapper` hashes each JSON field's text
    alone (`hash_json`) and must give the same lines.
    """
    if _SCALAR_VALUE.search(line) is None:
        return line
    case = json.loads(line)
    case["metadata"] = _as_text(case["metadata"])
    case["context"] = _scalar_as_text(case["context"])
    case["history"] = _scalar_as_text(case["history"])
    return canonical_json(case)


_SCALAR_START = frozenset("-0123456789tf")
# A JSON text as its tokens that matter here: a string (skipped whole, escapes and all), or a number or
# boolean (group 1). `null` and punctuation are left where they are.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|(-?[0-9][-+.eE0-9]*|true|false)')


def _token_as_text(match: re.Match[str]) -> str:
    token = match.group(1)
    if token is None:
        return match.group(0)
    if token[0] in "tf" or token.lstrip("-").isdigit():  # a boolean or an integer: its text as written
        return f'"{token}"'
    number = float(token)
    return f'"{str(int(number)) if number.is_integer() else repr(number)}"'


def hash_json(text: str) -> str:
    """The canonical JSON `text` of a metadata value, or of a context or history that is one number or
    boolean, as the content hash reads it (see `hash_line`): the same text when it holds none.

    Rewrites the numbers and booleans in place, a token at a time, without parsing the value: equal
    to ``canonical_json(_as_text(json.loads(text)))`` (a property test holds them together).
    """
    if text[:1] not in _SCALAR_START and _SCALAR_VALUE.search(text) is None:
        return text
    return _TOKEN.sub(_token_as_text, text)


class ContentHasher:
    """Accumulates the content hash of a dataset, one case (or canonical line) at a time, in order.

    `hexdigest` is the content hash; `earlier_hexdigest` the hash of the same lines read as stored
    (numbers as numbers), which datasets imported before `hash_line` existed carry. That one is the
    content hash itself unless some line holds a number the rule rewrites (`earlier_differs`); only then
    is it worked out, from the lines given again (a second pass), and only by a caller that needs it:
    every line used to be hashed twice for a hash nearly no import looks up.
    """

    __slots__ = ("_differs", "_sha")

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self._differs = False

    def add_lines(self, lines: Iterable[str], hashed: list[str] | None = None) -> None:
        """Add canonical lines (see `case_line`), and `hashed`, the same lines as `hash_line` gives them,
        when the caller has them (an import's `Mapper` makes them a field at a time, without a parse;
        `lines` itself when it knows that none changes)."""
        lines = lines if isinstance(lines, list) else list(lines)
        if not lines:
            return
        text = "\n".join(lines) + "\n"
        if hashed is lines:
            read = text
        elif hashed is not None:
            read = "\n".join(hashed) + "\n"
        elif _SCALAR_VALUE.search(text) is not None:  # one search spares the lines that hold no number
            read = "\n".join(map(hash_line, lines)) + "\n"
        else:
            read = text
        if not self._differs and read != text:
            self._differs = True
        # surrogatepass: a lone surrogate read from a JSON file must hash, not crash the import.
        self._sha.update(read.encode("utf-8", "surrogatepass"))

    def add_case(self, case: Case) -> None:
        """Add one case."""
        self.add_lines([canonical_json(case.canonical())])

    def hexdigest(self) -> str:
        """The content hash (sha256, hex) of everything added so far."""
        return self._sha.hexdigest()

    @property
    def earlier_differs(self) -> bool:
        """True when the hash under the earlier rule differs from `hexdigest`: some line added holds a
        number or boolean that the content hash reads as text."""
        return self._differs

    def earlier_hexdigest(self, lines: Iterable[str] | None = None) -> str:
        """The hash under the earlier rule (numbers hashed as stored): how an import finds a dataset
        stored before the rule changed.

        It is `hexdigest` when the cases hold no number or boolean the rule rewrites; otherwise it is
        the sha256 of the canonical `lines` of every case added, in order, given again (a second pass).

        Raises:
            ValueError: the earlier hash differs and no `lines` were given.
        """
        if not self._differs:
            return self.hexdigest()
        if lines is None:
            raise ValueError("the earlier hash of lines holding numbers needs those lines again: pass lines=")
        sha = hashlib.sha256()
        batch: list[str] = []
        for line in lines:
            batch.append(line)
            if len(batch) == 4096:
                sha.update(("\n".join(batch) + "\n").encode("utf-8", "surrogatepass"))
                batch.clear()
        if batch:
            sha.update(("\n".join(batch) + "\n").encode("utf-8", "surrogatepass"))
        return sha.hexdigest()


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

"""Defences against hostile files: JSON nested too deep to parse, NaN, integers of thousands of digits,
lone UTF-16 surrogates, NUL bytes in text. Each becomes an error that says where, never a traceback."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from abbench.errors import ImportFailed

_JSON_TOKENS = re.compile(r'"(?:\\.|[^"\\])*"|[\[\]{}]')
DEPTH_SHOWN = 500
_CONSTANT = re.compile(r'"(?:\\.|[^"\\])*"|(-?Infinity|NaN)')
_LONG_INT = re.compile(r"\d{4000,}")
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")


class _NotStandardJson(ValueError):
    """Raised by the decoder for NaN and Infinity, which JSON does not have."""


def _refuse_constant(name: str) -> Any:
    raise _NotStandardJson(name)


_DECODER = json.JSONDecoder(parse_constant=_refuse_constant)
decode_json = _DECODER.decode
"""`json.loads` that refuses NaN and Infinity (Python writes them; no other JSON reader takes them)."""


def _offset_of(text: str, pattern: re.Pattern[str], group: int = 0) -> int:
    for m in pattern.finditer(text):
        if m.group(group):
            return m.start(group)
    return 0


def json_problem(text: str, exc: BaseException) -> tuple[int, str] | None:
    """Where and why JSON text that raised `exc` while parsing cannot be read: ``(offset, why)``.

    Covers what `json.JSONDecodeError` does not: nesting deeper than the parser goes, NaN/Infinity,
    integers too long to convert. None for any other error.
    """
    if isinstance(exc, RecursionError):
        depth = deepest = 0
        where = None
        for m in _JSON_TOKENS.finditer(text):
            tok = m.group()
            if tok in "[{":
                depth += 1
                if depth > deepest:
                    deepest = depth
                    if depth == DEPTH_SHOWN + 1:
                        where = m.start()
            elif tok in "]}":
                depth -= 1
        return where or 0, (
            f"the JSON is nested {deepest:,} levels deep (it passes {DEPTH_SHOWN} here), deeper than it can be "
            "read; rows are objects or arrays a few levels deep — check how the file was made"
        )
    if isinstance(exc, _NotStandardJson):
        return _offset_of(text, _CONSTANT, 1), (
            f"{exc} is not JSON (Python writes it for a missing or infinite number); write null or a number"
        )
    if isinstance(exc, ValueError) and "digits" in str(exc):
        return _offset_of(text, _LONG_INT), "a number with thousands of digits; write it as a text (quoted)"
    return None


def _line_col(text: str, offset: int) -> tuple[int, int]:
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


def json_loads(text: str, name: str, line: int | None = None) -> Any:
    """Parse JSON text; what `json_problem` covers becomes an `ImportFailed` saying where.

    Raises:
        json.JSONDecodeError: the text is not JSON.
        ImportFailed: nested too deep, NaN/Infinity, or an integer too long (with line and column).
    """
    try:
        return decode_json(text)
    except json.JSONDecodeError:
        raise
    except (RecursionError, ValueError) as exc:
        found = json_problem(text, exc)
        if found is None:
            raise
        offset, why = found
        row, col = _line_col(text, offset)
        raise ImportFailed(f"{name}, line {line or row}, column {col}: {why}") from None


def dumps_short(value: Any) -> str:
    """A row as JSON text for a problem report (escaped, so any string survives)."""
    return json.dumps(value)[:200]


def lone_surrogate(value: Any) -> str | None:
    """The first string in `value` holding half a UTF-16 pair (``"\\ud800"``), which no UTF-8 text can
    hold; None when there is none."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            found = lone_surrogate(k) or lone_surrogate(v)
            if found is not None:
                return found
    elif isinstance(value, list):
        for v in value:
            found = lone_surrogate(v)
            if found is not None:
                return found
    return None


def surrogate_message(text: str) -> str:
    bad = next((c for c in text if "\ud800" <= c <= "\udfff"), "")
    return (
        f"a string holds \\u{ord(bad):04x} alone, half of a UTF-16 surrogate pair, which no UTF-8 text can "
        "hold; fix the escape (a pair such as \\ud83d\\ude00 is fine)"
    )


_NUL_BLOCK = 1 << 20


def check_no_nul(path: Path) -> None:
    """Refuse a text file holding a NUL byte: no CSV holds one, and the csv module reads it into a cell.

    Raises:
        ImportFailed: with the line and column of the first NUL.
    """
    line = 1
    last_newline = -1
    offset = 0
    with path.open("rb") as fh:
        while block := fh.read(_NUL_BLOCK):
            at = block.find(b"\x00")
            if at < 0:
                line += block.count(b"\n")
                nl = block.rfind(b"\n")
                if nl >= 0:
                    last_newline = offset + nl
                offset += len(block)
                continue
            line += block.count(b"\n", 0, at)
            nl = block.rfind(b"\n", 0, at)
            if nl >= 0:
                last_newline = offset + nl
            col = offset + at - last_newline
            raise ImportFailed(
                f"{path.name}, line {line}, column {col}: a NUL byte (\\x00), which no text file holds; the file "
                "is binary, cut off mid-write, or UTF-16 without a byte order mark (then give --encoding utf-16-le)"
            )

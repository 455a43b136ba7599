"""JSON Lines and JSON documents: rows (objects or arrays), the keys seen, named splits."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from abbench.dataset._formats import KEY_SAMPLE, OpenedFile, RowChunk
from abbench.dataset._hostile import (
    SURROGATE_ESCAPE,
    decode_json,
    dumps_short,
    json_loads,
    json_problem,
    lone_surrogate,
    surrogate_message,
)
from abbench.dataset._profile import ReadSpec
from abbench.dataset._text import Encoding, decode_error, detect_encoding
from abbench.errors import ImportFailed, UsageError


def open_jsonl(path: Path, read: ReadSpec) -> OpenedFile:
    """Inspect a JSON Lines file (in `read`'s encoding): the keys of its first rows; a first line that is not JSON is refused."""
    enc = detect_encoding(path, read.encoding)
    keys: dict[str, None] = {}
    try:
        _sample_jsonl(path, enc, keys)
    except UnicodeDecodeError:
        raise decode_error(path, enc) from None

    def chunks(size: int, keep_blank: bool = False) -> Iterator[RowChunk]:
        try:
            yield from _jsonl_chunks(path, enc, size)
        except UnicodeDecodeError:
            raise decode_error(path, enc) from None

    options = {"format": "jsonl", "encoding": enc.codec, "encoding_detected": enc.how}
    return OpenedFile("jsonl", tuple(keys), False, chunks, options)


def _sample_jsonl(path: Path, enc: Encoding, keys: dict[str, None]) -> None:
    """Collect the keys of the first rows; refuse a file whose first line is not JSON."""
    seen = 0
    with path.open(encoding=enc.codec) as fh:
        for number, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                row = json_loads(line, path.name, number)
            except ImportFailed:
                if seen == 0:
                    raise
                continue
            except json.JSONDecodeError as exc:
                if seen == 0:
                    hint = (
                        " — this looks like one JSON document, not JSON Lines; name the file .json"
                        if line.strip() in ("[", "{") or line.lstrip().startswith(("[{", "[\n"))
                        else ""
                    )
                    raise ImportFailed(
                        f"{path.name}, line {number}, column {exc.colno}: not JSON ({exc.msg}){hint}"
                    ) from None
                continue
            seen += 1
            _collect_keys(row, keys)
            if seen >= KEY_SAMPLE:
                break


def _jsonl_chunks(path: Path, enc: Encoding, size: int) -> Iterator[RowChunk]:
    loads = decode_json
    surrogate = SURROGATE_ESCAPE.search
    with path.open(encoding=enc.codec) as fh:
        rows: list[Any] = []
        locs: list[str] = []
        bad: list[tuple[str, str, Any]] = []
        for number, line in enumerate(fh, start=1):
            try:
                row = loads(line)
            except json.JSONDecodeError as exc:
                if not line.strip():
                    continue
                bad.append(
                    (
                        f"line {number}",
                        f"column {exc.colno}: not valid JSON ({exc.msg})",
                        line.rstrip("\r\n"),
                    )
                )
                continue
            except (RecursionError, ValueError) as exc:
                found = json_problem(line, exc)
                if found is None:
                    raise
                bad.append(
                    (f"line {number}", f"column {found[0] + 1}: {found[1]}", line[:200].rstrip("\r\n"))
                )
                continue
            if surrogate(line) is not None and (text := lone_surrogate(row)) is not None:
                bad.append((f"line {number}", surrogate_message(text), line[:200].rstrip("\r\n")))
                continue
            rows.append(row)
            locs.append(f"line {number}")
            if len(rows) >= size:
                yield RowChunk(rows, locs, None, bad)
                rows, locs, bad = [], [], []
        if rows or bad:
            yield RowChunk(rows, locs, None, bad)


def _collect_keys(row: Any, keys: dict[str, None]) -> None:
    if isinstance(row, dict):
        for k in row:
            keys.setdefault(str(k), None)
    elif isinstance(row, list):
        for i in range(len(row)):
            keys.setdefault(str(i), None)


def open_json(path: Path, read: ReadSpec, splits: Sequence[str] | None = None) -> OpenedFile:
    """Read a JSON document (in `read`'s encoding): an array of rows, or an object whose list values are named splits."""
    enc = detect_encoding(path, read.encoding)
    try:
        text = path.read_text(encoding=enc.codec)
    except UnicodeDecodeError:
        raise decode_error(path, enc) from None
    try:
        doc = json_loads(text, path.name)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data" and _first_line_is_json(text):
            source = open_jsonl(path, read)
            source.notes.append(f"{path.name} holds one JSON value per line; it is read as JSON Lines")
            return source
        raise ImportFailed(
            f"{path.name}, line {exc.lineno}, column {exc.colno}: not valid JSON ({exc.msg})"
        ) from None
    parts, document = _parts(path, doc)
    chosen = _chosen_splits(path, parts, splits)
    keys: dict[str, None] = {}
    for part in chosen:
        for row in parts[part][:KEY_SAMPLE]:
            _collect_keys(row, keys)
    check_surrogates = SURROGATE_ESCAPE.search(text) is not None
    del text
    available = tuple(k for k in parts if k is not None)
    options: dict[str, Any] = {"format": "json", "encoding": enc.codec, "encoding_detected": enc.how}
    if available:
        options["splits"] = [p for p in chosen if p is not None]
    return OpenedFile(
        "json",
        tuple(keys),
        False,
        partial(_json_chunks, parts, chosen, check_surrogates),
        options,
        splits=available,
        split_sizes={k: len(v) for k, v in parts.items() if k is not None},
        document=document,
        root=doc if isinstance(doc, dict) else None,
    )


def _first_line_is_json(text: str) -> bool:
    """Whether the first line alone parses: a JSON Lines file named .json."""
    try:
        decode_json(text.lstrip().split("\n", 1)[0])
    except (ValueError, RecursionError):
        return False
    return True


def _parts(path: Path, doc: Any) -> tuple[dict[str | None, list[Any]], dict[str, Any]]:
    """The lists of rows (``None``: the document is the one list) and the document's other top values.

    An object whose values hold no list is searched below, as Rasa NLU's
    ``{"rasa_nlu_data": {"common_examples": [...]}}`` is: each list found is a split named by its path.
    """
    if isinstance(doc, list):
        return {None: doc}, {}
    if isinstance(doc, dict):
        parts: dict[str | None, list[Any]] = {k: v for k, v in doc.items() if isinstance(v, list)}
        if parts:
            return parts, {k: v for k, v in doc.items() if not isinstance(v, list)}
        parts = dict(_nested_lists(doc, "", NESTED_DEPTH))
        if not parts:
            raise ImportFailed(
                f"{path.name} is a JSON object without any list in it (searched {NESTED_DEPTH} levels "
                "down); expected an array of rows, or an object whose values are lists of rows "
                "(named splits such as train/test)"
            )
        return parts, {k: v for k, v in doc.items() if not isinstance(v, dict)}
    raise ImportFailed(f"{path.name} holds a single {type(doc).__name__}; expected an array of rows")


NESTED_DEPTH = 4


def _nested_lists(node: dict[str, Any], prefix: str, depth: int) -> Iterator[tuple[str, list[Any]]]:
    """The lists inside an object's nested objects, named by their dotted path (``a.b``)."""
    if depth <= 0:
        return
    for key, value in node.items():
        name = f"{prefix}{key}"
        if isinstance(value, list):
            yield name, value
        elif isinstance(value, dict):
            yield from _nested_lists(value, f"{name}.", depth - 1)


def _chosen_splits(
    path: Path, parts: dict[str | None, list[Any]], splits: Sequence[str] | None
) -> list[str | None]:
    """The splits to read: those asked for (each must exist), else all."""
    if not splits:
        return list(parts)
    missing = [s for s in splits if s not in parts]
    if missing:
        sizes = ", ".join(f"{k} ({len(v)})" for k, v in parts.items() if k is not None) or "none"
        raise UsageError(f"{path.name} has no split {', '.join(map(repr, missing))}; its splits: {sizes}")
    return list(splits)


def _json_chunks(
    parts: dict[str | None, list[Any]],
    chosen: list[str | None],
    check_surrogates: bool,
    size: int,
    keep_blank: bool = False,
) -> Iterator[RowChunk]:
    """The chosen splits' rows, `size` at a time; a row holding half a surrogate pair is unreadable."""
    for part in chosen:
        items = parts[part]
        prefix = "item #" if part is None else f"split {part} #"
        for start in range(0, len(items), size):
            rows = items[start : start + size]
            locs = [f"{prefix}{i}" for i in range(start + 1, start + len(rows) + 1)]
            if check_surrogates:
                # Half a surrogate pair cannot be stored as UTF-8: such a row is unreadable.
                found = [(k, lone_surrogate(r)) for k, r in enumerate(rows)]
                bad = [
                    (locs[k], surrogate_message(t), dumps_short(rows[k])) for k, t in found if t is not None
                ]
                if bad:
                    keep = [k for k, t in found if t is None]
                    yield RowChunk([rows[k] for k in keep], [locs[k] for k in keep], part, bad)
                    continue
            yield RowChunk(rows, locs, part)

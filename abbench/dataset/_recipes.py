"""Recipes for files that are not one row per case: intent blocks, skill-creator evals, eval-tool formats.

A recipe reshapes the rows of a file into one JSON object per case and brings a default mapping over
those objects. The raw row each case came from is kept as its source row.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from abbench.dataset._dialogues import CONVERSATION_COLUMNS, conversation_chunks, settle
from abbench.dataset._formats import RowChunk
from abbench.dataset._profile import MappingProfile
from abbench.dataset._readers import Table
from abbench.errors import ImportFailed, UsageError
from abbench.types import NO_SKILL


@dataclass(frozen=True)
class RowStream:
    """Rows ready for a mapping: what a table yields directly, or what a recipe made of it.

    Attributes:
        columns: Column names (table rows) or the keys the rows have (JSON rows).
        tabular: True when rows are lists aligned with `columns`.
        chunks: ``chunks(size)`` streams `RowChunk`s from the start.
    """

    columns: tuple[str, ...]
    tabular: bool
    chunks: Callable[[int], Iterator[RowChunk]]


def table_stream(table: Table) -> RowStream:
    """The rows of `table` as they are."""
    return RowStream(table.columns, table.tabular, lambda size: table.chunks(size))


@dataclass(frozen=True)
class Recipe:
    """A named reshaping of a file layout into one object per case, with its default mapping.

    Attributes:
        name: What users pass as ``recipe=`` / ``--recipe``.
        description: The layout it reads, in a sentence.
        profile: The mapping over the reshaped rows (a user profile given with the recipe overrides it).
        read: Read options the layout implies (e.g. ``header_row=0``), unless given explicitly.
        transform: ``transform(table, profile) -> RowStream``; `profile` is the effective mapping
            (the ``conversations`` recipe reads its ``conversation`` and ``roles``).
    """

    name: str
    description: str
    profile: MappingProfile
    transform: Callable[[Table, MappingProfile], RowStream]
    read: dict[str, Any] = field(default_factory=dict)


def _first_text(row: list[Any]) -> str:
    for cell in row:
        if cell not in ("", None):
            return cell if isinstance(cell, str) else str(cell)
    return ""


def _blocks(table: Table, keys: tuple[str, ...], size: int) -> Iterator[RowChunk]:
    """Rows grouped in blank-row-separated blocks: the first `len(keys) - 1` rows of a block are its
    header values, every further row becomes one object ``{keys[0]: ..., ..., keys[-1]: row text}``."""
    if not table.tabular:
        raise ImportFailed(f"{table.path.name}: block recipes read a sheet or CSV, not {table.format}")
    head_n = len(keys) - 1
    block: list[str] = []
    rows: list[dict[str, Any]] = []
    locs: list[str] = []
    for chunk in table.chunks(size, keep_blank=True):
        for row, loc in zip(chunk.rows, chunk.locations, strict=True):
            text = _first_text(row)
            if not text.strip():
                block = []
                continue
            if len(block) < head_n:
                block.append(text.strip())
                continue
            rows.append({**dict(zip(keys, block, strict=False)), keys[-1]: text})
            locs.append(loc)
            if len(rows) >= size:
                yield RowChunk(rows, locs, None, [])
                rows, locs = [], []
    if rows:
        yield RowChunk(rows, locs, None, [])


def _intent_blocks(table: Table, profile: MappingProfile) -> RowStream:
    return RowStream(("intent", "text"), False, lambda size: _blocks(table, ("intent", "text"), size))


def _qa_blocks(table: Table, profile: MappingProfile) -> RowStream:
    keys = ("question", "answer", "text")
    return RowStream(keys, False, lambda size: _blocks(table, keys, size))


def _map_rows(
    table: Table, fn: Callable[[Any, Table], dict[str, Any]], columns: tuple[str, ...]
) -> RowStream:
    """Each row (a JSON object, or a table row as a dict) reshaped by `fn`; the original is kept as raw."""

    def chunks(size: int) -> Iterator[RowChunk]:
        for chunk in table.chunks(size):
            rows, locs, raws = [], [], []
            bad = list(chunk.bad)
            for row, loc in zip(chunk.rows, chunk.locations, strict=True):
                record = table.as_record(row)
                if not isinstance(record, dict):
                    bad.append((loc, f"expected a JSON object, got {type(record).__name__}", record))
                    continue
                rows.append(fn(record, table))
                locs.append(loc)
                raws.append(record)
            yield RowChunk(rows, locs, chunk.split, bad, raws)

    return RowStream(columns, False, chunks)


def _messages(value: Any) -> tuple[Any, Any]:
    """(input text, history) from a prompt that is text or a list of chat messages."""
    if isinstance(value, list) and value and all(isinstance(m, dict) for m in value):
        return value[-1].get("content"), (value[:-1] or None)
    return value, None


def _first_and_all(value: Any) -> tuple[Any, Any]:
    if isinstance(value, list):
        return (value[0] if value else None), (value if len(value) > 1 else None)
    return value, None


def _openai_row(row: dict[str, Any], table: Table) -> dict[str, Any]:
    text, history = _messages(row.get("input"))
    ideal, acceptable = _first_and_all(row.get("ideal"))
    return {"input": text, "history": history, "ideal": ideal, "acceptable": acceptable}


def _inspect_row(row: dict[str, Any], table: Table) -> dict[str, Any]:
    text, history = _messages(row.get("input"))
    target, targets = _first_and_all(row.get("target"))
    meta = dict(row.get("metadata") or {})
    if targets:
        meta["targets"] = targets
    for key in ("id", "files", "setup", "sandbox"):
        if row.get(key) is not None:
            meta[key] = row[key]
    context = {"choices": row["choices"]} if row.get("choices") else None
    return {
        "input": text,
        "history": history,
        "target": target,
        "context": context,
        "metadata": meta or None,
    }


def _skill_creator_row(row: dict[str, Any], table: Table) -> dict[str, Any]:
    checks = row.get("expectations", row.get("assertions"))
    meta = {
        "skill_name": table.document.get("skill_name"),
        "files": row.get("files") or None,
        "expectations": checks or None,
        "name": row.get("name") or row.get("eval_name"),
    }
    return {
        "id": row.get("id", row.get("eval_id")),
        "prompt": row.get("prompt"),
        "expected_output": row.get("expected_output"),
        "metadata": {k: v for k, v in meta.items() if v is not None} or None,
    }


def _skill_creator(table: Table, profile: MappingProfile) -> RowStream:
    if table.format != "json":
        raise ImportFailed(
            f"{table.path.name}: the skill-creator recipe reads evals.json, not {table.format}"
        )
    if table.splits and "evals" not in table.splits:
        raise ImportFailed(
            f"{table.path.name} has no 'evals' list (it has {', '.join(table.splits)}); "
            'skill-creator\'s evals.json is {"skill_name": ..., "evals": [...]}'
        )
    return _map_rows(table, _skill_creator_row, ("id", "prompt", "expected_output", "metadata"))


def _trigger_row(row: dict[str, Any], table: Table) -> dict[str, Any]:
    should = row.get("should_trigger")
    skill = row.get("skill") or row.get("skill_name") or table.document.get("skill_name")
    if should is True or str(should).strip().casefold() == "true":
        expected_skill = skill or _skill_beside(table.path)
    elif should is False or str(should).strip().casefold() == "false":
        expected_skill = NO_SKILL
    else:
        expected_skill = None  # not assessed; `should_trigger` itself is then reported as invalid
    return {"query": row.get("query"), "should_trigger": should, "expected_skill": expected_skill}


def _skill_beside(path: Path, levels: int = 3) -> str | None:
    """The ``name`` in the front matter of the SKILL.md of the skill folder `path` lies in (an eval set
    kept in ``<skill>/evals/``), looking up to `levels` folders up; None when there is none. A trigger
    eval set names no skill, so without one its should-trigger cases take the mapping's default
    (``defaults: {expected_skill: NAME}``)."""
    folder = path.resolve().parent
    for _ in range(levels):
        skill_md = folder / "SKILL.md"
        if skill_md.is_file():
            return _front_matter_name(skill_md)
        folder = folder.parent
    return None


def _front_matter_name(skill_md: Path) -> str | None:
    lines = skill_md.read_text(encoding="utf-8", errors="replace").splitlines()
    if not lines or lines[0].strip() != "---":
        return None
    for line in lines[1:]:
        if line.strip() == "---":
            break
        key, _, value = line.partition(":")
        if key.strip() == "name" and value.strip():
            return value.strip().strip("'\"") or None
    return None


_ESCAPED_COMMA = re.compile(r"(?<!\\),")
_PROMPT_VARS = ("prompt", "question", "query", "input", "text", "topic", "content", "message", "request")


def _promptfoo_row(row: dict[str, Any], table: Table) -> dict[str, Any]:
    variables: dict[str, Any] = {}
    checks: list[str] = []
    meta: dict[str, Any] = {}
    description = None
    for key, value in row.items():
        if not key.startswith("__"):
            variables[key] = value
        elif key.startswith("__expected"):
            if value not in ("", None):
                checks.append(value)
        elif key.startswith("__metadata:"):
            name = key.removeprefix("__metadata:")
            if name.endswith("[]"):
                items = [p.replace("\\,", ",").strip() for p in _ESCAPED_COMMA.split(value or "")]
                meta[name[:-2]] = [p for p in items if p]
            elif value not in ("", None):
                meta[name] = value
        elif key == "__description":
            description = value or None
    lowered = {k.casefold(): k for k in variables}
    chosen = next((lowered[k] for k in _PROMPT_VARS if k in lowered), next(iter(variables), None))
    if description:
        meta["description"] = description
    if checks:
        meta["assertions"] = checks
    return {
        "input": variables.get(chosen) if chosen else None,
        "expected": checks[0] if checks else None,
        "vars": variables if len(variables) > 1 else None,
        "metadata": meta or None,
    }


def _promptfoo(table: Table, profile: MappingProfile) -> RowStream:
    if not table.tabular:
        raise ImportFailed(f"{table.path.name}: the promptfoo recipe reads a test CSV, not {table.format}")
    return _map_rows(table, _promptfoo_row, ("input", "expected", "vars", "metadata"))


def _conversations(table: Table, profile: MappingProfile) -> RowStream:
    layout = settle(table, profile.conversation)  # now: a file this recipe does not fit is told at once
    if layout.keyed:
        # The reader took the lists inside `{"2303": {"messages": [...]}}` for splits; the recipe reads
        # the dialogues whole, so the read options, notes and recorded shape name none.
        table.options.pop("splits", None)
        table.splits, table.split_sizes = (), {}
    return RowStream(
        CONVERSATION_COLUMNS, False, lambda size: conversation_chunks(table, layout, profile.roles, size)
    )


def _profile(name: str, fields: dict[str, Any], **extra: Any) -> MappingProfile:
    return MappingProfile.from_dict({"recipe": name, "fields": fields, **extra}, where=f"recipe {name}")


RECIPES: dict[str, Recipe] = {
    r.name: r
    for r in (
        Recipe(
            "intent-blocks",
            "one column of blank-row-separated blocks: an intent name, then its utterances "
            "(Botfuel/Dialogflow-style intent sheets)",
            _profile("intent-blocks", {"input": "text", "expected": "intent"}),
            _intent_blocks,
            {"header_row": 0},
        ),
        Recipe(
            "qa-blocks",
            "one column of blank-row-separated blocks: a question, its answer, then paraphrases of the "
            "question (FAQ sheets); each paraphrase is a case whose expected answer is the block's answer",
            _profile(
                "qa-blocks",
                {"input": "text", "expected": "answer", "metadata": {"object": {"question": "question"}}},
            ),
            _qa_blocks,
            {"header_row": 0},
        ),
        Recipe(
            "skill-creator",
            "skill-creator's evals/evals.json: {skill_name, evals: [{id, prompt, expected_output, files, "
            "expectations}]}",
            _profile(
                "skill-creator",
                {"case_id": "id", "input": "prompt", "expected": "expected_output", "metadata": "metadata"},
                defaults={"expected": None, "metadata": None},
            ),
            _skill_creator,
        ),
        Recipe(
            "skill-creator-triggers",
            "skill-creator's trigger eval set: [{query, should_trigger}]; expected is true/false, and "
            "expected_skill the skill (the SKILL.md the file sits under, or the mapping's default) or none",
            _profile(
                "skill-creator-triggers",
                {"input": "query", "expected": "should_trigger", "expected_skill": "expected_skill"},
                label_set=["true", "false"],
            ),
            lambda table, _: _map_rows(table, _trigger_row, ("query", "should_trigger", "expected_skill")),
        ),
        Recipe(
            "openai-evals",
            "OpenAI evals samples JSONL: {input: text or chat messages, ideal: text or list}",
            _profile(
                "openai-evals",
                {
                    "input": "input",
                    "history": "history",
                    "expected": "ideal",
                    "metadata": {"object": {"acceptable": "acceptable"}},
                },
                defaults={"expected": None},
            ),
            lambda table, _: _map_rows(table, _openai_row, ("input", "history", "ideal", "acceptable")),
        ),
        Recipe(
            "inspect",
            "Inspect AI samples (JSONL/JSON/CSV): {input: text or messages, target, id, choices, metadata, files}",
            _profile(
                "inspect",
                {
                    "input": "input",
                    "history": "history",
                    "expected": "target",
                    "context": "context",
                    "metadata": "metadata",
                },
                defaults={"expected": None},
            ),
            lambda table, _: _map_rows(
                table, _inspect_row, ("input", "history", "target", "context", "metadata")
            ),
        ),
        Recipe(
            "promptfoo",
            "promptfoo test CSV: variable columns, __expected / __expectedN assertions, __metadata:* columns",
            _profile(
                "promptfoo",
                {"input": "input", "expected": "expected", "context": "vars", "metadata": "metadata"},
                defaults={"expected": None},
            ),
            _promptfoo,
        ),
        Recipe(
            "conversations",
            "a file of dialogues, each a list of turns (MultiWOZ, SGD, CrossWOZ; or a table of one turn per "
            "row beside its dialogue's id): one case per user turn, the turns before it its history, the "
            "assistant's next turn its expected answer",
            _profile(
                "conversations",
                {
                    "case_id": "id",
                    "input": "input",
                    "history": "history",
                    "expected": "reply",
                    "metadata": {"object": {"dialogue": "dialogue_id", "turn": "turn_index"}},
                },
                defaults={"expected": None, "history": None},
            ),
            _conversations,
        ),
    )
}
"""Every built-in recipe by name."""


def get_recipe(name: str) -> Recipe:
    """The recipe called `name`.

    Raises:
        UsageError: no such recipe; the message lists them.
    """
    try:
        return RECIPES[name]
    except KeyError:
        listing = "; ".join(f"{r.name}: {r.description}" for r in RECIPES.values())
        raise UsageError(f"unknown recipe {name!r}; recipes: {listing}") from None

"""`suggest_mapping`: propose a mapping profile from column names and sample values, English or Chinese."""

from __future__ import annotations

import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from abbench._text import clip
from abbench.dataset._dialogues import CONVERSATION_COLUMNS, Recognised, recognise
from abbench.dataset._kind import gold_kind, infer_label_set
from abbench.dataset._names import by_name
from abbench.dataset._nested import nested_columns, path_text
from abbench.dataset._profile import MappingProfile
from abbench.dataset._prose import is_text, most_prose, not_text, prose_score, reads_as_prose
from abbench.dataset._readers import Table, read_table
from abbench.dataset._recipes import RECIPES
from abbench.dataset._text import label_key

_FIELD_ORDER = ("input", "expected", "case_id", "request_id", "domain", "history", "context", "metadata")
_SAMPLE = 2000
_SAMPLE_PER_SPLIT = 300

# Bilingual spellings that mean the same label; proposed only when two of them occur in the data.
_SAME_LABEL = (
    ("fast", "快", "快速", "快系统"),
    ("slow", "慢", "慢速", "慢系统"),
    ("true", "yes", "是", "对", "y"),
    ("false", "no", "否", "不是", "n"),
)


@dataclass(frozen=True)
class Suggestion:
    """A proposed mapping with the reason for each choice.

    Attributes:
        profile: The proposed profile (unsaved, no name unless one was given).
        reasons: Case field → why this source was chosen, in words.
        notes: Other things worth knowing (splits, a recipe to consider, columns left unmapped).
        labels: Distinct expected values in the sample and how often each occurs.
        columns: The columns (or keys) the suggestion looked at, then the paths to keys inside their
            objects that it weighed like columns (``data.query``).
    """

    profile: MappingProfile
    reasons: dict[str, str] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    labels: dict[str, int] = field(default_factory=dict)
    columns: tuple[str, ...] = ()

    @property
    def has_input(self) -> bool:
        """Whether an input source was found."""
        return "input" in self.profile.fields

    def describe(self) -> str:
        """The proposal in words: field ← source (reason), then notes."""
        lines = []
        for name in _FIELD_ORDER:
            if name in self.reasons:
                lines.append(f"  {name:<10} {self.reasons[name]}")
        if self.profile.label_map:
            pairs = ", ".join(f"{k!r}→{v!r}" for k, v in self.profile.label_map.items())
            lines.append(f"  label_map  {pairs}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def suggest_mapping(
    source: str | os.PathLike[str] | Table,
    *,
    name: str | None = None,
    sample: int = _SAMPLE,
    **read_options: Any,
) -> Suggestion:
    """Propose a mapping profile for a file from its column names and sample values.

    Names are matched in English and Chinese (``query``/``question``/``问题``/``用户query`` → input;
    ``label``/``gold``/``标签``/``人工标签`` → expected; ``domain``/``垂域``/``领域`` → domain; ``id`` →
    case_id, ``rid``/``request_id`` → request_id; ``history``, ``context``, ``metadata``), then
    checked against the values: an id column must be unique, an input must be text. When names do
    not decide, the longest text column becomes the input and a column of few short values the
    expected label. Chat-message lists become ``input[-1].content`` plus ``history``. Gold values
    that differ only in case, width or spaces (``Fast `` / ``fast``), or are known translations of
    each other (``快`` / ``fast``), get a proposed label map. Known layouts (skill-creator's
    evals.json, promptfoo CSVs) get their recipe.

    Args:
        source: A file path or an opened `Table`.
        name: A name for the proposed profile.
        sample: How many rows to look at.
        **read_options: Passed to `read_table` when `source` is a path.

    Returns:
        A `Suggestion`; check `has_input` before importing with it.
    """
    table = source if isinstance(source, Table) else read_table(source, **read_options)
    rows = _sample(table, sample)
    base = {"name": name} if name else {}
    recipe = _detect_recipe(table, rows)
    if recipe is not None:
        return _recipe_suggestion(table, recipe, base)
    dialogues = recognise(table)
    if dialogues is not None:
        return _conversation_suggestion(table, dialogues, base)
    proposal = _Proposal(table, rows, sampled=len(rows) >= sample or len(table.splits) > 1)
    proposal.chat_messages()
    proposal.chunked_utterance()
    proposal.by_names()
    proposal.by_values()
    proposal.per_aspect()
    proposal.split_names_as_labels()
    labels, label_map = proposal.gold_values()
    fields = proposal.fields()
    proposal.closing_notes(fields)
    spec: dict[str, Any] = {**base, "fields": fields}
    if proposal.splits is not None:
        spec["splits"] = proposal.splits
    defaults = _defaults(table, fields, proposal.values)
    if defaults:
        spec["defaults"] = defaults
    if label_map:
        spec["label_map"] = label_map
    spec["shape"] = table.shape
    profile = MappingProfile.from_dict(spec, where="the suggested mapping")
    notes = tuple(clip(n, MAX_NOTE) for n in proposal.notes)
    reasons = {k: clip(v, MAX_NOTE) for k, v in proposal.reasons.items()}
    return Suggestion(profile, reasons, notes, labels, proposal.columns)


def declare_label_set(table: Table, profile: MappingProfile) -> tuple[MappingProfile, str | None]:
    """A suggested `profile` with the label set its gold values make over the whole of `table`, as an
    import without a mapping declares it (`infer_label_set`), and the note that says so.

    A suggestion reads a sample; a profile saved from it is then imported as the analyst's own mapping,
    which abbench never changes. Without this, following *suggest, save, import with the profile*
    leaves the labels undeclared where importing with no mapping declares them. Unchanged (note None)
    when the profile declares a label set or a kind already, its gold is not one column or path, or the
    values do not make a label set.
    """
    source = profile.fields.get("expected")
    if profile.label_set is not None or profile.expected_kind is not None or not isinstance(source, str):
        return profile, None
    counts = table.value_counts(source)
    spelled = {label_key(k): v for k, v in profile.label_map.items()}
    merged: Counter[str | None] = Counter()
    for value, n in counts.counts.items():
        text = value.strip()
        merged[spelled.get(label_key(text), text) if text else None] += n
    if counts.blank:
        merged[None] += counts.blank
    inferred = infer_label_set(merged)
    if inferred.labels is None:
        return profile, None
    note = (
        f"label set declared from the gold values of all {counts.n_rows:,} rows: {inferred.reason}; agents "
        "choose among them (if they are answers, say `expected_kind: answer` in the profile instead)"
    )
    return profile.evolve(label_set=list(inferred.labels)), clip(note, MAX_NOTE)


MAX_NOTE = 600
"""The most characters a suggestion's note or reason takes: a list in one is cut to its first items
("… and 1,996 more"), and what is left clipped, so a file of thousands of splits gets readable advice."""


def listing(items: list[str], limit: int = 8) -> str:
    """The first `limit` of `items` joined, and how many more: ``a, b, c … and 1,996 more``."""
    shown = ", ".join(items[:limit])
    return shown + (f" … and {len(items) - limit:,} more" if len(items) > limit else "")


def _conversation_suggestion(table: Table, found: Recognised, base: dict[str, Any]) -> Suggestion:
    """A file of dialogues: the ``conversations`` recipe with the layout and roles found written out."""
    spec = {**RECIPES["conversations"].profile.spec(), **base, "conversation": found.layout.spec()}
    if found.roles:
        spec["roles"] = found.roles
    profile = MappingProfile.from_dict(spec, where="the suggested mapping")
    notes = tuple(clip(n, MAX_NOTE) for n in [*table.notes, *found.notes])
    return Suggestion(profile, found.reasons, notes, {}, CONVERSATION_COLUMNS)


def _recipe_suggestion(table: Table, recipe: str, base: dict[str, Any]) -> Suggestion:
    """The suggestion for a known layout: its recipe's profile."""
    r = RECIPES[recipe]
    profile = r.profile.evolve(**base) if base else r.profile
    reasons = {f: f"{_show(s)} (recipe {recipe})" for f, s in r.profile.fields.items()}
    note = f"the file looks like {r.description}; recipe {recipe!r} applied"
    return Suggestion(profile, reasons, (note,), {}, table.columns)


class _Proposal:
    """The fields chosen so far for one file, with the reason for each, in the order `suggest_mapping` decides.

    Each step maps what it recognises and leaves the rest to the next: chat messages, an utterance in
    chunks, the columns' names, their values, the split names; then the gold values and the leftovers.
    """

    def __init__(self, table: Table, rows: list[Any], *, sampled: bool = False):
        self.table = table
        self.n_rows = len(rows)
        self.sampled = sampled  # the rows may be the file's first ones only: counts say so
        self.top = _columns(table, rows)
        values = {c: [_get(r, c, table) for r in rows] for c in self.top}
        # Keys inside the columns' objects are weighed like columns (``data.query``), named by their own key.
        self.nested = nested_columns(self.top, values)
        self.columns = (*self.top, *self.nested.values)
        self.values = {**values, **self.nested.values}
        self.names = {path: keys[-1] for path, keys in self.nested.keys.items()}
        self.prose = {c: prose_score(self.values[c]) for c in self.columns}
        self.chosen: dict[str, Any] = {}
        self.reasons: dict[str, str] = {}
        self.notes: list[str] = [*table.notes, *self.nested.notes]
        self.used: set[str] = set()
        self.splits: list[str] | None = None  # the splits to import, when not all of them
        self.kept_keys: set[str] | None = None  # the keys their records have
        self.declined = False  # a column named like the input whose values are not language

    def ref(self, col: str) -> str:
        """How a path starting at `col` writes it: a nested path as it is, a column quoted when it must be."""
        return col if col in self.nested.keys else _quote(col)

    def take(self, fld: str, source: Any, reason: str, col: str | None = None) -> None:
        """Map `fld` to `source` (reading column `col`) for `reason`."""
        self.chosen[fld] = source
        self.reasons[fld] = reason
        if col is not None:
            self.used.add(col)

    def chat_messages(self) -> None:
        """A column of chat messages: ``input[-1].content`` plus ``history``."""
        for col in self.columns:
            if _is_chat(self.values[col]):
                source = f"{self.ref(col)}[-1].content"
                self.take(
                    "input", source, f"{source}: {col!r} holds chat messages; the last one is the query", col
                )
                if any(isinstance(v, list) and len(v) > 1 for v in self.values[col]):
                    history = f"{self.ref(col)}[:-1]"
                    self.take("history", history, f"{history}: the messages before the last one")
                return

    def chunked_utterance(self) -> None:
        """An utterance split into chunks (SNIPS): their texts joined."""
        if "input" in self.chosen:
            return
        for col in self.columns:
            if _is_chunks(self.values[col]):
                reason = (
                    f"join {self.ref(col)}[*].text: {col!r} holds the utterance as a list of chunks "
                    "({text: ...}); their texts are joined"
                )
                self.take("input", {"join": f"{self.ref(col)}[*].text", "sep": ""}, reason, col)
                return

    def by_names(self) -> None:
        """Each field from the column named like it, when its values fit."""
        for fld in _FIELD_ORDER:
            if fld in self.chosen:
                continue
            inner_notes: list[
                str
            ] = []  # about keys inside objects: said only when no column is mapped by name
            for col, how, exact in by_name(fld, self.columns, self.used, self.names):
                nested = col in self.nested.keys
                if nested and fld in ("case_id", "request_id") and not self.beside_input(col):
                    continue  # an id inside another object (``author.id``) names something else
                ok, why_not = _fits(fld, self.values[col], self.n_rows)
                if ok and fld == "input":
                    ok, why_not = reads_as_prose(col, self.prose, self.used)
                if not ok and fld == "case_id" and exact and why_not in _ID_FAULTS and not nested:
                    # Named exactly like an id: mapping it lets the import say which rows repeat or lack
                    # one, where generating ids would hide that the file's own ids are broken.
                    reason = (
                        f"{col!r}: its name {how}, although {why_not}; the import will list those rows "
                        "(map case_id to another column, or leave it out to generate ids)"
                    )
                    self.take(fld, col, reason, col)
                    break
                if not ok:
                    self.declined |= fld == "input"
                    said = f"{col!r} is named like {fld} but {why_not}; not mapped"
                    (inner_notes if nested else self.notes).append(said)
                    continue
                self.take(fld, col, f"{col!r}: its name {how}", col)
                break
            if fld not in self.chosen:
                self.notes.extend(inner_notes)

    def beside_input(self, col: str) -> bool:
        """Whether the nested path `col` sits in the same object as the input (``data.id`` beside ``data.query``)."""
        src = self.chosen.get("input")
        mine = self.nested.keys.get(src) if isinstance(src, str) else None
        return mine is not None and mine[:-1] == self.nested.keys[col][:-1]

    def by_values(self) -> None:
        """When names did not decide: the column reading most as prose is the input, one of few short values the gold."""
        if "input" not in self.chosen:
            col = most_prose(self.columns, self.values, self.prose, self.used)
            if col is not None:
                why = (
                    "no column named like a query reads as language"
                    if self.declined
                    else "no column is named like a query"
                )
                reason = f"{col!r}: {why}; this one reads most like natural language ({self.prose[col].describe()})"
                self.take("input", col, reason, col)
        if "expected" not in self.chosen:
            col = _label_like(self.columns, self.values, self.used)
            if col is not None:
                n = len({_key(v) for v in self.values[col] if v not in (None, "")})
                self.take(
                    "expected", col, f"{col!r}: few distinct short values ({n}), which looks like labels", col
                )

    def per_aspect(self) -> None:
        """Several rows per input, one per aspect (aspect-sentiment data: a sentence, its aspect, a polarity):
        the labels column that tells an input's rows apart is the context the gold depends on, and the gold
        is another labels column. Undecidable (both tell the rows apart) is said, not guessed."""
        src, gold = self.chosen.get("input"), self.chosen.get("expected")
        if not (isinstance(src, str) and isinstance(gold, str)) or "context" in self.chosen:
            return
        inputs = [_key(v) for v in self.values.get(src, ())]
        if gold not in self.values or sum(n for n in Counter(inputs).values() if n > 1) < max(
            2, 0.2 * len(inputs)
        ):
            return  # most inputs stand alone: nothing to tell apart

        def tells_apart(col: str) -> bool:
            return len(set(zip(inputs, map(_key, self.values[col]), strict=True))) == len(inputs)

        others = [c for c in self.columns if c not in self.used and _label_like((c,), self.values, set())]
        others = [
            c for c in others if not all(_key(v).isdigit() for v in self.values[c] if v not in (None, ""))
        ]
        if tells_apart(gold):
            golds = [c for c in others if not tells_apart(c)]
            if not golds:
                if others:
                    self.notes.append(
                        f"each input holds several rows, told apart by {gold!r}; {others[0]!r} reads as labels "
                        f"too: if it is the gold, map context: {self.ref(gold)} and expected: {self.ref(others[0])}"
                    )
                return
            key, new = gold, golds[0]
            self.take("expected", new, f"{new!r}: labels that differ between an input's rows", new)
        else:
            keys = [c for c in others if tells_apart(c)]
            if not keys:
                return
            key = keys[0]
        self.take(
            "context",
            key,
            f"{key!r}: each input holds several rows, one per {key!r} value, and the gold depends on it "
            "(an aspect, a slot): the agent is shown it",
            key,
        )

    def split_names_as_labels(self) -> None:
        """SNIPS keeps one intent per file as ``{"AddToPlaylist": [...]}``: the split's name is the gold label."""
        splits = self.table.splits
        if "expected" in self.chosen or not _splits_are_labels(splits):
            return
        names = ", ".join(splits[:6]) + (" …" if len(splits) > 6 else "")
        reason = f"$split: the file's split names read as labels, not as train/test ({names})"
        if len(splits) == 1:
            reason += "; one split, so every case gets that label: import the other labels' files too, or merge them"
        self.take("expected", "$split", reason)

    def gold_values(self) -> tuple[dict[str, int], dict[str, str]]:
        """The gold labels with their counts (none for answers) and a label map joining their spellings."""
        col = self.chosen.get("expected")
        if not (isinstance(col, str) and col in self.values):
            return {}, {}
        values = self.values[col]
        answers = _final_answers(values)
        if answers is not None:
            self.chosen["expected"] = {"column": col, "match": FINAL_ANSWER}
            self.reasons["expected"] += (
                "; every value ends in '#### <answer>' (a worked solution and its final answer, as GSM8K's): "
                f"the answer is kept as the gold (match: `{FINAL_ANSWER}`)"
            )
            values = answers
        counts = Counter(_key(v) for v in values if v not in (None, ""))
        labels = dict(counts.most_common())
        label_map = _variants(counts) if len(counts) <= 200 else {}
        if label_map:
            self.reasons["expected"] += (
                "; " + ", ".join(f"{k!r}→{v!r}" for k, v in label_map.items()) + " look like one label"
            )
        merged: Counter[str] = Counter()  # spellings of one label count as one value
        for value, n in counts.items():
            merged[label_map.get(value, value)] += n
        kind = gold_kind(merged) if counts else None
        if kind is not None and not kind.is_label:
            self.reasons["expected"] += f"; {kind.reason}"
            labels = {}
        elif counts:
            top = ", ".join(f"{k} ({n})" for k, n in counts.most_common(6))
            where = f" in the {self.n_rows:,} rows looked at" if self.sampled else ""
            self.reasons["expected"] += f"; values{where}: {top}" + (" ..." if len(counts) > 6 else "")
        return labels, label_map

    def fields(self) -> dict[str, Any]:
        """The chosen fields, with the split and the columns left over kept as metadata."""
        table = self.table
        fields: dict[str, Any] = dict(self.chosen)
        self.keep_splits()
        referenced = _referenced(self.chosen)
        leftovers = [c for c in self.top if c not in self.used and c not in referenced]
        if self.kept_keys is not None:
            leftovers = [c for c in leftovers if c in self.kept_keys]
        inner = self.inner_leftovers()
        meta: dict[str, Any] = {}
        splits = self.splits or table.splits
        if len(splits) > 1:
            meta["split"] = "$split"
            sizes = listing([f"{s} ({table.split_sizes.get(s, '?')})" for s in splits])
            chosen = "" if self.splits is None else " chosen"
            self.notes.append(
                f"the file holds{chosen} splits {sizes}; all are imported unless you choose (splits= / --split)"
            )
        if "metadata" not in fields and (leftovers or inner or meta):
            if leftovers and table.tabular:
                if meta or inner:
                    meta["columns"] = {"unmapped": True}
                else:
                    fields["metadata"] = {"unmapped": True}
            elif leftovers:
                for c in leftovers:
                    meta[c] = _quote(c) if not c.isdigit() else c
            meta.update((path, path) for path in inner)
            if meta:
                fields["metadata"] = {"object": meta}
            if leftovers or inner:
                self.reasons["metadata"] = "the other columns, kept as metadata: " + listing(
                    list(map(repr, [*leftovers, *inner])), 12
                )
            else:
                self.reasons["metadata"] = "the split each case came from"
        if "case_id" not in fields:
            self.reasons["case_id"] = "(generated from the input: no id column found)"
        return fields

    def inner_leftovers(self) -> list[str]:
        """The other keys of objects some of whose keys are mapped (``data.vertical`` beside a mapped
        ``data.query``), by their paths: the object itself is not kept, so they would be lost."""
        mapped = {self.nested.keys[c] for c in self.used if c in self.nested.keys}
        partial = {keys[:i] for keys in mapped for i in range(1, len(keys))}
        out = []
        for node, keys in self.nested.children.items():
            if node not in partial:
                continue
            for key in keys:
                child = (*node, key)
                path = path_text(child)
                if child not in partial and child not in mapped and path is not None:
                    out.append(path)
        return out

    def keep_splits(self) -> None:
        """Leave out the splits whose records have no input column (Rasa's ``regex_features`` beside
        its ``common_examples``): importing them could only fail."""
        col = self.chosen.get("input")
        if isinstance(col, str) and col in self.nested.keys:
            col = self.nested.keys[col][0]
        if len(self.table.splits) < 2 or not isinstance(col, str) or col not in self.columns:
            return
        keys = _split_keys(self.table)
        kept = [s for s in self.table.splits if col in keys.get(s, ())]
        if not kept or len(kept) == len(self.table.splits):
            return
        self.splits = kept
        self.kept_keys = set().union(*(keys[s] for s in kept))
        left = [s for s in self.table.splits if s not in kept]
        sizes = listing([f"{s} ({self.table.split_sizes.get(s, '?')})" for s in left])
        self.notes.append(
            f"left out the splits {sizes}: their records have no {col!r} (splits: in the profile)"
        )

    def closing_notes(self, fields: dict[str, Any]) -> None:
        """What to try when the file may need a recipe or has no input."""
        if self.table.tabular and len(self.table.columns) == 1:
            self.notes.append(
                "the sheet has a single column; if it holds blank-row-separated blocks (a name, then its "
                "utterances) use recipe 'intent-blocks' (or 'qa-blocks' for question/answer/paraphrases)"
            )
        if "input" not in fields:
            self.notes.append(
                f"no column looks like the input; columns: {listing(list(self.columns), 20) or 'none'}. "
                "Map it yourself (fields.input) or try a recipe: " + ", ".join(RECIPES)
            )


# -- helpers ---------------------------------------------------------------------------------------


def _sample(table: Table, n: int) -> list[Any]:
    rows: list[Any] = []
    per_split: Counter[str | None] = Counter()
    limit = _SAMPLE_PER_SPLIT if len(table.splits) > 1 else n
    for chunk in table.chunks(min(n, 1000)):
        if per_split[chunk.split] >= limit:
            continue
        take = chunk.rows[: limit - per_split[chunk.split]]
        per_split[chunk.split] += len(take)
        rows.extend(table.as_record(r) for r in take)
        if len(rows) >= n:
            break
    return rows[:n]


def _detect_recipe(table: Table, rows: list[Any]) -> str | None:
    if table.format == "json" and "evals" in table.splits and "skill_name" in table.document:
        return "skill-creator"
    if table.tabular and any(c.startswith("__expected") for c in table.columns):
        return "promptfoo"
    if rows and all(isinstance(r, dict) and set(r) == {"query", "should_trigger"} for r in rows[:50]):
        return "skill-creator-triggers"
    return None


def _is_chat(values: list[Any]) -> bool:
    present = [v for v in values if v is not None]
    return bool(present) and all(
        isinstance(v, list) and v and all(isinstance(m, dict) and "content" in m for m in v) for v in present
    )


def _is_chunks(values: list[Any]) -> bool:
    present = [v for v in values if v is not None]
    return bool(present) and all(
        isinstance(v, list) and v and all(isinstance(m, dict) and isinstance(m.get("text"), str) for m in v)
        for v in present
    )


def _split_keys(table: Table) -> dict[str, set[str]]:
    """The keys of each split's first `_SAMPLE_PER_SPLIT` records."""
    keys: dict[str, set[str]] = {s: set() for s in table.splits}
    looked: Counter[str | None] = Counter()
    for chunk in table.chunks(1000):
        if chunk.split is None or looked[chunk.split] >= _SAMPLE_PER_SPLIT:
            continue
        for r in chunk.rows[: _SAMPLE_PER_SPLIT - looked[chunk.split]]:
            if isinstance(r := table.as_record(r), dict):
                keys.setdefault(chunk.split, set()).update(map(str, r))
        looked[chunk.split] += len(chunk.rows)
    return keys


def _columns(table: Table, rows: list[Any]) -> tuple[str, ...]:
    if table.tabular:
        return table.columns
    keys: dict[str, None] = {}
    for r in rows:
        if isinstance(r, dict):
            keys.update(dict.fromkeys(map(str, r)))
        elif isinstance(r, list):
            keys.update(dict.fromkeys(str(i) for i in range(len(r))))
    return tuple(keys)


def _get(row: Any, col: str, table: Table) -> Any:
    if isinstance(row, dict):
        return row.get(col)
    if isinstance(row, list) and col.isdigit() and int(col) < len(row):
        return row[int(col)]
    return None


def _quote(col: str) -> str:
    return col if re.fullmatch(r"[^.\[\]$\s]+", col) and not col.isdigit() else f'["{col}"]'


def _show(source: Any) -> str:
    return source if isinstance(source, str) else str(source.model_dump(exclude_unset=True))


def _fits(fld: str, values: list[Any], n_rows: int) -> tuple[bool, str]:
    present = [v for v in values if v not in (None, "")]
    if fld == "case_id":
        if not present:
            return False, "it is empty"
        if len(present) < len(values):
            return False, "some rows have no id"
        keys = [_key(v) for v in present]
        if len(set(keys)) < len(keys):
            return False, "its values repeat"
        if any(isinstance(v, (list, dict)) for v in present):
            return False, "its values are not plain ids"
    if fld == "input" and (why := not_text(values)) is not None:
        return False, why
    if fld == "domain" and present and not any(map(is_text, present)) and len(set(map(_key, present))) > 20:
        return False, f"its values are {len(set(map(_key, present)))} distinct numbers, not domain names"
    if (
        fld in ("expected", "domain", "request_id")
        and present
        and all(isinstance(v, (list, dict)) for v in present)
    ):
        return False, "its values are lists or objects"
    return True, ""


def _key(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value.strip() if isinstance(value, str) else str(value)


_ID_FAULTS = ("its values repeat", "some rows have no id")
_SPLIT_WORDS = {
    "train",
    "training",
    "test",
    "testing",
    "dev",
    "val",
    "valid",
    "validate",
    "validation",
    "eval",
    "evaluation",
    "holdout",
    "full",
    "all",
    "data",
    "small",
    "imbalanced",
    "plus",
    "oos",
    "examples",
}


def _splits_are_labels(splits: tuple[str, ...] | list[str]) -> bool:
    """Whether an object of named splits is keyed by label (SNIPS: ``{"AddToPlaylist": [...]}``) rather
    than by partition (CLINC150: ``train``, ``val``, ``test``, ``oos_train`` …): no name holds a
    partition word (split at ``_``, ``-`` and camel case)."""
    if not splits:
        return False
    for name in splits:
        words = {w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+", str(name))}
        if words & _SPLIT_WORDS or not words:
            return False
    return True


def _label_like(columns: tuple[str, ...], values: dict[str, list[Any]], used: set[str]) -> str | None:
    """The first column whose values read as labels (`gold_kind`), filled in most rows, with two or more."""
    for col in columns:
        if col in used:
            continue
        present = [v for v in values[col] if v not in (None, "") and not isinstance(v, (list, dict))]
        if len(present) < max(2, 0.5 * len(values[col])):
            continue
        counts = Counter(_key(v) for v in present)
        if len(counts) < 2 or not gold_kind(counts).is_label:
            continue
        return col
    return None


def _variants(counts: Counter[str]) -> dict[str, str]:
    groups: dict[str, list[str]] = {}
    for value in counts:
        groups.setdefault(label_key(value), []).append(value)
    for names in _SAME_LABEL:
        present = [g for g in list(groups) if g in names]
        if len(present) > 1:
            merged = [v for g in present for v in groups.pop(g)]
            groups[present[0]] = merged
    out: dict[str, str] = {}
    for spellings in groups.values():
        if len(spellings) < 2:
            continue
        target = max(spellings, key=lambda v: (counts[v], v.isascii(), -len(v)))
        for v in spellings:
            if v != target:
                out[v] = target
    return out


FINAL_ANSWER = r"####\s*(.+)$"
"""Where a worked solution ends in its final answer (GSM8K's ``… #### 18``), as a mapping's ``match``."""
_FINAL_ANSWER = re.compile(r"\n?####[ \t]*([^\n]+?)\s*$")


def _final_answers(values: list[Any]) -> list[str] | None:
    """The final answers when every value is a text ending in ``#### <answer>`` after some working, else None."""
    found = []
    for v in values:
        m = _FINAL_ANSWER.search(v) if isinstance(v, str) and v else None
        if m is None or m.start() == 0:
            return None
        found.append(m[1])
    return found or None


def _referenced(chosen: dict[str, Any]) -> set[str]:
    out = set()
    for src in chosen.values():
        if isinstance(src, dict) and isinstance(src.get("join"), str):
            src = src["join"]
        elif isinstance(src, dict) and isinstance(src.get("column"), str):
            src = src["column"]
        if isinstance(src, str):
            out.add(src)
            out.add(re.split(r"[.\[]", src, maxsplit=1)[0])
    return out


def _defaults(table: Table, fields: dict[str, Any], values: dict[str, list[Any]]) -> dict[str, Any]:
    """JSON rows vary: optional fields whose key some sampled rows lack default to null."""
    if table.tabular:
        return {}
    out: dict[str, Any] = {}
    for fld, src in fields.items():
        if fld == "input" or not isinstance(src, str):
            continue
        head = (
            src if src in values else re.split(r"[.\[]", src, maxsplit=1)[0]
        )  # a nested path: its own values
        if head in values and any(v is None for v in values[head]):
            out[fld] = None
    return out

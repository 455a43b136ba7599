"""The ``conversations`` recipe: a file of dialogues read as one case per user turn, the turns before it its history.

A dialogue corpus keeps each dialogue as a list of turns: SGD and MultiWOZ 2.2 as an array of
``{dialogue_id, turns: [{speaker: USER|SYSTEM, utterance}]}``, CrossWOZ as an object of
``{"2303": {messages: [{role: usr|sys, content}]}}``, MultiWOZ 2.1 as ``{"SNG0073.json": {log: [{text}]}}``
(turns alternate, no speaker), a sheet as one turn a row beside its dialogue's id. Each user turn
becomes one row the mapping reads:

- ``id``: ``<dialogue id>:<turn index>`` (the 0-based position of the turn in its dialogue, SGD's
  ``turn_id``), a case id that stays when other dialogues are added or removed;
- ``input``: what the user said; ``history``: the last turns before it (at most `MAX_HISTORY_TURNS`)
  as ``{role, content}`` chat turns;
- ``reply``: what the assistant said next (the turns after it up to the next user turn), the
  default expected answer; ``turn`` and ``reply_turn``: those turns as written, for a per-turn gold
  (``turn.frames[0].state.active_intent``); ``dialogue``: the dialogue's other keys;
  ``dialogue_id`` and ``turn_index``.

Speakers become chat roles through the mapping's ``roles`` and the names every import knows
(`abbench.dataset._roles`); a dialogue holding a speaker neither knows is refused on its row, and so is
one of more than `MAX_DIALOGUE_TURNS` turns, before it is expanded.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from abbench.dataset._formats import RowChunk
from abbench.dataset._hostile import lone_surrogate, surrogate_message
from abbench.dataset._jsonpath import PathError, parse_path
from abbench.dataset._profile import Conversation
from abbench.dataset._roles import SPEAKER_KEYS, TEXT_KEYS, chat_role, speaker_key, unknown_speaker_hint
from abbench.dataset._sources import text_of
from abbench.errors import ImportFailed

if TYPE_CHECKING:
    from abbench.dataset._readers import Table

CONVERSATION_COLUMNS = (
    "id",
    "dialogue_id",
    "turn_index",
    "input",
    "history",
    "reply",
    "turn",
    "reply_turn",
    "dialogue",
)
"""What each row the recipe makes holds (one row per user turn)."""

ORDER = "$order"
"""`Conversation.speaker` when turns name no speaker and alternate user, assistant …"""

KEY = "$key"
"""`Conversation.id` for the name of the object a dialogue is stored under."""

_TURN_LISTS = ("turns", "messages", "log", "dialogue", "dialog", "conversation", "utterances", "对话", "轮次")
_ID_NAMES = ("dialogue_id", "dialog_id", "conversation_id", "conv_id", "session_id", "id", "对话id", "会话id")
_SPEAKER_NAMES = (*SPEAKER_KEYS, "who", "sender", "participant", "speaker_role", "角色", "说话人", "发言人")
_SAMPLE = 50

MAX_DIALOGUE_TURNS = 2_000
"""Most turns one dialogue may hold: each user turn becomes a case, so a longer one is refused on its
row (``dialogue_too_long``) before any case is made of it, rather than expanded."""
MAX_HISTORY_TURNS = 100
"""Most turns a case's history keeps: the last ones before its user turn. With `MAX_DIALOGUE_TURNS`
it bounds what one dialogue can make: at most 1,000 cases of at most 100 turns of history each, where
every case held the whole dialogue before it (quadratic in its length)."""


@dataclass(frozen=True)
class Layout:
    """The conversation settings, settled: every field the file did not need is None.

    Attributes:
        turns: The key or path of a dialogue's turn list; None when a dialogue is its list (or a table).
        speaker: The key of a turn naming who speaks, or `ORDER`.
        text: The key of a turn holding what was said.
        id: The dialogue's id key or path, `KEY`, or None for its position.
        keyed: Dialogues are the values of the file's top object (``{"2303": {...}}``).
    """

    turns: str | None
    speaker: str
    text: str
    id: str | None
    keyed: bool

    def spec(self) -> dict[str, str]:
        """The settings as a profile's ``conversation:`` section writes them."""
        out = {"turns": self.turns, "speaker": self.speaker, "text": self.text, "id": self.id}
        return {k: v for k, v in out.items() if v is not None}


# -- where the dialogues are ------------------------------------------------------------------------


def _keyed(table: Table, least: int = 1) -> bool:
    """Dialogues stored as the values of one object, keyed by their ids (CrossWOZ, MultiWOZ 2.1), at
    least `least` of them."""
    root = table.root
    if not isinstance(root, dict) or not root or any(isinstance(v, list) for v in root.values()):
        return False
    dicts = sum(isinstance(v, dict) for v in root.values())
    return dicts >= least and dicts * 2 > len(root)


def _get(value: Any, path: str | None) -> Any:
    if path is None:
        return value
    if isinstance(value, dict) and path in value:
        return value[path]
    try:
        return parse_path(path).get(value)
    except PathError:
        return None


def _dialogues(table: Table, keyed: bool, size: int) -> Iterator[tuple[str, str | None, Any, str | None]]:
    """Each dialogue as ``(location, key, value, split)``: the top object's values, else the rows."""
    if keyed:
        for key, value in table.root.items():
            yield f"dialogue {key}", str(key), value, None
        return
    for chunk in table.chunks(size):
        for row, loc in zip(chunk.rows, chunk.locations, strict=True):
            yield loc, None, row, chunk.split


def sample_dialogues(table: Table, n: int = _SAMPLE, *, least: int = 1) -> tuple[bool, list[Any]]:
    """Whether dialogues are keyed (`_keyed`), and the first `n` of them (what detection looks at)."""
    keyed = _keyed(table, least)
    out = []
    for _, _, value, _ in _dialogues(table, keyed, n):
        out.append(value)
        if len(out) >= n:
            break
    return keyed, out


# -- settling the layout ----------------------------------------------------------------------------


def _turn_list(value: Any) -> bool:
    return isinstance(value, list) and len(value) >= 2 and all(isinstance(t, dict) for t in value[:50])


def _find_turns(dialogues: list[Any]) -> str | None:
    """The key of the dialogues' turn lists: a known name first, else any key holding turns."""
    dicts = [d for d in dialogues if isinstance(d, dict)]
    counts: Counter[str] = Counter(k for d in dicts for k, v in d.items() if _turn_list(v) and _texts(v))
    if not counts:
        return None
    for name in _TURN_LISTS:
        if counts.get(name, 0) * 2 >= len(dicts):
            return name
    best, n = counts.most_common(1)[0]
    return best if n * 2 >= len(dicts) else None


def _texts(turns: list[Any]) -> str | None:
    """The key holding what was said in most turns."""
    for key in (*TEXT_KEYS, "sentence", "内容", "文本"):
        if sum(isinstance(t, dict) and isinstance(t.get(key), str) for t in turns) * 2 > len(turns):
            return key
    return None


def _find_speaker(turns: list[dict[str, Any]], text: str) -> str:
    """The key naming who speaks: a known name, else a key of two to four short names that most turns
    have (``who: Operator``), else `ORDER` — so a speaker a file names is never replaced by turn order."""
    for key in _SPEAKER_NAMES:
        if any(key in t for t in turns):
            return key
    sample = turns[:2000]
    keys = Counter(
        k for t in sample for k, v in t.items() if k != text and isinstance(v, str) and 0 < len(v) <= 40
    )
    for key, n in keys.most_common():
        if n * 5 < len(sample) * 4:
            break
        if 2 <= len({t.get(key) for t in sample if isinstance(t.get(key), str)}) <= 4:
            return key
    return ORDER


def settle(table: Table, given: Conversation | None, *, least: int = 1) -> Layout:
    """The layout of `table`'s dialogues: what `given` states, the rest detected; a JSON object of at
    least `least` objects is read as dialogues keyed by id.

    Raises:
        ImportFailed: no turn list, text or speaker can be found; the message says what to state.
    """
    given = given or Conversation()
    name = table.path.name
    if table.tabular:
        return _settle_table(table, given)
    keyed, dialogues = sample_dialogues(table, least=least)
    if not dialogues:
        raise ImportFailed(f"{name} holds no dialogues")
    turns_key = given.turns
    if turns_key is None and not all(isinstance(d, list) for d in dialogues):
        turns_key = _find_turns(dialogues)
        if turns_key is None:
            keys = sorted({str(k) for d in dialogues if isinstance(d, dict) for k in d})[:20]
            raise ImportFailed(
                f"{name}: no list of turns found in its dialogues (keys: {', '.join(keys) or 'none'}); "
                "say where each dialogue keeps its turns: conversation: {turns: KEY}"
            )
    turns = [t for d in dialogues for t in (_get(d, turns_key) or []) if isinstance(t, dict)]
    text = given.text or _texts(turns)
    if text is None:
        keys = sorted({str(k) for t in turns[:200] for k in t})[:20]
        raise ImportFailed(
            f"{name}: no key holds the turns' text (keys of its turns: {', '.join(keys) or 'none'}); "
            "say which: conversation: {text: KEY}"
        )
    speaker = given.speaker or _find_speaker(turns, text)
    dialogue_id = given.id
    if dialogue_id is None:
        inner = next(
            (k for k in _ID_NAMES if any(isinstance(d, dict) and d.get(k) is not None for d in dialogues)),
            None,
        )
        dialogue_id = inner or (KEY if keyed else None)
    return Layout(turns_key, speaker, text, dialogue_id, keyed)


def _settle_table(table: Table, given: Conversation) -> Layout:
    """A CSV or sheet of one turn per row: the dialogue id, speaker and text columns."""
    by_norm = {speaker_key(c).replace(" ", "_"): c for c in table.columns}
    dialogue_id = given.id or next((by_norm[k] for k in _ID_NAMES if k in by_norm), None)
    speaker = given.speaker or next(
        (by_norm[k] for k in (*SPEAKER_KEYS, "角色", "说话人") if k in by_norm), ORDER
    )
    text = given.text or next(
        (by_norm[k] for k in (*TEXT_KEYS, "sentence", "内容", "文本") if k in by_norm), None
    )
    if dialogue_id is None or text is None:
        missing = "conversation: {id: COLUMN}" if dialogue_id is None else "conversation: {text: COLUMN}"
        raise ImportFailed(
            f"{table.path.name} is a table: each row is a turn, and rows with one dialogue id in a row make a "
            f"dialogue; say which column holds {'the dialogue id' if dialogue_id is None else 'the text'}: "
            f"{missing} (columns: {', '.join(table.columns[:20])})"
        )
    for col in (dialogue_id, speaker, text):
        if col != ORDER and col not in table.columns:
            raise ImportFailed(
                f"{table.path.name} has no column {col!r}; its columns: {', '.join(table.columns[:20])}"
            )
    return Layout(None, speaker, text, dialogue_id, False)


# -- one case per user turn -------------------------------------------------------------------------


@dataclass
class _Out:
    """The rows made so far, with where each came from, and the problems found."""

    rows: list[dict[str, Any]]
    locations: list[str]
    raws: list[Any]
    bad: list[tuple[str, str, Any]]
    problems: list[tuple[str, str, str | None, Any, str]]

    @classmethod
    def empty(cls) -> _Out:
        return cls([], [], [], [], [])

    def chunk(self, notes: list[str] | None = None) -> RowChunk:
        return RowChunk(
            self.rows, self.locations, None, self.bad, self.raws, problems=self.problems, notes=notes or []
        )


@dataclass
class _Cuts:
    """The cases whose history lost its earliest turns to `MAX_HISTORY_TURNS`, and the longest history
    one of them had before it was cut."""

    cases: int = 0
    longest: int = 0

    def count(self, turns: int) -> None:
        if turns > MAX_HISTORY_TURNS:
            self.cases += 1
            self.longest = max(self.longest, turns)

    def notes(self) -> list[str]:
        """The import report's note on the cut histories, if any was cut."""
        if not self.cases:
            return []
        return [
            f"{self.cases:,} case{'s' if self.cases != 1 else ''} keep{'' if self.cases != 1 else 's'} the "
            f"last {MAX_HISTORY_TURNS} turns of a history of up to {self.longest:,} (a case's history is "
            f"cut to the last {MAX_HISTORY_TURNS} turns before its user turn)"
        ]


def _roles_of(turns: list[Any], layout: Layout, roles: dict[str, str]) -> tuple[list[str | None], list[Any]]:
    """Each turn's chat role (None: unknown) and its speaker as written."""
    out: list[str | None] = []
    said: list[Any] = []
    for i, turn in enumerate(turns):
        if layout.speaker == ORDER:
            out.append("assistant" if i % 2 else "user")
            said.append(None)
            continue
        who = turn.get(layout.speaker) if isinstance(turn, dict) else None
        out.append(chat_role(who, roles))
        said.append(who)
    return out, said


def _expand(
    out: _Out,
    dialogue: Any,
    did: str,
    where: str,
    at: Callable[[int], str],
    turns: list[Any],
    layout: Layout,
    roles: dict[str, str],
    cuts: _Cuts,
) -> None:
    """The rows of one dialogue's user turns (`where`: the dialogue's location, `at(i)`: turn i's), or the
    problems that refuse it (one per unknown speaker, all at `where`: the dialogue is one invalid row)."""
    chat, said = _roles_of(turns, layout, roles)
    unknown = {
        speaker_key(s): (i, s)
        for i, (r, s) in reversed(list(enumerate(zip(chat, said, strict=True))))
        if r is None
    }
    if unknown:
        for i, who in sorted(unknown.values(), key=lambda p: p[0]):
            shown = "no speaker" if who in (None, "") else f"speaker {who!r}"
            out.problems.append(
                (
                    "unknown_speaker",
                    where,
                    "history",
                    who,
                    f"dialogue {did}: turn {i} has {shown}, which is no chat role abbench knows, so its "
                    f"{len(turns)} turns are not imported; {unknown_speaker_hint(who)}",
                )
            )
        return
    texts = [text_of(t.get(layout.text)) if isinstance(t, dict) else text_of(t) for t in turns]
    context = {k: v for k, v in dialogue.items() if k != layout.turns} if isinstance(dialogue, dict) else None
    spoken: list[int] = []  # the turns so far that said something: a history is the last of them
    for i, role in enumerate(chat):
        if role != "user":
            if texts[i].strip():
                spoken.append(i)
            continue
        j = i + 1
        while j < len(turns) and chat[j] == "assistant":
            j += 1
        reply = "\n".join(t for t in texts[i + 1 : j] if t.strip()) or None
        history = [{"role": chat[k], "content": texts[k]} for k in spoken[-MAX_HISTORY_TURNS:]]
        cuts.count(len(spoken))
        if texts[i].strip():
            spoken.append(i)
        out.rows.append(
            {
                "id": f"{did}:{i}",
                "dialogue_id": did,
                "turn_index": i,
                "input": texts[i],
                "history": history or None,
                "reply": reply,
                "turn": turns[i],
                "reply_turn": turns[i + 1] if j > i + 1 else None,
                "dialogue": context,
            }
        )
        out.locations.append(at(i))
        out.raws.append(turns[i])


def conversation_chunks(table: Table, layout: Layout, roles: dict[str, str], size: int) -> Iterator[RowChunk]:
    """One row per user turn of every dialogue in `table` (laid out as `layout`, see `settle`), in
    chunks of about `size` rows."""
    if table.tabular:
        yield from _table_chunks(table, layout, roles, size)
        return
    out, cuts = _Out.empty(), _Cuts()
    for position, (where, key, dialogue, _split) in enumerate(_dialogues(table, layout.keyed, size), 1):
        did = key if layout.id == KEY else _get(dialogue, layout.id) if layout.id else str(position)
        turns = dialogue if layout.turns is None else _get(dialogue, layout.turns)
        if layout.keyed and (text := lone_surrogate(dialogue)) is not None:
            out.bad.append((where, surrogate_message(text), None))
        elif did in (None, "") or isinstance(did, (dict, list)):
            out.bad.append((where, f"the dialogue has no id at {layout.id!r} (conversation: id)", None))
        elif not isinstance(turns, list):
            at = f"at {layout.turns!r}" if layout.turns else "(the dialogue is not a list)"
            out.bad.append((where, f"dialogue {did}: no list of turns {at}", None))
        elif len(turns) > MAX_DIALOGUE_TURNS:
            out.problems.append(_too_long(where, text_of(did), len(turns)))
        else:
            _expand(out, dialogue, text_of(did), where, _turn_of(where), turns, layout, roles, cuts)
        if len(out.rows) >= size:
            yield out.chunk()
            out = _Out.empty()
    if out.rows or out.bad or out.problems or cuts.cases:
        yield out.chunk(cuts.notes())


def _turn_of(where: str) -> Callable[[int], str]:
    return lambda i: f"{where}, turn {i}"


def _too_long(where: str, did: str, n: int) -> tuple[str, str, str | None, Any, str]:
    """The problem refusing a dialogue of `n` turns, past `MAX_DIALOGUE_TURNS`, on its row."""
    return (
        "dialogue_too_long",
        where,
        "history",
        did,
        f"dialogue {did} has {n:,} turns, more than the {MAX_DIALOGUE_TURNS:,} one dialogue may hold (each "
        f"user turn becomes a case, its history the last {MAX_HISTORY_TURNS} turns before it), so none is "
        "imported; split it into shorter dialogues (one a session), or skip invalid rows to import the others",
    )


def _table_chunks(table: Table, layout: Layout, roles: dict[str, str], size: int) -> Iterator[RowChunk]:
    """A table of turns: consecutive rows with one dialogue id are one dialogue."""
    out, cuts = _Out.empty(), _Cuts()
    current: Any = object()
    turns: list[dict[str, Any]] = []
    locs: list[str] = []
    past = 0  # the turns of the current dialogue past MAX_DIALOGUE_TURNS: counted, never kept

    def flush() -> None:
        if not turns:
            return
        if current in (None, ""):
            message = f"the row names no dialogue in {layout.id!r}; fill it in, or skip the row"
            out.bad.extend((loc, message, turn) for loc, turn in zip(locs, turns, strict=True))
            return
        if past:
            out.problems.append(_too_long(locs[0], text_of(current), len(turns) + past))
            return
        rows = list(locs)  # a table's turns are rows: each case sits on its own
        _expand(out, None, text_of(current), rows[0], rows.__getitem__, turns, layout, roles, cuts)

    for chunk in table.chunks(size):
        for row, loc in zip(chunk.rows, chunk.locations, strict=True):
            record = table.as_record(row)
            did = record.get(layout.id)
            if did != current:
                flush()
                current, turns, locs, past = did, [], [], 0
                if len(out.rows) >= size:
                    yield out.chunk()
                    out = _Out.empty()
            if len(turns) < MAX_DIALOGUE_TURNS or did in (None, ""):
                turns.append(record)
                locs.append(loc)
            else:
                past += 1
        out.bad.extend(chunk.bad)
    flush()
    if out.rows or out.bad or out.problems or cuts.cases:
        yield out.chunk(cuts.notes())


# -- recognising a file of dialogues (for the suggestion) -------------------------------------------


@dataclass(frozen=True)
class Recognised:
    """A file recognised as dialogues: the settings to write, and why, in words.

    Attributes:
        layout: The settled layout (`Layout.spec` is the profile's ``conversation:``).
        roles: Speaker → role for names no table knows, guessed from who speaks first (said in `notes`).
        reasons: Case field → why, as the suggestion shows it.
        notes: What else to know: the speakers, the per-turn keys a gold could come from, a guess.
    """

    layout: Layout
    roles: dict[str, str]
    reasons: dict[str, str]
    notes: list[str]


def recognise(table: Table) -> Recognised | None:
    """`table` read as dialogues, when most of its first ones hold two user turns or more; else None.

    One chat per row with a single user message (OpenAI evals, Inspect) is not a dialogue file: it
    stays one case per row.
    """
    if table.tabular:
        return None
    try:
        # one object holding lists is a wrapper (Rasa's rasa_nlu_data) unless the recipe is asked for
        layout = settle(table, None, least=2)
    except ImportFailed:
        return None
    if layout.turns not in _TURN_LISTS and (layout.speaker == ORDER or layout.speaker not in _SPEAKER_NAMES):
        # Lists of texts are dialogues under a dialogue's name or with a speaker's: SNIPS's chunks and
        # Rasa's common_examples (whose intent has a few short values) are not.
        return None
    _, dialogues = sample_dialogues(table, least=2)
    turn_lists = [d if layout.turns is None else _get(d, layout.turns) for d in dialogues]
    turn_lists = [t for t in turn_lists if isinstance(t, list)]
    speakers: Counter[str] = Counter()
    first: Counter[str] = Counter()
    for turns in turn_lists:
        said = (
            [t.get(layout.speaker) for t in turns if isinstance(t, dict)] if layout.speaker != ORDER else []
        )
        speakers.update(str(s) for s in said if s not in (None, ""))
        if said and said[0] not in (None, ""):
            first[str(said[0])] += 1
    roles = _guessed_roles(speakers, first)
    if roles is None:
        return None
    users = [sum(r == "user" for r in _roles_of(t, layout, roles)[0]) for t in turn_lists]
    if not users or sum(n >= 2 for n in users) * 2 < len(users):
        return None
    return Recognised(layout, roles, *_words(layout, roles, speakers, turn_lists, sum(users)))


def _guessed_roles(speakers: Counter[str], first: Counter[str]) -> dict[str, str] | None:
    """Roles for the speaker names no table knows: the one who speaks first is the user, the other the
    assistant (two names at most); None when that cannot be guessed."""
    unknown = [s for s in speakers if chat_role(s) is None]
    if not unknown:
        return {}
    if len(speakers) != 2 or not first:
        return None
    opener = first.most_common(1)[0][0]
    return {s: ("user" if s == opener else "assistant") for s in unknown}


def _words(
    layout: Layout, roles: dict[str, str], speakers: Counter[str], turn_lists: list[list[Any]], users: int
) -> tuple[dict[str, str], list[str]]:
    who = (
        "turns alternate user, assistant (they name no speaker)"
        if layout.speaker == ORDER
        else "speakers "
        + ", ".join(f"{s!r} → {chat_role(s, roles)}" for s, _ in speakers.most_common(6))
        + f" ({layout.speaker!r} of each turn)"
    )
    ids = {KEY: "the key each dialogue is stored under", None: "its position in the file (no id key found)"}
    reasons = {
        "input": f"each user turn's {layout.text!r}: one case per user turn ({users:,} in the first "
        f"{len(turn_lists)} dialogues); {who}",
        "history": "the turns before it, as user/assistant chat turns (never a system message)",
        "expected": "reply: what the assistant says next",
        "case_id": f"id: <dialogue id>:<turn index>, the dialogue id being "
        f"{ids.get(layout.id, repr(layout.id))}",
    }
    keys = Counter(str(k) for turns in turn_lists for t in turns if isinstance(t, dict) for k in t)
    other = [k for k, _ in keys.most_common() if k not in (layout.text, layout.speaker)]
    notes = [
        f"the file holds dialogues, each a list of turns{f' (at {layout.turns!r})' if layout.turns else ''}: "
        "recipe 'conversations' applied, one case per user turn with the turns before it as history"
    ]
    if other:
        shown = ", ".join(other[:8]) + (f" … and {len(other) - 8:,} more" if len(other) > 8 else "")
        notes.append(
            f"each turn also holds {shown}: for a per-turn gold, map expected to one of them "
            f"(fields: {{expected: turn.{other[0]}}}, or reply_turn.{other[0]} for the assistant's)"
        )
    if roles:
        guessed = ", ".join(f"{k!r} → {v}" for k, v in roles.items())
        notes.append(
            f"the speaker names are not ones abbench knows; guessed from who speaks first: {guessed}. "
            "Check them (roles: in the profile)"
        )
    return reasons, notes

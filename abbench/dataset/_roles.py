"""Who speaks in a history turn: a dataset's speaker names read as the chat roles ``user`` and ``assistant``.

Dialogue corpora name their two sides in their own words (MultiWOZ and SGD ``USER``/``SYSTEM``,
CrossWOZ ``usr``/``sys``, ShareGPT ``human``/``gpt``, a call centre's ``用户``/``客服``). A model is sent
only ``user`` and ``assistant`` turns: a dataset's ``system`` speaker is the bot side of the
conversation, never the chat's system message, where its text would outrank the instructions.
Names this table does not know are the mapping's to state (``roles: {Wizard: assistant}``); an import
refuses a turn whose speaker is neither here nor there.

Kept free of pydantic and the readers: the agents read it on every run.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

CHAT_ROLES = ("user", "assistant")
"""The roles a dataset's turn may take in the chat sent to a model (never ``system``)."""

_USERS = ("user", "usr", "human", "customer", "client", "guest", "caller", "apprentice", "query", "question")
_USERS_ZH = ("用户", "客户", "顾客", "访客", "买家", "患者")
_ASSISTANTS = (
    "assistant",
    "ai",
    "bot",
    "chatbot",
    "agent",
    "model",
    "gpt",
    "answer",
    "wizard",
    "system",
    "sys",
)
_ASSISTANTS_ZH = ("助手", "机器人", "系统", "客服", "坐席", "卖家", "医生")

SPEAKER_ROLES: dict[str, str] = {
    **dict.fromkeys((*_USERS, *_USERS_ZH), "user"),
    **dict.fromkeys((*_ASSISTANTS, *_ASSISTANTS_ZH), "assistant"),
}
"""Speaker names every import and agent knows, by their `speaker_key`: ``system``/``sys`` (MultiWOZ,
SGD, CrossWOZ) and ``wizard`` (Wizard-of-Oz collections) are the assistant's side."""

SPEAKER_KEYS = ("role", "speaker", "from", "author")
"""The keys of a history turn that name who speaks, first found first."""

TEXT_KEYS = ("content", "text", "value", "message", "utterance")
"""The keys of a history turn that hold what was said, first found first."""


def speaker_key(name: Any) -> str:
    """The form speaker names are compared in: NFKC, case-folded, spaces collapsed (``" USER"`` → ``user``)."""
    return " ".join(unicodedata.normalize("NFKC", str(name)).casefold().split())


def chat_role(speaker: Any, roles: Mapping[str, str] | None = None) -> str | None:
    """The chat role (``user`` or ``assistant``) of `speaker`: the mapping's `roles` first, then
    `SPEAKER_ROLES`; None for a name neither knows (or no name)."""
    if speaker is None or isinstance(speaker, (dict, list)):
        return None
    key = speaker_key(speaker)
    if not key:
        return None
    if roles:
        for name, role in roles.items():
            if speaker_key(name) == key:
                return role
    return SPEAKER_ROLES.get(key)


def turn_speaker(turn: Mapping[str, Any], key: str | None = None) -> Any:
    """Who speaks in `turn`: its `key`, else the first of `SPEAKER_KEYS` it has (None: no speaker named)."""
    if key is not None:
        return turn.get(key)
    for k in SPEAKER_KEYS:
        if turn.get(k) not in (None, ""):
            return turn[k]
    return None


def turn_text(turn: Mapping[str, Any], key: str | None = None) -> Any:
    """What was said in `turn`: its `key`, else the first of `TEXT_KEYS` it has."""
    if key is not None:
        return turn.get(key)
    for k in TEXT_KEYS:
        if k in turn:
            return turn[k]
    return None


def unknown_speaker_hint(speaker: Any) -> str:
    """What to write in the mapping for a speaker name no table knows."""
    name = str(speaker)
    shown = name if all(ch.isalnum() or ch in "_-" for ch in name) else repr(name)
    return (
        f"say which side it is in the mapping: roles: {{{shown}: assistant}} (or user). Known without one: "
        "user, usr, human, customer, 用户 … (user); assistant, bot, agent, system, sys, 客服 … (assistant)"
    )

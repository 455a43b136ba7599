"""The task prompt every LLM-like adapter sends: the skill injected, the case, the labels, the answer contract.

The skill is put into the prompt directly (its SKILL.md body, the list of its other files and the
section references an answer may cite) so an agent is never left to discover it. The gold answer
(`Case.expected`), the raw source row and the case metadata never reach the agent.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from abbench.agents._base import Task
from abbench.dataset import chat_role, turn_speaker, turn_text
from abbench.snapshot import MARKDOWN_SUFFIXES, Snapshot, front_matter_end

ANSWER_FIELDS = ("prediction", "reason", "confidence", "evidence_refs")
"""The keys of the JSON answer every adapter asks for."""

MAX_LISTED_FILES = 200
"""Files listed in the prompt beyond this are summarised (the list_files tool still shows them all)."""

MAX_LISTED_REFS = 40
"""Section references listed per file in the prompt."""

_log = logging.getLogger(__name__)
_WARNED: set[tuple[str | None, str]] = set()  # (case, speaker) already logged, bounded below


@dataclass(frozen=True, slots=True)
class Prompt:
    """The prompt of one task, in chat form and as plain text.

    Attributes:
        system: The instructions: the role, the skill, the labels and the answer contract.
        messages: ``system``, then the case's history as prior turns, then the case itself — ready to
            send to a chat-completions endpoint.
        text: The same content as one text, for command-line agents that take a single prompt.
    """

    system: str
    messages: tuple[dict[str, Any], ...]
    text: str

    @property
    def user(self) -> str:
        """The last user message: the case itself."""
        return str(self.messages[-1]["content"])


def history_turns(history: Any, *, case_id: str | None = None) -> list[dict[str, str]]:
    """A case's history as chat turns (``{"role", "content"}``), every role ``user`` or ``assistant``.

    Accepts a list of turns (speakers read by `abbench.dataset.chat_role`: ``human``/``bot``/``用户``/
    ``客服`` …; a dataset's ``system`` speaker — the bot side in MultiWOZ and SGD — is the assistant,
    never a chat system message), a list of strings (alternating user, assistant), a
    ``{"messages": [...]}`` object, a JSON string of any of these, or plain text (one earlier user
    turn). A speaker no table knows (an import refuses one; older datasets may hold one) takes the
    alternating role, and is logged with `case_id`.
    """
    if history is None or history == "" or history == []:
        return []
    if isinstance(history, str):
        text = history.strip()
        if text[:1] in "[{":
            try:
                return history_turns(json.loads(text), case_id=case_id)
            except ValueError:
                pass
        return [{"role": "user", "content": text}]
    if isinstance(history, dict):
        if isinstance(history.get("messages"), list):
            return history_turns(history["messages"], case_id=case_id)
        return [{"role": "user", "content": _text(history)}]
    turns: list[dict[str, str]] = []
    if isinstance(history, list | tuple):
        for i, item in enumerate(history):
            by_order = "assistant" if i % 2 else "user"
            if isinstance(item, dict):
                who = turn_speaker(item)
                role = chat_role(who)
                if role is None and who is not None:
                    _unknown(case_id, who, by_order)
                turns.append({"role": role or by_order, "content": _text(turn_text(item))})
            else:
                turns.append({"role": by_order, "content": _text(item)})
        return [t for t in turns if t["content"]]
    return [{"role": "user", "content": _text(history)}]


def _unknown(case_id: str | None, speaker: Any, role: str) -> None:
    key = (case_id, str(speaker))
    if key in _WARNED:
        return
    if len(_WARNED) < 10_000:
        _WARNED.add(key)
    _log.warning(
        "case %s: history speaker %r is no chat role abbench knows; sent as %s by turn order (state it in "
        "the mapping, roles: {%s: user or assistant}, and import again)",
        case_id or "(unknown)",
        speaker,
        role,
        speaker,
    )


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True)


def skill_body(skill: Snapshot) -> str:
    """The SKILL.md text without its YAML front matter (``""`` when the skill has no SKILL.md)."""
    if not any(f.path == "SKILL.md" for f in skill.files):
        return ""
    lines = skill.read_text("SKILL.md").splitlines()
    return "\n".join(lines[front_matter_end(lines) :]).strip()


def _refs_by_file(skill: Snapshot) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for section in skill.sections:
        if section.level:  # the preamble is cited by the bare path, which the list already shows
            out.setdefault(section.path, []).append(section.ref)
    return out


def _skill_part(skill: Snapshot, *, tools: bool, skill_dir: str | None) -> str:
    refs = _refs_by_file(skill)
    parts = [f"# Skill: {skill.skill_name}"]
    if skill.description:
        parts.append(skill.description.strip())
    parts.append("The skill below is part of your instructions: follow it.")
    body = skill_body(skill)
    if body:
        parts.append(f'<skill file="SKILL.md">\n{body}\n</skill>')
    if refs.get("SKILL.md"):
        parts.append("Sections of SKILL.md you can cite:\n" + "\n".join(f"- {r}" for r in refs["SKILL.md"]))
    others = [f for f in skill.files if f.path != "SKILL.md"]
    if others:
        lines = []
        for f in others[:MAX_LISTED_FILES]:
            if f.binary:
                lines.append(f"- {f.path} (binary)")
            elif f.path.lower().endswith(MARKDOWN_SUFFIXES) and refs.get(f.path):
                shown = refs[f.path][:MAX_LISTED_REFS]
                more = len(refs[f.path]) - len(shown)
                tail = f", … ({more} more)" if more > 0 else ""
                lines.append(f"- {f.path} — sections: {', '.join(shown)}{tail}")
            else:
                lines.append(f"- {f.path}")
        if len(others) > MAX_LISTED_FILES:
            lines.append(f"- … and {len(others) - MAX_LISTED_FILES} more files")
        if tools:
            how = (
                "Read them with the tools when they may matter: list_files(), read_file(path), "
                "read_section(ref) with a reference exactly as listed."
            )
        elif skill_dir:
            how = f"They are in the folder {skill_dir}; read them when they may matter."
        else:
            how = "Their contents are not included here."
        parts.append("## Other files of the skill\n" + "\n".join(lines) + "\n" + how)
    return "\n\n".join(parts)


def catalogue_part(skills: Sequence[Snapshot], *, tools: bool) -> str:
    """The offered skills as a production agent sees them: a catalogue of names and descriptions, and
    how to load one (with the ``load_skill`` tool, or by reading its SKILL.md in `skills/<name>/`)."""
    lines = ["# Skills you may use", "Each skill by its name and what it is for:"]
    for snap in skills:
        description = " ".join((snap.description or "").split())
        lines.append(f"- {snap.skill_name}: {description}" if description else f"- {snap.skill_name}")
    if tools:
        lines.append(
            "When one of them fits the case, load it with load_skill (its name) before you answer; "
            "then read its files with list_files, read_file and read_section. When none fits, answer "
            "from what you know."
        )
    return "\n".join(lines)


def _answer_part(label_set: tuple[str, ...] | None, has_skill: bool) -> str:
    # Placeholders, never a value a model could copy as its answer: an example that showed the first label
    # and "…" as the reason primed weak models to answer the first label and to give "…" as their reason.
    example = {
        "prediction": "<one of the labels>" if label_set else "<your answer>",
        "reason": "<one or two sentences>",
        "confidence": "<a number from 0 to 1>",
        "evidence_refs": ["<path#heading>"] if has_skill else [],
    }
    lines = [
        "# Answer",
        "Reply with one JSON object and nothing else, of this shape (replace each <…> with your value):",
        json.dumps(example, ensure_ascii=False),
    ]
    if label_set:
        labels = ", ".join(json.dumps(label, ensure_ascii=False) for label in label_set)
        lines.append(f"- prediction: exactly one of {labels}, copied exactly.")
    else:
        lines.append("- prediction: your answer to the case.")
    lines.append("- reason: one or two sentences, in the language of the case.")
    lines.append("- confidence: a number from 0 to 1 saying how sure you are.")
    if has_skill:
        lines.append(
            "- evidence_refs: the skill sections your answer relies on, as path#heading references "
            "exactly as listed above; [] when none applies."
        )
    else:
        lines.append("- evidence_refs: [] (no skill is provided).")
    return "\n".join(lines)


def _case_part(task: Task) -> str:
    parts = []
    if task.case.context not in (None, "", [], {}):
        parts.append(f"Context:\n{_text(task.case.context)}")
    parts.append(f"Input:\n{task.case.input}")
    return "\n\n".join(parts)


def build_prompt(task: Task, *, tools: bool = False, skill_dir: str | None = None) -> Prompt:
    """The prompt for `task`: one function for every LLM-like adapter.

    Args:
        task: The case, the arm's skill (or None) and the declared label set.
        tools: Whether the agent can call the skill tools (list_files, read_file, read_section).
        skill_dir: Where the skill's files are on disk, for agents that read them themselves.

    Returns:
        The system text, the chat messages (history as prior turns) and a plain-text rendering.
    """
    intro = (
        "You answer one case of an evaluation. Treat it on its own: nothing from other cases carries over."
    )
    if task.skill is None and task.offered:
        skill = catalogue_part(task.offered, tools=tools)
    elif task.skill is None:
        skill = "No skill is provided: answer from what you know."
    else:
        skill = _skill_part(task.skill, tools=tools, skill_dir=skill_dir)
    has_skill = task.skill is not None or bool(task.offered)
    system = "\n\n".join([intro, skill, _answer_part(task.label_set, has_skill)])
    turns = history_turns(task.case.history, case_id=task.case.case_id)
    case = _case_part(task)
    messages = ({"role": "system", "content": system}, *turns, {"role": "user", "content": case})
    text_parts = [system]
    if turns:
        text_parts.append(
            "# Conversation so far\n" + "\n".join(f"{t['role']}: {t['content']}" for t in turns)
        )
    text_parts.append("# Case\n" + case)
    return Prompt(system=system, messages=messages, text="\n\n".join(text_parts))


def answer_schema(label_set: tuple[str, ...] | None = None) -> dict[str, Any]:
    """The JSON schema of the answer (for ``response_format``), with the labels as an enum when declared."""
    prediction: dict[str, Any] = {"type": "string"}
    if label_set:
        prediction["enum"] = list(label_set)
    return {
        "type": "object",
        "properties": {
            "prediction": prediction,
            "reason": {"type": "string"},
            "confidence": {"type": "number"},
            "evidence_refs": {"type": "array", "items": {"type": "string"}},
        },
        "required": list(ANSWER_FIELDS),
        "additionalProperties": False,
    }

"""A run's trajectory: its tool calls in order, with arguments and results, what it read, its turns and tokens.

One typed view of what a session *did*, built from its transcript's events by `trajectory_of`: the case
view lists its `Trajectory.steps` (``abbench case``, the case drawer), and a judge shown the trajectory
(``include: [trajectory]``, the trajectory presets) reads `Trajectory.text`, cut to a stated budget of
characters.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from abbench.transcript._chat import MessageEvent, ModelEvent, ToolEvent
from abbench.transcript._process import OtherEvent
from abbench.types import Usage

RESULT_BUDGET = 400
"""Characters of each tool result a trajectory's text shows by default."""
BUDGET = 8000
"""Characters a trajectory's text holds by default (its steps cut beyond, and said so)."""


@dataclass(frozen=True, slots=True)
class Step:
    """One tool call of a session, in the order it was made.

    Attributes:
        index: Its place in the session, from 1.
        name: The tool.
        arguments: Its arguments, as the model sent them (a JSON text) or the CLI's object.
        ok: Whether it succeeded (None when the transcript does not say).
        result: What the tool returned, as the session saw it (None when not recorded).
        result_chars: The length of its result.
        turn: The model turn that asked for it.
        id: The call's id.
        skill: The skill a ``load_skill`` call loaded.
    """

    index: int
    name: str
    arguments: Any
    ok: bool | None = None
    result: str | None = None
    result_chars: int | None = None
    turn: int | None = None
    id: str | None = None
    skill: str | None = None

    @property
    def failed(self) -> bool:
        """True when the call is known to have failed."""
        return self.ok is False


@dataclass(frozen=True, slots=True)
class TrajectoryText:
    """A trajectory as a judge reads it.

    Attributes:
        text: The text.
        steps_shown: How many steps it shows (the rest were cut to keep within the budget).
        cut: True when a step or a result was cut.
        budget: The budget in characters it was cut to.
    """

    text: str
    steps_shown: int
    cut: bool
    budget: int


@dataclass(frozen=True)
class Trajectory:
    """What a run's session did, in order (see the module docstring).

    Attributes:
        steps: Its tool calls, each once, in order.
        files_read: Skill files it opened (as the agent recorded them).
        sections_read: Skill sections it opened.
        skills_offered: The skills an offered arm's catalogue showed (None: not offered).
        skills_loaded: The skills it loaded, in order (None: not recorded).
        turns: Model turns (None when the transcript records none).
        usage: Tokens spent (None: not reported).
    """

    steps: tuple[Step, ...]
    files_read: tuple[str, ...] = ()
    sections_read: tuple[str, ...] = ()
    skills_offered: tuple[str, ...] | None = None
    skills_loaded: tuple[str, ...] | None = None
    turns: int | None = None
    usage: Usage | None = None

    @property
    def failed_steps(self) -> int:
        """Steps known to have failed."""
        return sum(s.failed for s in self.steps)

    @property
    def repeated_steps(self) -> int:
        """Steps that repeat an earlier call with the same tool and arguments (a loop's mark)."""
        seen: set[str] = set()
        repeats = 0
        for s in self.steps:
            key = f"{s.name}\0{_compact(s.arguments)}"
            repeats += key in seen
            seen.add(key)
        return repeats

    def text(self, budget: int = BUDGET, result_budget: int = RESULT_BUDGET) -> TrajectoryText:
        """The trajectory as a judge reads it: a header (turns, tokens, reads, loads), then each step
        with its arguments and result, results cut to `result_budget` characters and the whole to
        `budget` (the steps that do not fit are counted, never silently dropped)."""
        head = [
            f"steps: {len(self.steps)} tool calls ({self.failed_steps} failed, {self.repeated_steps} repeated)",
            f"turns: {self.turns if self.turns is not None else 'not recorded'}",
            "tokens: "
            + (
                f"{self.usage.input_tokens} in, {self.usage.output_tokens} out"
                if self.usage is not None
                else "not reported"
            ),
        ]
        if self.skills_offered is not None:
            head.append(f"skills offered: {', '.join(self.skills_offered) or '(none)'}")
        if self.skills_loaded is not None:
            head.append(f"skills loaded: {', '.join(self.skills_loaded) or '(none)'}")
        head.append(f"files read: {', '.join(self.files_read) or '(none)'}")
        head.append(f"sections read: {', '.join(self.sections_read) or '(none)'}")
        out = "\n".join(head)
        cut = False
        shown = 0
        for s in self.steps:
            block = _step_text(s, result_budget)
            cut = cut or (s.result is not None and len(s.result) > result_budget)
            if len(out) + 1 + len(block) > budget:
                cut = True
                break
            out += "\n" + block
            shown += 1
        if shown < len(self.steps):
            out += f"\n… {len(self.steps) - shown} more steps cut to keep within {budget} characters"
        return TrajectoryText(out, shown, cut, budget)


def _compact(value: Any) -> str:
    return " ".join(str(value).split()) if value is not None else ""


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" … [{len(text) - limit} characters cut]"


def _step_text(step: Step, result_budget: int) -> str:
    how = {True: "ok", False: "FAILED", None: "status not recorded"}[step.ok]
    turn = f" (turn {step.turn})" if step.turn is not None else ""
    lines = [f"[{step.index}] {step.name}({_clip(_compact(step.arguments), 300)}) → {how}{turn}"]
    if step.skill:
        lines.append(f"    loaded skill: {step.skill}")
    if step.result is not None:
        lines.append("    result: " + _clip(_compact(step.result), result_budget))
    elif step.result_chars is not None:
        lines.append(f"    result: {step.result_chars} characters (not recorded)")
    return "\n".join(lines)


def _text_of(content: Any) -> str | None:
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(str(p.get("text", "")) if isinstance(p, Mapping) else str(p) for p in content)
    return str(content)


def trajectory_of(
    events: Iterable[Any],
    *,
    files_read: Sequence[str] = (),
    sections_read: Sequence[str] = (),
    skills_offered: Sequence[str] | None = None,
    skills_loaded: Sequence[str] | None = None,
    usage: Usage | None = None,
) -> Trajectory:
    """The trajectory of a session from its transcript's typed events (and what its run recorded).

    The steps are the transcript's `ToolEvent`s; a transcript without them (an OpenAI-style log) gives
    the calls its assistant messages asked for. A ``tool`` message answering a call's id is its result.
    """
    found: list[Step] = []
    results: dict[str, str] = {}
    turns: set[int] = set()
    model_calls = 0
    for event in events:
        if isinstance(event, ToolEvent):
            found.append(
                Step(0, str(event.name), event.arguments, event.ok, None, event.result_chars, event.turn,
                     event.id, event.skill)
            )  # fmt: skip
            if event.turn is not None:
                turns.add(event.turn)
            continue
        if isinstance(event, ModelEvent):
            model_calls += 1
            if event.turn is not None:
                turns.add(event.turn)
            continue
        if isinstance(event, MessageEvent):
            message: Mapping[str, Any] = event.to_dict()
        elif isinstance(event, OtherEvent) and isinstance(event.data, dict) and event.kind is None:
            message = event.data
        else:
            continue
        if message.get("role") == "tool" and message.get("tool_call_id") is not None:
            results.setdefault(str(message["tool_call_id"]), _text_of(message.get("content")) or "")
        # OpenAI-style messages: the only record when a transcript has no tool-call events.
        for call in message.get("tool_calls") or ():
            fn = call.get("function", call) if isinstance(call, Mapping) else {}
            ident = call.get("id") if isinstance(call, Mapping) else None
            found.append(
                Step(0, str(fn.get("name")), fn.get("arguments"), id=None if ident is None else str(ident))
            )
    # A transcript that records both forms lists each call twice; the explicit events win.
    if any(s.ok is not None or s.turn is not None for s in found):
        found = [s for s in found if s.ok is not None or s.turn is not None]
    steps = tuple(
        replace(s, index=n, result=results.get(s.id) if s.id is not None else None)
        for n, s in enumerate(found, start=1)
    )
    return Trajectory(
        steps=steps,
        files_read=tuple(files_read),
        sections_read=tuple(sections_read),
        skills_offered=None if skills_offered is None else tuple(skills_offered),
        skills_loaded=None if skills_loaded is None else tuple(skills_loaded),
        turns=len(turns) if turns else (model_calls or None),
        usage=usage,
    )

"""Reading what a command printed: its answer (JSON, a declared regex, or a preset CLI's report),
and what it reported besides — tokens, cost, session, model, files read — kept even when it fails.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from abbench._regex import UserPattern
from abbench._text import clip
from abbench.agents._answer import Answer, answer_from_mapping, last_json_object, parse_answer
from abbench.agents._base import Spending
from abbench.agents._presets import Preset, Reading, Setup, json_lines
from abbench.errors import AgentError
from abbench.llm import FailureType, classify_failure, is_context_overflow, price_table
from abbench.transcript import CliReportEvent, ToolEvent
from abbench.types import Usage

_TEXT_KEYS = ("result", "output", "text", "content", "response", "message", "completion", "final")


@dataclass(frozen=True)
class Reported:
    """What a command reported besides its answer (None / empty: it reported nothing of it).

    Attributes:
        usage: Its tokens.
        cost: Its cost in USD.
        session_id: Its session.
        model: The model it used.
        files_read: The skill files it read.
        sections_read: The skill sections it read.
    """

    usage: Usage | None = None
    cost: float | None = None
    session_id: str | None = None
    model: str | None = None
    files_read: tuple[str, ...] = ()
    sections_read: tuple[str, ...] = ()


def read_stdout(
    stdout: str, pattern: UserPattern | None, label_set: Sequence[str] | None
) -> tuple[Answer, Reported]:
    """The answer in a plain command's stdout: the last match of `pattern`, else the last JSON
    object with an answer (or a text field to read one from), else the text itself.

    Raises:
        AgentError: the pattern does not match, or matched with an empty prediction.
    """
    if pattern is not None:
        matches = list(pattern.finditer(stdout))
        if not matches:
            raise AgentError(
                f"stdout does not match the pattern {pattern.pattern!r}: {clip(stdout.strip(), 200)!r}",
                FailureType.BAD_OUTPUT,
            )
        groups = {k: v for k, v in matches[-1].groupdict().items() if v is not None}
        answer = answer_from_mapping(groups, label_set, method="regex")
        if answer is None:
            raise AgentError("the pattern matched but its prediction group is empty", FailureType.BAD_OUTPUT)
        return answer, Reported()
    objects = _json_objects(stdout)
    reported = _reported(objects)
    for obj in reversed(objects):
        answer = answer_from_mapping(obj, label_set, method="json")
        if answer is not None:
            return answer, reported
        for key in _TEXT_KEYS:
            if isinstance(obj.get(key), str) and obj[key].strip():
                return parse_answer(obj[key], label_set), reported
    return parse_answer(stdout, label_set), reported


def read_cli_answer(
    reading: Reading, pattern: UserPattern | None, label_set: Sequence[str] | None, cli: str
) -> tuple[Answer, Reported]:
    """The answer in the text a preset CLI (called `cli`) printed, and what its report says.

    Raises:
        AgentError: it printed no answer text, or the text does not match `pattern`.
    """
    text = reading.text
    if not text or not text.strip():
        raise AgentError(
            f"{cli} printed no answer text; its stdout is in the transcript", FailureType.BAD_OUTPUT
        )
    answer = (
        read_stdout(text, pattern, label_set)[0] if pattern is not None else parse_answer(text, label_set)
    )
    return answer, Reported(
        usage=reading.usage,
        cost=reading.cost,
        session_id=reading.session_id,
        model=reading.model,
        files_read=tuple(reading.files_read),
    )


def read_report(
    preset: Preset, prices: Any, stdout: str, stderr: str, setup: Setup, spent: Spending, model: str
) -> Reading | None:
    """Read a preset CLI's output into `spent` and the transcript (whatever the outcome); None when
    its reader failed (said in the transcript)."""
    try:
        reading = preset.read(stdout, stderr, setup)
    except Exception as exc:  # a reader must never hide the run's own outcome
        spent.transcript.append(CliReportEvent(preset=preset.name, unreadable=repr(exc)).to_dict())
        return None
    cost = reading.cost
    if cost is None and reading.usage is not None:
        price = price_table(prices, model=model).lookup(reading.model or model) or price_table(
            prices, model=model
        ).lookup(model)
        cost = price.cost(reading.usage) if price else None
    reading.cost = cost
    if reading.usage is not None or reading.steps:
        spent.add_call(reading.usage, cost, reading.model or model or None)
        spent.calls = max(spent.calls, reading.steps)
    files = _skill_paths(reading.files_read, setup)
    spent.files_read = list(files)
    reading.files_read = list(files)
    calls = tuple(
        ToolEvent(
            name=_str_or_none(c.get("name")), arguments=c.get("input"), status=_str_or_none(c.get("status"))
        )
        for c in reading.tool_calls
    )
    spent.transcript.extend(c.to_dict() for c in calls)
    report = CliReportEvent(
        preset=preset.name,
        session_id=reading.session_id,
        model=reading.model,
        usage=reading.usage,
        cost=cost,
        steps=reading.steps,
        # the calls again, as the CLI listed them: the runner counts a transcript entry's tool_calls list
        tool_calls=calls,
        files_read=tuple(files),
        error=reading.error,
    )
    spent.transcript.append(report.to_dict())
    return reading


def _str_or_none(value: Any) -> str | None:
    """A CLI's name or status for a call, as text (None when it gave none)."""
    return None if value is None else str(value)


def _reported(objects: list[dict[str, Any]]) -> Reported:
    """Usage, cost, session, model and reads reported by the agent's JSON (last report wins)."""
    found: dict[str, Any] = {}
    for obj in objects:
        usage = obj.get("usage")
        if isinstance(usage, dict):
            inp = sum(
                _int(usage.get(k))
                for k in (
                    "input_tokens",
                    "prompt_tokens",
                    "cache_creation_input_tokens",
                    "cache_read_input_tokens",
                )
            )
            outp = _int(usage.get("output_tokens", usage.get("completion_tokens")))
            found["usage"] = Usage(inp, outp)
        for key in ("total_cost_usd", "cost_usd", "cost"):
            if isinstance(obj.get(key), int | float) and not isinstance(obj.get(key), bool):
                found["cost"] = float(obj[key])
                break
        for key in ("session_id", "sessionId", "sessionID"):
            if isinstance(obj.get(key), str):
                found["session_id"] = obj[key]
        if isinstance(obj.get("model"), str):
            found["model"] = obj["model"]
        for key in ("files_read", "sections_read"):
            if isinstance(obj.get(key), list):
                found[key] = tuple(str(x) for x in obj[key])
    return Reported(**found)


def _json_objects(text: str) -> list[dict[str, Any]]:
    """JSON objects in stdout: one per JSON line when it prints JSON lines, else the last one found."""
    found = json_lines(text)
    if found:
        return found
    last = last_json_object(text)
    return [last] if last is not None else []


def _skill_paths(paths: Sequence[str], setup: Setup) -> list[str]:
    """The skill files among `paths` (absolute, or relative to the workspace), relative to the skill
    folder, each once in first-read order; files outside the skill are left out."""
    if setup.skill_dir is None:
        return []
    root = os.path.realpath(setup.skill_dir)
    out: list[str] = []
    for path in paths:
        full = os.path.realpath(path if os.path.isabs(path) else os.path.join(setup.workspace, path))
        if full.startswith(root + os.sep):
            rel = Path(os.path.relpath(full, root)).as_posix()
            if rel not in out:
                out.append(rel)
    return out


def cli_failure(error: Mapping[str, Any]) -> tuple[FailureType, bool]:
    """The failure kind of an error a CLI reported: by its HTTP status as the openai adapter
    classifies one (429 rate_limited, 401 auth, 5xx server_error ...), else as the CLI says."""
    status = error.get("status")
    if isinstance(status, int) and status >= 400:
        return classify_failure(status, str(error.get("message") or ""), None)
    if is_context_overflow(str(error.get("message") or "")):
        # an in-process model (llm's llama-cpp plugins) says so without a status: the openai adapter's
        # bad_request, never a retried agent_error
        return FailureType.BAD_REQUEST, False
    retryable = error.get("retryable")
    return FailureType.AGENT_ERROR, True if retryable is None else bool(retryable)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def offered_loads(paths: Sequence[str], setup: Setup, names: Sequence[str]) -> list[str]:
    """The offered skills a CLI loaded, in order: those whose ``<name>/SKILL.md`` it read under the
    skills folder (`setup.skill_dir`, the folder the offered snapshots were placed in)."""
    loaded: list[str] = []
    for rel in _skill_paths(paths, setup):
        name, _, rest = rel.partition("/")
        if rest == "SKILL.md" and name in names and name not in loaded:
            loaded.append(name)
    return loaded

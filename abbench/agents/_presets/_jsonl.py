"""Presets for CLIs that print JSON lines, read by declared JSON paths: ``generic-jsonl`` (the arm
declares the paths), ``claude-code`` and ``codex`` (their documented event formats).

A path is keys joined by dots, read from every JSON line: ``usage.input_tokens``. ``*`` walks every
item of a list, a number picks one, and ``[key=value]`` after a key (or alone, for the line itself)
keeps only objects whose ``key`` equals ``value``: ``[type=item.completed].item[type=agent_message].text``.
Text, session and model take the last match; tokens and cost add up every match (one per step);
tool calls and files read take every match, in order.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any, ClassVar

from abbench.agents._presets._base import Preset, Reading, Setup, home_env, json_lines, number
from abbench.errors import UsageError

PATH_KEYS = (
    "text",
    "input_tokens",
    "output_tokens",
    "cost",
    "session_id",
    "model",
    "tool_calls",
    "files_read",
    "error",
)
"""What ``paths:`` of a generic-jsonl arm may declare (``text`` is required)."""

_SEGMENT = re.compile(r"^(?P<key>[^\[\]]*)(?P<filters>(?:\[[^\[\]=]+=[^\[\]]*\])*)$")
_FILTER = re.compile(r"\[([^\[\]=]+)=([^\[\]]*)\]")


def compile_path(path: str, where: str = "paths") -> list[tuple[str, list[tuple[str, str]]]]:
    """`path` as ``(key, filters)`` segments.

    Raises:
        UsageError: the path is empty or a segment is malformed (the message shows it).
    """
    if not isinstance(path, str) or not path.strip():
        raise UsageError(
            f"{where}: a JSON path must be a non-empty string such as usage.input_tokens, not {path!r}"
        )
    segments, depth, current = [], 0, ""
    for ch in path.strip():  # split on dots outside [...]: a filter value may hold dots
        if ch == "." and depth == 0:
            segments.append(current)
            current = ""
            continue
        depth += (ch == "[") - (ch == "]")
        current += ch
    segments.append(current)
    out = []
    for seg in segments:
        m = _SEGMENT.match(seg)
        if m is None or (not m.group("key") and not m.group("filters")):
            raise UsageError(
                f"{where}: {path!r} has a malformed part {seg!r}; write keys joined by dots, * for every "
                "list item, and [key=value] to keep matching objects, e.g. [type=result].usage.input_tokens"
            )
        out.append((m.group("key"), _FILTER.findall(m.group("filters"))))
    return out


def _matches(value: Any, filters: list[tuple[str, str]]) -> bool:
    return isinstance(value, dict) and all(str(value.get(k)) == v for k, v in filters)


def walk(value: Any, segments: list[tuple[str, list[tuple[str, str]]]]) -> Iterator[Any]:
    """Every value `segments` reach in `value`."""
    if not segments:
        yield value
        return
    (key, filters), rest = segments[0], segments[1:]
    if key == "*":
        items = value if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else []
        for item in items:
            if not filters or _matches(item, filters):
                yield from walk(item, rest)
        return
    if key:
        if isinstance(value, dict) and key in value:
            value = value[key]
        elif isinstance(value, list) and key.lstrip("-").isdigit() and -len(value) <= int(key) < len(value):
            value = value[int(key)]
        else:
            return
    if filters and not _matches(value, filters):
        return
    yield from walk(value, rest)


class PathReader:
    """Reads a `Reading` from JSON lines by declared paths (see the module's docstring)."""

    def __init__(self, paths: dict[str, str], where: str = "paths"):
        if not isinstance(paths, dict) or not paths.get("text"):
            raise UsageError(
                f"{where}: generic-jsonl needs `paths:` with at least `text:` (the JSON path of the final "
                f"answer text), e.g. {{text: result, input_tokens: usage.input_tokens}}; keys: {', '.join(PATH_KEYS)}"
            )
        unknown = sorted(set(paths) - set(PATH_KEYS))
        if unknown:
            raise UsageError(
                f"{where}: unknown path key(s) {', '.join(unknown)}; valid: {', '.join(PATH_KEYS)}"
            )
        self.paths = {k: compile_path(v, f"{where}.{k}") for k, v in paths.items()}

    def read(self, stdout: str) -> Reading:
        """Read `stdout`'s JSON lines."""
        reading = Reading()
        tokens = {"input_tokens": 0, "output_tokens": 0}
        seen_tokens = False
        cost: float | None = None
        for obj in json_lines(stdout):
            for key, segments in self.paths.items():
                for value in walk(obj, segments):
                    if key == "text" and isinstance(value, str) and value.strip():
                        reading.text = value
                    elif key in tokens and number(value) is not None:
                        tokens[key] += int(value)
                        seen_tokens = True
                    elif key == "cost" and number(value) is not None:
                        cost = (cost or 0.0) + float(value)
                    elif key in ("session_id", "model") and isinstance(value, str) and value:
                        setattr(reading, key, value)
                    elif key == "tool_calls" and value is not None:
                        reading.tool_calls.append(value if isinstance(value, dict) else {"name": str(value)})
                    elif key == "files_read" and isinstance(value, str) and value:
                        reading.files_read.append(value)
                    elif key == "error" and value:
                        reading.error = {"message": value if isinstance(value, str) else str(value)}
        if seen_tokens:
            reading.add_usage(tokens["input_tokens"], tokens["output_tokens"])
        reading.cost = cost if cost else None  # a CLI that does not know the model's price says 0
        return reading


class GenericJsonl(Preset):
    """Any CLI that prints JSON lines: the arm gives ``argv`` and ``paths``."""

    name = "generic-jsonl"
    options = ("paths",)
    needs_model = False

    def check(self, options: dict[str, Any]) -> None:
        PathReader(options.get("paths") or {}, "generic-jsonl paths")

    def argv(self, program: str, args: list[str]) -> list[str]:
        raise UsageError(
            "preset generic-jsonl needs `argv:` (the command to run, with {prompt} or {prompt_file}) "
            "and `paths:` (where its JSON lines hold the text, tokens, cost, ...)"
        )

    def read(self, stdout: str, stderr: str, setup: Setup) -> Reading:
        return PathReader(setup.options.get("paths") or {}).read(stdout)


class ClaudeCode(Preset):
    """Claude Code's headless mode: ``claude -p --output-format stream-json --verbose``.

    Read per its documented stream-json format: the last line is the ``result`` object (``result``,
    ``session_id``, ``total_cost_usd``, ``usage`` with input, cache and output tokens, ``is_error``);
    ``assistant`` lines carry ``tool_use`` blocks (``Read`` with ``input.file_path``). Claude Code
    speaks the Anthropic API: ``base_url`` becomes ``ANTHROPIC_BASE_URL`` and the key is handed over
    as ``ANTHROPIC_API_KEY`` from the arm's ``api_key_env``.
    """

    name = "claude-code"
    skills_dir = ".claude/skills"  # where Claude Code discovers project skills
    program = "claude"
    flags = (
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--model",
        "{model}",
        "--allowedTools",
        "Read,Glob,Grep",
    )
    PATHS: ClassVar[dict[str, str]] = {
        "text": "[type=result].result",
        "input_tokens": "[type=result].usage.input_tokens",
        "output_tokens": "[type=result].usage.output_tokens",
        "cost": "[type=result].total_cost_usd",
        "session_id": "[type=result].session_id",
        "model": "[type=system].model",
        "tool_calls": "[type=assistant].message.content.*[type=tool_use]",
        "files_read": "[type=assistant].message.content.*[type=tool_use][name=Read].input.file_path",
    }
    CACHE_PATHS = (
        "[type=result].usage.cache_read_input_tokens",
        "[type=result].usage.cache_creation_input_tokens",
    )

    def prepare(self, setup: Setup) -> dict[str, str]:
        env = home_env(setup.workspace)
        if setup.base_url:
            env["ANTHROPIC_BASE_URL"] = setup.base_url
        return env

    def read(self, stdout: str, stderr: str, setup: Setup) -> Reading:
        reading = PathReader(self.PATHS).read(stdout)
        objects = json_lines(stdout)
        cached = sum(
            int(v) for p in self.CACHE_PATHS for o in objects for v in walk(o, compile_path(p)) if number(v)
        )
        if cached and reading.usage is not None:
            reading.add_usage(cached, 0)
        for obj in objects:
            if obj.get("type") == "result" and obj.get("is_error"):
                reading.error = {"message": str(obj.get("result") or obj.get("subtype") or "error")}
            if obj.get("type") == "result":
                reading.steps = int(number(obj.get("num_turns")) or 0)
        reading.tool_calls = [
            {"name": c.get("name"), "input": c.get("input"), "status": None} for c in reading.tool_calls
        ]
        return reading


class Codex(Preset):
    """OpenAI Codex's ``codex exec --json``: ``thread.started`` (``thread_id``), ``item.completed``
    items (``agent_message`` text, ``command_execution`` commands), ``turn.completed`` usage
    (``input_tokens``, ``cached_input_tokens``, ``output_tokens``), ``turn.failed`` / ``error``.
    Its provider is written to ``CODEX_HOME/config.toml`` in the workspace, pointing at ``base_url``
    with the key read from the arm's ``api_key_env``."""

    name = "codex"
    skills_dir = ".codex/skills"
    program = "codex"
    flags = ("exec", "--json", "--skip-git-repo-check", "-m", "{model}", "-C", "{workspace}")
    PATHS: ClassVar[dict[str, str]] = {
        "text": "[type=item.completed].item[type=agent_message].text",
        "input_tokens": "[type=turn.completed].usage.input_tokens",
        "output_tokens": "[type=turn.completed].usage.output_tokens",
        "session_id": "[type=thread.started].thread_id",
        "tool_calls": "[type=item.completed].item[type=command_execution]",
        "error": "[type=turn.failed].error.message",
    }

    def prepare(self, setup: Setup) -> dict[str, str]:
        env = home_env(setup.workspace)
        home = setup.workspace / ".codex"
        home.mkdir(exist_ok=True)
        lines = [f"model = {_toml(setup.model)}"]
        if setup.base_url:
            lines += [
                'model_provider = "abbench"',
                "",
                "[model_providers.abbench]",
                'name = "abbench"',
                f"base_url = {_toml(setup.base_url)}",
                'wire_api = "chat"',
            ]
            if setup.api_key_env:
                lines.append(f"env_key = {_toml(setup.api_key_env)}")
        (home / "config.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
        env["CODEX_HOME"] = str(home)
        return env

    def read(self, stdout: str, stderr: str, setup: Setup) -> Reading:
        reading = PathReader(self.PATHS).read(stdout)
        reading.tool_calls = [
            {"name": "command_execution", "input": c.get("command"), "status": c.get("status")}
            for c in reading.tool_calls
        ]
        reading.steps = sum(1 for o in json_lines(stdout) if o.get("type") == "turn.completed")
        return reading


def _toml(text: str) -> str:
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'

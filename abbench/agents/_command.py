"""The ``command`` adapter: any agent CLI, run from an argv template in a fresh workspace.

Each run gets a new temporary folder holding a copy of the skill (``skill/``), the prompt
(``prompt.txt``) and the case (``case.json``). The command runs there in its own process group with
only the environment the arm passes through; on timeout or cancellation the whole group is killed,
grandchildren included. Its stdout is read as JSON (the last JSON object with an answer) or by a
declared regex; stderr is kept in the transcript.

With ``preset:`` (see `abbench.agents._presets`) the adapter knows the CLI: the argv of a one-shot
run, its config written into the workspace (a provider at ``base_url``, the key from the variable
``api_key_env`` names), and how to read what it prints — the answer text, tokens, cost, tool calls,
files read and its session id, kept with the attempt even when the run fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import os
import re
import shlex
import shutil
import signal
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from abbench._text import clip, clip_start
from abbench.agents._answer import Answer, answer_from_mapping, canonical_refs, last_json_object, parse_answer
from abbench.agents._base import Spending, Task, agent_case, register_agent
from abbench.agents._presets import PRESETS, Preset, Reading, Setup, get_preset, json_lines
from abbench.agents._prompt import build_prompt
from abbench.errors import AgentError, UsageError
from abbench.llm import FailureType, classify_failure, normalize_base_url, price_table
from abbench.types import AgentOutput, Usage

PLACEHOLDERS = (
    "case_file",
    "case_id",
    "model",
    "prompt",
    "prompt_file",
    "session_id",
    "skill_dir",
    "workspace",
)
"""What an argv template may contain as ``{name}``; other ``{...}`` text (JSON, say) is left alone."""

STDIN_MODES = ("case", "prompt", "none")
"""What the ``stdin`` setting accepts: the case JSON, the prompt text, or nothing."""

BASE_ENV = ("HOME", "LANG", "LC_ALL", "LC_CTYPE", "LOGNAME", "PATH", "SYSTEMROOT", "TMPDIR", "TZ", "USER")
"""Environment variables every command gets from the parent; anything else must be passed explicitly."""

DEFAULT_TIMEOUT_S = 600.0
"""The timeout when neither the arm nor the run sets one."""

PERMANENT_EXIT_CODES = {
    2: "exit code 2 is a usage error (a wrong option, or a file in argv that does not exist); fix the arm's argv",
    64: "exit code 64 is a usage error (EX_USAGE); fix the arm's argv",
    126: "exit code 126: the command cannot be executed; check its permissions",
    127: "exit code 127: command not found; install it, or give its full path in argv",
}
"""Exit codes that say the command was called wrongly or cannot run: a retry would fail the same way."""

# What a CLI prints when its key or another setting is missing: fixed by the user, not by a retry.
_MISSING_SETTING = re.compile(
    r"\b(?:api[ _-]?key|access[ _-]token|credentials?|[A-Z][A-Z0-9]*_(?:API_KEY|KEY|TOKEN))\b[^\n]{0,60}?"
    r"\b(?:is |was |are )?(?:missing|not (?:set|found|provided|configured)|required|unset)\b"
    r"|\b(?:missing|no|unset|invalid|incorrect)\s+(?:api[ _-]?key|credentials?)\b"
    r"|\benvironment variable\b[^\n]{0,60}?\bnot (?:set|defined)\b"
    r"|\bcommand not found\b",
    re.I,
)

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW", re.I)
_TEXT_KEYS = ("result", "output", "text", "content", "response", "message", "completion", "final")
_SETTINGS = (
    "api_key_env",
    "args",
    "argv",
    "base_dir",
    "base_url",
    "env",
    "keep_workspace",
    "kill_grace_s",
    "max_output_bytes",
    "model",
    "pass_env",
    "paths",
    "pattern",
    "permission",
    "preset",
    "prices",
    "program",
    "stdin",
    "timeout_s",
)
_PRESET_SETTINGS = ("api_key_env", "args", "base_url", "paths", "permission", "prices", "program")


def case_payload(task: Task, prompt: str | None = None, skill_dir: str | None = None) -> dict[str, Any]:
    """The case as a command sees it (``case.json`` / stdin): the case every agent sees (`agent_case`:
    no gold answer, source row or metadata), with the label set, session and prompt."""
    case = agent_case(task.case)
    return {
        "case_id": case.case_id,
        "input": case.input,
        "history": case.history,
        "context": case.context,
        "domain": case.domain,
        "label_set": list(task.label_set) if task.label_set else None,
        "model": task.model,
        "session_id": task.session_id,
        "skill_dir": skill_dir,
        "prompt": prompt,
    }


class CommandAgent:
    """An agent CLI run once per task.

    Args:
        argv: The command as a list (never a shell string), with `PLACEHOLDERS`:
            ``["opencode", "run", "{prompt}"]``, ``["my-agent", "--case", "{case_file}"]``.
        model: Fills ``{model}`` (default: the task's model).
        stdin: One of `STDIN_MODES`. Default: ``none`` when argv uses ``{prompt}``, ``{prompt_file}`` or
            ``{case_file}``, else ``case``.
        pattern: A regex with named groups (``prediction`` required; ``reason``, ``confidence``,
            ``evidence``/``evidence_refs`` optional) read from stdout (the last match); without it
            stdout is read as JSON.
        env: Variables to set; values may use ``${VAR}`` to take a parent variable (keys stay out
            of the arm's settings that way; their values are redacted from the transcript).
        pass_env: Names of parent variables passed through as they are.
        timeout_s: Kill the command's process group after this many seconds (default: the run's
            timeout, else `DEFAULT_TIMEOUT_S`).
        kill_grace_s: Between SIGTERM and SIGKILL.
        keep_workspace: Keep the temporary folder (its path is in the transcript), for debugging.
        max_output_bytes: Keep at most this much of stdout and of stderr (the end of it).
        base_dir: Where relative paths in argv are looked up (default: the current folder; an
            experiment definition's folder for its arms): an executable such as ``./agent.sh``, and
            an argument naming an existing file (``agent.py``, ``prompts/x.txt``), become absolute.
        preset: A known CLI (`abbench.agents._presets.PRESETS`: ``opencode``, ``llm``,
            ``generic-jsonl``, ``claude-code``, ``codex``); argv then defaults to its one-shot run.
        program: The preset's executable (default: its usual name, looked up on PATH).
        args: More arguments for the preset's argv, before the prompt.
        base_url: The OpenAI-compatible API root the preset's CLI is configured to use.
        api_key_env: The environment variable holding that endpoint's key (never the key itself);
            the CLI gets it from its environment, not from a file.
        paths: ``generic-jsonl`` only: JSON paths of the text, tokens, cost, session, model, tool
            calls and files read in the CLI's JSON lines (see `abbench.agents._presets._jsonl`).
        permission: ``opencode`` only: permissions over the preset's (edit, bash and webfetch denied).
        prices: Prices for tokens the CLI reports without a cost (see `abbench.llm.price_table`).

    The command also finds ``ABBENCH_WORKSPACE``, ``ABBENCH_SKILL_DIR``, ``ABBENCH_CASE_FILE``,
    ``ABBENCH_PROMPT_FILE``, ``ABBENCH_SESSION_ID`` and ``ABBENCH_MODEL`` in its environment.

    Raises:
        UsageError: argv is a string or empty, a placeholder is unknown, the pattern is invalid, or a
            setting is out of range.
    """

    name = "command"

    def __init__(
        self,
        argv: Sequence[str] | str | None = None,
        *,
        model: str | None = None,
        stdin: str | None = None,
        pattern: str | None = None,
        env: Mapping[str, str] | None = None,
        pass_env: Sequence[str] = (),
        timeout_s: float | None = None,
        kill_grace_s: float = 2.0,
        keep_workspace: bool = False,
        max_output_bytes: int = 5_000_000,
        base_dir: str | os.PathLike[str] | None = None,
        preset: str | None = None,
        program: str | None = None,
        args: Sequence[str] = (),
        base_url: str | None = None,
        api_key_env: str | None = None,
        paths: Mapping[str, str] | None = None,
        permission: Mapping[str, Any] | None = None,
        prices: Any = None,
    ):
        self.preset: Preset | None = get_preset(preset) if preset else None
        given = {
            k
            for k, v in {
                "program": program,
                "args": args,
                "base_url": base_url,
                "api_key_env": api_key_env,
                "paths": paths,
                "permission": permission,
                "prices": prices,
            }.items()
            if v
        }
        if self.preset is None and given - {"prices"}:
            raise UsageError(
                f"{', '.join(sorted(given))} only apply with `preset:` (one of {', '.join(PRESETS)}); "
                "a plain command gets its settings through argv and env"
            )
        self.options: dict[str, Any] = {}
        if self.preset is not None:
            for key, value in (("paths", paths), ("permission", permission)):
                if value and key not in self.preset.options:
                    raise UsageError(f"`{key}:` does not apply to preset {self.preset.name}")
                if value:
                    self.options[key] = dict(value)
            self.preset.check(self.options)
            if isinstance(args, str):
                raise UsageError(f"args must be a list of arguments, not the string {args!r}")
            if argv is None:
                argv = self.preset.argv(program or self.preset.program, [str(a) for a in args])
        self.base_url = normalize_base_url(base_url) if base_url else None
        if api_key_env is not None and not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", str(api_key_env)):
            raise UsageError(
                f"api_key_env must name an environment variable (such as OPENAI_API_KEY), not {api_key_env!r}"
            )
        self.api_key_env = api_key_env
        self.prices = prices
        if isinstance(argv, str):
            try:
                hint = json.dumps(shlex.split(argv), ensure_ascii=False)
            except ValueError:
                hint = '["program", "arg", "{prompt}"]'
            raise UsageError(
                f"the command agent's argv must be a list, never a shell string; write it as {hint}"
            )
        if not argv:
            raise UsageError('the command agent needs `argv:`, e.g. ["my-agent", "--input", "{case_file}"]')
        self.argv = [str(a) for a in argv]
        used = {name for arg in self.argv for name in _PLACEHOLDER.findall(arg)}
        unknown = sorted(used - set(PLACEHOLDERS))
        if unknown:
            raise UsageError(
                f"argv uses unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; valid: "
                + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
            )
        if stdin is None:
            stdin = "none" if used & {"prompt", "prompt_file", "case_file"} else "case"
        if stdin not in STDIN_MODES:
            raise UsageError(f"stdin {stdin!r} is not one of: {', '.join(STDIN_MODES)}")
        self.stdin = stdin
        self.pattern = None
        if pattern is not None:
            try:
                self.pattern = re.compile(pattern, re.M)
            except re.error as exc:
                raise UsageError(f"pattern {pattern!r} is not a valid regex: {exc}") from None
            if "prediction" not in self.pattern.groupindex:
                groups = ", ".join(self.pattern.groupindex) or "none"
                raise UsageError(
                    f"pattern {pattern!r} needs a named group (?P<prediction>...); its named groups: {groups}"
                )
        if timeout_s is not None and float(timeout_s) <= 0:
            raise UsageError(f"timeout_s must be a positive number of seconds, not {timeout_s!r}")
        if isinstance(pass_env, str):
            pass_env = [pass_env]
        self.model = model
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.pass_env = tuple(pass_env)
        self.timeout_s = None if timeout_s is None else float(timeout_s)
        self.kill_grace_s = float(kill_grace_s)
        self.keep_workspace = bool(keep_workspace)
        self.max_output_bytes = int(max_output_bytes)
        # The command runs inside a fresh workspace, so a relative path would be looked up there: a
        # relative executable ("./agent.sh") and a file argument ("agent.py" in [python3, agent.py])
        # that exist beside the definition are made absolute.
        root = Path(base_dir or os.getcwd())
        for i, arg in enumerate(self.argv):
            if _PLACEHOLDER.search(arg) or os.path.isabs(arg) or arg.startswith("-"):
                continue
            looks_like_path = "/" in arg or os.sep in arg or (i > 0 and Path(arg).suffix != "")
            candidate = root / arg
            if looks_like_path and (candidate.is_file() if i > 0 else candidate.exists()):
                self.argv[i] = str(candidate.resolve())

    def __repr__(self) -> str:
        return f"CommandAgent(argv={self.argv!r})"

    # -- environment ------------------------------------------------------------------------------

    def _environment(
        self, values: Mapping[str, str], preset_env: Mapping[str, str] | None = None
    ) -> tuple[dict[str, str], list[str]]:
        """The child's environment and the secret values to redact from what it prints."""
        env = {k: os.environ[k] for k in BASE_ENV if k in os.environ}
        secrets: list[str] = []
        for name in self.pass_env:
            if name in os.environ:
                env[name] = os.environ[name]
                if _SECRET_NAME.search(name):
                    secrets.append(os.environ[name])
        if self.api_key_env and os.environ.get(self.api_key_env):
            secrets.append(os.environ[self.api_key_env])  # whatever its name, it holds a key
        for name, value in {**(preset_env or {}), **self.env}.items():

            def resolve(m: re.Match[str], name: str = name) -> str:
                var = m.group(1)
                if var not in os.environ:
                    raise AgentError(
                        f"the command's env {name} refers to ${{{var}}}, which is not set; export it or "
                        "change the arm's env",
                        retryable=False,
                    )
                secrets.append(os.environ[var])
                return os.environ[var]

            env[name] = _ENV_REF.sub(resolve, value)
        env.update(values)
        return env, [s for s in secrets if len(s) >= 4]

    # -- running ----------------------------------------------------------------------------------

    async def run(self, task: Task) -> AgentOutput:
        """Run the command for `task` in a fresh workspace and read its answer from stdout.

        Raises:
            AgentError: ``timeout`` (the process group was killed), ``agent_error`` (non-zero exit,
                with the end of stderr; or the command could not start), ``bad_output`` (no answer in
                stdout, which is kept in `raw_output`). Each carries the transcript.
        """
        workspace = Path(await asyncio.to_thread(tempfile.mkdtemp, prefix="abbench-run-"))
        try:
            return await self._run_in(workspace, task)
        finally:
            if not self.keep_workspace:
                await asyncio.to_thread(shutil.rmtree, workspace, True)

    async def _run_in(self, workspace: Path, task: Task) -> AgentOutput:
        skill_dir = workspace / "skill"
        if task.skill is not None:
            try:
                await asyncio.to_thread(_copy_skill, task.skill, skill_dir)
            except OSError as exc:
                raise AgentError(
                    f"cannot copy the skill {task.skill.label} from {task.skill.root} into the workspace: "
                    f"{exc.strerror or exc}; check that the snapshot folder is intact",
                    retryable=False,
                ) from None
        prompt = build_prompt(task, tools=False, skill_dir=str(skill_dir) if task.skill else None)
        prompt_file = workspace / "prompt.txt"
        case_file = workspace / "case.json"
        case = case_payload(task, prompt.text, str(skill_dir) if task.skill else None)
        case_json = json.dumps(case, ensure_ascii=False, indent=1)
        prompt_file.write_text(prompt.text, encoding="utf-8")
        case_file.write_text(case_json, encoding="utf-8")
        model = self.model or task.model or ""
        values = {
            "case_file": str(case_file),
            "case_id": task.case.case_id,
            "model": model,
            "prompt": prompt.text,
            "prompt_file": str(prompt_file),
            "session_id": task.session_id,
            "skill_dir": str(skill_dir) if task.skill else "",
            "workspace": str(workspace),
        }
        if not model and any("{model}" in a for a in self.argv):
            raise AgentError("argv uses {model} but the arm names no model; set `model:`", retryable=False)
        setup: Setup | None = None
        preset_env: dict[str, str] = {}
        if self.preset is not None:
            if self.api_key_env and not os.environ.get(self.api_key_env):
                raise AgentError(
                    f"the environment variable {self.api_key_env} is not set, so {self.preset.name} has no key "
                    f"for {self.base_url or 'its provider'}; export it, or set the arm's api_key_env to the "
                    "variable that holds the key",
                    FailureType.AUTH,
                    retryable=False,
                )
            setup = Setup(
                workspace=workspace,
                model=model,
                base_url=self.base_url,
                api_key_env=self.api_key_env,
                skill_dir=skill_dir if task.skill else None,
                options=self.options,
            )
            try:
                preset_env = self.preset.prepare(setup)
            except OSError as exc:
                raise AgentError(
                    f"cannot write {self.preset.name}'s config into the workspace {workspace}: {exc.strerror or exc}",
                    retryable=False,
                ) from None
            values["model"] = self.preset.cli_model(setup) if model else ""
        argv = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], a) for a in self.argv]
        env, secrets = self._environment(
            {
                "ABBENCH_WORKSPACE": str(workspace),
                "ABBENCH_SKILL_DIR": values["skill_dir"],
                "ABBENCH_CASE_FILE": str(case_file),
                "ABBENCH_PROMPT_FILE": str(prompt_file),
                "ABBENCH_SESSION_ID": task.session_id,
                "ABBENCH_MODEL": model,
            },
            preset_env,
        )
        stdin_data = {"case": case_json, "prompt": prompt.text, "none": None}[self.stdin]
        timeout = self.timeout_s or task.timeout_s or DEFAULT_TIMEOUT_S
        transcript: list[dict[str, Any]] = [
            {
                "type": "command",
                "argv": [_short(a) for a in argv],
                "workspace": str(workspace),
                "stdin": self.stdin,
                "env": sorted(env),  # names only: values may be keys
                "timeout_s": timeout,
                **({"preset": self.preset.name} if self.preset else {}),
            }
        ]
        # what the attempt spends, kept even when it fails (filled from the CLI's report below)
        spent = task.spending if task.spending is not None else Spending()
        spent.transcript = transcript

        def redact(text: str) -> str:
            for secret in secrets:
                text = text.replace(secret, "***")
            return text

        # the latency is the command's own: from its start to its end, not the workspace set-up
        started = time.perf_counter()
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=workspace,
                env=env,
                stdin=asyncio.subprocess.PIPE if stdin_data is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,  # its own process group, so a kill reaches grandchildren
            )
        except OSError as exc:
            advice = (
                "the arguments are too long for the OS: use {prompt_file} or stdin: prompt instead of {prompt}"
                if exc.errno == errno.E2BIG
                else "install it, or give its full path in argv"
            )
            raise AgentError(
                f"cannot run {argv[0]!r}: {exc.strerror or exc}; {advice}",
                retryable=False,
                transcript=tuple(transcript),
                spent=spent,
            ) from None

        out, err = bytearray(), bytearray()
        readers = [
            asyncio.create_task(_drain(proc.stdout, out, self.max_output_bytes)),
            asyncio.create_task(_drain(proc.stderr, err, self.max_output_bytes)),
        ]
        if stdin_data is not None:
            readers.append(asyncio.create_task(_feed(proc.stdin, stdin_data.encode("utf-8"))))
        timed_out = False
        try:
            try:
                async with asyncio.timeout(timeout):
                    await proc.wait()
            except TimeoutError:
                timed_out = True
                await _terminate_group(proc, self.kill_grace_s)
            # children that inherited the pipes may still be writing: give them a moment, then end them
            _, pending = await asyncio.wait(readers, timeout=2.0)
            if pending:
                _signal_group(proc.pid, signal.SIGKILL)
                await asyncio.wait(pending, timeout=2.0)
        except BaseException:
            # cancelled by the scheduler (or anything else): nothing of the command may outlive the run
            _signal_group(proc.pid, signal.SIGKILL)
            with contextlib.suppress(BaseException):
                await asyncio.wait_for(proc.wait(), 5)
            raise
        finally:
            for reader in readers:
                reader.cancel()
            # whatever it left running in the background goes with it
            _signal_group(proc.pid, signal.SIGKILL)

        stdout = redact(out.decode("utf-8", errors="replace"))
        stderr = redact(err.decode("utf-8", errors="replace"))
        elapsed = (time.perf_counter() - started) * 1000
        transcript.append(
            {
                "type": "process",
                "returncode": proc.returncode,
                "timed_out": timed_out,
                "duration_ms": round(elapsed, 1),
            }
        )
        transcript.append({"type": "stdout", "text": stdout})
        transcript.append({"type": "stderr", "text": stderr})
        where = f"command {Path(argv[0]).name!r} (case {task.case.case_id})"
        reading = self._report(stdout, stderr, setup, spent, model) if setup is not None else None
        if timed_out:
            raise AgentError(
                f"{where} did not finish within {timeout:g}s; its process group was killed. "
                f"Raise timeout_s if it needs longer.{_tail(stderr)}",
                FailureType.TIMEOUT,
                retryable=True,
                raw_output=stdout or None,
                transcript=tuple(transcript),
                spent=spent,
            )
        if reading is not None and reading.error is not None and (proc.returncode != 0 or not reading.text):
            error = reading.error
            failure_type, retryable = _cli_failure(error)
            code = f" (exit code {proc.returncode})" if proc.returncode else ""
            raise AgentError(
                f"{where}: {self.preset.name} reported an error{code}: {clip(error['message'], 300)}"
                + (f" [HTTP {error['status']}]" if error.get("status") else "")
                + ("" if retryable else ". Not retried: a retry would fail the same way"),
                failure_type,
                retryable=retryable,
                raw_output=stdout or None,
                transcript=tuple(transcript),
                retry_after=error.get("retry_after"),
                spent=spent,
            )
        if proc.returncode != 0:
            code = proc.returncode
            how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
            # some CLIs print their error on stdout: show the end of both streams (redacted)
            said = _tail(stderr) + _tail(stdout, "stdout")
            permanent = permanent_cause(code, stderr + "\n" + stdout)
            why = f" Not retried: {permanent}." if permanent else ""
            raise AgentError(
                f"{where} {how}.{why}{said or ' It wrote nothing to stderr or stdout.'}",
                retryable=permanent is None,
                raw_output=stdout or None,
                transcript=tuple(transcript),
                spent=spent,
            )
        try:
            answer, extras = self._read(stdout, task) if reading is None else self._read_preset(reading, task)
        except AgentError as exc:
            raise AgentError(
                f"{where}: {exc}",
                FailureType.BAD_OUTPUT,
                retryable=exc.retryable,
                raw_output=(reading.text if reading is not None else None) or stdout,
                transcript=tuple(transcript),
                spent=spent,
            ) from None
        transcript.append({"type": "answer", "method": answer.method, "prediction": answer.prediction})
        return AgentOutput(
            prediction=answer.prediction,
            reason=answer.reason,
            confidence=answer.confidence,
            evidence_refs=canonical_refs(answer.evidence_refs, task.skill),
            raw_output=reading.text if reading is not None else stdout,
            transcript=tuple(transcript),
            files_read=extras.get("files_read", ()),
            sections_read=extras.get("sections_read", ()),
            usage=extras.get("usage"),  # None: the agent reported none (unknown, not zero)
            cost=extras.get("cost"),
            latency_ms=elapsed,
            session_id=extras.get("session_id") or task.session_id or None,
            model=extras.get("model") or model or None,
        )

    # -- reading stdout ---------------------------------------------------------------------------

    def _report(self, stdout: str, stderr: str, setup: Setup, spent: Spending, model: str) -> Reading | None:
        """Read the preset CLI's output into `spent` and the transcript (whatever the outcome)."""
        assert self.preset is not None
        try:
            reading = self.preset.read(stdout, stderr, setup)
        except Exception as exc:  # a reader must never hide the run's own outcome
            spent.transcript.append(
                {"type": "cli_report", "preset": self.preset.name, "unreadable": repr(exc)}
            )
            return None
        cost = reading.cost
        if cost is None and reading.usage is not None:
            price = price_table(self.prices, model=model).lookup(reading.model or model) or price_table(
                self.prices, model=model
            ).lookup(model)
            cost = price.cost(reading.usage) if price else None
        reading.cost = cost
        if reading.usage is not None or reading.steps:
            spent.add_call(reading.usage, cost, reading.model or model or None)
            spent.calls = max(spent.calls, reading.steps)
        files = _skill_paths(reading.files_read, setup)
        spent.files_read = list(files)
        reading.files_read = list(files)
        for call in reading.tool_calls:
            spent.transcript.append(
                {
                    "type": "tool_call",
                    "name": call.get("name"),
                    "arguments": call.get("input"),
                    "status": call.get("status"),
                }
            )
        spent.transcript.append(
            {
                "type": "cli_report",
                "preset": self.preset.name,
                "session_id": reading.session_id,
                "model": reading.model,
                "usage": None
                if reading.usage is None
                else {
                    "input_tokens": reading.usage.input_tokens,
                    "output_tokens": reading.usage.output_tokens,
                },
                "cost": cost,
                "steps": reading.steps,
                # the calls themselves: the runner counts a transcript entry's tool_calls list
                "tool_calls": [
                    {"name": c.get("name"), "arguments": c.get("input"), "status": c.get("status")}
                    for c in reading.tool_calls
                ],
                "files_read": list(files),
                "error": reading.error,
            }
        )
        return reading

    def _read_preset(self, reading: Reading, task: Task) -> tuple[Answer, dict[str, Any]]:
        text = reading.text
        if not text or not text.strip():
            raise AgentError(
                f"{self.preset.name if self.preset else 'the CLI'} printed no answer text; its stdout is in the "
                "transcript",
                FailureType.BAD_OUTPUT,
            )
        if self.pattern is not None:
            answer, _ = self._read(text, task)
        else:
            answer = parse_answer(text, task.label_set)
        extras: dict[str, Any] = {
            "usage": reading.usage,
            "cost": reading.cost,
            "session_id": reading.session_id,
            "model": reading.model,
            "files_read": tuple(reading.files_read),
        }
        return answer, extras

    def _read(self, stdout: str, task: Task) -> tuple[Answer, dict[str, Any]]:
        if self.pattern is not None:
            matches = list(self.pattern.finditer(stdout))
            if not matches:
                raise AgentError(
                    f"stdout does not match the pattern {self.pattern.pattern!r}: {_short(stdout.strip(), 200)!r}",
                    FailureType.BAD_OUTPUT,
                )
            groups = {k: v for k, v in matches[-1].groupdict().items() if v is not None}
            answer = answer_from_mapping(groups, task.label_set, method="regex")
            if answer is None:
                raise AgentError(
                    "the pattern matched but its prediction group is empty", FailureType.BAD_OUTPUT
                )
            return answer, {}
        objects = _json_objects(stdout)
        extras = _extras(objects)
        for obj in reversed(objects):
            answer = answer_from_mapping(obj, task.label_set, method="json")
            if answer is not None:
                return answer, extras
            for key in _TEXT_KEYS:
                if isinstance(obj.get(key), str) and obj[key].strip():
                    return parse_answer(obj[key], task.label_set), extras
        return parse_answer(stdout, task.label_set), extras


def _json_objects(text: str) -> list[dict[str, Any]]:
    """JSON objects in stdout: one per JSON line when it prints JSON lines, else the last one found."""
    found = json_lines(text)
    if found:
        return found
    last = last_json_object(text)
    return [last] if last is not None else []


def _extras(objects: list[dict[str, Any]]) -> dict[str, Any]:
    """Usage, cost, session, model and reads reported by the agent's JSON (last report wins)."""
    out: dict[str, Any] = {}
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
            out["usage"] = Usage(inp, outp)
        for key in ("total_cost_usd", "cost_usd", "cost"):
            if isinstance(obj.get(key), int | float) and not isinstance(obj.get(key), bool):
                out["cost"] = float(obj[key])
                break
        for key in ("session_id", "sessionId", "sessionID"):
            if isinstance(obj.get(key), str):
                out["session_id"] = obj[key]
        if isinstance(obj.get("model"), str):
            out["model"] = obj["model"]
        for key in ("files_read", "sections_read"):
            if isinstance(obj.get(key), list):
                out[key] = tuple(str(x) for x in obj[key])
    return out


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


def _cli_failure(error: Mapping[str, Any]) -> tuple[str, bool]:
    """The failure kind of an error a CLI reported: by its HTTP status as the openai adapter
    classifies one (429 rate_limited, 401 auth, 5xx server_error ...), else as the CLI says."""
    status = error.get("status")
    if isinstance(status, int) and status >= 400:
        return classify_failure(status, str(error.get("message") or ""), None)
    retryable = error.get("retryable")
    return FailureType.AGENT_ERROR, True if retryable is None else bool(retryable)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0


def permanent_cause(returncode: int, output: str) -> str | None:
    """Why a command's failure would repeat on a retry (a usage exit code, a missing key or
    setting, a program not found), or None when it may be transient."""
    if returncode in PERMANENT_EXIT_CODES:
        return PERMANENT_EXIT_CODES[returncode]
    found = _MISSING_SETTING.search(output)
    if found:
        return f"it says {clip(' '.join(found.group(0).split()), 80)!r}, which a retry cannot fix; set what it asks for"
    return None


def _copy_skill(skill: Any, dest: Path) -> None:
    for f in skill.files:
        target = dest / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(skill.root / f.path, target)


async def _drain(stream: asyncio.StreamReader | None, buf: bytearray, cap: int) -> None:
    if stream is None:
        return
    while chunk := await stream.read(65536):
        buf += chunk
        if len(buf) > cap:
            del buf[: len(buf) - cap]  # keep the end: that is where answers and errors are


async def _feed(stream: asyncio.StreamWriter | None, data: bytes) -> None:
    if stream is None:
        return
    try:
        stream.write(data)
        await stream.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the command does not read its stdin: fine
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            stream.close()


def _signal_group(pgid: int, sig: signal.Signals) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


async def _terminate_group(proc: asyncio.subprocess.Process, grace_s: float) -> None:
    """SIGTERM the group, give it `grace_s` to go, then SIGKILL whatever is left."""
    if _signal_group(proc.pid, signal.SIGTERM):
        deadline = time.monotonic() + grace_s
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(proc.wait(), grace_s)
        while time.monotonic() < deadline and _group_alive(proc.pid):
            await asyncio.sleep(0.05)
    _signal_group(proc.pid, signal.SIGKILL)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(proc.wait(), 5)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _short(text: str, limit: int = 300) -> str:
    return clip(text, limit)


def _tail(text: str, stream: str = "stderr", lines: int = 20, chars: int = 2000) -> str:
    """The last `lines` lines of a stream (at most `chars` characters), introduced by its name."""
    kept = text.rstrip().splitlines()
    tail = clip_start("\n".join(kept[-lines:]), chars)
    if not tail.strip():
        return ""
    more = f" (the last {min(lines, len(kept))} of {len(kept)})" if len(kept) > lines else ""
    return f" Last lines of {stream}{more}:\n{tail}"


@register_agent("command")
def command_agent(**settings: Any) -> CommandAgent:
    """Build the ``command`` adapter from an arm's settings (see `CommandAgent` for each one).

    Raises:
        UsageError: a setting is unknown (the message lists the valid ones) or invalid.
    """
    unknown = sorted(set(settings) - set(_SETTINGS))
    if unknown:
        raise UsageError(
            f"the command agent has no setting {', '.join(map(repr, unknown))}; valid settings: {', '.join(_SETTINGS)}"
        )
    return CommandAgent(**settings)

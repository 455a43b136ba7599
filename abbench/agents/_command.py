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
import errno
import json
import os
import re
import shlex
import shutil
import signal
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from abbench._regex import PatternError, UserPattern, compile_pattern
from abbench._text import clip
from abbench.agents._answer import Answer, canonical_refs
from abbench.agents._base import MAX_OUTPUT_BYTES, Spending, Task, agent_case, check_settings, register_agent
from abbench.agents._command_output import (
    Reported,
    cli_failure,
    offered_loads,
    read_cli_answer,
    read_report,
    read_stdout,
)
from abbench.agents._presets import PRESETS, Preset, Reading, Setup, get_preset
from abbench.agents._process import CallCounter, Finished, permanent_cause, run_group, tail
from abbench.agents._prompt import build_prompt
from abbench.errors import AgentError, UsageError
from abbench.llm import FailureType, expand_env, is_context_overflow, normalize_base_url
from abbench.transcript import AnswerEvent, CommandEvent, OutputEvent, ProcessEvent
from abbench.types import AgentOutput

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

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASSW", re.I)
_SETTINGS = (
    "api_key_env",
    "args",
    "argv",
    "base_dir",
    "base_url",
    "env",
    "keep_workspace",
    "kill_grace_s",
    "max_model_calls",
    "max_output_bytes",
    "max_tokens",
    "model",
    "pass_env",
    "paths",
    "pattern",
    "permission",
    "preset",
    "skills_dir",
    "prices",
    "program",
    "stdin",
    "timeout_s",
)
_PRESET_SETTINGS = (
    "api_key_env",
    "args",
    "base_url",
    "max_model_calls",
    "max_tokens",
    "paths",
    "permission",
    "prices",
    "program",
)

DEFAULT_MAX_MODEL_CALLS = 50
"""Model calls one attempt of a CLI whose preset counts them (opencode) may make before it is stopped."""

CALLS_BEFORE_NO_RETRY = 3
"""A timed-out attempt that made more model calls than this is not retried: it was not waiting on one
slow call but looping (an opencode arm whose prompt overflows the context: 1,737 calls in 300 s)."""


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
    offers_skills: ClassVar[bool] = True

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
        max_output_bytes: int = MAX_OUTPUT_BYTES,
        base_dir: str | os.PathLike[str] | None = None,
        preset: str | None = None,
        program: str | None = None,
        args: Sequence[str] = (),
        base_url: str | None = None,
        api_key_env: str | None = None,
        paths: Mapping[str, str] | None = None,
        permission: Mapping[str, Any] | None = None,
        prices: Any = None,
        skills_dir: str | None = None,
        max_model_calls: int | None = DEFAULT_MAX_MODEL_CALLS,
        max_tokens: int | None = None,
    ):
        self.preset: Preset | None = get_preset(preset) if preset else None
        if max_model_calls is not None and int(max_model_calls) < 1:
            raise UsageError(
                f"max_model_calls must be at least 1 (or null for no cap), not {max_model_calls!r}"
            )
        self.max_model_calls = None if max_model_calls is None else int(max_model_calls)
        self.options: dict[str, Any] = {}
        if self.preset is None:
            _check_plain(
                program=program,
                args=args,
                base_url=base_url,
                api_key_env=api_key_env,
                paths=paths,
                permission=permission,
                prices=prices,
                max_tokens=max_tokens,
            )
        else:
            self.options = _preset_options(
                self.preset, paths=paths, permission=permission, max_tokens=max_tokens
            )
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
        self.argv = _argv_list(argv)
        self.stdin = _stdin_mode(stdin, _placeholders(self.argv))
        self.pattern = _answer_pattern(pattern)
        if timeout_s is not None and float(timeout_s) <= 0:
            raise UsageError(f"timeout_s must be a positive number of seconds, not {timeout_s!r}")
        self.model = model
        self.env = {str(k): str(v) for k, v in (env or {}).items()}
        self.pass_env = (pass_env,) if isinstance(pass_env, str) else tuple(pass_env)
        self.timeout_s = None if timeout_s is None else float(timeout_s)
        self.kill_grace_s = float(kill_grace_s)
        self.keep_workspace = bool(keep_workspace)
        self.max_output_bytes = int(max_output_bytes)
        self.skills_dir = _skills_dir(skills_dir or getattr(self.preset, "skills_dir", None) or "skills")
        _resolve_paths(self.argv, Path(base_dir or os.getcwd()))

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

            def unset(var: str, name: str = name) -> AgentError:
                return AgentError(
                    f"the command's env {name} refers to ${{{var}}}, which is not set; export it or "
                    "change the arm's env",
                    retryable=False,
                )

            env[name] = expand_env(value, unset, secrets)
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
        files = await _Workspace.write(workspace, task, self.skills_dir)
        model = self.model or task.model or ""
        values = files.placeholders(task, model)
        if not model and any("{model}" in a for a in self.argv):
            raise AgentError("argv uses {model} but the arm names no model; set `model:`", retryable=False)
        setup, preset_env = self._setup_preset(files, task, model, values)
        argv = [_PLACEHOLDER.sub(lambda m: values[m.group(1)], a) for a in self.argv]
        env, secrets = self._environment(files.variables(task, model), preset_env)
        timeout = self.timeout_s or task.timeout_s or DEFAULT_TIMEOUT_S
        started = CommandEvent(
            argv=tuple(_short(a) for a in argv),
            workspace=str(workspace),
            stdin=self.stdin,
            env=tuple(sorted(env)),  # names only: values may be keys
            timeout_s=timeout,
            preset=self.preset.name if self.preset else None,
        )
        transcript: list[dict[str, Any]] = [started.to_dict()]
        # what the attempt spends, kept even when it fails (filled from the CLI's report below)
        spent = task.spending if task.spending is not None else Spending()
        spent.transcript = transcript
        # the latency is the command's own: from its start to its end, not the workspace set-up
        marker = getattr(self.preset, "call_marker", None)
        counter = CallCounter(marker, self.max_model_calls) if marker else None
        try:
            done = await run_group(
                argv,
                cwd=workspace,
                env=env,
                stdin={"case": files.case_json, "prompt": files.prompt, "none": None}[self.stdin],
                timeout_s=timeout,
                kill_grace_s=self.kill_grace_s,
                max_output_bytes=self.max_output_bytes,
                counter=counter,
            )
        except OSError as exc:
            raise _cannot_start(argv[0], exc, transcript, spent) from None
        stdout, stderr = _redact(done.stdout, secrets), _redact(done.stderr, secrets)
        ended = ProcessEvent(
            returncode=done.returncode, timed_out=done.timed_out, duration_ms=round(done.elapsed_ms, 1)
        )
        transcript += [
            ended.to_dict(),
            OutputEvent(stream="stdout", text=stdout).to_dict(),
            OutputEvent(stream="stderr", text=stderr).to_dict(),
        ]
        where = f"command {Path(argv[0]).name!r} (case {task.case.case_id})"
        reading = None
        if self.preset is not None and setup is not None:
            reading = read_report(self.preset, self.prices, stdout, stderr, setup, spent, model)
        if counter is not None:
            _check_calls(where, counter, done, transcript, spent)
        self._check_finished(where, done, stdout, stderr, reading, timeout, spent)
        answer, reported = self._answer(where, stdout, reading, task, spent)
        transcript.append(AnswerEvent(method=answer.method, prediction=answer.prediction).to_dict())
        activation = self._activation(task, files, reported, reading, spent)
        return AgentOutput(
            prediction=answer.prediction,
            reason=answer.reason,
            confidence=answer.confidence,
            evidence_refs=canonical_refs(answer.evidence_refs, task.skill),
            raw_output=reading.text if reading is not None else stdout,
            transcript=tuple(transcript),
            files_read=reported.files_read,
            sections_read=reported.sections_read,
            usage=reported.usage,  # None: the agent reported none (unknown, not zero)
            cost=reported.cost,
            latency_ms=done.elapsed_ms,
            session_id=reported.session_id or task.session_id or None,
            model=reported.model or model or None,
            **activation,
        )

    @staticmethod
    def _activation(
        task: Task, files: _Workspace, reported: Any, reading: Reading | None, spent: Spending
    ) -> dict[str, Any]:
        """What an offered run loaded, read from the transcript: the SKILL.md files the CLI read
        under the skills folder (its own report, or the files it says it read)."""
        if not task.offered:
            return {}
        names = [s.skill_name for s in task.offered]
        setup = Setup(workspace=files.root, model="", skill_dir=files.skill_dir)
        # a preset's report is already relative to the skills folder; a plain command's is as it said
        told = [str(files.skill_dir / p) for p in reading.files_read] if reading is not None else []
        read = [*told, *reported.files_read]
        if spent.skills_offered is None:
            spent.offer(names)
        for name in offered_loads(read, setup, names):
            spent.load(name, 1)  # a CLI reports no turns: the first load is counted as its first
        activation = spent.activation()
        if not activation["skills_loaded"]:
            activation["first_load_turn"] = None
        return activation

    def _setup_preset(
        self, files: _Workspace, task: Task, model: str, values: dict[str, str]
    ) -> tuple[Setup | None, dict[str, str]]:
        """The preset CLI's config written into the workspace (its model filled into `values`), and
        the environment it needs; (None, {}) for a plain command."""
        if self.preset is None:
            return None, {}
        if self.api_key_env and not os.environ.get(self.api_key_env):
            raise AgentError(
                f"the environment variable {self.api_key_env} is not set, so {self.preset.name} has no key "
                f"for {self.base_url or 'its provider'}; export it, or set the arm's api_key_env to the "
                "variable that holds the key",
                FailureType.AUTH,
                retryable=False,
            )
        setup = Setup(
            workspace=files.root,
            model=model,
            base_url=self.base_url,
            api_key_env=self.api_key_env,
            skill_dir=files.skill_dir if files.has_skill else None,
            options=self.options,
        )
        try:
            preset_env = self.preset.prepare(setup)
        except OSError as exc:
            raise AgentError(
                f"cannot write {self.preset.name}'s config into the workspace {files.root}: {exc.strerror or exc}",
                retryable=False,
            ) from None
        values["model"] = self.preset.cli_model(setup) if model else ""
        return setup, preset_env

    def _check_finished(
        self,
        where: str,
        done: Finished,
        stdout: str,
        stderr: str,
        reading: Reading | None,
        timeout: float,
        spent: Spending,
    ) -> None:
        """Raise the failure the command's end is: a timeout, an error its CLI reported, a non-zero exit.

        Raises:
            AgentError: with the transcript and what the attempt spent.
        """

        def failed(message: str, failure_type: str = FailureType.AGENT_ERROR, **how: Any) -> AgentError:
            return AgentError(
                message,
                failure_type,
                raw_output=stdout or None,
                transcript=tuple(spent.transcript),
                spent=spent,
                **how,
            )

        if done.timed_out:
            raise failed(
                f"{where} did not finish within {timeout:g}s; its process group was killed. "
                f"Raise timeout_s if it needs longer.{tail(stderr)}",
                FailureType.TIMEOUT,
                retryable=True,
            )
        if reading is not None and reading.error is not None and (done.returncode != 0 or not reading.text):
            error = reading.error
            failure_type, retryable = cli_failure(error)
            code = f" (exit code {done.returncode})" if done.returncode else ""
            cli = self.preset.name if self.preset else "the CLI"
            raise failed(
                f"{where}: {cli} reported an error{code}: {clip(error['message'], 300)}"
                + (f" [HTTP {error['status']}]" if error.get("status") else "")
                + ("" if retryable else ". Not retried: a retry would fail the same way"),
                failure_type,
                retryable=retryable,
                retry_after=error.get("retry_after"),
            )
        if done.returncode != 0:
            returncode = done.returncode if done.returncode is not None else -signal.SIGKILL
            how = (
                f"was killed by {signal.Signals(-returncode).name}"
                if returncode < 0
                else f"exited with code {returncode}"
            )
            # some CLIs print their error on stdout: show the end of both streams (redacted)
            said = tail(stderr) + tail(stdout, "stdout")
            permanent = permanent_cause(returncode, stderr + "\n" + stdout)
            why = f" Not retried: {permanent}." if permanent else ""
            overflow = is_context_overflow(stderr + "\n" + stdout)
            raise failed(
                f"{where} {how}.{why}{said or ' It wrote nothing to stderr or stdout.'}",
                FailureType.BAD_REQUEST if overflow else FailureType.AGENT_ERROR,
                retryable=permanent is None,
            )

    def _answer(
        self, where: str, stdout: str, reading: Reading | None, task: Task, spent: Spending
    ) -> tuple[Answer, Reported]:
        """The answer in what the command printed, and what it reported besides.

        Raises:
            AgentError: ``bad_output``, with the text that was read.
        """
        try:
            if reading is None:
                return read_stdout(stdout, self.pattern, task.label_set)
            return read_cli_answer(
                reading, self.pattern, task.label_set, self.preset.name if self.preset else "the CLI"
            )
        except AgentError as exc:
            raise AgentError(
                f"{where}: {exc}",
                FailureType.BAD_OUTPUT,
                retryable=exc.retryable,
                raw_output=(reading.text if reading is not None else None) or stdout,
                transcript=tuple(spent.transcript),
                spent=spent,
            ) from None


@dataclass(frozen=True)
class _Workspace:
    """A run's workspace: the skill copied in, the prompt and the case written (`root` is the folder)."""

    root: Path
    prompt: str
    case_json: str
    has_skill: bool
    skills_dir: str | None = None  # offered: the folder (in root) holding one folder per skill

    @property
    def skill_dir(self) -> Path:
        return self.root / self.skills_dir if self.skills_dir else self.root / "skill"

    @property
    def prompt_file(self) -> Path:
        return self.root / "prompt.txt"

    @property
    def case_file(self) -> Path:
        return self.root / "case.json"

    @classmethod
    async def write(cls, root: Path, task: Task, skills_dir: str = "skills") -> _Workspace:
        """Copy the skill into `root` (an offered arm's skills into ``<skills_dir>/<name>/``, where
        the CLI discovers them) and write the prompt and the case there. A no-skill arm's workspace
        holds no skill at all.

        Raises:
            AgentError: a skill cannot be copied (not retryable).
        """
        offered = task.offered
        skill_dir = root / skills_dir if offered else root / "skill"
        copies = [(s, skill_dir / s.skill_name) for s in offered] if offered else []
        if task.skill is not None:
            copies = [(task.skill, skill_dir)]
        for snap, dest in copies:
            try:
                await asyncio.to_thread(_copy_skill, snap, dest)
            except OSError as exc:
                raise AgentError(
                    f"cannot copy the skill {snap.label} from {snap.root} into the workspace: "
                    f"{exc.strerror or exc}; check that the snapshot folder is intact",
                    retryable=False,
                ) from None
        shown = str(skill_dir) if copies else None
        prompt = build_prompt(task, tools=False, skill_dir=None if offered else shown)
        text = prompt.text
        if offered:
            text += (
                f"\n\nThe skills are in {skill_dir}/<name>/: read the SKILL.md of the one that fits "
                "the case before you answer, or none when none fits."
            )
        case_json = json.dumps(case_payload(task, text, shown), ensure_ascii=False, indent=1)
        files = cls(root, text, case_json, bool(copies), skills_dir if offered else None)
        files.prompt_file.write_text(prompt.text, encoding="utf-8")
        files.case_file.write_text(case_json, encoding="utf-8")
        return files

    def placeholders(self, task: Task, model: str) -> dict[str, str]:
        """What each of `PLACEHOLDERS` stands for in this run."""
        return {
            "case_file": str(self.case_file),
            "case_id": task.case.case_id,
            "model": model,
            "prompt": self.prompt,
            "prompt_file": str(self.prompt_file),
            "session_id": task.session_id,
            "skill_dir": str(self.skill_dir) if self.has_skill else "",
            "workspace": str(self.root),
        }

    def variables(self, task: Task, model: str) -> dict[str, str]:
        """The ``ABBENCH_*`` environment variables the command finds."""
        return {
            "ABBENCH_WORKSPACE": str(self.root),
            "ABBENCH_SKILL_DIR": str(self.skill_dir) if self.has_skill else "",
            "ABBENCH_CASE_FILE": str(self.case_file),
            "ABBENCH_PROMPT_FILE": str(self.prompt_file),
            "ABBENCH_SESSION_ID": task.session_id,
            "ABBENCH_MODEL": model,
        }


def _cannot_start(
    program: str, exc: OSError, transcript: list[dict[str, Any]], spent: Spending
) -> AgentError:
    advice = (
        "the arguments are too long for the OS: use {prompt_file} or stdin: prompt instead of {prompt}"
        if exc.errno == errno.E2BIG
        else "install it, or give its full path in argv"
    )
    return AgentError(
        f"cannot run {program!r}: {exc.strerror or exc}; {advice}",
        retryable=False,
        transcript=tuple(transcript),
        spent=spent,
    )


def _redact(text: str, secrets: Sequence[str]) -> str:
    for secret in secrets:
        text = text.replace(secret, "***")
    return text


def _skills_dir(text: str) -> str:
    """An offered arm's skills folder inside the workspace: a relative path that stays inside it."""
    path = Path(str(text))
    if path.is_absolute() or ".." in path.parts or not path.parts:
        raise UsageError(
            f"skills_dir must be a folder inside the run's workspace (e.g. .claude/skills), not {text!r}: "
            "every run gets its own fresh workspace, so no two runs share a discovery folder"
        )
    return path.as_posix()


def _copy_skill(skill: Any, dest: Path) -> None:
    for f in skill.files:
        target = dest / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(skill.root / f.path, target)


def _short(text: str, limit: int = 300) -> str:
    return clip(text, limit)


def _check_plain(**settings: Any) -> None:
    """A plain command (no preset) takes none of the preset settings but `prices`."""
    given = {k for k, v in settings.items() if v}
    if given - {"prices"}:
        raise UsageError(
            f"{', '.join(sorted(given))} only apply with `preset:` (one of {', '.join(PRESETS)}); "
            "a plain command gets its settings through argv and env"
        )


def _preset_options(
    preset: Preset,
    *,
    paths: Mapping[str, str] | None,
    permission: Mapping[str, Any] | None,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """The preset's own options (``paths``, ``permission``, ``max_tokens``), checked by the preset."""
    options: dict[str, Any] = {}
    for key, value in (("paths", paths), ("permission", permission)):
        if value and key not in preset.options:
            raise UsageError(f"`{key}:` does not apply to preset {preset.name}")
        if value:
            options[key] = dict(value)
    if max_tokens is not None:
        if "max_tokens" not in preset.options:
            raise UsageError(f"`max_tokens:` does not apply to preset {preset.name}: give it in its `args`")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise UsageError(f"max_tokens must be a whole number of at least 1, not {max_tokens!r}")
        options["max_tokens"] = max_tokens
    preset.check(options)
    return options


def _argv_list(argv: Sequence[str] | str | None) -> list[str]:
    """`argv` as a list of strings whose placeholders are all `PLACEHOLDERS`."""
    if isinstance(argv, str):
        try:
            hint = json.dumps(shlex.split(argv), ensure_ascii=False)
        except ValueError:
            hint = '["program", "arg", "{prompt}"]'
        raise UsageError(f"the command agent's argv must be a list, never a shell string; write it as {hint}")
    if not argv:
        raise UsageError('the command agent needs `argv:`, e.g. ["my-agent", "--input", "{case_file}"]')
    out = [str(a) for a in argv]
    unknown = sorted(_placeholders(out) - set(PLACEHOLDERS))
    if unknown:
        raise UsageError(
            f"argv uses unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; valid: "
            + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
        )
    return out


def _placeholders(argv: Sequence[str]) -> set[str]:
    return {name for arg in argv for name in _PLACEHOLDER.findall(arg)}


def _stdin_mode(stdin: str | None, used: set[str]) -> str:
    """The stdin mode: as given, else ``none`` when argv carries the prompt or case, else ``case``."""
    if stdin is None:
        stdin = "none" if used & {"prompt", "prompt_file", "case_file"} else "case"
    if stdin not in STDIN_MODES:
        raise UsageError(f"stdin {stdin!r} is not one of: {', '.join(STDIN_MODES)}")
    return stdin


def _answer_pattern(pattern: str | None) -> UserPattern | None:
    """The compiled answer regex (on RE2, so stdout never makes it backtrack), which must have a
    ``prediction`` group."""
    if pattern is None:
        return None
    try:
        compiled = compile_pattern(pattern, re.M)
    except PatternError as exc:
        raise UsageError(f"pattern {exc}") from None
    if "prediction" not in compiled.groupindex:
        groups = ", ".join(compiled.groupindex) or "none"
        raise UsageError(
            f"pattern {pattern!r} needs a named group (?P<prediction>...); its named groups: {groups}"
        )
    return compiled


def _resolve_paths(argv: list[str], root: Path) -> None:
    """Make relative paths in `argv` absolute, in place.

    The command runs inside a fresh workspace, so a relative path would be looked up there: a
    relative executable ("./agent.sh") and a file argument ("agent.py" in [python3, agent.py])
    that exist beside the definition are made absolute.
    """
    for i, arg in enumerate(argv):
        if _PLACEHOLDER.search(arg) or os.path.isabs(arg) or arg.startswith("-"):
            continue
        looks_like_path = "/" in arg or os.sep in arg or (i > 0 and Path(arg).suffix != "")
        candidate = root / arg
        if looks_like_path and (candidate.is_file() if i > 0 else candidate.exists()):
            argv[i] = str(candidate.resolve())


def _check_calls(
    where: str, counter: CallCounter, done: Finished, transcript: list[dict[str, Any]], spent: Spending
) -> None:
    """Fail an attempt stopped at its cap of model calls, or one that timed out while looping.

    Raises:
        AgentError: ``max_turns``, not retried.
    """
    if counter.capped:
        message = (
            f"{where} made more than max_model_calls={counter.cap} model calls in one attempt and was "
            "stopped; not retried: it was looping (a prompt that overflows the context does this) — "
            "check the server's log, or raise max_model_calls"
        )
    elif done.timed_out and counter.calls > CALLS_BEFORE_NO_RETRY:
        message = (
            f"{where} timed out after {counter.calls} model calls in one attempt; not retried: it was "
            "looping, not waiting on a slow call (a prompt that overflows the context does this)"
        )
    else:
        return
    raise AgentError(
        message, FailureType.MAX_TURNS, retryable=False, transcript=tuple(transcript), spent=spent
    )


@register_agent("command")
def command_agent(**settings: Any) -> CommandAgent:
    """Build the ``command`` adapter from an arm's settings (see `CommandAgent` for each one).

    Raises:
        UsageError: a setting is unknown (the message lists the valid ones) or invalid.
    """
    check_settings("command", settings, _SETTINGS)
    return CommandAgent(**settings)

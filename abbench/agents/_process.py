"""A command run in its own process group: stdin fed, output drained (its end kept), the whole
group killed on a timeout or a cancellation, grandchildren included; and why a failure would repeat.

The command's answer is what it printed by the time it exited. Whatever it left behind — a child in its
process group, or one that escaped it (``setsid``, a daemon) still holding its output pipes — is killed
when it exits, so a background process can neither hold the run until its timeout nor outlive it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from abbench._text import clip, clip_start
from abbench.llm import is_context_overflow

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


@dataclass(frozen=True)
class Finished:
    """How a command ended.

    Attributes:
        returncode: Its exit code (negative: killed by that signal); None when it would not end
            even after SIGKILL (only after a timeout).
        stdout: What it printed (the end of it, at most the output limit), decoded.
        stderr: The same for stderr.
        timed_out: It was killed for running out of time.
        elapsed_ms: From its start to its end.
    """

    returncode: int | None
    stdout: str
    stderr: str
    timed_out: bool
    elapsed_ms: float


@dataclass
class CallCounter:
    """Counts a CLI's model calls in its stdout as it prints them (a preset's `marker`, one per call),
    so an attempt that keeps calling can be stopped at `cap` instead of at its timeout.

    Attributes:
        marker: The bytes one model call prints (opencode: a ``step_start`` event).
        cap: Stop the command past this many calls; None counts without a cap.
        calls: Calls counted so far.
    """

    marker: bytes
    cap: int | None = None
    calls: int = 0
    _tail: bytes = b""
    _stop: asyncio.Future[None] | None = None

    def feed(self, chunk: bytes) -> bool:
        """Count the calls in `chunk` (a marker split over two chunks counts once); True past the cap."""
        data = self._tail + chunk
        self.calls += data.count(self.marker) - self._tail.count(self.marker)
        self._tail = data[-(len(self.marker) - 1) :] if len(self.marker) > 1 else b""
        return self.capped

    @property
    def capped(self) -> bool:
        """Whether the calls went past the cap."""
        return self.cap is not None and self.calls > self.cap


async def run_group(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    stdin: str | None,
    timeout_s: float,
    kill_grace_s: float,
    max_output_bytes: int,
    counter: CallCounter | None = None,
) -> Finished:
    """Run `argv` in a new process group and wait for it, at most `timeout_s`.

    On the timeout the group gets SIGTERM, then SIGKILL after `kill_grace_s`; on a cancellation it
    gets SIGKILL at once. Whatever it left running in the background is killed when it ends.

    With a `counter`, its stdout is counted as it arrives, and the group gets SIGTERM (then SIGKILL)
    once the counter passes its cap.

    Raises:
        OSError: the command could not be started.
    """
    started = time.perf_counter()
    loop = asyncio.get_running_loop()
    exited: asyncio.Future[int | None] = loop.create_future()
    transport, protocol = await loop.subprocess_exec(
        lambda: _Protocol(exited, loop),
        *argv,
        cwd=cwd,
        env=dict(env),
        stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,  # its own process group, so a kill reaches grandchildren
    )
    proc = asyncio.subprocess.Process(transport, protocol, loop)
    out, err = bytearray(), bytearray()
    readers = [
        asyncio.create_task(
            _drain(proc.stdout, out, max_output_bytes, counter, (proc, exited), kill_grace_s)
        ),
        asyncio.create_task(_drain(proc.stderr, err, max_output_bytes)),
    ]
    if stdin is not None:
        readers.append(asyncio.create_task(_feed(proc.stdin, stdin.encode("utf-8"))))
    timed_out = await _wait(proc, exited, readers, timeout_s, kill_grace_s)
    return Finished(
        returncode=proc.returncode,
        stdout=out.decode("utf-8", errors="replace"),
        stderr=err.decode("utf-8", errors="replace"),
        timed_out=timed_out,
        elapsed_ms=(time.perf_counter() - started) * 1000,
    )


class _Protocol(asyncio.subprocess.SubprocessStreamProtocol):
    """asyncio's protocol for a subprocess's streams, telling when the process itself exits.

    `Process.wait` waits for the output pipes to close as well, which a child that inherited them (a
    daemon the command started) holds open long after the command answered and exited.
    """

    def __init__(self, exited: asyncio.Future[int | None], loop: asyncio.AbstractEventLoop):
        super().__init__(limit=2**16, loop=loop)
        self._exited = exited
        self._process: asyncio.SubprocessTransport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self._process = transport  # type: ignore[assignment]  # a SubprocessTransport, here

    def process_exited(self) -> None:
        super().process_exited()
        if not self._exited.done():
            self._exited.set_result(self._process.get_returncode() if self._process is not None else None)


def time_limit(seconds: float) -> contextlib.AbstractAsyncContextManager[object]:
    """The limit on a command's run: `asyncio.timeout`. Looked up at each run, so a test can start the
    clock on a condition it controls (the model was called) instead of guessing how long a CLI starts."""
    return asyncio.timeout(seconds)


async def _wait(
    proc: asyncio.subprocess.Process,
    exited: asyncio.Future[int | None],
    readers: list[asyncio.Task[None]],
    timeout_s: float,
    grace_s: float,
) -> bool:
    """Wait for `proc` to exit and for its output; True when it was killed for running out of time."""
    timed_out = False
    try:
        try:
            async with time_limit(timeout_s):
                await asyncio.shield(exited)
        except TimeoutError:
            timed_out = True
            await _terminate_group(proc, exited, grace_s)
        _, pending = await asyncio.wait(readers, timeout=0.1)
        if pending:
            # It exited, and what it printed is in the pipes; someone it left behind holds them open.
            # The answer is what it printed by its exit: the group goes, and so does any process
            # outside it still holding its output (a setsid child, a daemon).
            _signal_group(proc.pid, signal.SIGKILL)
            _kill_pipe_holders(proc)
            await asyncio.wait(pending, timeout=2.0)
        with contextlib.suppress(TimeoutError):  # the pipes closed, or someone we cannot kill holds them
            await asyncio.wait_for(proc.wait(), 5)
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
    return timed_out


def permanent_cause(returncode: int, output: str) -> str | None:
    """Why a command's failure would repeat on a retry (a usage exit code, a missing key or
    setting, a program not found), or None when it may be transient."""
    if returncode in PERMANENT_EXIT_CODES:
        return PERMANENT_EXIT_CODES[returncode]
    if is_context_overflow(output):
        return "the prompt does not fit the model's context, which a retry cannot change"
    found = _MISSING_SETTING.search(output)
    if found:
        return f"it says {clip(' '.join(found.group(0).split()), 80)!r}, which a retry cannot fix; set what it asks for"
    return None


def tail(text: str, stream: str = "stderr", lines: int = 20, chars: int = 2000) -> str:
    """The last `lines` lines of a stream (at most `chars` characters), introduced by its name."""
    kept = text.rstrip().splitlines()
    end = clip_start("\n".join(kept[-lines:]), chars)
    if not end.strip():
        return ""
    more = f" (the last {min(lines, len(kept))} of {len(kept)})" if len(kept) > lines else ""
    return f" Last lines of {stream}{more}:\n{end}"


async def _drain(
    stream: asyncio.StreamReader | None,
    buf: bytearray,
    cap: int,
    counter: CallCounter | None = None,
    stoppable: tuple[asyncio.subprocess.Process, asyncio.Future[int | None]] | None = None,
    grace_s: float = 2.0,
) -> None:
    if stream is None:
        return
    stopping = False
    while chunk := await stream.read(65536):
        if counter is not None and counter.feed(chunk) and not stopping and stoppable is not None:
            stopping = True  # past its cap of model calls: end it as a timeout would
            counter._stop = asyncio.ensure_future(_terminate_group(*stoppable, grace_s))
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


async def _terminate_group(
    proc: asyncio.subprocess.Process, exited: asyncio.Future[int | None], grace_s: float
) -> None:
    """SIGTERM the group, give it `grace_s` to go, then SIGKILL whatever is left."""
    if _signal_group(proc.pid, signal.SIGTERM):
        deadline = time.monotonic() + grace_s
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(exited), grace_s)
        while time.monotonic() < deadline and _group_alive(proc.pid):
            await asyncio.sleep(0.05)
    _signal_group(proc.pid, signal.SIGKILL)
    _kill_pipe_holders(proc)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(asyncio.shield(exited), 5)


def _pipe_inodes(proc: asyncio.subprocess.Process) -> set[str]:
    """``pipe:[inode]`` of the command's stdout and stderr pipes (as /proc shows a descriptor of them)."""
    found = set()
    transport = getattr(proc, "_transport", None)
    for fd_number in (1, 2):
        pipe = transport.get_pipe_transport(fd_number) if transport is not None else None
        handle = pipe.get_extra_info("pipe") if pipe is not None else None
        if handle is None:
            continue
        with contextlib.suppress(OSError, ValueError, AttributeError):
            found.add(f"pipe:[{os.fstat(handle.fileno()).st_ino}]")
    return found


def _kill_pipe_holders(proc: asyncio.subprocess.Process) -> None:
    """SIGKILL every process, outside this one, that holds the command's output pipes (Linux: /proc).

    A child that left the command's process group (``setsid``, a double fork) is reached this way: as
    long as it holds the pipe it can only be the command's.
    """
    pipes = _pipe_inodes(proc)
    proc_dir = Path("/proc")
    if not pipes or not proc_dir.is_dir():
        return
    me = os.getpid()
    for entry in proc_dir.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        with contextlib.suppress(OSError):
            for fd in (entry / "fd").iterdir():
                with contextlib.suppress(OSError):
                    if os.readlink(fd) in pipes:
                        os.kill(int(entry.name), signal.SIGKILL)
                        break


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False

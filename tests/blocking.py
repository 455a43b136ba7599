"""Agents that wait for the test: a turnstile on files, so a test never depends on the machine's speed.

A test that pauses, cancels or races runs must know what is in flight when it acts. Instead of agents
that sleep and a test that hopes the machine kept up, the agents here stop at a `Gate` until the test
lets them through. The gate is a folder (in the test's tmp_path), so it works for agents in this
process, in a child ``abbench run`` process, and for command agents (``python -m tests.blocking DIR``)::

    gate = Gate(tmp_path / "gate")              # closed: every agent that arrives waits
    arm = {"agent": "python", "function": "tests.blocking:gated", **gate.params}
    ...
    gate.wait_arrived(3)                        # three runs are in flight, held at the gate
    gate.allow(3)                               # those three may answer; the fourth waits again
    gate.open()                                 # everyone passes from now on

Every arrival takes a numbered ticket (``arrived/N``, created exclusively, so concurrent agents in
several processes never share one); ticket N passes once ``allowed`` says N or more. Waits in the test
have a generous safety-net timeout and fail with a message; nothing asserts a duration.
"""

from __future__ import annotations

import asyncio
import math
import os
import sys
import time
from pathlib import Path

POLL_S = 0.005
SAFETY_NET_S = 600.0
"""How long a test waits for a condition before it fails (never reached when the code works)."""


def wait_for(predicate, what: str, timeout: float = SAFETY_NET_S):
    """Return `predicate()`'s first truthy value; fail the test if none comes within `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"gave up after {timeout:g} s waiting for {what}")
        time.sleep(0.01)


def process_running(pid: int) -> bool:
    """Whether `pid` still runs (a zombie, exited but not reaped by init, does not); Linux's /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"


class Gate:
    """The test's side of a turnstile folder: let arrivals through by count, or all at once."""

    def __init__(self, folder: Path | str, allowed: float = 0):
        self.folder = Path(folder)
        (self.folder / "arrived").mkdir(parents=True, exist_ok=True)
        self.allow(allowed)

    @property
    def params(self) -> dict[str, str]:
        """What an arm (or a grader) needs to stop at this gate."""
        return {"gate": str(self.folder)}

    def allow(self, n: float) -> None:
        """Let the first `n` arrivals (counted from the start) through; `math.inf` opens the gate."""
        tmp = self.folder / "allowed.tmp"
        tmp.write_text("inf" if n == math.inf else str(int(n)), encoding="utf-8")
        os.replace(tmp, self.folder / "allowed")

    def open(self) -> None:
        """Let every arrival through, now and later."""
        self.allow(math.inf)

    def arrived(self) -> int:
        """How many agents have reached the gate so far (held or let through)."""
        return len(os.listdir(self.folder / "arrived"))

    def wait_arrived(self, n: int, timeout: float = SAFETY_NET_S) -> int:
        """Wait until at least `n` agents have reached the gate."""
        return wait_for(
            lambda: self.arrived() >= n and self.arrived(), f"{n} arrivals at {self.folder}", timeout
        )


def _allowed(folder: Path) -> float:
    try:
        return float((folder / "allowed").read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):  # between the test's write and replace: not yet
        return 0


def _ticket(folder: Path) -> int:
    arrived = folder / "arrived"
    n = len(os.listdir(arrived)) + 1
    while True:
        try:
            os.close(os.open(arrived / str(n), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            return n
        except FileExistsError:
            n += 1


def _arrive(params) -> tuple[Path, int] | None:
    """The gate `params` name and the ticket taken at it (None when they name no gate)."""
    folder = params.get("gate")
    if not folder:
        return None
    return Path(folder), _ticket(Path(folder))


async def pass_gate(params) -> None:
    """An async agent's (or grader's) side: take a ticket and wait until it is let through.

    Does nothing when `params` names no gate. Cancellable: a cancelled run stops waiting at once.
    """
    held = _arrive(params)
    while held is not None and _allowed(held[0]) < held[1]:
        await asyncio.sleep(POLL_S)


def pass_gate_sync(params) -> None:
    """`pass_gate` for synchronous code (a sync python agent, a command agent's process)."""
    held = _arrive(params)
    while held is not None and _allowed(held[0]) < held[1]:
        time.sleep(POLL_S)


async def gated(task):
    """A python agent: waits at the arm's gate, then answers the arm's ``answer`` (default ``fast``)."""
    await pass_gate(task.params)
    return task.params.get("answer", "fast")


def gated_sync(task):
    """A synchronous python agent (run in a worker thread) that waits at the arm's gate."""
    pass_gate_sync(task.params)
    return task.params.get("answer", "fast")


if __name__ == "__main__":  # a command agent: python -m tests.blocking GATE_DIR [ANSWER]
    pass_gate_sync({"gate": sys.argv[1]})
    print(sys.argv[2] if len(sys.argv) > 2 else "fast")

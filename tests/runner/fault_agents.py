"""Python agents that misbehave as a person's agent may: each fault must fail its run, never the experiment.

The case's number says what an agent does: ``c000`` misbehaves, the others answer their gold label.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path


def _faulty(task) -> bool:
    return task.case.case_id == "c000"


def huge_confidence(task):
    """A confidence of 10**400: no float holds it."""
    return {"prediction": task.case.expected, "confidence": 10**400 if _faulty(task) else 0.9}


def huge_tokens(task):
    """A token count past what SQLite stores."""
    tokens = 10**30 if _faulty(task) else 12
    return {"prediction": task.case.expected, "usage": {"input_tokens": tokens, "output_tokens": 1}}


def lone_surrogate(task):
    """Text that is not valid Unicode (what a CLI read with surrogateescape hands on)."""
    return {"prediction": task.case.expected, "reason": "bad \udcff byte" if _faulty(task) else "ok"}


def exits(task):
    """``sys.exit(3)`` inside the agent."""
    if _faulty(task):
        raise SystemExit(3)
    return task.case.expected


async def exits_async(task):
    """The same from a coroutine, on the runner's own loop."""
    if _faulty(task):
        raise SystemExit(3)
    return task.case.expected


def interrupts(task):
    """A KeyboardInterrupt raised by the agent itself (no signal anywhere)."""
    if _faulty(task):
        raise KeyboardInterrupt
    return task.case.expected


def never_returns(task):
    """A sync agent that never returns: the run times out, and the process must still exit after.

    It says it has started (a file in $FAULT_DIR), so the test knows it is stuck, not slow.
    """
    if _faulty(task):
        Path(os.environ["FAULT_DIR"], "stuck").write_text(str(threading.get_ident()), encoding="utf-8")
        threading.Event().wait()
    return task.case.expected


def counted(task):
    """Answers its gold label, and says so in $CALLS (one line a call): what the test counts."""
    with open(os.environ["CALLS"], "a", encoding="utf-8") as f:
        f.write(f"{task.case.case_id}\n")
    return task.case.expected

"""The run states as plain module constants, for the code every run goes through.

A member read off its enum class (``RunState.RUNNING``) passes through the Python-level attribute hook
that `enum.EnumType` defines (its ``__getattr__``): about 0.2 µs, a dozen times a run, where a module
constant costs a dictionary lookup. The values are the members themselves.
"""

from __future__ import annotations

from abbench.types import RunState

PENDING = RunState.PENDING
RUNNING = RunState.RUNNING
EXECUTED = RunState.EXECUTED
EVALUATING = RunState.EVALUATING
PASS = RunState.PASS
FAIL = RunState.FAIL
CANCELLED = RunState.CANCELLED

"""What an agent adapter declares it takes: each parameter's name, default, kind and description."""

from __future__ import annotations

import inspect
import re
import typing
from dataclasses import dataclass
from typing import Any

from abbench.agents._base import agent_factory

SKIPPED = frozenset({"model", "skill", "base_dir", "self"})
"""Settings an arm gives elsewhere (its model and skill) or the runner fills in (the definition's folder)."""


@dataclass(frozen=True)
class AgentParameter:
    """One parameter an adapter takes, as a form shows it.

    Attributes:
        name: The key under the arm (``temperature``).
        default: Its default (None when there is none, or it is required).
        kind: ``number``, ``list``, ``flag``, ``mapping`` or ``text``: how a form reads what is typed.
        description: One line from the adapter's docstring.
    """

    name: str
    default: Any
    kind: str
    description: str


def _kind(annotation: Any, default: Any) -> str:
    text = str(annotation).replace("typing.", "")
    if isinstance(default, bool) or text.startswith("bool"):
        return "flag"
    if isinstance(default, (list, tuple)) or re.search(r"\b(list|Sequence|tuple)\[", text):
        return "list"
    if isinstance(default, dict) or re.search(r"\b(dict|Mapping)\[", text):
        return "mapping"
    if isinstance(default, (int, float)) or re.match(r"(int|float)\b", text):
        return "number"
    return "text"


def _described(doc: str | None) -> dict[str, str]:
    """``name: first line`` of each entry of a Google-style ``Args:`` section."""
    out: dict[str, str] = {}
    section = False
    for line in (doc or "").splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:"):
            section = True
            continue
        if section and re.fullmatch(r"\s{0,4}[A-Z]\w*:", line):  # the next section (Raises:, Returns:)
            section = False
        m = re.match(r"\s{4,8}(\*{0,2}\w+):\s*(.*)", line) if section else None
        if m:
            out[m.group(1)] = m.group(2)
    return out


def agent_parameters(name: str) -> list[AgentParameter]:
    """The parameters the adapter registered as `name` declares, in its own order.

    Read from the adapter's signature and its docstring's ``Args:``; a factory taking only
    ``**settings`` is read through the class it returns. An adapter may declare more (what its
    ``**params`` accept) as a ``parameters`` attribute of `AgentParameter` values.

    Raises:
        UsageError: no adapter has that name (the message lists the valid ones).
    """
    factory = agent_factory(name)
    target: Any = factory
    signature = inspect.signature(factory)
    if all(p.kind is p.VAR_KEYWORD for p in signature.parameters.values()):
        returned = typing.get_type_hints(factory).get("return")
        if inspect.isclass(returned):
            target, signature = returned, inspect.signature(returned)
    hints = typing.get_type_hints(target.__init__ if inspect.isclass(target) else target)
    described = _described(inspect.getdoc(target))
    out = []
    for p in signature.parameters.values():
        if p.name in SKIPPED or p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        default = None if p.default is p.empty else p.default
        out.append(
            AgentParameter(p.name, default, _kind(hints.get(p.name, ""), default), described.get(p.name, ""))
        )
    out.extend(getattr(factory, "parameters", ()))
    return out

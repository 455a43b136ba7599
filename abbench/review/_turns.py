"""A case's earlier turns as every view shows them (`CaseView.turns`)."""

from __future__ import annotations

from typing import Any


def earlier_turns(case: Any) -> tuple[dict[str, str], ...]:
    """The conversation before the case's input, oldest first, as the agent was given it: one ``{"role",
    "content"}`` per turn, the role ``user`` or ``assistant`` (`abbench.agents.history_turns` reads every
    form a dataset holds); () for a single-turn case. Every view shows these with the input: the verdict
    on "the third one" rests on them."""
    from abbench.agents import history_turns  # loaded only by a case that has a history

    history = case.history
    return tuple(history_turns(history)) if history not in (None, "", []) else ()

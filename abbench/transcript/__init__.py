"""A run's transcript as typed events: what the agents write, and what graders and views read.

A transcript is a JSON lines file under the store's ``transcripts/`` folder, one event a line, in the
order the session made them. Each event abbench writes carries its kind in ``type`` and is one of the
frozen dataclasses below; `to_dict` gives the exact JSON object written (keys in the same order, the
same keys left out), so files written before these types existed read back and write out byte for byte.

Entries abbench does not type — a custom ``python`` agent's own entries, an external tool's messages
recorded with `record_runs`, a kind from a newer abbench — are kept as `OtherEvent`, marked by
`OtherEvent.known` False and never dropped; `read_transcript(strict=True)` refuses them instead.

=================  ================  ===========================================================
``type``           class             written by
=================  ================  ===========================================================
``message``        `MessageEvent`    openai, builtin: a chat message sent or received
``llm_call``       `ModelEvent`      openai (a model call), builtin (its estimate of one)
``tool_call``      `ToolEvent`       openai, builtin (its reads, ``load_skill``), command (a CLI's)
``answer``         `AnswerEvent`     openai, builtin, command: how the answer was read, or why not
``catalogue``      `CatalogueEvent`  builtin, offered arms: the skills offered and each one's share
``command``        `CommandEvent`    command: what was started (argv, the names of its env)
``process``        `ProcessEvent`    command: how the process ended
``stdout/stderr``  `OutputEvent`     command: what it printed (keys redacted)
``cli_report``     `CliReportEvent`  command presets: what the CLI reported (usage, cost, calls)
(role verdict)     `VerdictEvent`    `record_runs`: an external tool's verdict, for ``recorded``
=================  ================  ===========================================================

`trajectory_of` reads the events as one `Trajectory` — the tool calls in order with their arguments and
results, what was read and loaded, turns and tokens — the view the case view lists and a judge reads.
"""

from __future__ import annotations

from abbench import _lazy
from abbench.transcript._chat import AnswerEvent, CatalogueEvent, MessageEvent, ModelEvent, Retry, ToolEvent
from abbench.transcript._fields import VERDICT_ROLE as VERDICT_ROLE
from abbench.transcript._process import (
    CliReportEvent,
    CommandEvent,
    OtherEvent,
    OutputEvent,
    ProcessEvent,
    Unreadable,
    VerdictEvent,
)
from abbench.transcript._read import (
    READERS as READERS,
    Event,
    Transcript,
    event_from_dict,
    last_answer as last_answer,
    read_transcript,
    requested_calls as requested_calls,
    to_dicts as to_dicts,
    to_events,
    tool_calls,
)
from abbench.transcript._trajectory import (
    BUDGET as BUDGET,
    RESULT_BUDGET as RESULT_BUDGET,
    Step,
    Trajectory,
    TrajectoryText,
    trajectory_of,
)

__all__ = [
    "AnswerEvent",
    "CatalogueEvent",
    "CliReportEvent",
    "CommandEvent",
    "Event",
    "MessageEvent",
    "ModelEvent",
    "OtherEvent",
    "OutputEvent",
    "ProcessEvent",
    "Retry",
    "Step",
    "ToolEvent",
    "Trajectory",
    "TrajectoryText",
    "Transcript",
    "Unreadable",
    "VerdictEvent",
    "event_from_dict",
    "read_transcript",
    "to_events",
    "tool_calls",
    "trajectory_of",
]

__dir__ = _lazy.listing(__all__)

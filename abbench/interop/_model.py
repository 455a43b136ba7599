"""What a reader makes of another tool's log: its cases, its arms and one outcome per run."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from abbench.errors import ImportFailed


@dataclass(frozen=True)
class ImportedCase:
    """One case as the other tool knew it.

    Attributes:
        case_id: Its id (the tool's sample id, test description or eval name).
        input: The query or prompt, as text.
        expected: The gold answer, when the tool had one.
        metadata: Anything else worth keeping (the tool's variables, its own id).
    """

    case_id: str
    input: str
    expected: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ImportedRun:
    """One run: which case, arm and round, and the outcome in `abbench.runner.record_runs`'s shape.

    Attributes:
        case_id: The case (an `ImportedCase`'s id).
        arm: The arm's name.
        round: 1-based (Inspect's epoch, promptfoo's repeat, skill-creator's run number).
        outcome: prediction, reason, usage, cost, latency_ms, model, error, grades, transcript...
    """

    case_id: str
    arm: str
    round: int
    outcome: dict[str, Any]


@dataclass
class ImportedLog:
    """Everything read from one tool's files, ready to become an experiment.

    Attributes:
        tool: ``inspect``, ``promptfoo`` or ``skill-creator``.
        name: A name for the experiment (the task's, the eval's, the skill's).
        sources: The files read.
        cases: The cases, in first-seen order, by id.
        arms: Each arm's settings (model, what made it an arm), in arm order (baseline first).
        runs: The runs.
        graders: The names of the tool's verdicts (recorded graders), in order.
        decision: (baseline, candidate) when the tool says which is which.
    """

    tool: str
    name: str
    sources: list[Path] = field(default_factory=list)
    cases: dict[str, ImportedCase] = field(default_factory=dict)
    arms: dict[str, dict[str, Any]] = field(default_factory=dict)
    runs: list[ImportedRun] = field(default_factory=list)
    graders: list[str] = field(default_factory=list)
    decision: tuple[str, str] | None = None

    def add_case(self, case: ImportedCase, where: str) -> None:
        """Keep `case`; the same id seen again must be the same case.

        Raises:
            ImportFailed: the id was seen with another input (the tool's ids are not unique).
        """
        seen = self.cases.get(case.case_id)
        if seen is None:
            self.cases[case.case_id] = case
        elif seen.input != case.input:
            raise ImportFailed(
                f"{where}: case {case.case_id!r} appears with two different inputs "
                f"({_short(seen.input)!r} and {_short(case.input)!r}); give the samples unique ids"
            )

    def add_grader(self, name: str) -> None:
        """Note a verdict name of the tool (once)."""
        if name not in self.graders:
            self.graders.append(name)


def _short(text: str, n: int = 60) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


_UNSAFE = re.compile(r"[\s/\\]+")


def arm_name(text: str) -> str:
    """A model, provider or configuration as an arm name (no slashes or spaces: ``mockllm-model``)."""
    name = _UNSAFE.sub("-", str(text).strip()).strip("-")
    return name[:120] or "arm"


def message_text(content: Any) -> str:
    """The text of a message's content: a string, or the text parts of a list of parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        parts = []
        for part in content:
            text = getattr(part, "text", None)
            if text is None and isinstance(part, dict):
                text = part.get("text")
            if text:
                parts.append(str(text))
        return "\n".join(parts)
    return str(content)

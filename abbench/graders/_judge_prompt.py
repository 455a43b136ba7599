"""What a judge sees: the case, one run's answer (masked when anonymised), and the shape of its prompt.

Shared by the pointwise judge (`llm_judge`) and the pairwise judge (`pairwise_judge`), so both show
a case the same way and check their ``include`` / ``output_format`` options alike.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from abbench.errors import UsageError
from abbench.graders._anonymise import Anonymiser
from abbench.graders._base import GradeContext

OUTPUT_FORMATS = ("json", "tagged")
"""The reply formats a judge prompt can ask for."""

INCLUDE = ("reference", "reason", "evidence", "context", "history", "trajectory")
"""What a judge may be shown besides the input and the answer (``trajectory``: what the run did, its
tool calls with arguments and results — `abbench.transcript.Trajectory` — for the pointwise judge)."""


def check_output_format(grader: str, output_format: str) -> str:
    """`output_format` when it is one of `OUTPUT_FORMATS`.

    Raises:
        UsageError: it is not (the message names the grader and the choices).
    """
    if output_format not in OUTPUT_FORMATS:
        raise UsageError(
            f"{grader}: output_format must be one of {', '.join(OUTPUT_FORMATS)}, not {output_format!r}"
        )
    return output_format


def check_include(grader: str, include: Any) -> tuple[str, ...]:
    """`include` as a tuple of `INCLUDE` items.

    Raises:
        UsageError: it names something else (the message names the grader and the choices).
    """
    items = (include,) if isinstance(include, str) else tuple(include or ())
    unknown = sorted(set(items) - set(INCLUDE))
    if unknown:
        raise UsageError(
            f"{grader}: include has {', '.join(map(repr, unknown))}; choose from {', '.join(INCLUDE)}"
        )
    return items


def _text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, ensure_ascii=False, indent=1)


def case_block(ctx_case: Any, include: Sequence[str]) -> list[str]:
    """The case as a judge sees it: input, and context / history / reference when included."""
    parts = []
    if "history" in include and ctx_case.history:
        parts.append(f"<history>\n{_text(ctx_case.history)}\n</history>")
    if "context" in include and ctx_case.context not in (None, "", [], {}):
        parts.append(f"<context>\n{_text(ctx_case.context)}\n</context>")
    parts.append(f"<input>\n{ctx_case.input}\n</input>")
    if "reference" in include and ctx_case.expected not in (None, ""):
        parts.append(f"<reference_answer>\n{_text(ctx_case.expected)}\n</reference_answer>")
    return parts


def answer_text(
    ctx: GradeContext, include: Sequence[str], anonymiser: Anonymiser | None, keep: str
) -> tuple[str, dict[str, int]]:
    """One run's answer as a judge sees it (masked when an anonymiser is given), and what was masked."""
    out = ctx.output
    parts = [f"Answer: {out.prediction if out.prediction not in (None, '') else '(no answer)'}"]
    if "reason" in include and out.reason:
        parts.append(f"Reasoning: {out.reason}")
    if "evidence" in include and out.evidence_refs:
        parts.append("Cited evidence: " + ", ".join(out.evidence_refs))
    text = "\n".join(parts)
    if anonymiser is None:
        return text, {}
    masked = anonymiser.anonymise(text, keep=keep)
    return masked.text, masked.masked


def system_prompt(
    role: str, criteria: str, include: Sequence[str], instructions: str | None, reply_format: str
) -> str:
    """A judge's system prompt: its `role`, the `criteria`, the reference rule, extra `instructions`
    and the exact `reply_format`, in that order."""
    parts = [role, criteria]
    if "reference" in include:
        parts.append("When a reference answer is given, it is the standard of correctness.")
    if instructions:
        parts.append(instructions.strip())
    parts.append(reply_format)
    return "\n\n".join(parts)

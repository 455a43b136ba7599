"""Outcomes recorded from elsewhere, checked as agent answers are: one submitted run, its key and digest.

An external runner (a CI job running its own agent, another evaluation tool whose logs are imported)
submits what each (arm, case, round, attempt) produced. Each outcome is read into an `AgentOutput`
with the same checks an adapter's answer gets (`abbench.agents.check_output`), or into an execution
failure; every problem names the case id, arm, round and field, so a whole submission is refused with
one grouped message before anything is stored.

The ``external`` agent (an arm whose runs are recorded from elsewhere) is `abbench.agents.ExternalAgent`;
the ``recorded`` grader (the verdict the external tool reached, kept in the run's transcript) is
`abbench.graders.recorded`. Both register with the others, so a definition naming them works in a fresh
process.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from abbench.agents import MAX_OUTPUT_BYTES, check_output
from abbench.errors import AgentError
from abbench.transcript import VerdictEvent
from abbench.types import AgentOutput, FailureType, Usage

FIELDS = (
    "case_id",
    "arm",
    "round",
    "attempt",
    "prediction",
    "reason",
    "confidence",
    "evidence_refs",
    "raw_output",
    "usage",
    "cost",
    "latency_ms",
    "model",
    "session_id",
    "transcript",
    "transcript_summary",
    "files_read",
    "sections_read",
    "skills_offered",
    "skills_loaded",
    "first_load_turn",
    "error",
    "failure_type",
    "grades",
    "started_at",
    "ended_at",
)
"""What an outcome may say. ``case_id`` and ``arm`` are required, then ``prediction`` or ``error``."""

RECORDED_FAILURE = FailureType.EXTERNAL_ERROR
"""The failure type of a recorded failure that names none."""


@dataclass(frozen=True)
class Outcome:
    """One checked outcome: where it goes, what it says, and its digest (for idempotency).

    Attributes:
        case_id: The case.
        arm: The arm's name.
        round: 0-based round (outcomes say it 1-based, as every view shows it).
        attempt: The external runner's attempt number (1 for the first).
        output: The answer, when the attempt produced one.
        error: Why the attempt gave no usable answer, when it did not.
        failure_type: The kind of that failure.
        summary: The transcript summary given instead of (or beside) a transcript.
        started_at, ended_at: When the attempt ran (UTC, ISO), when the runner said.
        digest: sha256 over the outcome as submitted, keys sorted.
    """

    case_id: str
    arm: str
    round: int
    attempt: int
    output: AgentOutput | None
    error: str | None
    failure_type: str | None
    summary: dict[str, Any] | None
    started_at: str | None
    ended_at: str | None
    digest: str

    @property
    def key(self) -> tuple[str, str, int, int]:
        """(arm, case id, round, attempt): what a submission is idempotent on."""
        return (self.arm, self.case_id, self.round, self.attempt)

    @property
    def where(self) -> str:
        """``case c1, arm b, round 1, attempt 1`` — how a message names it (round 1-based)."""
        return f"case {self.case_id}, arm {self.arm}, round {self.round + 1}, attempt {self.attempt}"


def where_of(raw: Mapping[str, Any], index: int) -> str:
    """How a message names an outcome that may not have been read yet."""
    parts = [f"outcome {index + 1}"]
    for key in ("case_id", "arm", "round", "attempt"):
        if raw.get(key) is not None:
            parts.append(f"{key.replace('_id', '')} {raw[key]}")
    return ", ".join(parts)


def digest_of(raw: Mapping[str, Any]) -> str:
    """sha256 of the outcome as submitted (keys sorted, defaults filled in), so a re-submission matches."""
    values = {k: v for k, v in raw.items() if v is not None}
    values.setdefault("round", 1)
    values.setdefault("attempt", 1)
    text = json.dumps(values, sort_keys=True, ensure_ascii=False, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _positive_int(raw: Mapping[str, Any], key: str, problems: list[str]) -> int:
    value = raw.get(key, 1)
    if value is None:
        value = 1
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        problems.append(f"{key}: must be a whole number from 1, not {value!r}")
        return 1
    return value


def _grades(raw: Any, recorded: set[str], problems: list[str]) -> list[dict[str, Any]]:
    """The external tool's verdicts as transcript entries, checked against the experiment's graders."""
    if raw is None:
        return []
    if not isinstance(raw, Mapping):
        problems.append(
            f"grades: must map a recorded grader's name to {{passed, score, comment}}, not {raw!r}"
        )
        return []
    entries = []
    for name, verdict in raw.items():
        if name not in recorded:
            known = ", ".join(sorted(recorded)) or "none"
            problems.append(
                f"grades.{name}: the experiment has no `recorded` grader of that name (its recorded "
                f"graders: {known}); add one to its graders, e.g. {{type: recorded, name: {name}}}"
            )
            continue
        if isinstance(verdict, bool):
            verdict = {"passed": verdict}
        if not isinstance(verdict, Mapping):
            problems.append(
                f"grades.{name}: must be {{passed, score, comment}} or true/false, not {verdict!r}"
            )
            continue
        passed, score = verdict.get("passed"), verdict.get("score")
        if passed is not None and not isinstance(passed, bool):
            problems.append(f"grades.{name}.passed: must be true, false or null, not {passed!r}")
        if score is not None and (isinstance(score, bool) or not _finite(score)):
            problems.append(f"grades.{name}.score: must be a finite number, not {score!r}")
        if passed is None and score is None:
            problems.append(f"grades.{name}: says neither `passed` nor `score`")
        comment = verdict.get("comment")
        verdict = VerdictEvent(
            grader=str(name),
            passed=passed,
            score=None if score is None else float(score),
            comment=None if comment is None else str(comment),
        )
        entries.append(verdict.to_dict())
    return entries


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and math.isfinite(value)


def _answer(
    raw: Mapping[str, Any], verdicts: list[dict[str, Any]], problems: list[str]
) -> AgentOutput | None:
    """The answer part of an outcome, checked as an adapter's answer is (None when it does not read)."""
    usage = raw.get("usage")
    if isinstance(usage, Mapping):
        extra = sorted(set(usage) - {"input_tokens", "output_tokens"})
        if extra:
            problems.append(f"usage: unknown key {', '.join(extra)}; it takes input_tokens, output_tokens")
            return None
        for key in ("input_tokens", "output_tokens"):
            value = usage.get(key)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                problems.append(f"usage.{key} must be a non-negative number of tokens, not {value!r}")
                return None
        if usage.get("input_tokens") is None and usage.get("output_tokens") is None:
            usage = None
        else:
            usage = Usage(usage.get("input_tokens") or 0, usage.get("output_tokens") or 0)
    transcript = raw.get("transcript") or ()
    if not isinstance(transcript, (list, tuple)):
        problems.append(f"transcript: must be a list of messages, not {type(transcript).__name__}")
        return None
    latency = raw.get("latency_ms")
    try:
        output = AgentOutput(
            prediction=raw.get("prediction"),
            reason=raw.get("reason"),
            confidence=raw.get("confidence"),
            evidence_refs=tuple(raw.get("evidence_refs") or ()),
            raw_output=raw.get("raw_output"),
            transcript=(*transcript, *verdicts),
            files_read=tuple(raw.get("files_read") or ()),
            sections_read=tuple(raw.get("sections_read") or ()),
            usage=usage,
            cost=raw.get("cost"),
            latency_ms=latency,  # None: not reported, stored as unknown (never 0 ms)
            session_id=None if raw.get("session_id") is None else str(raw["session_id"]),
            model=None if raw.get("model") is None else str(raw["model"]),
            skills_offered=_names(raw.get("skills_offered")),
            skills_loaded=_names(raw.get("skills_loaded")),
            first_load_turn=raw.get("first_load_turn"),
        )
        return check_output(output)
    except AgentError as exc:
        # check_output speaks to an adapter's author; here the field and the value are what matter
        text = str(exc).removeprefix("the agent returned an answer that cannot be stored: ")
        problems.append(text.split("; fix the adapter")[0])
    except (TypeError, ValueError) as exc:
        problems.append(f"{exc}")
    return None


def _names(value: Any) -> tuple[str, ...] | None:
    return None if value is None else tuple(str(v) for v in value)


def _size(value: Any) -> int:
    """Bytes `value` takes as UTF-8 text (a string) or as JSON (anything else)."""
    if isinstance(value, str):
        return len(value.encode("utf-8", errors="replace"))
    return len(json.dumps(value, ensure_ascii=False, default=str).encode("utf-8", errors="replace"))


def _too_large(raw: Mapping[str, Any]) -> str | None:
    """The problem of an outcome larger than an agent's output may be (`MAX_OUTPUT_BYTES` as JSON),
    naming its largest field; None when it fits."""
    sizes = {str(k): _size(v) for k, v in raw.items()}
    if sum(sizes.values()) <= MAX_OUTPUT_BYTES:
        return None
    field, size = max(sizes.items(), key=lambda kv: kv[1])
    return (
        f"the outcome holds {sum(sizes.values()):,} bytes ({field}: {size:,}), over the {MAX_OUTPUT_BYTES:,} "
        "an agent's output may hold (what abbench keeps of a command agent's output); record it shorter, "
        "e.g. the end of the output, or keep the whole elsewhere and record where"
    )


def read_outcome(
    raw: Any, index: int, arms: Mapping[str, int], recorded: set[str]
) -> tuple[Outcome | None, list[str]]:
    """One submitted outcome, checked: the outcome, or the problems with it (each ``place: what``).

    Args:
        raw: What was submitted (a mapping).
        index: Its place in the submission (0-based), for messages.
        arms: The experiment's arm names (to their rounds, for the check of ``round``).
        recorded: The names of the experiment's ``recorded`` graders.
    """
    if not isinstance(raw, Mapping):
        return None, [f"must be a mapping with case_id, arm, round, prediction …, not {type(raw).__name__}"]
    too_large = _too_large(raw)
    if too_large:
        return None, [too_large]
    problems: list[str] = []
    unknown = sorted(set(raw) - set(FIELDS))
    if unknown:
        problems.append(f"unknown field {', '.join(map(repr, unknown))}; valid fields: {', '.join(FIELDS)}")
    case_id, arm = raw.get("case_id"), raw.get("arm")
    if case_id is None or str(case_id) == "":
        problems.append("case_id: missing")
    if arm not in arms:
        problems.append(f"arm: {arm!r} is not an arm of the experiment; its arms: {', '.join(arms)}")
    rnd = _positive_int(raw, "round", problems)
    if isinstance(arm, str) and arm in arms and rnd > arms[arm]:
        problems.append(f"round: {rnd} is past the experiment's {arms[arm]} rounds")
    attempt = _positive_int(raw, "attempt", problems)
    error = raw.get("error")
    verdicts = _grades(raw.get("grades"), recorded, problems)
    summary = raw.get("transcript_summary")
    if summary is not None and not isinstance(summary, Mapping):
        problems.append(f"transcript_summary: must be a mapping of counts, not {summary!r}")
    output = None
    if error is None:
        if raw.get("prediction") is None:
            problems.append("prediction: missing (an attempt that gave no answer says `error` instead)")
        else:
            output = _answer(raw, verdicts, problems)
    elif raw.get("prediction") is not None:
        problems.append("error and prediction: an attempt either failed or answered, not both")
    if problems:
        return None, problems
    return (
        Outcome(
            case_id=str(case_id),
            arm=str(arm),
            round=rnd - 1,
            attempt=attempt,
            output=output,
            error=None if error is None else str(error),
            failure_type=None if error is None else str(raw.get("failure_type") or RECORDED_FAILURE),
            summary=None if summary is None else dict(summary),
            started_at=raw.get("started_at"),
            ended_at=raw.get("ended_at"),
            digest=digest_of(raw),
        ),
        [],
    )

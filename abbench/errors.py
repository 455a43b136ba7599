"""The one tree of exceptions abbench raises; views translate them to exit codes or widget messages."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # for the annotation only: the errors sit below every layer
    from abbench.dataset import ValidationReport


class AbbenchError(Exception):
    """Raised for every error abbench reports to a person.

    Messages say what went wrong, where (file, line, column, case id, run id) and what to do.
    `exit_code` is what the CLI exits with: 2 for usage or input errors, 1 for refusals.
    """

    exit_code = 2


class UsageError(AbbenchError):
    """Raised when a call or command is given arguments that cannot work together."""


class PairNotNamed(UsageError):
    """Raised when a decision needs a baseline and a candidate and nothing names them (three or more arms)."""


class NotFoundError(AbbenchError):
    """Raised when a named dataset, profile, snapshot, experiment, run or reference does not exist."""


class StoreError(AbbenchError):
    """Raised when the store folder or database cannot be opened, read or written."""


class SchemaVersionError(StoreError):
    """Raised when a store was written by a newer abbench than this one."""


class ImportFailed(AbbenchError):
    """Raised when a data file cannot be read or fails validation; carries the validation report."""

    def __init__(self, message: str, report: ValidationReport | None = None):
        super().__init__(message)
        self.report = report


class MappingError(AbbenchError):
    """Raised when a mapping profile is malformed or does not fit the file it is applied to."""


class SnapshotError(AbbenchError):
    """Raised when a skill folder or git reference cannot be snapshotted."""


class ExperimentError(AbbenchError):
    """Raised when an experiment definition is invalid or conflicts with one already stored."""


class AgentError(AbbenchError):
    """Raised by an agent adapter when a run cannot produce an output.

    `failure_type` names the kind ("agent_error", "timeout", "rate_limited", "bad_output", ...) and
    `retryable` says whether trying again may help. `raw_output` holds the text the agent produced when
    it could not be understood (the runner stores it), `transcript` what the session did before it
    failed, `spent` what it used before it failed (an `abbench.agents.Spending`: tokens, cost, files
    read; the runner keeps it with the attempt), and `retry_after` the wait in seconds a server asked
    for, when it asked.
    """

    def __init__(
        self,
        message: str,
        failure_type: str = "agent_error",
        retryable: bool = True,
        *,
        raw_output: str | None = None,
        transcript: tuple[dict[str, Any], ...] = (),
        retry_after: float | None = None,
        spent: Any = None,
    ):
        super().__init__(message)
        self.failure_type = failure_type
        self.retryable = retryable
        self.raw_output = raw_output
        self.transcript = tuple(transcript)
        self.retry_after = retry_after
        self.spent = spent


class GradingError(AbbenchError):
    """Raised by a grader that cannot reach a verdict; stored as a grading failure with its raw text.

    `retryable` says whether grading again may help (a judge timed out) or not (its reply cannot be
    read). `spent` holds what the attempt cost even so — ``judge_model``, ``judge_cost``,
    ``input_tokens``, ``output_tokens`` — stored with the failure, so judge cost reports stay whole.
    """

    def __init__(
        self,
        message: str,
        raw_output: str | None = None,
        retryable: bool = False,
        *,
        spent: dict[str, Any] | None = None,
    ):
        super().__init__(message)
        self.raw_output = raw_output
        self.retryable = retryable
        self.spent = dict(spent or {})


class ComparisonRefused(AbbenchError):
    """Raised when two experiments or arms cannot be compared (different dataset fingerprints, ...)."""

    exit_code = 1


class ReportError(AbbenchError):
    """Raised when a report notebook cannot be rendered or exported."""


class TranscriptError(AbbenchError):
    """Raised when a transcript entry cannot be read as the event it says it is.

    `path` and `line` say where (None for a transcript still in memory, where `line` counts entries
    from 1); `field` names the entry's key that is wrong, when one is.
    """

    def __init__(
        self, message: str, *, path: str | None = None, line: int | None = None, field: str | None = None
    ):
        super().__init__(message)
        self.path = path
        self.line = line
        self.field = field

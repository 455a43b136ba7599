"""The one tree of exceptions abbench raises, and the facts they carry for each view to word.

An error carries its facts — `kind` (what sort of thing), `name` (which one), `choices` (the valid
ones) and its `hint`, an `Action` worded for every view: the CLI prints the command, a notebook (and
``str(err)``) shows the function call, the server answers with the request in RFC 9457 problem details
(its facts as extension members). Views never parse the message: they read the facts.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from abbench.types import FailureType

if TYPE_CHECKING:  # for the annotation only: the errors sit below every layer
    from abbench.dataset import ValidationReport

E = TypeVar("E", bound="AbbenchError")

View = Literal["python", "cli", "http"]
"""How a person reaches abbench: the Python API (a notebook, a script, a widget), the CLI, the server."""


@dataclass(frozen=True, slots=True)
class Action:
    """One thing a person can do next, worded for each view.

    Attributes:
        python: The call in a notebook or script, e.g. ``abbench.resume_experiment(3)``.
        cli: The command, e.g. ``abbench resume 3``.
        http: The server request, e.g. ``POST /api/experiments/3/resume``; None when the server has no
            route for it (its problem details then name the command, which its operator can run).
    """

    python: str
    cli: str
    http: str | None = None

    def worded(self, view: View) -> str:
        """The action as `view` words it."""
        if view == "cli":
            return self.cli
        if view == "http":
            return self.http or self.cli
        return self.python

    def __str__(self) -> str:
        """The Python wording (what ``str(err)`` of an error shows)."""
        return self.python

    def to_dict(self) -> dict[str, str]:
        """The three wordings, as the server's problem details carry them (``http`` only when set)."""
        out = {"python": self.python, "cli": self.cli}
        if self.http:
            out["http"] = self.http
        return out


Said = tuple[str | Action, ...]
"""A message in parts: text, and actions each view words (`worded`)."""


def worded(parts: Said, view: View) -> str:
    """`parts` as `view` shows them: each action as that view's command, call or request."""
    return "".join(p if isinstance(p, str) else p.worded(view) for p in parts)


class AbbenchError(Exception):
    """Raised for every error abbench reports to a person.

    Messages say what went wrong, where (file, line, column, case id, run id) and what to do. The
    message is given in parts: text, and `Action`s worded by the view that shows it (`worded`);
    ``str(err)`` is the Python wording, a whole sentence. `exit_code` is what the CLI exits with: 2 for
    usage or input errors, 1 for refusals.

    Attributes:
        kind: What sort of thing the error is about (``experiment``, ``grader``, ``arm``...), or None.
        name: Which one (the name or reference given), or None.
        choices: The valid names, when there is a known set (empty otherwise).
        actions: The `Action`s the message offers, in its order.
    """

    exit_code = 2
    kind: str | None = None
    name: str | None = None
    choices: tuple[str, ...] = ()
    parts: tuple[str | Action, ...] = ()

    def __init__(
        self,
        *message: str | Action,
        kind: str | None = None,
        name: str | None = None,
        choices: Iterable[Any] = (),
    ):
        self.parts = message
        if kind is not None:
            self.kind = kind
        if name is not None:
            self.name = name
        if choices:
            self.choices = tuple(str(c) for c in choices)
        super().__init__(self.worded("python"))

    @property
    def actions(self) -> tuple[Action, ...]:
        """The actions the message offers."""
        return tuple(p for p in self.parts if isinstance(p, Action))

    @property
    def hint(self) -> Action | None:
        """The first thing to do next, or None when the message offers no action."""
        return next(iter(self.actions), None)

    def worded(self, view: View) -> str:
        """The message as `view` shows it: each action as that view's command, call or request."""
        if not self.parts:  # a subclass that never called our __init__, or an unpickled copy
            return str(self.args[0]) if self.args else ""
        return worded(self.parts, view)

    def within(self, cls: type[E], before: str, after: str = "") -> E:
        """This error as a `cls` with words around it (the arm it is about, in front): the actions and
        facts kept, so a wrapped error is still worded by each view."""
        return cls(
            before, *(self.parts or (str(self),)), after, kind=self.kind, name=self.name, choices=self.choices
        )

    def facts(self) -> dict[str, Any]:
        """The facts that are set, JSON-ready: ``kind``, ``name``, ``choices``, ``hint`` (every wording)."""
        out: dict[str, Any] = {}
        if self.kind is not None:
            out["kind"] = self.kind
        if self.name is not None:
            out["name"] = self.name
        if self.choices:
            out["choices"] = list(self.choices)
        if self.hint is not None:
            out["hint"] = self.hint.to_dict()
        return out

    def __reduce__(self) -> Any:
        """Rebuild with the parts and facts (not by calling `__init__` again with the wording)."""
        # Pickled across processes (Dask workers, the server's job processes) with the parts and facts,
        # not re-built from the Python wording alone.
        return (_rebuild, (type(self), self.args, self.__dict__))


def _rebuild(cls: type[AbbenchError], args: tuple[Any, ...], state: dict[str, Any]) -> AbbenchError:
    err = cls.__new__(cls)
    err.args = args
    err.__dict__.update(state)
    return err


class UsageError(AbbenchError):
    """Raised when a call or command is given arguments that cannot work together."""


class UnknownName(UsageError):
    """Raised when a name is not one of a known set (an agent, a grader, a format, an arm...).

    Worded the same everywhere: ``unknown grader 'x' (did you mean 'y'?); choose one of: a, b``, and
    carries `kind`, `name` and `choices` for views and tests to read.
    """

    def __init__(self, kind: str, name: object, choices: Iterable[Any], *, more: str = "", note: str = ""):
        """`more` follows the choices (``", or module:function"``); `note` follows the name."""
        valid = [str(c) for c in choices]
        text = str(name)
        close = difflib.get_close_matches(text, valid, n=1)
        guess = f" (did you mean {close[0]!r}?)" if close and not note else ""
        super().__init__(
            f"unknown {kind} {text!r}{note}{guess}; choose one of: {', '.join(valid)}{more}",
            kind=kind,
            name=text,
            choices=valid,
        )


class PairNotNamed(UsageError):
    """Raised when a decision needs a baseline and a candidate and nothing names them (three or more arms)."""


class NotFoundError(AbbenchError):
    """Raised when a named dataset, profile, snapshot, experiment, run or reference does not exist."""

    @classmethod
    def no_arm(cls, experiment: str, name: str, arms: Iterable[str]) -> NotFoundError:
        """The error for an arm `experiment` (its name quoted, or ``#id``) does not have, listing its arms."""
        names = list(arms)
        return cls(
            f"experiment {experiment} has no arm {name!r}; its arms: {', '.join(names)}",
            kind="arm",
            name=name,
            choices=names,
        )


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

    `failure_type` names the kind (a `FailureType`: ``agent_error``, ``timeout``, ``rate_limited``,
    ``bad_output``...; a custom agent may give its own word) and `retryable` says whether trying again
    may help. `raw_output` holds the text the agent produced when
    it could not be understood (the runner stores it), `transcript` what the session did before it
    failed, `spent` what it used before it failed (an `abbench.agents.Spending`: tokens, cost, files
    read; the runner keeps it with the attempt), and `retry_after` the wait in seconds a server asked
    for, when it asked.
    """

    def __init__(
        self,
        message: str,
        failure_type: FailureType | str = FailureType.AGENT_ERROR,
        retryable: bool = True,
        *,
        raw_output: str | None = None,
        transcript: tuple[dict[str, Any], ...] = (),
        retry_after: float | None = None,
        spent: Any = None,
    ):
        super().__init__(message)
        known = failure_type in FailureType._value2member_map_
        self.failure_type: str = FailureType(failure_type) if known else str(failure_type)
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

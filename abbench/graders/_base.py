"""What a grader sees and returns, and how graders are named in an experiment definition."""

from __future__ import annotations

import importlib
import inspect
import typing
import unicodedata
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from abbench._registry import Registry
from abbench.errors import GradingError, TranscriptError, UnknownName, UsageError
from abbench.snapshot import Snapshot
from abbench.transcript import Event, Trajectory, read_transcript, to_dicts, to_events, trajectory_of
from abbench.types import AgentOutput, Case

KINDS = ("rule", "judge", "pairwise")

if TYPE_CHECKING:  # the judges' cache is a type here; importing abbench.llm would pull in httpx
    from abbench.llm import CallCache


@dataclass(frozen=True)
class GradeContext:
    """One run's stored execution, as a pointwise grader sees it.

    Attributes:
        case: The case the run answered.
        output: The agent's output (its transcript is loaded lazily through `transcript`).
        skill: The arm's skill snapshot, or None.
        label_map: The dataset's label value map (source value -> label), for normalising.
        label_set: The dataset's declared labels, if any.
        arm: The arm's name.
        round: 0-based round.
        run_id: The run's id in the store (None outside a store).
        transcript_path: Where the full transcript is kept, if it was written to a file.
        tool_calls: How many tool calls the session made.
        agent: The arm's agent adapter (``openai``, ``builtin`` ...).
        model: The arm's model id, if it names one.
        cache: The response cache judge calls about this run go through (its mode, the run's round);
            None: no cache.
    """

    case: Case
    output: AgentOutput
    skill: Snapshot | None = None
    label_map: dict[str, str] = field(default_factory=dict)
    label_set: tuple[str, ...] | None = None
    arm: str = ""
    round: int = 0
    run_id: int | None = None
    transcript_path: Path | None = None
    tool_calls: int = 0
    agent: str = ""
    model: str | None = None
    cache: CallCache | None = field(default=None, compare=False, repr=False)

    @cached_property
    def events(self) -> tuple[Event, ...]:
        """The session's transcript as typed events (`abbench.transcript`): from the output when it
        holds it, else read from the transcript file.

        Raises:
            GradingError: the transcript cannot be read (which file, which line, and why); not retried.
        """
        try:
            if self.output.transcript or self.transcript_path is None or not self.transcript_path.exists():
                return to_events(self.output.transcript)
            return read_transcript(self.transcript_path).events
        except TranscriptError as exc:
            raise GradingError(
                f"cannot read run {self.run_id}'s transcript: {exc}", retryable=False
            ) from None

    @cached_property
    def trajectory(self) -> Trajectory:
        """What the session did (`abbench.transcript.Trajectory`): its tool calls in order with their
        arguments and results, what it read and loaded, its turns and tokens.

        Raises:
            GradingError: the transcript cannot be read (as `events`).
        """
        out = self.output
        return trajectory_of(
            self.events,
            files_read=out.files_read,
            sections_read=out.sections_read,
            skills_offered=out.skills_offered,
            skills_loaded=out.skills_loaded,
            usage=out.usage,
        )

    @cached_property
    def transcript(self) -> tuple[dict[str, Any], ...]:
        """The session's messages and tool calls as the JSON objects written (`events`, as dicts)."""
        if self.output.transcript or self.transcript_path is None or not self.transcript_path.exists():
            return self.output.transcript
        return to_dicts(self.events)


@dataclass(frozen=True)
class PairContext:
    """Two arms' outputs on the same case and round, for a pairwise grader.

    `a` and `b` are in arm order (control first); a blind judge shuffles and anonymises them itself.
    """

    case: Case
    a: GradeContext
    b: GradeContext
    seed: int = 0


@dataclass(frozen=True)
class GradeResult:
    """A grader's verdict on one run (or one pair of runs).

    Attributes:
        passed: Whether the run passes this grader; None for graders that only score.
        score: A number (1.0/0.0 for rules; the rubric score for judges); None when not scored.
        verdict: For pairwise graders: ``"a"``, ``"b"`` or ``"tie"`` (in arm order, not slot order).
        dimensions: Scores per rubric dimension.
        comment: The grader's explanation.
        raw_output: The judge's raw text, kept for audit.
        judge_model: The model that judged.
        judge_cost: What judging spent (reported apart from agent cost); a judge reply answered from
            the response cache spent nothing.
        input_tokens, output_tokens: Judge tokens spent.
        details: Anything else worth keeping (seed, slot order, both-order verdicts, ...).
        cached: Every judge reply behind it came from the response cache.
        cost_saved: What the cached judge replies would have cost (None: none was cached).
    """

    passed: bool | None = None
    score: float | None = None
    verdict: str | None = None
    dimensions: dict[str, float] | None = None
    comment: str | None = None
    raw_output: str | None = None
    judge_model: str | None = None
    judge_cost: float | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    details: dict[str, Any] | None = None
    cached: bool = False
    cost_saved: float | None = None


RIGHT = GradeResult(passed=True, score=1.0)
"""A rule's pass, with nothing else to say: one object for every run (a result is frozen)."""
WRONG = GradeResult(passed=False, score=0.0)
"""A rule's fail, with nothing else to say."""


@runtime_checkable
class Grader(Protocol):
    """Grades one run (kind ``rule``/``judge``) or one pair of runs (kind ``pairwise``).

    Calling it returns a `GradeResult` or an awaitable of one; it raises `GradingError` when it
    cannot reach a verdict (the raw text goes with the error and is stored as a grading failure).
    """

    @property
    def name(self) -> str:
        """The grader's name in the experiment."""
        ...

    @property
    def kind(self) -> str:
        """``rule``, ``judge`` or ``pairwise``."""
        ...

    def __call__(self, ctx: Any) -> GradeResult | Awaitable[GradeResult]: ...


@dataclass(frozen=True)
class FunctionGrader:
    """A grader made from a plain function ``fn(ctx) -> GradeResult | bool | float | dict``.

    `blocking` marks a synchronous function that may take its time (a person's ``module:function``):
    the runner calls it in a worker thread, so it cannot stall the event loop.
    """

    name: str
    fn: Callable[[Any], Any]
    kind: str = "rule"
    blocking: bool = False

    def __call__(self, ctx: Any) -> GradeResult | Awaitable[GradeResult]:
        value = self.fn(ctx)
        if type(value) is GradeResult:  # a rule's answer, once per run: nothing to await or convert
            return value
        if inspect.isawaitable(value):
            return _await_result(value)
        return as_result(value)


async def _await_result(value: Awaitable[Any]) -> GradeResult:
    return as_result(await value)


def as_result(value: Any) -> GradeResult:
    """Normalise what a user's grader returned: a GradeResult, a bool, a number, or a dict of fields."""
    if isinstance(value, GradeResult):
        return value
    if isinstance(value, bool):
        return GradeResult(passed=value, score=float(value))
    if isinstance(value, (int, float)):
        return GradeResult(score=float(value))
    if isinstance(value, dict):
        unknown = set(value) - set(GradeResult.__dataclass_fields__)
        if unknown:
            raise GradingError(f"grader returned unknown fields {sorted(unknown)}")
        return GradeResult(**value)
    raise GradingError(
        f"a grader must return a GradeResult, bool, number or dict, not {type(value).__name__}"
    )


def normalise_label(value: Any, label_map: dict[str, str] | None = None) -> str | None:
    """A label compared the way an analyst means it: NFKC (full-width ``ｆａｓｔ`` is ``fast``), trimmed,
    case-folded, mapped through the value map — as the import normalises gold labels."""
    if value is None:
        return None
    text = _normal(value)
    if label_map:
        for candidate in (text, text.casefold()):
            if candidate in label_map:
                return _label_key(label_map[candidate])
        folded = {_label_key(k): v for k, v in label_map.items()}
        if text.casefold() in folded:
            return _label_key(folded[text.casefold()])
    return text.casefold()


def _label_key(value: Any) -> str:
    return _normal(value).casefold()


_NORMAL: dict[str, str] = {}
"""Short texts already normalised by `_normal`: labels repeat on every run, and NFKC is the cost."""
_NORMAL_MAX = 65_536
_NORMAL_LEN = 256


def _normal(value: Any) -> str:
    """`value` as text, NFKC-normalised, with its whitespace runs made one space and trimmed."""
    if type(value) is str and len(value) <= _NORMAL_LEN:
        hit = _NORMAL.get(value)
        if hit is None:
            if len(_NORMAL) >= _NORMAL_MAX:
                _NORMAL.clear()
            hit = _NORMAL[value] = " ".join(unicodedata.normalize("NFKC", value).split())
        return hit
    return " ".join(unicodedata.normalize("NFKC", str(value)).split())


def label_match(name: str = "label_match") -> Grader:
    """Passes when the prediction equals the gold label, after the dataset's label value map.

    Both sides are trimmed, case-folded and mapped (``"Fast "``, ``"快"`` and ``"fast"`` are one label
    when the map says so). A case without a gold label is a grading failure, not a silent pass.
    """

    def grade(ctx: GradeContext) -> GradeResult:
        if ctx.case.expected is None or str(ctx.case.expected).strip() == "":
            raise GradingError(
                f"case {ctx.case.case_id} has no gold label; label_match needs `expected` "
                "(map a gold column, or grade this dataset with a judge)"
            )
        gold = normalise_label(ctx.case.expected, ctx.label_map)
        pred = normalise_label(ctx.output.prediction, ctx.label_map)
        return RIGHT if pred is not None and pred == gold else WRONG

    return FunctionGrader(name, grade, "rule")


_RULES = "abbench.graders._rules"
_BUILTIN = {
    **dict.fromkeys(
        [
            *("exact", "contains", "regex", "json_schema", "numeric"),
            *("read_skill", "cited_evidence", "max_tool_calls", "max_tokens"),
        ],
        _RULES,
    ),
    "llm_judge": "abbench.graders._judge",
    "pairwise_judge": "abbench.graders._pairwise",
    "recorded": "abbench.graders._recorded",
    **dict.fromkeys(
        ("task_completion", "trace_quality", "skill_instruction_following"),
        "abbench.graders._trajectory_judge",
    ),
    "skill_following_stand_in": "abbench.graders._stand_in_following",
}
"""The graders abbench ships, by the module that registers each: imported when first asked for, so an
experiment graded by rules never loads the judges' HTTP client (``abbench.graders`` loads lazily)."""
_REGISTRY: Registry[Callable[..., Grader]] = Registry(_BUILTIN, {"label_match": label_match})


def register_grader(name: str) -> Callable[[Callable[..., Grader]], Callable[..., Grader]]:
    """Register the decorated grader factory under `name`, for use in experiment definitions."""
    return _REGISTRY.register(name)


def grader_names() -> list[str]:
    """The grader names an experiment definition may use."""
    return _REGISTRY.names()


def make_grader(spec: str | dict[str, Any] | Grader) -> Grader:
    """A grader from its definition: a registered name, ``{"type": name, **options}``, or
    ``module:function`` (a user's function taking a `GradeContext`). ``advisory: true`` (any grader)
    makes it graded and shown but never deciding a run's verdict.

    Raises:
        UsageError: the name is unknown or the options do not fit (the message lists valid names).
    """
    if isinstance(spec, Grader) and not isinstance(spec, (str, dict)):
        return spec
    options: dict[str, Any] = {}
    advisory = False
    if isinstance(spec, dict):
        options = dict(spec)
        kind = options.pop("type", None) or options.pop("grader", None)
        if not kind:
            raise UsageError(f"a grader definition needs a `type`: {spec!r}")
        advisory = options.pop("advisory", False)
        if not isinstance(advisory, bool):
            raise UsageError(f"grader {kind!r}: advisory must be true or false, not {advisory!r}")
    else:
        kind = str(spec)
    grader = _make(kind, options)
    if advisory:
        # graded and shown, never deciding a run (`abbench.runner.combine_verdicts`)
        object.__setattr__(grader, "advisory", True)
    return grader


def _make(kind: str, options: dict[str, Any]) -> Grader:
    """The grader `kind` with `options` (see `make_grader`)."""
    factory = _REGISTRY.load(kind)
    if factory is not None:
        valid = _options_of(factory)
        unknown = sorted(set(options) - set(valid)) if valid is not None else []
        if valid is not None and unknown:
            raise UsageError(
                f"grader {kind!r} has no option {', '.join(map(repr, unknown))}; "
                f"its options: {', '.join(valid) or '(none)'}"
            )
        try:
            return factory(**options)
        except TypeError as exc:
            raise UsageError(f"grader {kind!r}: {exc}") from exc
    if ":" in kind:
        unknown = sorted(set(options) - {"name", "kind"})
        if unknown:
            raise UsageError(
                f"grader {kind!r} (a function) takes only `name` and `kind`, not {', '.join(unknown)}"
            )
        fn_kind = options.get("kind", "rule")
        if fn_kind not in KINDS:
            raise UsageError(f"grader {kind!r}: kind {fn_kind!r} is not one of {', '.join(KINDS)}")
        fn = _load_callable(kind)
        blocking = not inspect.iscoroutinefunction(fn)
        return FunctionGrader(options.get("name") or kind, fn, fn_kind, blocking)
    raise UnknownName("grader", kind, grader_names(), more=", or module:function")


def _options_of(factory: Callable[..., Any]) -> list[str] | None:
    """The keyword options a factory takes (None when it takes any, through ``**kwargs``).

    ``**options: Unpack[SomeTypedDict]`` takes the typed dict's keys (the judges' connection settings).
    """
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return None
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    for p in params:
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            unpacked = _unpacked_keys(factory, p.name)
            if unpacked is None:
                return None
            names += unpacked
    return names


def _unpacked_keys(factory: Callable[..., Any], name: str) -> list[str] | None:
    """The keys of the typed dict that ``**name: Unpack[...]`` names, or None for plain ``**kwargs``."""
    try:
        hint = typing.get_type_hints(factory, include_extras=True).get(name)
    except Exception:  # an annotation that cannot be resolved at run time: take any option
        return None
    if typing.get_origin(hint) is not typing.Unpack:
        return None
    (typed_dict,) = typing.get_args(hint)
    return list(typing.get_type_hints(typed_dict))


def _load_callable(ref: str) -> Callable[..., Any]:
    module_name, _, attr = ref.rpartition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UsageError(
            f"cannot import grader module {module_name!r} ({exc}); is it on PYTHONPATH?"
        ) from exc
    try:
        fn = getattr(module, attr)
    except AttributeError:
        raise UsageError(f"module {module_name!r} has no function {attr!r}") from None
    if not callable(fn):
        raise UsageError(f"{ref} is not callable")
    return typing.cast("Callable[..., Any]", fn)

"""Rule graders: small factories that check an output (exact, contains, regex, JSON schema, numbers) or a trajectory.

Every factory validates its options when it is built (a bad option is a `UsageError` naming the
grader and the valid choices, raised when the experiment is defined, not halfway through a run), and
every grade says in `comment` why the run failed. A check that cannot apply is never a silent pass:
a case without the gold value a rule compares against is a grading failure; a trajectory check on an
arm without a skill gives no verdict (``passed=None``) and says so.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from abbench._regex import PatternError, compile_pattern, flags_of
from abbench._text import clip
from abbench._utf8 import read_utf8
from abbench.agents import last_json_object, strip_thinking
from abbench.errors import GradingError, UsageError
from abbench.graders._base import (
    RIGHT,
    WRONG,
    FunctionGrader,
    GradeContext,
    Grader,
    GradeResult,
    register_grader,
)
from abbench.graders._schema import ENGINES, check_schema, validate_json
from abbench.transcript import to_events, tool_calls

TEXT_FIELDS = ("prediction", "reason", "raw_output")
"""The output fields a text rule can look at."""

TOKEN_KINDS = ("total", "input", "output")
"""What `max_tokens` counts."""

_REGEX_FLAGS = "imsx"
"""The regex flags a ``regex`` grader takes (see `abbench._regex.FLAGS`)."""
_NUMBER = re.compile(r"[-+−]?(?:\d[\d,_]*(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?")
_SHOWN = 80


# -- option checks (raised when the experiment is defined) -----------------------------------------------


def _field(grader: str, field: str) -> str:
    if field not in TEXT_FIELDS:
        raise UsageError(f"{grader}: field {field!r} is not one of {', '.join(TEXT_FIELDS)}")
    return field


def _count(grader: str, option: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise UsageError(f"{grader}: {option} must be a whole number ≥ 0, not {value!r}")
    return value


def _texts(grader: str, option: str, value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    values = [value] if isinstance(value, (str, int, float)) else value
    if not isinstance(values, (list, tuple)) or not values:
        raise UsageError(f"{grader}: {option} must be a text or a non-empty list of texts, not {value!r}")
    return tuple(str(v) for v in values)


# -- shared helpers ----------------------------------------------------------------------------------------


def _shown(value: Any) -> str:
    text = " ".join(str(value).split())
    return repr(clip(text, _SHOWN))


def _output_text(ctx: GradeContext, field: str) -> str:
    value = getattr(ctx.output, field)
    return "" if value is None else str(value)


def _expected(ctx: GradeContext, grader: str, hint: str) -> str:
    expected = ctx.case.expected
    if expected is None or str(expected).strip() == "":
        raise GradingError(
            f"case {ctx.case.case_id} has no gold value (`expected`) for {grader} to compare with; "
            f"map a gold column, or {hint}"
        )
    return str(expected)


def _fold(text: str, case_sensitive: bool) -> str:
    text = unicodedata.normalize("NFKC", text)
    return text if case_sensitive else text.casefold()


def _verdict(ok: bool, comment: str | None, **details: Any) -> GradeResult:
    if comment is None and not details:
        return RIGHT if ok else WRONG
    return GradeResult(passed=ok, score=1.0 if ok else 0.0, comment=comment, details=details or None)


def tool_calls_in(transcript: Iterable[Any]) -> list[dict[str, Any]]:
    """The tool calls a transcript records, each once: ``{"id", "name", "arguments"}``.

    `transcript` holds typed events (`abbench.transcript`) or the dicts written for them. Understands
    abbench's ``tool_call`` events, OpenAI-style assistant messages (``tool_calls``), ``function_call``
    entries and Anthropic-style ``tool_use`` content blocks (Claude Code's stream JSON nests them in
    ``message``). A call recorded in two of these forms (same id) counts once (`abbench.transcript.tool_calls`).
    """
    return [
        {"id": c.id, "name": c.name or "", "arguments": c.arguments}
        for c in tool_calls(to_events(transcript))
    ]


def _calls(ctx: GradeContext) -> list[dict[str, Any]]:
    return tool_calls_in(ctx.events)


def _tool_call_count(ctx: GradeContext) -> int:
    events = ctx.events
    return len(tool_calls(events)) if events else ctx.tool_calls


# -- output checks -----------------------------------------------------------------------------------------


@register_grader("exact")
def exact(
    value: str | None = None,
    *,
    field: str = "prediction",
    case_sensitive: bool = True,
    name: str = "exact",
) -> Grader:
    """Passes when an output field equals a value exactly (after trimming outer whitespace).

    Stricter than `label_match`: no label value map, and case counts unless ``case_sensitive=False``.
    Full-width and half-width forms are the same character (Unicode NFKC).

    Args:
        value: What the field must equal; default the case's gold value (`expected`).
        field: ``prediction`` (default), ``reason`` or ``raw_output``.
        case_sensitive: Whether ``Fast`` and ``fast`` differ.
        name: The grader's name in the experiment.
    """
    _field(name, field)
    wanted = None if value is None else str(value)

    def grade(ctx: GradeContext) -> GradeResult:
        want = wanted if wanted is not None else _expected(ctx, name, "give the grader a `value`")
        got = _output_text(ctx, field)
        ok = _fold(got.strip(), case_sensitive) == _fold(want.strip(), case_sensitive)
        comment = None if ok else f"{field} {_shown(got)} is not exactly {_shown(want)}"
        return _verdict(ok, comment)

    return FunctionGrader(name, grade, "rule")


@register_grader("contains")
def contains(
    value: str | Sequence[str] | None = None,
    *,
    field: str = "prediction",
    case_sensitive: bool = False,
    require: str = "all",
    name: str = "contains",
) -> Grader:
    """Passes when an output field contains a text (or all / any of several texts).

    Args:
        value: A text or a list of texts; default the case's gold value (`expected`).
        field: ``prediction`` (default), ``reason`` or ``raw_output``.
        case_sensitive: Whether case matters (default not; width never does).
        require: ``all`` (default) or ``any`` of the texts.
        name: The grader's name in the experiment.
    """
    _field(name, field)
    if require not in ("all", "any"):
        raise UsageError(f"{name}: require must be 'all' or 'any', not {require!r}")
    wanted = _texts(name, "value", value)

    def grade(ctx: GradeContext) -> GradeResult:
        needles = wanted or (_expected(ctx, name, "give the grader a `value`"),)
        haystack = _fold(_output_text(ctx, field), case_sensitive)
        found = [n for n in needles if _fold(n, case_sensitive) in haystack]
        missing = [n for n in needles if n not in found]
        ok = bool(found) if require == "any" else not missing
        comment = None
        if not ok:
            what = " or ".join(map(_shown, needles)) if require == "any" else ", ".join(map(_shown, missing))
            comment = f"{field} does not contain {what}"
        return _verdict(ok, comment, missing=missing or None)

    return FunctionGrader(name, grade, "rule")


@register_grader("regex")
def regex(
    pattern: str,
    *,
    field: str = "prediction",
    flags: str = "",
    full_match: bool = False,
    negate: bool = False,
    name: str = "regex",
) -> Grader:
    """Passes when a regular expression matches an output field (or, with ``negate``, when it does not).

    Args:
        pattern: A regular expression in Python's syntax, searched anywhere in the field; it runs on RE2
            (linear time), and what RE2 cannot run (backreferences, lookaround) is refused here.
        field: ``prediction`` (default), ``reason`` or ``raw_output``.
        flags: Any of ``i`` (ignore case), ``m`` (multi-line), ``s`` (dot matches newline), ``x`` (verbose).
        full_match: The whole field must match, not just a part of it.
        negate: Pass when the pattern does *not* match (e.g. no apology, no leaked path).
        name: The grader's name in the experiment.
    """
    _field(name, field)
    try:
        compiled_flags = flags_of(flags, allowed=_REGEX_FLAGS)
    except PatternError as exc:
        raise UsageError(f"{name}: {exc}") from None
    if not isinstance(pattern, str) or not pattern:
        raise UsageError(f"{name}: pattern must be a non-empty regular expression, not {pattern!r}")
    try:
        compiled = compile_pattern(pattern, compiled_flags)  # RE2: linear in the output, whatever the pattern
    except PatternError as exc:
        raise UsageError(f"{name}: the pattern {exc}") from None

    def grade(ctx: GradeContext) -> GradeResult:
        text = _output_text(ctx, field)
        match = compiled.fullmatch(text) if full_match else compiled.search(text)
        ok = (match is None) if negate else (match is not None)
        comment = None
        if not ok and negate and match is not None:
            comment = f"{field} matches {pattern!r} (it must not): {_shown(match.group(0))}"
        elif not ok:
            how = "does not fully match" if full_match else "has no match for"
            comment = f"{field} {_shown(text)} {how} {pattern!r}"
        return _verdict(ok, comment, match=match.group(0) if match else None)

    return FunctionGrader(name, grade, "rule")


def _load_schema(schema: Any, grader: str) -> Any:
    if isinstance(schema, (str, Path)) and not str(schema).lstrip().startswith("{"):
        path = Path(schema).expanduser()
        if not path.is_file():
            raise UsageError(f"{grader}: schema file {str(path)!r} does not exist")
        text = read_utf8(path)
        try:
            if path.suffix.lower() in (".yaml", ".yml"):
                from abbench._yaml import load_yaml  # PyYAML: `abbench run` of rules in JSON loads none

                return load_yaml(text)
            return json.loads(text)
        except Exception as exc:
            raise UsageError(f"{grader}: schema file {str(path)!r} does not parse: {exc}") from None
    if isinstance(schema, str):
        try:
            return json.loads(schema)
        except ValueError as exc:
            raise UsageError(f"{grader}: the schema text is not JSON: {exc}") from None
    return schema


@register_grader("json_schema")
def json_schema(
    schema: Any = None,
    *,
    field: str = "raw_output",
    extract: bool = True,
    engine: str = "auto",
    name: str = "json_schema",
) -> Grader:
    """Passes when an output field is JSON that fits a JSON Schema (or just valid JSON without one).

    Validation uses the `jsonschema` package when it is installed, else a built-in validator for the
    common keywords (see `abbench.graders._schema`).

    Args:
        schema: The schema: a mapping, JSON text, or a path to a ``.json``/``.yaml`` file. None only
            checks that the field is JSON.
        field: ``raw_output`` (default: the agent's final text), ``prediction`` or ``reason``.
        extract: Also accept the JSON inside a code fence or surrounded by prose (the last object wins);
            False demands that the whole field is JSON.
        engine: ``auto``, ``jsonschema`` or ``builtin``.
        name: The grader's name in the experiment.
    """
    _field(name, field)
    if engine not in ENGINES:
        raise UsageError(f"{name}: engine {engine!r} is not one of {', '.join(ENGINES)}")
    loaded = _load_schema(schema, name) if schema is not None else None
    if loaded is not None:
        check_schema(loaded, engine)

    def grade(ctx: GradeContext) -> GradeResult:
        text = _output_text(ctx, field)
        value, how = _parse_json(text, extract)
        if how is None:
            return _verdict(False, f"{field} is not JSON: {_shown(text) if text.strip() else '(empty)'}")
        problems = validate_json(value, loaded, engine=engine) if loaded is not None else []
        if problems:
            more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
            return _verdict(False, "; ".join(problems[:5]) + more, problems=problems, parsed=how)
        return _verdict(True, None, parsed=how)

    return FunctionGrader(name, grade, "rule")


def _parse_json(text: str, extract: bool) -> tuple[Any, str | None]:
    try:
        return json.loads(text), "json"
    except ValueError:
        pass
    if not extract:
        return None, None

    body = strip_thinking(text)
    fence = re.findall(r"```[ \t]*(?:json|JSON)?[ \t]*\n(.*?)```", body, re.S)
    for block in reversed(fence):
        try:
            return json.loads(block), "fenced_json"
        except ValueError:
            continue
    found = last_json_object(body)
    return (found, "embedded_json") if found is not None else (None, None)


def parse_number(text: Any) -> float | None:
    """The first number written in `text` (``"1,234.5 km"`` → 1234.5, ``"－3"`` → -3), or None.

    Thousands separators, units, currency and percent signs around the number are ignored;
    full-width digits are read (Unicode NFKC).
    """
    if text is None:
        return None
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text)
    match = _NUMBER.search(unicodedata.normalize("NFKC", str(text)))
    if match is None:
        return None
    raw = match.group(0).replace(",", "").replace("_", "").replace("−", "-")
    try:
        value = float(raw)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


# Where a worked solution states its final answer: GSM8K's "#### 18", MATH's "\\boxed{18}", "Answer: 18",
# "the answer is 18", "答案是 18".
_ANSWER_MARKS = (
    re.compile(r"####"),
    re.compile(r"\\boxed\{"),
    re.compile(r"\b(?:final\s+)?answer(?:\s+is)?(?![a-z])\s*[:：=]?|答案(?:是|为)?\s*[:：]?", re.I),
)
_PICKS = ("answer", "first", "last")


def answer_number(text: Any, pick: str = "answer") -> tuple[float | None, str]:
    """The number a text gives as its answer, and how it was found.

    ``pick="answer"`` (the default) reads a worked solution as graders of maths benchmarks do: the first
    number after the last answer mark (``####``, ``\\boxed{``, ``answer:`` / ``the answer is``, ``答案``),
    else the last number written — "9 * 2 = 18" answers 18, not 9. ``"first"`` and ``"last"`` take the
    first or last number whatever the text says.
    """
    if text is None:
        return None, "no text"
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        return float(text), "a number"
    body = unicodedata.normalize("NFKC", str(text))
    if pick == "first":
        return parse_number(body), "the first number"
    if pick == "answer":
        for mark in _ANSWER_MARKS:
            found = list(mark.finditer(body))
            if found:
                number = parse_number(body[found[-1].end() :])
                if number is not None:
                    return number, f"after {found[-1].group(0).strip()!r}"
    numbers = [n for m in _NUMBER.finditer(body) if (n := parse_number(m.group(0))) is not None]
    if not numbers:
        return None, "no number"
    return numbers[-1], "the only number" if len(numbers) == 1 else "the last number"


@register_grader("numeric")
def numeric(
    tolerance: float = 0.0,
    *,
    relative: bool = False,
    value: float | str | None = None,
    pick: str = "answer",
    field: str = "prediction",
    name: str = "numeric",
) -> Grader:
    """Passes when the number in an output field is within `tolerance` of the gold number.

    Args:
        tolerance: The largest allowed difference (absolute, or a fraction of the gold value with
            ``relative=True``: 0.05 is 5 %).
        relative: Read `tolerance` as a fraction of the gold value.
        value: The number to compare with; default the number in the case's gold value.
        pick: Which number a text means, in the gold and the output alike (see `answer_number`):
            ``answer`` (after the last ``####`` / ``\\boxed{`` / ``answer:`` mark, else the last number),
            ``first`` or ``last``.
        field: ``prediction`` (default), ``reason`` or ``raw_output``.
        name: The grader's name in the experiment.
    """
    _field(name, field)
    if pick not in _PICKS:
        raise UsageError(f"{name}: pick must be one of {', '.join(_PICKS)}, not {pick!r}")
    if isinstance(tolerance, bool) or not isinstance(tolerance, (int, float)) or not tolerance >= 0:
        raise UsageError(f"{name}: tolerance must be a number ≥ 0, not {tolerance!r}")
    fixed = None
    if value is not None:
        fixed = parse_number(value)
        if fixed is None:
            raise UsageError(f"{name}: value {value!r} is not a number")

    def grade(ctx: GradeContext) -> GradeResult:
        if fixed is not None:
            want = fixed
        else:
            gold = _expected(ctx, name, "give the grader a `value`")
            parsed, _ = answer_number(gold, pick)
            if parsed is None:
                raise GradingError(
                    f"case {ctx.case.case_id}: the gold value {_shown(gold)} has no number for {name}"
                )
            want = parsed
        text = _output_text(ctx, field)
        got, how = answer_number(text, pick)
        if got is None:
            return _verdict(False, f"{field} {_shown(text)} has no number (expected {want:g})", expected=want)
        allowed = tolerance * abs(want) if relative else tolerance
        diff = abs(got - want)
        ok = diff <= allowed + 1e-12 * max(1.0, abs(want))  # forgive float rounding, not real differences
        comment = None
        if not ok:
            limit = f"{tolerance:g} × {abs(want):g} = {allowed:g}" if relative else f"{allowed:g}"
            read = "" if how in ("the only number", "a number") else f" ({how})"
            comment = f"{field} {got:g}{read} is {diff:g} from {want:g}, more than the tolerance {limit}"
        return _verdict(ok, comment, expected=want, got=got, difference=diff, read=how)

    return FunctionGrader(name, grade, "rule")


# -- trajectory checks -------------------------------------------------------------------------------------


def _no_skill(ctx: GradeContext, name: str) -> GradeResult:
    return GradeResult(comment=f"arm {ctx.arm or '?'} has no skill: {name} does not apply")


def _tool_reads(ctx: GradeContext, paths: set[str]) -> list[str]:
    """Skill files (``path``, or ``path#heading`` for a section) named in the arguments of the
    session's tool calls — only the agent's own calls count, never the messages it was given."""
    calls = _calls(ctx)
    if not calls or not paths:
        return []
    # a path counts whole: "a.md" is not read by opening "data.md", but "/tmp/work/a.md" reads it
    pattern = re.compile(
        r"(?<![\w.-])("
        + "|".join(re.escape(p) for p in sorted(paths, key=len, reverse=True))
        + r")(?![\w.-])(#[^\s\"',;}\]]+)?"  # with the heading, when a section is named
    )
    found: list[str] = []
    for call in calls:
        args = call["arguments"]
        if isinstance(args, str):
            with contextlib.suppress(ValueError):  # JSON text may spell CJK paths as \u escapes
                args = json.loads(args)
        text = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)
        for match in pattern.finditer(text):
            read = match.group(1) + (match.group(2) or "")
            if read not in found:
                found.append(read)
    return found


@register_grader("read_skill")
def read_skill(
    *,
    files: str | Sequence[str] | None = None,
    min_reads: int = 1,
    count_skill_md: bool = False,
    name: str = "read_skill",
) -> Grader:
    """Passes when the agent read its skill at all: opened a skill file or section during the run.

    What counts: the files and sections the adapter recorded as read (`files_read`, `sections_read`)
    and tool calls in the transcript whose arguments name a file of the snapshot (for agents that
    read with their own tools). The injected SKILL.md is not reading: every adapter puts SKILL.md into
    the prompt, and some list it in `files_read` for that reason, so the whole SKILL.md file does not
    count (its sections, opened on purpose, do); nor do the messages the agent was given — only its
    own calls. Arms without a skill get no verdict.

    Args:
        files: Only reads of these files count (glob patterns such as ``knowledge/*``).
        min_reads: How many distinct files or sections must be read (default 1).
        count_skill_md: Count reading the whole SKILL.md too (for agents that are not given it).
        name: The grader's name in the experiment.
    """
    patterns = _texts(name, "files", files)
    _count(name, "min_reads", min_reads)

    def counts(path: str) -> bool:
        return patterns is None or any(fnmatchcase(path, p) for p in patterns)

    def grade(ctx: GradeContext) -> GradeResult:
        if ctx.skill is None:
            return _no_skill(ctx, name)
        paths = {f.path for f in ctx.skill.files}
        reads: list[str] = []
        for item in (*ctx.output.files_read, *ctx.output.sections_read, *_tool_reads(ctx, paths)):
            if item == "SKILL.md" and not count_skill_md:
                continue  # injected into the prompt: having it is not reading it
            if counts(item.partition("#")[0]) and item not in reads:
                reads.append(item)
        # a section read and the read of its whole file are one read of that file
        distinct = {r for r in reads if "#" in r or not any(o.startswith(r + "#") for o in reads)}
        ok = len(distinct) >= max(min_reads, 1)
        comment = None
        if not ok:
            scope = f" matching {', '.join(patterns)}" if patterns else ""
            comment = (
                f"read {len(distinct)} skill file(s) or section(s){scope}; needs {max(min_reads, 1)}"
                + (
                    f" (read: {', '.join(sorted(distinct))})"
                    if distinct
                    else " — it answered without opening the skill"
                )
            )
        return _verdict(ok, comment, reads=sorted(distinct))

    return FunctionGrader(name, grade, "rule")


@register_grader("cited_evidence")
def cited_evidence(
    *,
    min_refs: int = 1,
    all_must_resolve: bool = False,
    name: str = "cited_evidence",
) -> Grader:
    """Passes when the agent cites references (``path#heading``) that exist in its skill snapshot.

    Each citation is resolved with `Snapshot.resolve` (exact, then forgiving within its file); the
    comment names the ones that do not exist. Arms without a skill get no verdict.

    Args:
        min_refs: How many existing references must be cited (default 1).
        all_must_resolve: Also fail when any citation points at nothing (an invented reference).
        name: The grader's name in the experiment.
    """
    _count(name, "min_refs", min_refs)

    def grade(ctx: GradeContext) -> GradeResult:
        if ctx.skill is None:
            return _no_skill(ctx, name)
        cited = [str(r) for r in ctx.output.evidence_refs if str(r).strip()]
        resolved: dict[str, str] = {}
        missing: list[str] = []
        for ref in cited:
            section = ctx.skill.resolve(ref)
            if section is None:
                missing.append(ref)
            else:
                resolved[ref] = section.ref
        n = len(set(resolved.values()))
        ok = n >= max(min_refs, 1) and not (all_must_resolve and missing)
        reasons = []
        if n < max(min_refs, 1):
            reasons.append(f"cites {n} existing reference(s), needs {max(min_refs, 1)}")
        if missing:
            reasons.append(f"not in {ctx.skill.label}: {', '.join(missing)}")
        comment = "; ".join(reasons) if (reasons and (not ok or missing)) else None
        return _verdict(ok, comment, resolved=resolved or None, missing=missing or None)

    return FunctionGrader(name, grade, "rule")


@register_grader("max_tool_calls")
def max_tool_calls(n: int, *, name: str = "max_tool_calls") -> Grader:
    """Passes when the session made at most `n` tool calls (counted in the transcript).

    Args:
        n: The most tool calls allowed.
        name: The grader's name in the experiment.
    """
    _count(name, "n", n)

    def grade(ctx: GradeContext) -> GradeResult:
        used = _tool_call_count(ctx)
        ok = used <= n
        return _verdict(ok, None if ok else f"made {used} tool calls, more than {n}", tool_calls=used)

    return FunctionGrader(name, grade, "rule")


@register_grader("max_tokens")
def max_tokens(n: int, *, which: str = "total", name: str = "max_tokens") -> Grader:
    """Passes when the agent spent at most `n` tokens on the run.

    Args:
        n: The most tokens allowed.
        which: ``total`` (default), ``input`` or ``output`` tokens.
        name: The grader's name in the experiment.
    """
    _count(name, "n", n)
    if which not in TOKEN_KINDS:
        raise UsageError(f"{name}: which must be one of {', '.join(TOKEN_KINDS)}, not {which!r}")

    def grade(ctx: GradeContext) -> GradeResult:
        usage = ctx.output.usage
        if usage is None:  # unknown is not zero: a grading failure, not a silent pass
            raise GradingError(
                f"{name}: the agent reported no token usage, so the {n}-token limit cannot be checked; "
                "have the agent report usage or drop this grader"
            )
        used = {"total": usage.total_tokens, "input": usage.input_tokens, "output": usage.output_tokens}[
            which
        ]
        ok = used <= n
        return _verdict(ok, None if ok else f"spent {used} {which} tokens, more than {n}", tokens=used)

    return FunctionGrader(name, grade, "rule")

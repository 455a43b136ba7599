"""The regular expressions people give abbench (a mapping's ``match``, the regex grader, a JSON schema's
``pattern``, a command agent's answer pattern, a pairwise judge's mask patterns) run on RE2.

Python's `re` backtracks: ``^(a+)+$`` on 40 ``a`` and a ``!`` takes 2^40 steps while holding the GIL,
which hangs a whole server. RE2 (Google's engine, the PyPI wheel ``google-re2``) matches in time linear
in the text, with a bounded memory for each pattern, so no pattern can hang or exhaust anything.

A pattern is written in Python's syntax and keeps Python's meaning: it is parsed by Python's own parser
(so verbose mode, ``\\N{...}``, ``{,n}`` and every escape read as in `re`), then written out for RE2 —
``\\w``, ``\\d`` and ``\\s`` as the same Unicode classes (Chinese characters are ``\\w``), ``$`` as
"at the end or before a final newline". What RE2 cannot do without backtracking — backreferences,
lookahead and lookbehind, atomic groups and possessive repeats, conditionals, a repeat count above 1,000
— is refused when the pattern is read (`PatternError`, saying what and what to write instead), never
met while matching. Two differences remain, both documented in docs/datasets.md: ``\\b`` and ``\\B``
are word boundaries between ASCII letters, digits and ``_`` and anything else; and a match that ends
with ``$`` before a final newline includes that newline in ``group(0)``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any

MAX_PATTERN_CHARS = 10_000
"""The longest pattern accepted (RE2 also refuses a pattern whose program passes `MAX_PATTERN_MEMORY`)."""
MAX_PATTERN_MEMORY = 8 << 20
"""The memory RE2 may use for one pattern (its default)."""
MAX_REPEAT = 1000
"""The largest count a repeat ``{m,n}`` may give (RE2's limit)."""

FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE, "a": re.ASCII}
"""The flags a user pattern may carry, by letter."""


class PatternError(ValueError):
    """Raised when a user's pattern is not a regular expression or cannot run on RE2 (which never
    backtracks). The message starts with the pattern (``'(a)\\1' uses a backreference ...``), so a
    caller can put "the pattern" or "match:" in front, and says what to write instead."""


# Python's \w, \d and \s, as RE2 classes: equal on every character Python's Unicode database knows
# (tests/test_regex.py checks each code point), RE2 alone knowing some characters newer than it.
_WORD = r"\p{L}\p{N}_"
_DIGIT = r"\p{Nd}"
_SPACE = r"\t-\r\x1c-\x1f\x85\p{Z}"
_ASCII_WORD, _ASCII_DIGIT, _ASCII_SPACE = r"0-9A-Za-z_", r"0-9", r"\t-\r "


def _sre() -> tuple[Any, Any]:
    import re._constants as constants
    import re._parser as parser

    return parser, constants


class _Writer:
    """Writes a parsed Python pattern out in RE2's syntax, refusing what RE2 cannot run."""

    def __init__(self, pattern: str, names: Mapping[int, str]):
        self.pattern = pattern
        self.names = names
        _, self.c = _sre()

    def refuse(self, what: str, instead: str) -> PatternError:
        return PatternError(
            f"{self.pattern!r} uses {what}, which cannot run on RE2, the engine patterns run on here "
            f"(it never backtracks, so no pattern can hang); {instead}"
        )

    def seq(self, items: Any, flags: int) -> str:
        return "".join(self.item(op, av, flags) for op, av in items)

    def item(self, op: Any, av: Any, flags: int) -> str:
        c = self.c
        if op is c.LITERAL:
            return _char(av)
        if op is c.NOT_LITERAL:
            return f"[^{_char(av)}]"
        if op is c.ANY:
            return "."
        if op is c.IN:
            return self.charset(av, flags)
        if op in (c.MAX_REPEAT, c.MIN_REPEAT):
            low, high, sub = av
            if low > MAX_REPEAT or (high != c.MAXREPEAT and high > MAX_REPEAT):
                return _raise(
                    self.refuse(f"a repeat count over {MAX_REPEAT:,}", "repeat at most 1,000 times")
                )
            if high == c.MAXREPEAT:
                count = {0: "*", 1: "+"}.get(low, f"{{{low},}}")
            elif (low, high) == (0, 1):
                count = "?"
            else:
                count = f"{{{low}}}" if low == high else f"{{{low},{high}}}"
            return f"(?:{self.seq(sub, flags)}){count}{'?' if op is c.MIN_REPEAT else ''}"
        if op is c.SUBPATTERN:
            group, add, remove, sub = av
            inner = self.seq(sub, (flags | add) & ~remove)
            on = "".join(k for k, f in (("i", re.I), ("m", re.M), ("s", re.S)) if add & f)
            off = "".join(k for k, f in (("i", re.I), ("m", re.M), ("s", re.S)) if remove & f)
            if on or off:
                inner = f"(?{on}{'-' + off if off else ''}:{inner})"
            if group is None:
                return f"(?:{inner})"
            name = self.names.get(group)
            return f"(?P<{name}>{inner})" if name else f"({inner})"
        if op is c.BRANCH:
            return "(?:" + "|".join(self.seq(alt, flags) for alt in av[1]) + ")"
        if op is c.AT:
            return self.at(av, flags)
        if op is c.CATEGORY:  # only inside IN, but harmless here
            return self.charset([(op, av)], flags)
        if op is c.GROUPREF:
            return _raise(self.refuse("a backreference (\\1, (?P=name))", "match the text again explicitly"))
        if op is c.GROUPREF_EXISTS:
            return _raise(self.refuse("a conditional group (?(1)...)", "write both alternatives with |"))
        if op in (c.ASSERT, c.ASSERT_NOT):
            return _raise(
                self.refuse(
                    "a lookahead or lookbehind ((?=...), (?!...), (?<=...), (?<!...))",
                    "match the surrounding text too, and take what you need with a group",
                )
            )
        if op in (getattr(c, "ATOMIC_GROUP", None), getattr(c, "POSSESSIVE_REPEAT", None)):
            return _raise(
                self.refuse("an atomic group or a possessive repeat ((?>...), *+, ++)", "drop the +")
            )
        raise self.refuse(f"{op}", "write it more simply")  # pragma: no cover - every opcode of 3.11-3.13

    def at(self, where: Any, flags: int) -> str:
        c = self.c
        if where is c.AT_BEGINNING:
            return "(?m:^)" if flags & re.M else r"\A"
        if where is c.AT_END:
            # Python's $ is also true before a final newline; RE2's only at the end (or, with m, any line's)
            return "(?m:$)" if flags & re.M else r"(?:\n?\z)"
        if where is c.AT_BEGINNING_STRING:
            return r"\A"
        if where is c.AT_END_STRING:
            return r"\z"
        if where is c.AT_BOUNDARY:
            return r"\b"
        if where is c.AT_NON_BOUNDARY:
            return r"\B"
        raise self.refuse(f"{where}", "write it more simply")  # pragma: no cover

    def charset(self, items: Any, flags: int) -> str:
        c = self.c
        ascii_only = bool(flags & re.ASCII)
        word, digit, space = (
            (_ASCII_WORD, _ASCII_DIGIT, _ASCII_SPACE) if ascii_only else (_WORD, _DIGIT, _SPACE)
        )
        negate = False
        parts: list[str] = []
        negated: list[str] = []
        for op, av in items:
            if op is c.NEGATE:
                negate = True
            elif op is c.LITERAL:
                parts.append(_char(av))
            elif op is c.RANGE:
                parts.append(f"{_char(av[0])}-{_char(av[1])}")
            elif op is c.CATEGORY:
                name = str(av)
                body = word if "WORD" in name else digit if "DIGIT" in name else space
                if "NOT" in name:
                    if name.endswith("NOT_DIGIT") and not ascii_only:
                        parts.append(r"\P{Nd}")
                    else:
                        negated.append(body)
                else:
                    parts.append(body)
            else:  # pragma: no cover - the parser puts nothing else in a class
                raise self.refuse(f"{op} in a character class", "write the class more simply")
        if negated:
            if len(negated) > 1 or parts:
                raise self.refuse(
                    "\\W or \\S together with other characters in one [...]",
                    "write it as an alternative: (?:\\W|[...])",
                )
            return f"[{'' if negate else '^'}{negated[0]}]"
        return f"[{'^' if negate else ''}{''.join(parts)}]"


def _raise(exc: Exception) -> str:
    raise exc


def _char(code: int) -> str:
    if 0x30 <= code <= 0x39 or 0x41 <= code <= 0x5A or 0x61 <= code <= 0x7A:
        return chr(code)
    return f"\\x{{{code:x}}}"


def to_re2(pattern: str, flags: int = 0) -> str:
    """`pattern` (Python syntax, `flags` from `re`) written for RE2 with the same meaning.

    Raises:
        PatternError: it is not a regular expression, or uses what RE2 cannot run.
    """
    if not isinstance(pattern, str):
        raise PatternError(f"{pattern!r} is not a pattern: a pattern is text, not {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise PatternError(
            f"{pattern[:40]!r}… is {len(pattern):,} characters long, over the {MAX_PATTERN_CHARS:,} a pattern "
            "may be"
        )
    parser, _ = _sre()
    try:
        parsed = parser.parse(pattern, flags)
    except (re.error, OverflowError, RecursionError) as exc:
        where = f" at position {exc.pos}" if isinstance(exc, re.error) and exc.pos is not None else ""
        why = exc.msg if isinstance(exc, re.error) else "it nests too deep"
        raise PatternError(f"{pattern!r} is not a valid regular expression: {why}{where}") from None
    all_flags = parsed.state.flags
    names = {number: name for name, number in parsed.state.groupdict.items()}
    body = _Writer(pattern, names).seq(parsed, all_flags)
    on = "".join(k for k, f in (("i", re.I), ("m", re.M), ("s", re.S)) if all_flags & f)
    return f"(?{on}){body}" if on else body


class UserPattern:
    """A user's pattern compiled on RE2; searched like a compiled `re` pattern.

    Attributes:
        pattern: The pattern as written.
        flags: Its `re` flags.
        groups: How many capturing groups it has.
        groupindex: Its named groups and their numbers.
    """

    __slots__ = ("_re2", "flags", "groupindex", "groups", "pattern")

    def __init__(self, pattern: str, flags: int = 0):
        import re2

        options = re2.Options()
        options.log_errors = False
        options.max_mem = MAX_PATTERN_MEMORY
        try:
            self._re2 = re2.compile(to_re2(pattern, flags), options)
        except re2.error as exc:
            detail = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
            raise PatternError(
                f"{pattern!r} cannot run on RE2, the engine patterns run on here: {detail}"
            ) from None
        self.pattern = pattern
        self.flags = flags
        self.groups: int = self._re2.groups
        self.groupindex: Mapping[str, int] = dict(self._re2.groupindex)

    def __reduce__(self) -> tuple[Any, ...]:
        return (compile_pattern, (self.pattern, self.flags))

    def __repr__(self) -> str:
        return f"UserPattern({self.pattern!r})"

    def search(self, text: str, pos: int = 0) -> Any:
        """The first match in `text` from `pos` (a match object with ``group``, ``span``, ``groupdict``), or None."""
        return self._re2.search(_encodable(text), pos)

    def fullmatch(self, text: str) -> Any:
        """A match of the whole `text`, or None."""
        return self._re2.fullmatch(_encodable(text))

    def finditer(self, text: str) -> Iterator[Any]:
        """Every non-overlapping match, left to right."""
        found: Iterator[Any] = self._re2.finditer(_encodable(text))
        return found


def _encodable(text: str) -> str:
    # RE2 reads UTF-8, which cannot hold half of a UTF-16 pair: U+FFFD stands in for one, so offsets hold
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", text)
    return text


_SURROGATE = re.compile("[\ud800-\udfff]")


@lru_cache(maxsize=512)
def compile_pattern(pattern: str, flags: int = 0) -> UserPattern:
    """A user's pattern (Python syntax) compiled on RE2, kept for the next call with the same pattern.

    Raises:
        PatternError: it is not a regular expression, or uses what RE2 cannot run (the message says
            what, and what to write instead).
    """
    return UserPattern(pattern, flags)


def flags_of(letters: str, allowed: str = "".join(FLAGS)) -> int:
    """The `re` flags for letters such as ``"im"``, each one of the `allowed` letters of `FLAGS`.

    Raises:
        PatternError: a letter is not one of `allowed`.
    """
    bad = sorted(set(letters) - set(allowed))
    if bad:
        raise PatternError(f"unknown regex flag(s) {''.join(bad)!r}; use any of {', '.join(allowed)}")
    value = 0
    for letter in letters:
        value |= FLAGS[letter]
    return value

"""User patterns run on RE2 with Python's meaning (abbench/_regex.py): checked against Python's `re` on
patterns that do not backtrack badly, code point by code point for the Unicode classes, and refused at
load, naming what, for what RE2 cannot run."""

from __future__ import annotations

import pickle
import re
import unicodedata

import pytest

from abbench._regex import PatternError, compile_pattern, flags_of

CATASTROPHIC = r"^(a+)+$"
HOSTILE_TEXT = "a" * 40 + "!"  # 2^40 steps for Python's re

PATTERNS = [
    r"\w+",
    r"(\d+)\s*(元|块)",
    r"(?i)sorry|抱歉",
    r"^yes$",
    r"(?m)^\s*label:\s*(\S+)$",
    r"(?x) a \s+ b  # verbose",
    r"[^\w\s]+",
    r"\bsorry\b",
    r"订单号[:：](\w+)",
    r"(?P<prediction>fast|slow)(?:\s*\((?P<confidence>[\d.]+)\))?",
    r".{2,5}?x",
    r"[\d\-]+",
    r"\D+",
    r"[^\D]",
    r"\W+",
    r"\S+",
    r"(?s)a.b",
    r"a{,3}",
    r"\N{DIGIT ONE}|\u4e2d",
    r"[A-Z]{2}",
    r"(?i:ABC)d",
    r"(?a)\w+",
    r"x*",
    r"b\Z",
    r"a|b|(c)",
    r"\Afast",
    r"[^a-c]",
]
TEXTS = [
    "中文abc 12元",
    "Sorry, 抱歉",
    "yes\n",
    "yes",
    "label: fast\nlabel: slow\n",
    "a  b",
    "订单号：AB12中文",
    "fast (0.9) or slow",
    "a\nb",
    "aaa x",
    "１２-3 ٣",
    "ＡＢ abc",
    "aBCd",
    "_é ",
    "",
    "ab",
    "c",
    "1 中 x",
    "\u3000全角\u00a0空格",
]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_a_pattern_finds_what_python_finds(pattern):
    ours, theirs = compile_pattern(pattern), re.compile(pattern)
    assert ours.groups == theirs.groups and dict(ours.groupindex) == dict(theirs.groupindex)
    for text in TEXTS:
        want, got = theirs.search(text), ours.search(text)
        assert (want is None) == (got is None), (pattern, text)
        if want is not None:
            assert got.groups() == want.groups(), (pattern, text)
            # $ before a final newline: RE2 has no lookahead, so the newline is inside the match
            assert got.group(0) in (want.group(0), want.group(0) + "\n"), (pattern, text)
            assert got.start() == want.start(), (pattern, text)


@pytest.mark.slow
@pytest.mark.parametrize(
    "cls", [r"\w", r"\W", r"\d", r"\D", r"\s", r"\S", r"(?a)\w", r"(?a)\s", r"[^\w]", r"[\w-]"]
)
def test_the_unicode_classes_equal_pythons_on_every_character_it_knows(cls):
    # Characters Python's Unicode database does not know yet (category Cn) may differ: RE2's is newer.
    known = "".join(
        ch
        for ch in map(chr, range(0x110000))
        if not 0xD800 <= ord(ch) <= 0xDFFF and unicodedata.category(ch) != "Cn"
    )
    theirs = {m.start() for m in re.finditer(cls, known)}
    ours = {m.start() for m in compile_pattern(cls).finditer(known)}
    assert ours == theirs, sorted(known[i] for i in ours ^ theirs)[:20]


def test_a_pattern_that_backtracks_exponentially_in_python_answers_at_once():
    pattern = compile_pattern(CATASTROPHIC)
    assert pattern.search(HOSTILE_TEXT) is None
    assert pattern.fullmatch("a" * 100_000) is not None
    assert compile_pattern(r"(x+x+)+y").search("x" * 5000) is None


@pytest.mark.parametrize(
    ("pattern", "said"),
    [
        (r"(a)\1", "a backreference"),
        (r"(?P<q>a)(?P=q)", "a backreference"),
        (r"(?<=订单号)\w+", "a lookahead or lookbehind"),
        (r"\d+(?!元)", "a lookahead or lookbehind"),
        (r"(?>a+)b", "an atomic group or a possessive repeat"),
        (r"a++", "an atomic group or a possessive repeat"),
        (r"a{1001}", "a repeat count over 1,000"),
        (r"(a)?(?(1)b|c)", "a conditional group"),
        (r"[\W\d]", r"\W or \S together with other characters"),
        (r"((a{100}){100}){100}", "cannot run on RE2"),
        ("(", "is not a valid regular expression: missing ), unterminated subpattern at position 0"),
        ("a" * 20_000, "over the 10,000 a pattern may be"),
    ],
)
def test_what_re2_cannot_run_is_refused_when_read_saying_what(pattern, said):
    with pytest.raises(PatternError) as caught:
        compile_pattern(pattern)
    assert said in str(caught.value)


def test_a_compiled_pattern_travels_to_another_process_and_text_with_a_lone_surrogate_is_searched():
    pattern = pickle.loads(pickle.dumps(compile_pattern(r"a(b)")))
    assert pattern.search("xab").span() == (1, 3)
    assert compile_pattern("a").search("\ud800a").span() == (1, 2)


def test_flag_letters():
    assert flags_of("im") == re.I | re.M
    with pytest.raises(PatternError, match="unknown regex flag"):
        flags_of("q")

"""Cutting message text: at word boundaries, with one "…", and sentences ended once."""

from __future__ import annotations

import pytest

from abbench._text import clip, clip_start, sentence


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        ("short enough", 20, "short enough"),
        ("the server failed to answer the request in time", 20, "the server failed…"),
        ("a sentence that ends. And another one", 24, "a sentence that ends…"),
        ("到目的地电量够不够到目的地电量够不够", 8, "到目的地电量够…"),  # no spaces: cut at the limit
        ("averyveryverylongidentifier", 10, "averyvery…"),
        ("one two", 1, "…"),
    ],
)
def test_clip_cuts_at_a_word_boundary_with_one_ellipsis(text, limit, expected):
    out = clip(text, limit)
    assert out == expected and len(out) <= limit
    assert ".." not in out and out.count("…") <= 1


def test_clip_start_keeps_the_end_from_a_boundary():
    text = "\n".join(f"log line {i}" for i in range(100))
    out = clip_start(text, 60)
    assert len(out) <= 60 and out.startswith("…log line ") and out.endswith("log line 99")
    assert out.count("…") == 1
    assert clip_start("short", 60) == "short"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Rate limit reached", "Rate limit reached."),
        ("Rate limit reached.", "Rate limit reached."),
        ("cut here…", "cut here…"),
        ("请稍后再试。", "请稍后再试。"),
        ("", ""),
    ],
)
def test_sentence_ends_once(text, expected):
    assert sentence(text) == expected


def test_fit_cuts_at_a_word_boundary_in_terminal_columns_and_pads():
    from abbench._text import cells, fit

    assert fit("card payment fee charged", 16) == "card payment…   "
    assert cells(fit("card payment fee charged", 16)) == 16
    assert fit("到目的地电量够不够", 10) == "到目的地… "  # wide characters take two columns; padded to 10
    assert fit("abc", 5, align=">") == "  abc" and fit("abc", 5, pad=False) == "abc"
    assert fit("line one\nline two", 40, pad=False) == "line one line two"
    assert fit("supercalifragilistic", 10, pad=False) == "supercali…"  # no space near the cut

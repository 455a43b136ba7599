"""`CaseView.history_excerpt`: the one bound every view puts on a history of any length."""

from __future__ import annotations

import json

from abbench.review import CaseView


def _case(history) -> CaseView:
    return CaseView("c1", "and the third one?", "yes", None, history, None, None, None, None, None)


def test_ten_thousand_long_turns_come_back_bounded_and_counted():
    history = json.dumps([{"role": "user", "content": f"turn {i} " + "word " * 400} for i in range(10_000)])
    excerpt = _case(history).history_excerpt(10, 1_000)
    assert excerpt.total == 10_000 and excerpt.hidden == 9_990 and excerpt.cut
    assert [t.text.split()[1] for t in excerpt.turns] == [str(i) for i in range(9_990, 10_000)]
    for t in excerpt.turns:
        full = f"turn {t.text.split()[1]} " + "word " * 400
        assert len(t.text) <= 1_000 and t.text.endswith("…")
        assert len(t.text) - 1 + t.left_out == len(
            full.strip()
        )  # what is kept and what is counted: all of it


def test_without_bounds_every_turn_comes_back_whole():
    turns = [{"role": "assistant", "content": "x" * 5_000}, {"role": "user", "content": "</details><script>"}]
    excerpt = _case(turns).history_excerpt()
    assert excerpt.hidden == 0 and not excerpt.cut
    assert [(t.role, t.text) for t in excerpt.turns] == [
        ("assistant", "x" * 5_000),
        ("user", "</details><script>"),
    ]
    assert _case(None).history_excerpt(10, 10).total == 0

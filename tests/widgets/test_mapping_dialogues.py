"""MappingWidget on a dialogue file: a per-turn gold's values are counted in the rows the recipe makes."""

from __future__ import annotations

import html

from abbench.widgets import MappingWidget


def test_a_per_turn_gold_of_sgd_dialogues_lists_its_values_with_counts(store, realdata):
    widget = MappingWidget(store, path=realdata / "dialogues" / "sgd_dev_001_head20.json")
    assert widget.errors.message is None and widget.base.recipe == "conversations"
    widget.set_field("expected", "turn.frames[0].state.active_intent")
    counts = {row.key: row.count for row in widget.label_rows}
    # one count per user turn (122 in these 20 dialogues), never per dialogue
    assert sum(counts.values()) == 122 and len(counts) >= 2, counts
    assert "reads the labels" not in widget.labels_note.value
    assert "values in 'turn.frames[0].state.active_intent'" in html.unescape(widget.labels_note.value)
    widget.set_field("expected", "reply")  # the recipe's own gold: free replies, no value map
    assert widget.label_rows == [] and "distinct values in 'reply'" in html.unescape(widget.labels_note.value)

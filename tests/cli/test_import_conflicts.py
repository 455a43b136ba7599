"""`abbench import` shows label conflicts from the facts the library hands it (rows, labels, the count,
what no prompt shows, the hint), never from the words of a conflict's message."""

from __future__ import annotations

import dataclasses
import json


def test_the_conflicts_are_printed_from_their_fields_not_their_message(store, realdata, capsys):
    from abbench.cli._data import _echo_conflicts
    from abbench.dataset import LabelConflicts

    info = store.datasets.import_file(
        realdata / "mams" / "mams_acsa_test_head.tsv",
        {
            "fields": {
                "case_id": "pair_id",
                "input": "review_sentence",
                "expected": "polarity",
                "metadata": {"unmapped": True},
            }
        },
    )
    conflicts = store.datasets.label_conflicts(info)
    first = conflicts[0]
    assert (first.labels[0].label, first.labels[0].rows[0].location, first.labels[0].rows[0].case_id) == (
        "neutral",
        "line 2",
        "s1-place",
    )
    assert (first.n_labels, first.hidden_metadata, first.hidden_domain) == (2, ("aspect_category",), False)
    assert "map it to context" in first.hint
    _echo_conflicts(conflicts)
    shown = capsys.readouterr().out
    # the same conflicts with their messages blanked print the same: nothing is read out of the words
    blank = LabelConflicts(
        [dataclasses.replace(c, message="") for c in conflicts], total=conflicts.total, limit=conflicts.limit
    )
    _echo_conflicts(blank)
    assert capsys.readouterr().out == shown
    assert shown.splitlines() == [
        "  conflicts   80 inputs, with the same history and context, have different expected labels; review them:",
        "    ~ line 2: We went again and sat at the bar this… — 'neutral' at line 2 (case s1-place); 'negative' at "
        "line 3 (case s1-food) of mams_acsa_test_head.tsv",
        *shown.splitlines()[2:6],
        "    … and 75 more (see --json)",
        "    all of them differ only in metadata 'aspect_category', which the agent's prompt does not show: if "
        "that tells the cases apart, map it to context (fields: context: <column>) so the agent sees it",
    ]


def test_conflicts_past_the_library_limit_are_counted_not_guessed(cli, tmp_path):
    path = tmp_path / "many.csv"
    path.write_text("q,label\n" + "".join(f"q{i},a\nq{i},b\n" for i in range(250)), encoding="utf-8")
    out = cli("import", path).output
    # 250 in all, of which the library keeps its 200: told as counted, not as "200+"
    assert (
        "  conflicts   250 inputs, with the same history and context, have different expected labels" in out
    )
    assert "    … and 245 more (--json lists 195 of them)\n" in out
    listed = json.loads(cli("datasets", "many", "--json").output)["label_conflicts"]
    assert len(listed) == 200
    assert listed[0]["labels"] == [
        {"label": "a", "rows": [{"location": "line 2", "case_id": listed[0]["case_id"]}], "n_rows": 1},
        {"label": "b", "rows": [{"location": "line 3", "case_id": f"{listed[0]['case_id']}-2"}], "n_rows": 1},
    ]
    assert (listed[0]["hint"], listed[0]["hidden_metadata"]) == ("review the gold labels", [])

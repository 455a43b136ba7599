"""Aspect-sentiment data (issue 41): one sentence on several rows, one per aspect, each with its polarity.

The labels column that tells a sentence's rows apart is context the gold depends on; the gold is the other
labels column. When both tell the rows apart, the suggestion says so rather than guessing.
"""

from __future__ import annotations

import csv
from collections import Counter

from abbench.dataset import suggest_mapping

MINI = (
    "pair_id,sentence_no,review_sentence,aspect_category,polarity\n"
    't1-food,1,"The food was good, but the service was slow.",food,positive\n'
    't1-service,1,"The food was good, but the service was slow.",service,negative\n'
    "t2-staff,2,Waiter took our drink order and then vanished for 15 minutes.,staff,negative\n"
    "t3-price,3,Prices are fair for the portion size.,price,positive\n"
)


def test_mams_aspect_is_context_and_polarity_the_gold(realdata):
    path = realdata / "mams" / "mams_acsa_test_head.tsv"
    fields = suggest_mapping(path).profile.fields
    assert fields["input"] == "review_sentence"
    assert fields["context"] == "aspect_category" and fields["expected"] == "polarity"
    # the file itself: a sentence and its aspect name one row, a sentence and its polarity do not
    with path.open(encoding="utf-8", newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    pairs = Counter((r["review_sentence"], r["aspect_category"]) for r in rows)
    assert max(pairs.values()) == 1
    assert max(Counter((r["review_sentence"], r["polarity"]) for r in rows).values()) > 1


def test_when_both_columns_tell_the_rows_apart_the_suggestion_asks(tmp_path):
    path = tmp_path / "mini.csv"
    path.write_text(MINI, encoding="utf-8")
    found = suggest_mapping(path)
    assert "context" not in found.profile.fields
    (said,) = [n for n in found.notes if "each input holds several rows" in n]
    assert "map context: aspect_category and expected: polarity" in said


def test_inputs_that_stand_alone_get_no_context(realdata):
    fields = suggest_mapping(realdata / "banking77" / "test.csv").profile.fields
    assert "context" not in fields and fields["expected"] == "category"

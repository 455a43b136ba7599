"""Writes `mams_acsa_test_head.tsv` from MAMS-ACSA's `test.xml` (see README.md beside it).

Run from the repository root: ``python tests/realdata/mams/make_tsv.py path/to/MAMS-ACSA/raw/test.xml``.
One row per (sentence, aspect category) of the first 80 sentences, as an analyst flattens the XML:
each sentence repeats on as many rows as it has aspects, with a different polarity on most of them.
"""

from __future__ import annotations

import csv
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SENTENCES = 80
HERE = Path(__file__).parent

root = ET.parse(sys.argv[1]).getroot()
with (HERE / "mams_acsa_test_head.tsv").open("w", encoding="utf-8", newline="") as fh:
    out = csv.writer(fh, delimiter="\t", lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
    out.writerow(["pair_id", "sentence_no", "review_sentence", "aspect_category", "polarity"])
    for no, sentence in enumerate(root.iter("sentence"), 1):
        if no > SENTENCES:
            break
        text = sentence.findtext("text", "").strip()
        for aspect in sentence.iter("aspectCategory"):
            category = aspect.get("category")
            out.writerow([f"s{no}-{category}", no, text, category, aspect.get("polarity")])

"""`ValidationReport.kinds` and `.outcome`: one entry per kind of problem, and what an import would do."""

from __future__ import annotations

import csv
import io
from collections import Counter

import pytest

from abbench.dataset import ReportBuilder, ValidationReport, convert_file, preview_import
from abbench.errors import ImportFailed
from tests.conftest import DEMO


@pytest.fixture(scope="module")
def banking(realdata):
    """banking77's test split with a label set lacking seven of its 77 intents, checked whole."""
    path = realdata / "banking77" / "test.csv"
    reader = csv.DictReader(path.open(encoding="utf-8", newline=""))
    rows, end = [], 1
    for row in reader:  # the line a row starts on (a quoted text may hold a line break)
        rows.append({**row, "line": end + 1})
        end = reader.line_num
    intents = sorted({r["category"] for r in rows})
    kept, dropped = intents[:70], intents[70:]
    profile = {"name": "b77", "fields": {"input": "text", "expected": "category"}, "label_set": kept}
    with pytest.raises(ImportFailed) as refused:
        convert_file(path, profile)
    return path, profile, rows, dropped, refused.value.report


def test_seventy_seven_labels_missing_seven_are_one_kind_with_their_values_counted(banking):
    _path, _profile, rows, dropped, report = banking
    per_intent = Counter(r["category"] for r in rows)
    (kind,) = report.kinds()
    assert (kind.kind, kind.field, kind.severity) == ("label_not_in_set", "expected", "error")
    assert kind.count == sum(per_intent[d] for d in dropped) == report.n_invalid
    assert dict(kind.values) == {d: per_intent[d] for d in dropped}
    assert kind.case_ids == ()  # banking77 has no id column: the ids are generated from the content
    first = [r["line"] for r in rows if r["category"] in dropped][:5]
    assert kind.where() == f"line {', '.join(map(str, first))} … (+{kind.count - 5:,} more)"
    assert kind.hint.startswith("map each value to a label")
    assert len(report.groups()) == len(dropped)  # the value-level view still tells each value apart


def test_the_outcome_is_the_refusal_and_skipping_imports_exactly_what_it_promised(banking):
    path, profile, rows, _dropped, report = banking
    n_bad = report.n_invalid
    assert report.outcome() == (
        f"import refused: {n_bad} errors in 1 kind on {n_bad} of {len(rows):,} rows; nothing stored"
    )
    promised = report.outcome(skip_invalid=True)
    assert promised == f"would import {len(rows) - n_bad:,} cases, {n_bad} skipped (skip invalid rows)"
    done = convert_file(path, profile, skip_invalid=True)
    assert len(done.cases) == len(rows) - n_bad and done.report.n_skipped == n_bad


def test_a_preview_says_it_read_the_first_rows_only(banking):
    path, profile, _rows, _dropped, _report = banking
    preview = preview_import(path, profile, n=5).report
    assert preview.outcome().endswith("check the whole file to see what an import does")
    assert "would import" not in preview.outcome() and "refused" not in preview.outcome()


def test_several_kinds_with_the_case_ids_of_their_rows(tmp_path):
    source = (DEMO / "cases.csv").read_text(encoding="utf-8-sig").splitlines()
    reader = list(csv.reader(source))
    header, body = reader[0], reader[1:41]
    qi, ri, ii = header.index("query"), header.index("route"), header.index("case_id")
    for k in (2, 9, 30):
        body[k][qi] = ""  # empty_input
    for k in (4, 5):
        body[k][ri] = "medium"  # label_not_in_set
    body[20][ii] = body[19][ii]  # duplicate_case_id
    out = io.StringIO()
    csv.writer(out).writerows([header, *body])
    path = tmp_path / "cases.csv"
    path.write_text(out.getvalue(), encoding="utf-8")
    with pytest.raises(ImportFailed) as refused:
        convert_file(path, DEMO / "mapping-csv.yaml")
    report = refused.value.report
    kinds = {k.kind: k for k in report.kinds()}
    assert set(kinds) == {"empty_input", "label_not_in_set", "duplicate_case_id"}
    assert kinds["empty_input"].where() == "line 4, 11, 32" and kinds["empty_input"].count == 3
    assert kinds["empty_input"].case_ids == tuple(body[k][ii] for k in (2, 9, 30))
    assert kinds["label_not_in_set"].values == (("medium", 2),)
    assert kinds["duplicate_case_id"].case_ids == (body[19][ii],)
    assert report.outcome() == "import refused: 6 errors in 3 kinds on 6 of 40 rows; nothing stored"
    # the report survives the store's JSON with its case ids
    again = ValidationReport.from_dict(report.to_dict())
    assert [k.case_ids for k in again.kinds()] == [k.case_ids for k in report.kinds()]


def test_counts_stay_complete_when_only_the_first_problems_are_kept():
    builder = ReportBuilder(max_problems=10)
    for i in range(50):
        builder.add("empty_input", f"line {i + 2}", "input", None, "the input is blank")
    builder.n_rows, builder.n_invalid = 80, 50
    builder.n_valid = 30
    report = builder.build()
    (kind,) = report.kinds()
    assert kind.count == 50 and len(kind.locations) == 10
    assert kind.where(3) == "line 2, 3, 4 … (+47 more)"
    assert report.outcome() == "import refused: 50 errors in 1 kind on 50 of 80 rows; nothing stored"
    assert report.outcome(skip_invalid=True) == "would import 30 cases, 50 skipped (skip invalid rows)"

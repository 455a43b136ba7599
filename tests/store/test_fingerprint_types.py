"""The fingerprint reads a number as the text that writes it where no agent is shown the difference (in
metadata, or as the whole context), so the same cases from a TSV (text cells) and an XLSX (number
cells) hash the same; datasets stored under the earlier rule keep their fingerprints and are found
again by a re-import."""

from __future__ import annotations

import csv
import hashlib

import pytest
from hypothesis import given, strategies as st

from abbench.dataset import ContentHasher, canonical_json, content_hash, convert_file
from abbench.types import Case

MAMS = {
    "case_id": "pair_id",
    "input": "review_sentence",
    "context": "aspect_category",
    "expected": "polarity",
}
UNMAPPED = {"fields": {**MAMS, "metadata": {"unmapped": True}}}


@pytest.fixture
def mams_tsv(realdata):
    return realdata / "mams" / "mams_acsa_test_head.tsv"


@pytest.fixture
def mams_xlsx(mams_tsv, tmp_path):
    """The same rows as a workbook, `sentence_no` as number cells (what Excel keeps)."""
    from openpyxl import Workbook

    book = Workbook()
    sheet = book.active
    with mams_tsv.open(encoding="utf-8", newline="") as fh:
        for i, row in enumerate(csv.reader(fh, delimiter="\t")):
            sheet.append([int(row[1]) if i and j == 1 else cell for j, cell in enumerate(row)])
    path = tmp_path / "mams_acsa_test_head.xlsx"
    book.save(path)
    return path


def test_a_tsv_and_an_xlsx_of_the_same_cases_get_one_fingerprint(store, mams_tsv, mams_xlsx):
    tsv = store.datasets.import_file(mams_tsv, UNMAPPED, name="mams")
    xlsx_cases = store.datasets.import_file(mams_xlsx, UNMAPPED, name="mams-xlsx")
    # stored as read: text from the TSV, numbers from the workbook
    assert store.datasets.load_cases(tsv)[0].metadata == {"sentence_no": "1"}
    assert store.datasets.load_cases(xlsx_cases)[0].metadata == {"sentence_no": 1}
    assert xlsx_cases.content_hash == tsv.content_hash
    # the import's fast path (each JSON field's text rewritten) equals the plain one (each case parsed)
    assert convert_file(mams_xlsx, UNMAPPED).content_hash == content_hash(
        store.datasets.load_cases(xlsx_cases)
    )
    # so the workbook under the TSV's name is the TSV's dataset, not a second version of it
    again = store.datasets.import_file(mams_xlsx, UNMAPPED, name="mams")
    assert (again.reused, again.fingerprint, again.name_versions) == (
        True,
        tsv.fingerprint,
        (tsv.fingerprint,),
    )


def _sha(lines: list[str]) -> str:
    return hashlib.sha256("".join(f"{line}\n" for line in lines).encode()).hexdigest()


@pytest.mark.parametrize(
    ("number", "text"),
    [
        (1, "1"),
        (1.0, "1"),
        (-3, "-3"),
        (0.5, "0.5"),
        (12345678901234567890, "12345678901234567890"),
        (1e20, "100000000000000000000"),
        (True, "true"),
        (False, "false"),
    ],
)
def test_a_number_hashes_as_the_text_that_writes_it(number, text):
    as_number = Case("c1", "q", metadata={"n": number, "deep": [{"k": number}]}, context=number)
    as_text = Case("c1", "q", metadata={"n": text, "deep": [{"k": text}]}, context=text)
    assert content_hash([as_number]) == content_hash([as_text]) == _sha([canonical_json(as_text.canonical())])


def test_a_number_inside_a_context_the_agent_is_shown_stays_a_number():
    assert content_hash([Case("c1", "q", context={"speed_kmh": 60})]) != content_hash(
        [Case("c1", "q", context={"speed_kmh": "60"})]
    )
    assert content_hash([Case("c1", "q", history=[{"role": "user", "content": 1}])]) != content_hash(
        [Case("c1", "q", history=[{"role": "user", "content": "1"}])]
    )


def test_a_context_that_is_one_cell_hashes_alike_from_a_tsv_and_an_xlsx(store, mams_tsv, mams_xlsx):
    number_context = {"fields": {**MAMS, "context": "sentence_no"}}
    tsv = store.datasets.import_file(mams_tsv, number_context, name="by-sentence")
    xlsx = store.datasets.import_file(mams_xlsx, number_context, name="by-sentence-xlsx")
    assert (store.datasets.load_cases(tsv)[0].context, store.datasets.load_cases(xlsx)[0].context) == ("1", 1)
    assert xlsx.content_hash == tsv.content_hash
    assert convert_file(mams_xlsx, number_context).content_hash == content_hash(
        store.datasets.load_cases(xlsx)
    )


@pytest.mark.parametrize(
    ("number", "text"), [(1, "01"), (1.5, "1.50"), (1, "1.0"), (True, "TRUE"), (None, "")]
)
def test_a_text_is_kept_as_written(number, text):
    assert content_hash([Case("c1", "q", metadata={"n": number})]) != content_hash(
        [Case("c1", "q", metadata={"n": text})]
    )


def test_a_line_without_a_number_is_hashed_as_it_is():
    from abbench.dataset._canonical import hash_line

    line = canonical_json(Case("c1", "at 10:30, t", history=[{"role": "user", "content": "a,1"}]).canonical())
    assert hash_line(line) == line
    hasher = ContentHasher()
    hasher.add_lines([line])
    assert hasher.hexdigest() == hasher.earlier_hexdigest() == _sha([line])


def test_a_dataset_stored_under_the_earlier_rule_keeps_its_fingerprint(store, mams_xlsx):
    info = store.datasets.import_file(mams_xlsx, UNMAPPED, name="mams")
    # as an abbench before this rule stored it: the hash of the lines as stored, numbers as numbers
    lines = [canonical_json(c.canonical()) for c in store.datasets.load_cases(info)]
    earlier = _sha(lines)
    assert earlier != info.content_hash
    with store.transaction() as conn:
        conn.execute(
            "UPDATE datasets SET content_hash = ?, fingerprint = ? WHERE id = ?",
            (earlier, f"mams@{earlier[:12]}", info.id),
        )
    again = store.datasets.import_file(mams_xlsx, UNMAPPED, name="mams")
    assert (again.reused, again.id, again.fingerprint) == (True, info.id, f"mams@{earlier[:12]}")
    # and without a name, as any stored dataset of these cases is found
    assert store.datasets.import_file(mams_xlsx, UNMAPPED).fingerprint == f"mams@{earlier[:12]}"
    # cases saved from Python find it the same way
    saved = store.datasets.save("mams", store.datasets.load_cases(info))
    assert (saved.reused, saved.id) == (True, info.id)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.characters(codec="utf-8"), max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12,
)


@given(_JSON)
def test_a_json_field_rewritten_in_place_equals_the_value_parsed_and_written_as_text(value):
    from abbench.dataset._canonical import _as_text, hash_json

    text = canonical_json(value)
    assert hash_json(text) == canonical_json(_as_text(value))

"""The earlier content hash (numbers hashed as stored) is worked out only when an import may need it:
when the cases hold a number the content hash reads as text, the lookup by the content hash missed, and
a stored dataset of that name and size could carry it. The fingerprints stay what they were."""

from __future__ import annotations

import hashlib
import json

import pytest

from abbench.dataset import ContentHasher, canonical_json, content_hash
from abbench.types import Case

from ..reads import statements

SECOND_PASS = (
    "SELECT case_id, input, expected, history, context, domain, request_id, metadata, expected_skill"
)
MAPPING = {"fields": {"input": "q", "expected": "label", "metadata": {"unmapped": True}}}


def _sha(lines: list[str]) -> str:
    return hashlib.sha256("".join(f"{line}\n" for line in lines).encode()).hexdigest()


@pytest.mark.parametrize(
    ("cases", "differs"),
    [
        ([Case("c1", "q", metadata={"n": 1}), Case("c2", "r", context=2.0)], True),
        ([Case("c1", "at 10:30", metadata={"n": "1"}, history=[{"role": "user", "content": 1}])], False),
        ([Case("c1", "q", metadata={"ok": True})] * 5000, True),  # past one batch of the second pass
    ],
)
def test_the_earlier_hash_from_a_second_pass_is_the_hash_of_the_lines_as_stored(cases, differs):
    lines = [canonical_json(c.canonical()) for c in cases]
    hasher = ContentHasher()
    for c in cases:
        hasher.add_case(c)
    assert hasher.earlier_differs is differs
    assert hasher.earlier_hexdigest(iter(lines)) == _sha(lines)
    assert (hasher.hexdigest() != _sha(lines)) is differs
    if differs:
        with pytest.raises(ValueError, match="needs those lines again"):
            hasher.earlier_hexdigest()
    else:
        assert hasher.earlier_hexdigest() == hasher.hexdigest()


def test_an_import_makes_the_second_pass_only_when_a_stored_dataset_could_carry_the_earlier_hash(
    store, tmp_path
):
    path = tmp_path / "numbers.jsonl"
    rows = [{"q": f"q{i}", "label": "a" if i % 2 else "b", "n": i, "ok": i % 3 == 0} for i in range(50)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    first, seen = statements(store, lambda: store.datasets.import_file(path, MAPPING, name="nums"))
    assert not first.reused and not any(SECOND_PASS in s for s in seen)  # nothing stored could carry it
    assert first.content_hash == content_hash(store.datasets.load_cases(first))  # the plain path's hash
    again, seen = statements(store, lambda: store.datasets.import_file(path, MAPPING, name="nums"))
    assert (again.reused, again.id) == (True, first.id) and not any(SECOND_PASS in s for s in seen)

    # as an abbench before the rule stored it: the hash of the lines as stored, numbers as numbers
    earlier = _sha([canonical_json(c.canonical()) for c in store.datasets.load_cases(first)])
    assert earlier != first.content_hash
    with store.transaction() as conn:
        conn.execute(
            "UPDATE datasets SET content_hash = ?, fingerprint = ? WHERE id = ?",
            (earlier, f"nums@{earlier[:12]}", first.id),
        )
    found, seen = statements(store, lambda: store.datasets.import_file(path, MAPPING, name="nums"))
    assert (found.reused, found.id, found.fingerprint) == (True, first.id, f"nums@{earlier[:12]}")
    assert any(SECOND_PASS in s for s in seen)
    # the same name, another size: no stored dataset could carry it, no second pass, a new dataset
    other = tmp_path / "fewer.jsonl"
    other.write_text("".join(json.dumps(r) + "\n" for r in rows[:10]), encoding="utf-8")
    fewer, seen = statements(store, lambda: store.datasets.import_file(other, MAPPING, name="nums"))
    assert not fewer.reused and not any(SECOND_PASS in s for s in seen)


def test_an_import_without_numbers_hashes_its_lines_as_they_are(store, tmp_path):
    """The mapper found nothing to read as text: the lines are hashed as they are, without a search,
    and equal the plain path's hash (each case parsed), "10:30" and ", 1" in texts included."""
    path = tmp_path / "texts.csv"
    path.write_text('q,label,note\nat 10:30,a,"x, 1"\n[1],b,t\n', encoding="utf-8")
    mapping = {"fields": {"input": "q", "expected": "label", "metadata": {"unmapped": True}}}
    info = store.datasets.import_file(path, mapping)
    assert info.content_hash == content_hash(store.datasets.load_cases(info))

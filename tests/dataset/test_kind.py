"""Labels or answers: one rule on the values (`gold_kind`), the mapping's `expected_kind:`, and where it is kept."""

from __future__ import annotations

import json
import logging

import pytest

from abbench.dataset import MappingProfile, gold_kind
from abbench.errors import MappingError, UsageError
from abbench.store import open_store
from abbench.types import Case
from tests.old_stores import old_store


@pytest.mark.parametrize(
    ("counts", "kind"),
    [
        ({f"intent_{i}": 40 for i in range(77)}, "label"),  # banking77: no class count makes this text
        ({f"intent_{i}": 157 for i in range(151)}, "label"),  # CLINC150
        ({"fast": 1, "slow": 1}, "label"),  # two values: labels however few the cases
        ({f"answer number {i}": 1 for i in range(60)}, "answer"),  # one case per value
        ({f"value {i}": 3 for i in range(30)} | {f"x{i}": 1 for i in range(5)}, "label"),  # a long tail
        ({"The capital of France is Paris, on the Seine.": 5, "x" * 80: 5}, "answer"),  # long
        ({f"Is the vaccine safe for people with condition number {i}?": 27 for i in range(117)}, "label"),
        ({f"A long reference answer, written out in full, number {i}": 4 for i in range(30)}, "answer"),
        ({None: 4, "": 2, "  ": 1}, None),
    ],
)
def test_the_values_decide_labels_or_answers(counts, kind):
    assert gold_kind(counts).kind == kind


def test_long_canonical_questions_shared_by_many_cases_are_labels(store, realdata):
    # IBM's VIRA: the gold of each question is one of 222 canonical questions, 45 characters on average.
    # They read as free-text answers by length alone, so the dataset got no F1 or confusion matrix.
    csv = realdata / "vira" / "validation.csv"
    info = store.datasets.import_file(
        csv, {"fields": {"input": "sentence", "expected": "label"}}, name="vira"
    )
    kind = info.expected_kind
    assert (kind.kind, kind.distinct, kind.cases) == ("label", 222, 3140), kind
    assert "long ones (averaging 45 characters)" in kind.reason and "14.1 each" in kind.reason, kind.reason


def test_the_mapping_overrides_the_values_and_says_so():
    answers = {f"answer number {i}": 1 for i in range(60)}
    declared = gold_kind(answers, declared="label")
    assert declared.kind == "label" and declared.declared and "expected_kind: label" in declared.reason
    assert gold_kind(answers, label_set=["a", "b"]).is_label
    labels = {f"intent_{i}": 40 for i in range(77)}
    assert gold_kind(labels, declared="answer").kind == "answer"
    with pytest.raises(ValueError, match="label or answer"):
        gold_kind(labels, declared="labels")


def test_the_profile_key_is_checked():
    profile = MappingProfile.from_dict({"fields": {"input": "q", "expected": "a"}, "expected_kind": "answer"})
    assert profile.expected_kind == "answer" and "expected_kind: answer" in profile.to_yaml()
    with pytest.raises(MappingError, match="expected_kind"):
        MappingProfile.from_dict({"fields": {"input": "q"}, "expected_kind": "text"})
    with pytest.raises(MappingError, match="keep one of them"):
        MappingProfile.from_dict({"fields": {"input": "q"}, "expected_kind": "answer", "label_set": ["a"]})


def test_an_import_keeps_the_kind_with_the_dataset(store, realdata, tmp_path):
    csv = realdata / "banking77" / "test.csv"
    fields = {"input": "text", "expected": "category"}
    info = store.datasets.import_file(csv, {"fields": fields}, name="banking77")
    assert info.expected_kind.kind == "label" and not info.expected_kind.declared
    assert info.to_dict()["expected_kind"]["distinct"] == 77
    answers = store.datasets.import_file(
        csv, {"fields": fields, "expected_kind": "answer"}, name="banking-answers"
    )
    assert answers.expected_kind.kind == "answer" and answers.expected_kind.declared
    assert store.datasets.get("banking-answers").expected_kind == answers.expected_kind


def test_a_reimport_declaring_another_kind_warns(store, realdata, caplog):
    csv = realdata / "banking77" / "test.csv"
    fields = {"input": "text", "expected": "category"}
    store.datasets.import_file(csv, {"fields": fields}, name="banking77")
    with caplog.at_level(logging.WARNING, logger="abbench.store._imports"):
        again = store.datasets.import_file(
            csv, {"fields": fields, "expected_kind": "answer"}, name="banking77"
        )
    assert again.reused and again.expected_kind.kind == "label"
    assert "expected_kind: answer is not applied" in caplog.text


def test_cases_saved_from_python_get_a_kind(store):
    cases = [Case(f"c{i}", f"q {i}", f"the answer is {i}") for i in range(10)]
    assert store.datasets.save("free", cases).expected_kind.kind == "answer"
    assert store.datasets.save("forced", cases, expected_kind="label").expected_kind.is_label
    with pytest.raises(UsageError, match="expected_kind is one of label, answer"):
        store.datasets.save("bad", cases, expected_kind="text")


def test_a_store_from_before_the_kind_gets_it_from_its_values(tmp_path):
    rows = [(1, i, f"c{i}", f"q{i}", f"intent_{i % 77}") for i in range(154)] + [(2, 0, "c0", "q", None)]
    folder = old_store(
        tmp_path / "old",
        3,
        "INSERT INTO datasets (id, fingerprint, name, content_hash, n_cases, created_at) "
        "VALUES (1, 'many@x', 'many', 'x', 154, '2026-01-01'), (2, 'none@y', 'none', 'y', 1, '2026-01-01')",
        (
            "INSERT INTO cases (dataset_id, idx, case_id, input, expected, source_line) VALUES (?,?,?,?,?,'x')",
            rows,
        ),
    )
    with open_store(folder) as store:
        many, none = store.datasets.get("many"), store.datasets.get("none")
        assert many.expected_kind.kind == "label" and many.expected_kind.distinct == 77
        assert none.expected_kind.kind is None
        stored = store.query_one("SELECT expected_kind FROM datasets WHERE id = 1")[0]
        assert json.loads(stored)["kind"] == "label"

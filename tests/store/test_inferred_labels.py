"""An import given no mapping declares the labels its gold values make; a given mapping is never changed,
and a note says how to declare them. Found by a new user on OpenAI evals' ABA-MRPC samples: gold
``True``/``False``, no label set, so the agent was never told the labels and ``False.`` was graded wrong."""

from __future__ import annotations

import json

import pytest

from abbench.dataset import INFERRED_LABELS_MAX, infer_label_set
from abbench.runner import create_experiment, run_experiment
from abbench.testing import ScriptedOpenAIServer

PROMPT = "Are the two sentences paraphrases of each other? Answer True or False."


@pytest.fixture
def mrpc(tmp_path):
    """An ABA-MRPC-shaped samples file (OpenAI evals: chat messages in, ``ideal`` the gold)."""
    rows = [
        {
            "input": [
                {"role": "system", "content": PROMPT},
                {
                    "role": "user",
                    "content": f"Sentence 1: the board met on day {i}. Sentence 2: it met on {i}.",
                },
            ],
            "ideal": "True" if i % 3 else "False",
        }
        for i in range(9)
    ]
    path = tmp_path / "aba_mrpc.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _notes(info) -> str:
    return "\n".join(info.validation.notes)


@pytest.mark.parametrize("recipe", [None, "openai-evals"])
def test_an_import_without_a_mapping_declares_the_labels_it_finds(store, mrpc, recipe):
    info = store.datasets.import_file(mrpc, recipe=recipe)
    assert info.label_set == ("False", "True")
    assert info.expected_kind.kind == "label"
    assert "declared as the label set at import" in info.expected_kind.reason
    profile = store.profiles.get(info.profile_name, info.profile_version)
    assert profile.label_set == ["False", "True"]  # saved in the mapping, so the next import keeps it
    assert "label set declared from the gold values: True, False" in _notes(info)
    # the cases are those the same mapping without a label set makes: only the declaration is new
    given = profile.evolve(label_set=None, name="plain")
    plain = store.datasets.import_file(mrpc, given, name="plain")
    assert plain.content_hash == info.content_hash
    assert plain.label_set is None


def test_a_given_mapping_is_not_changed_and_a_note_says_how_to_declare(store, mrpc):
    info = store.datasets.import_file(mrpc, {"fields": {"input": "input[-1].content", "expected": "ideal"}})
    assert info.label_set is None
    notes = _notes(info)
    assert "the mapping declares no label set" in notes
    assert 'label_set: ["False", "True"]' in notes and "expected_kind: answer" in notes
    assert "'False.' is not 'False'" in notes


def test_a_mapping_that_says_answers_gets_no_label_set_and_no_note(store, mrpc):
    spec = {"fields": {"input": "input[-1].content", "expected": "ideal"}, "expected_kind": "answer"}
    info = store.datasets.import_file(mrpc, spec)
    assert info.label_set is None and info.expected_kind.kind == "answer"
    assert "label" not in _notes(info)


@pytest.mark.parametrize(
    ("counts", "why"),
    [
        ({"yes": 3, "no": 3, None: 1}, "1 of 7 cases have no gold value"),
        ({"Yes": 3, "yes": 2, "no": 4}, "'Yes' and 'yes' read as one label spelled twice"),
        ({"3": 4, "7": 4, "12": 4}, "the values are numbers"),
        (
            {f"intent_{i}": 5 for i in range(INFERRED_LABELS_MAX + 1)},
            f"{INFERRED_LABELS_MAX + 1} labels are more than the {INFERRED_LABELS_MAX}",
        ),
    ],
)
def test_labels_are_not_declared_on_a_guess(counts, why):
    inferred = infer_label_set(counts)
    assert inferred.labels is None
    assert why in inferred.reason


@pytest.mark.parametrize(
    ("counts", "labels"),
    [
        ({"True": 5, "False": 4}, ("False", "True")),
        ({"1": 5, "0": 4}, ("0", "1")),
        ({"快": 3, "慢": 3, "中": 2}, ("中", "快", "慢")),
        ({"a sentence of its own": 1, "another one": 1, "and a third": 1}, None),  # answers
    ],
)
def test_a_small_closed_set_is_declared(counts, labels):
    assert infer_label_set(counts).labels == labels


def test_an_undeclarable_set_is_said_at_import(store, tmp_path):
    path = tmp_path / "gaps.jsonl"
    rows = [{"input": f"question {i}", "ideal": ["yes", "no", "maybe", ""][i % 4]} for i in range(12)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    info = store.datasets.import_file(path)
    assert info.label_set is None
    notes = _notes(info)
    assert "3 of 12 cases have no gold value" in notes and "no label set was declared" in notes
    assert 'label_set: ["maybe", "no", "yes"]' in notes


def test_the_agent_is_told_the_labels_and_a_trailing_full_stop_is_the_label(store, mrpc):
    """The trial end to end: imported with no mapping, run by an openai agent replying ``False.``."""
    info = store.datasets.import_file(mrpc)
    with ScriptedOpenAIServer(lambda request: "False.") as server:
        arm = {"agent": "openai", "model": "scripted", "base_url": server.base_url, "max_retries": 0}
        exp = create_experiment(
            {"name": "mrpc", "dataset": info.fingerprint, "arms": {"a": arm}}, store=store
        )
        run_experiment(exp.id, store=store)
        system = server.chat_requests[0].messages[0]["content"]
    assert '"False", "True"' in system  # the labels to choose among
    runs = store.runs.records(exp.id)
    gold = {c.case_id: c.expected for c in store.datasets.load_cases(info)}
    assert {r.output.prediction for r in runs} == {"False"}
    assert {r.state for r in runs if gold[r.case_id] == "False"} == {"pass"}
    assert {r.state for r in runs if gold[r.case_id] == "True"} == {"fail"}

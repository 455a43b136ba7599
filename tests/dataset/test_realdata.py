"""Every real public file in tests/realdata imports with the right mapping (see its SOURCES.md)."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest


def test_clinc150_splits_with_domains_from_domains_json(store, realdata, tmp_path):
    profile = {
        "name": "clinc150",
        "fields": {
            "input": "0",
            "expected": "1",
            "domain": {"lookup": "domains", "key": "1"},
            "metadata": {"object": {"split": "$split"}},
        },
        "lookups": {"domains": {"file": str(realdata / "clinc150" / "domains.json"), "default": "oos"}},
    }
    info = store.datasets.import_file(
        realdata / "clinc150" / "data_full.json", profile, name="clinc150", splits=["test", "oos_test"]
    )
    assert info.n_cases == 4500 + 1000
    assert info.read_options["splits"] == ["test", "oos_test"]
    cases = store.datasets.load_cases(info)
    assert cases[0].source_line == "split test #1" and cases[0].metadata == {"split": "test"}
    assert (
        cases[-1].source_line == "split oos_test #1000"
        and cases[-1].expected == "oos"
        and cases[-1].domain == "oos"
    )
    domains = store.datasets.value_counts(info, "domain")
    assert (
        len(domains) == 11
        and domains["oos"] == 1000
        and all(n == 450 for d, n in domains.items() if d != "oos")
    )
    assert len(store.datasets.value_counts(info, "expected")) == 151
    assert isinstance(cases[0].source_row, list) and len(cases[0].source_row) == 2


def test_clinc150_every_split(store, realdata):
    info = store.datasets.import_file(
        realdata / "clinc150" / "data_full.json",
        {"fields": {"input": "0", "expected": "1", "metadata": {"object": {"split": "$split"}}}},
    )
    assert info.n_cases == 15000 + 3000 + 4500 + 100 + 100 + 1000
    # The same utterance with two intents across splits is worth a look, not a refusal.
    assert len(store.datasets.label_conflicts(info)) >= 1


def test_banking77_test_csv(store, realdata):
    info = store.datasets.import_file(realdata / "banking77" / "test.csv", name="banking77")
    assert info.n_cases == 3080
    assert info.read_options["delimiter"] == ","
    categories = json.loads((realdata / "banking77" / "categories.json").read_text())
    assert set(store.datasets.value_counts(info, "expected")) == set(categories)
    case = store.datasets.load_cases(info)[0]
    assert (case.input, case.expected, case.source_line) == (
        "How do I locate my card?",
        "card_arrival",
        "line 2",
    )


def test_botfuel_tripplanner_intent_blocks(store, realdata):
    path = realdata / "xlsx" / "botfuel_tripplanner_intents.xlsx"
    info = store.datasets.import_file(path, recipe="intent-blocks", name="tripplanner")
    cases = store.datasets.load_cases(info)
    assert len(cases) == 19
    assert Counter(c.expected for c in cases) == {"trip": 12, "name": 1, "greetings": 6}
    first = cases[0]
    assert first.input == "What are the available planes to Madrid ?"  # NBSP became a space
    assert first.source_row == {
        "intent": "trip",
        "text": "What are the available planes to Madrid\xa0?",
    }  # raw kept
    assert first.source_line == "sample-tripplanner!row 2"
    assert all("\xa0" not in c.input and c.input == c.input.strip() for c in cases)


def test_botfuel_customerservice_qa_blocks(store, realdata):
    info = store.datasets.import_file(
        realdata / "xlsx" / "botfuel_customerservice_intents.xlsx", recipe="qa-blocks"
    )
    cases = store.datasets.load_cases(info)
    assert len(cases) == 17
    assert cases[0].input == "What is your shipping policy ?"
    assert cases[0].expected.startswith("Your purchase can be shipped worldwide")
    assert cases[0].metadata == {"question": "Do you ship worldwide\xa0?"}


@pytest.mark.parametrize(
    ("name", "rows", "labels"),
    [("aba_mrpc_true_false", 110, {"True", "False"}), ("emotional-intelligence", 100, None)],
)
def test_openai_evals_jsonl(store, realdata, name, rows, labels):
    path = realdata / "eval_formats" / "openai_evals" / f"{name}.samples.jsonl"
    info = store.datasets.import_file(path)  # the suggestion reads the chat messages
    cases = store.datasets.load_cases(info)
    assert len(cases) == rows
    sample = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
    assert cases[0].input == sample["input"][-1]["content"]
    assert cases[0].history == sample["input"][:-1]
    assert cases[0].expected == sample["ideal"]
    if labels:
        assert set(store.datasets.value_counts(info, "expected")) == labels
    with_recipe = store.datasets.import_file(path, recipe="openai-evals", name=f"{name}-recipe")
    assert with_recipe.content_hash == info.content_hash  # same cases either way


def test_promptfoo_csvs(store, realdata):
    folder = realdata / "eval_formats" / "promptfoo"
    meta = store.datasets.load_cases(store.datasets.import_file(folder / "csv-metadata_tests.csv"))
    assert [c.input for c in meta] == ["machine learning", "quantum physics", "climate change"]
    assert meta[1].expected == "contains: quantum"
    assert meta[1].metadata["assertions"][1].startswith("llm-rubric:")
    assert meta[1].metadata["tags"] == ["physics", "advanced,theory", "quantum"]  # escaped comma kept
    assert meta[1].metadata["category"] == "science"
    grading = store.datasets.load_cases(store.datasets.import_file(folder / "eval-self-grading_tests.csv"))
    assert len(grading) == 10
    assert grading[0].input == "Can you help me find a specific product on your website?"
    assert grading[0].context == {"name": "Bob", "question": grading[0].input}
    assert grading[0].expected == "grade:Do not mention that you are an AI or chat assistant"


def test_inspect_ai_jsonl(store, realdata):
    path = realdata / "eval_formats" / "inspect_ai" / "wikipedia.jsonl"
    for info in (
        store.datasets.import_file(path),
        store.datasets.import_file(path, recipe="inspect", name="wikipedia-inspect"),
    ):
        cases = store.datasets.load_cases(info)
        assert len(cases) == 3
        assert cases[0].input == "What's the difference between tennis and pickleball?"
        assert cases[0].expected.startswith("While they are similar sports")


def _schema_evals(realdata) -> dict:
    """The evals.json example of skill-creator's references/schemas.md, as written there."""
    text = (realdata / "skill_creator_ref" / "schemas.md").read_text(encoding="utf-8")
    section = text.split("## evals.json", 1)[1]
    return json.loads(re.search(r"```json\n(.*?)\n```", section, re.S).group(1))


def test_skill_creator_evals_json(store, realdata, tmp_path):
    evals = _schema_evals(realdata)
    evals["evals"].append(
        {"id": 2, "prompt": "把这份PDF的表格提取成CSV", "expected_output": "一个CSV文件", "files": []}
    )
    path = tmp_path / "evals.json"
    path.write_text(json.dumps(evals, ensure_ascii=False), encoding="utf-8")
    info = store.datasets.import_file(path)  # recognised as skill-creator's layout
    assert info.read_options["recipe"] == "skill-creator"
    first, second = store.datasets.load_cases(info)
    assert (first.case_id, first.input, first.expected) == (
        "1",
        "User's example prompt",
        "Description of expected result",
    )
    assert first.metadata == {
        "skill_name": "example-skill",
        "files": ["evals/files/sample1.pdf"],
        "expectations": ["The output includes X", "The skill used script Y"],
    }
    assert first.source_line == "split evals #1" and first.source_row == evals["evals"][0]
    assert (second.case_id, second.input) == ("2", "把这份PDF的表格提取成CSV")


def test_skill_creator_trigger_eval_set(store, tmp_path):
    rows = [
        {"query": "make me a pdf", "should_trigger": True},
        {"query": "what's the weather", "should_trigger": False},
    ]
    path = tmp_path / "triggers.json"
    path.write_text(json.dumps(rows))
    info = store.datasets.import_file(path)
    assert info.label_set == ("true", "false")
    assert [c.expected for c in store.datasets.load_cases(info)] == ["true", "false"]


def test_askubuntu_rows_without_the_optional_keys_import_through_the_suggested_mapping(store, realdata):
    """AskUbuntu's 162 questions: the suggestion gathers the other keys as metadata, and the 3 rows that
    lack author, url and answer are cases whose metadata lacks them — not invalid rows (a new user's
    first import of this public file was refused for them)."""
    from abbench.dataset import suggest_mapping

    path = realdata / "nlu_corpora" / "AskUbuntuCorpus.json"
    rows = json.loads(path.read_text(encoding="utf-8"))["sentences"]
    suggestion = suggest_mapping(path, name="askubuntu")
    assert suggestion.profile.fields["input"] == "text" and suggestion.profile.fields["expected"] == "intent"
    info = store.datasets.import_file(path, suggestion.profile, name="askubuntu")
    assert info.n_cases == len(rows) == 162
    cases = store.datasets.load_cases(info)
    assert Counter(c.expected for c in cases) == Counter(r["intent"] for r in rows)
    assert Counter(c.expected for c in cases)["None"] == 8  # a label named None, not a missing value
    lacking = [i for i, r in enumerate(rows) if "author" not in r]
    assert len(lacking) == 3
    for i, case in enumerate(cases):
        assert case.input == rows[i]["text"]
        assert ("author" in case.metadata) == ("author" in rows[i]), case.case_id
        assert case.metadata.get("training") == rows[i]["training"]


def test_a_field_whose_key_a_row_lacks_is_still_a_problem_outside_metadata(store, realdata):
    """Leaving absent keys out holds inside an object of parts only: the input must be there."""
    from abbench.errors import ImportFailed

    path = realdata / "nlu_corpora" / "AskUbuntuCorpus.json"
    profile = {"name": "ask-author", "fields": {"input": "author", "expected": "intent"}}
    with pytest.raises(ImportFailed, match=r"#14, 38, 42 \(3×\).*no key 'author'"):
        store.datasets.import_file(path, profile, name="ask-author")

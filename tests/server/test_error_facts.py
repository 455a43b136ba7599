"""The server words an error's hint as a request to it and carries its facts as problem members."""

from __future__ import annotations

import pytest

from abbench.client import ServerError
from tests.conftest import DEMO

MAPPING = (DEMO / "mapping-csv.yaml").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def dataset(alice):
    return alice.import_dataset(DEMO / "cases.csv", mapping=MAPPING, name="demo-facts")


def test_a_refused_comparison_is_told_as_a_request_and_carries_its_facts(alice, dataset, tmp_path):
    lines = (DEMO / "cases.csv").read_text(encoding="utf-8-sig").splitlines()
    (tmp_path / "small.csv").write_text("\n".join(lines[:11]) + "\n", encoding="utf-8")
    other = alice.import_dataset(tmp_path / "small.csv", mapping=MAPPING, name="demo-facts-small")
    arms = {"a": {"agent": "builtin"}, "b": {"agent": "builtin"}}
    big = alice.create_experiment({"name": "facts-big", "dataset": dataset.fingerprint, "arms": arms})
    small = alice.create_experiment({"name": "facts-small", "dataset": other.fingerprint, "arms": arms})
    with pytest.raises(ServerError) as refused:
        alice.compare_experiments(big.id, small.id)
    problem = refused.value.problem
    assert refused.value.status == 409 and problem["title"] == "comparison refused"
    asked = f"POST /api/experiments (a definition with dataset: {dataset.fingerprint})"
    assert problem["detail"].endswith(f"run one again on the other's dataset: {asked}")
    assert "abbench.clone_experiment" not in problem["detail"] and "abbench create" not in problem["detail"]
    assert (problem["kind"], problem["name"]) == ("dataset", other.fingerprint)
    assert problem["hint"]["http"] == asked
    assert problem["hint"]["python"].startswith("abbench.clone_experiment('facts-small', name='NEW'")
    assert problem["fingerprints"] == [dataset.fingerprint, other.fingerprint]
    # the client words it back for its caller: the call in Python, the command in `abbench --server`
    assert str(refused.value).endswith(f"dataset: {problem['hint']['python']}")
    assert refused.value.worded("cli").endswith(f"dataset: {problem['hint']['cli']}")


def test_an_unknown_metric_carries_the_valid_metrics(alice, dataset):
    arms = {"a": {"agent": "builtin"}, "b": {"agent": "builtin"}}
    exp = alice.create_experiment({"name": "facts-gate", "dataset": dataset.fingerprint, "arms": arms})
    with pytest.raises(ServerError) as refused:
        alice.evaluate_gate(exp.id, rules={"rules": ["acuracy >= 0.5"]}, arms=["a", "b"])
    problem = refused.value.problem
    assert refused.value.status == 422
    assert problem["detail"].startswith(
        "rules given, rule 1: metric: unknown metric 'acuracy' (did you mean accuracy"
    )
    assert (problem["kind"], problem["name"]) == ("metric", "acuracy")
    assert "accuracy" in problem["choices"] and "hint" not in problem
    assert (refused.value.kind, refused.value.name) == ("metric", "acuracy")  # the client keeps the facts
    assert refused.value.choices == tuple(problem["choices"])


def test_a_missing_experiment_says_only_what_is_missing(alice):
    with pytest.raises(ServerError) as refused:
        alice.load_experiment("#424242")
    assert refused.value.status == 404
    # the caller's own reference and what to do (list yours), never another owner's names
    assert set(refused.value.problem) <= {
        "type",
        "title",
        "status",
        "detail",
        "instance",
        "kind",
        "name",
        "hint",
    }
    assert "choices" not in refused.value.problem

"""Names in a definition that the dataset lacks — case-subset labels and domains, an arm's labels — are
refused when the experiment is created, each with the closest name the dataset has."""

from __future__ import annotations

import json

import pytest

from abbench.errors import ExperimentError
from abbench.runner import create_experiment
from tests.conftest import demo_source


@pytest.fixture
def banking(store, realdata):
    """banking77's test split with its 77 categories declared as the label set."""
    labels = json.loads((realdata / "banking77" / "categories.json").read_text(encoding="utf-8"))
    profile = {"name": "banking", "fields": {"input": "text", "expected": "category"}, "label_set": labels}
    store.datasets.import_file(realdata / "banking77" / "test.csv", profile, name="banking77")
    return labels


def _definition(**over):
    return {"name": "subset", "dataset": "banking77", "arms": {"no-skill": {"agent": "builtin"}}, **over}


def test_a_misspelt_case_label_offers_the_closest(store, banking):
    with pytest.raises(ExperimentError) as err:
        create_experiment(
            _definition(cases={"labels": ["card_arival", "pin_blocked", "exchange_rates"]}), store=store
        )
    message = str(err.value)
    assert (
        "'card_arival' (did you mean 'card_arrival'?), 'exchange_rates' (did you mean 'exchange_rate'?) are not"
        in message
    )
    assert message.count("card_arrival") == 2  # the suggestion, and the set printed once (clipped)
    assert "… (57 more)" in message
    assert store.experiments.all() == []


def test_a_misspelt_domain_offers_the_closest(store):
    definition = {
        "name": "nav",
        "dataset": demo_source(),
        "cases": {"domains": ["地图导行"]},
        "arms": {"control": {"agent": "builtin"}},
    }
    with pytest.raises(
        ExperimentError, match=r"cases.domains: '地图导行' \(did you mean '地图导航'\?\) is not a domain"
    ):
        create_experiment(definition, store=store)


def test_an_arms_labels_outside_the_label_set_are_refused(store, banking):
    arms = {"no-skill": {"agent": "builtin", "labels": ["card_arrival", "lost_or_stolen_crd", "xyzzy"]}}
    with pytest.raises(ExperimentError) as err:
        create_experiment(_definition(arms=arms, cases={"limit": 5}), store=store)
    message = str(err.value)
    assert message.startswith(
        "arm 'no-skill': labels: 'lost_or_stolen_crd' (did you mean 'lost_or_stolen_card'?), 'xyzzy' are "
        "not in the label set of dataset banking77@"
    )
    assert store.experiments.all() == []
    # spelled another way that the grader reads as the same label: accepted
    fine = {"no-skill": {"agent": "builtin", "labels": ["Card_Arrival", " pin_blocked"]}}
    exp = create_experiment(_definition(arms=fine, cases={"limit": 5}), store=store)
    assert exp.arms[0].params["labels"] == ["Card_Arrival", " pin_blocked"]


def test_a_dataset_without_a_label_set_takes_any_labels(store, realdata):
    store.datasets.import_file(
        realdata / "banking77" / "test.csv",
        {"name": "plain", "fields": {"input": "text", "expected": "category"}},
        name="plain",
    )
    arms = {"no-skill": {"agent": "builtin", "labels": ["card_arrival", "something_else"]}}
    exp = create_experiment(
        {"name": "any", "dataset": "plain", "cases": {"limit": 3}, "arms": arms}, store=store
    )
    assert exp.arms[0].params["labels"] == ["card_arrival", "something_else"]

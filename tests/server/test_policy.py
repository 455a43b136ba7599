"""What a caller may name: every field that reaches the server is classified, and endpoint patterns
match exactly what they say."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from abbench.agents._builtin import _PARAMS
from abbench.agents._openai import _SETTINGS
from abbench.dataset import Conversation, MappingProfile
from abbench.dataset._profile import Lookup, ReadSpec, Shape, Source
from abbench.gate import GateRule
from abbench.gate._rules import GATE_KEYS
from abbench.graders import grader_names, make_grader
from abbench.graders._base import _REGISTRY, _options_of
from abbench.server import EndpointRule
from abbench.server._policy import AGENT_SETTINGS, FIELDS, GRADER_OPTIONS
from abbench.server._routes_analysis import CompareIn, GateIn, ReviewIn, TryIn
from abbench.store import (
    ArmSpec,
    BudgetSpec,
    CaseSelection,
    DaskSpec,
    DatasetSource,
    DecisionSpec,
    ExperimentSpec,
    StoppingSpec,
)

MODELS = [
    ExperimentSpec,
    DatasetSource,
    ArmSpec,
    CaseSelection,
    BudgetSpec,
    DecisionSpec,
    StoppingSpec,
    DaskSpec,
    MappingProfile,
    Conversation,
    Source,
    Lookup,
    ReadSpec,
    Shape,
    GateIn,
    CompareIn,
    ReviewIn,
    TryIn,
]


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_every_field_of_every_model_a_request_reaches_is_classified(model):
    assert set(model.model_fields) == set(FIELDS[model.__name__]), (
        f"classify every field of {model.__name__} in abbench.server._policy.FIELDS: can it name a file, "
        "a URL or an environment variable of the server's?"
    )


def test_every_key_of_a_gate_and_of_its_rules_is_classified():
    assert set(GATE_KEYS) == set(FIELDS["Gate"])
    internal = {"where", "ref"}  # set by the parser, never read from what a caller wrote
    assert {f.name for f in dataclasses.fields(GateRule)} - internal == set(FIELDS["GateRule"])


def test_every_option_of_every_grader_is_classified():
    make_grader("exact")
    make_grader("recorded")  # loads the rule graders' module (the registry fills lazily)
    make_grader({"type": "llm_judge", "model": "m", "base_url": "http://127.0.0.1:9/v1"})
    make_grader({"type": "pairwise_judge", "model": "m", "base_url": "http://127.0.0.1:9/v1"})
    make_grader({"type": "task_completion", "model": "m", "base_url": "http://127.0.0.1:9/v1"})
    make_grader("skill_following_stand_in")
    assert set(grader_names()) <= set(_REGISTRY)
    for name in grader_names():
        if not _REGISTRY[name].__module__.startswith("abbench."):
            continue  # registered by a test or a plugin: refused over HTTP (see test_reach)
        options = _options_of(_REGISTRY[name])
        assert options is not None, name
        assert set(options) == set(GRADER_OPTIONS[name]), f"classify every option of grader {name}"


def test_every_setting_of_the_agents_that_run_no_code_is_classified():
    assert set(_SETTINGS) == set(AGENT_SETTINGS["openai"])
    assert set(_PARAMS) == set(AGENT_SETTINGS["builtin"])
    from abbench.agents import ExternalAgent

    # external keeps whatever it is given as a description, and reads none of it
    assert [p.kind for p in inspect.signature(ExternalAgent).parameters.values()] == [
        inspect.Parameter.VAR_KEYWORD
    ]
    assert AGENT_SETTINGS["external"] == {}


@pytest.mark.parametrize(
    ("rule", "url", "allowed"),
    [
        ("https://api.openai.com/v1", "https://api.openai.com/v1", True),
        ("https://api.openai.com/v1", "https://API.openai.com:443/v1/", True),
        ("https://api.openai.com/v1", "https://api.openai.com/v1/deployments/x", True),
        ("https://api.openai.com/v1", "https://api.openai.com/v2", False),
        ("https://api.openai.com/v1", "https://api.openai.com/v10", False),
        ("https://api.openai.com/v1", "http://api.openai.com/v1", False),
        ("https://api.openai.com/v1", "https://api.openai.com:8443/v1", False),
        ("https://api.openai.com/v1", "https://api.openai.com.evil.test/v1", False),
        ("https://api.openai.com/v1", "https://evil.test#@api.openai.com/v1", False),
        ("https://api.openai.com/v1", "https://user:pw@api.openai.com/v1", False),
        ("https://api.openai.com/v1", "https://api.openai.com/v1/../../evil", False),
        ("https://api.openai.com/v1", "https://api.openai.com/v1/%2e%2e/evil", False),
        ("https://api.openai.com/v1", "https://api.openai.com/v1?x=1", False),
        ("http://*.llm.internal:*", "http://a.llm.internal:8000/v1", True),
        ("http://*.llm.internal:*", "http://a.b.llm.internal/v1", True),
        ("http://*.llm.internal:*", "http://llm.internal:8000/v1", False),
        ("http://*.llm.internal:*", "http://evilllm.internal:8000/v1", False),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8000/v1", True),
        ("http://127.0.0.1:8000", "http://127.0.0.1:8001/v1", False),
        ("http://[::1]:8000", "http://[::1]:8000/v1", True),
        ("https://*", "https://anything.test/v1", True),
        ("https://*", "http://anything.test/v1", False),
    ],
)
def test_an_endpoint_pattern_allows_what_it_says_and_nothing_else(rule, url, allowed):
    assert EndpointRule(rule).matches(url) is allowed


@pytest.mark.parametrize(
    "text",
    ["ftp://x", "https://a.*.test", "https://x:port", "https://u:p@x", "https://x/?q=1", "api.openai.com"],
)
def test_a_pattern_that_is_not_one_is_refused_with_how_to_write_it(text):
    with pytest.raises(ValueError, match="endpoint pattern"):
        EndpointRule(text)


def test_name_equals_url_is_a_key_rule_and_a_bare_url_an_endpoint_without_key():
    assert EndpointRule.parse("OPENAI_API_KEY=https://api.openai.com/v1") == EndpointRule(
        "https://api.openai.com/v1", "OPENAI_API_KEY"
    )
    assert EndpointRule.parse("http://127.0.0.1:8000").key_env is None
    with pytest.raises(ValueError, match="environment variable"):
        EndpointRule("https://x.test", "NOT-A-NAME")

"""CompareOptions: one set of comparison options, given as keyword arguments or as one object."""

from __future__ import annotations

import pytest

from abbench.compare import CompareOptions, compare_all, compare_arms
from abbench.errors import UsageError
from tests.results import cases_of, make_experiment, one_round


def test_keyword_arguments_override_the_options_object():
    options = CompareOptions(alpha=0.01, details=False)
    assert CompareOptions.of(options, alpha=0.1) == CompareOptions(alpha=0.1, details=False)
    assert CompareOptions.of() == CompareOptions()


def test_an_unknown_option_is_refused_with_the_list_of_options(store):
    exp = make_experiment(store, "e", cases_of(4), {"a": one_round([True] * 4), "b": one_round([False] * 4)})
    with pytest.raises(UsageError, match=r"unknown comparison option\(s\) 'alpah'.*alpha"):
        compare_arms(exp, store=store, alpah=0.1)
    with pytest.raises(UsageError, match="confidence must be a number strictly between 0 and 1"):
        compare_all(exp, store=store, options=CompareOptions(confidence=1.5))


def test_an_options_object_gives_the_same_comparison_as_keywords(store):
    exp = make_experiment(
        store, "e", cases_of(12), {"a": one_round([True, False] * 6), "b": one_round([True] * 12)}
    )
    by_keywords = compare_arms(exp, store=store, alpha=0.01, margin=0.05, details=False)
    by_object = compare_arms(exp, store=store, options=CompareOptions(alpha=0.01, margin=0.05, details=False))
    assert by_object.as_dict() == by_keywords.as_dict()
    assert by_object.alpha == 0.01 and by_object.verdict.margin == 0.05

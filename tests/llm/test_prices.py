"""Price tables: lookup, cost, user files, per-arm overrides, and the warning for unknown models."""

from __future__ import annotations

import logging
import re

import pytest

from abbench.errors import UsageError
from abbench.llm import BUILTIN_PRICES, Price, PriceTable, _prices as prices_module, load_prices, price_table
from abbench.types import Usage
from tests.conftest import refused_file


@pytest.fixture(autouse=True)
def no_user_prices(tmp_path, monkeypatch):
    """Keep the machine's own prices file out of these tests."""
    monkeypatch.delenv("ABBENCH_PRICES", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setattr(prices_module, "_warned", set())


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", "gpt-4o"),
        ("GPT-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("openai/gpt-4.1-mini", "gpt-4.1-mini"),
        ("gpt-4oo", None),
        ("llama3.1:8b", None),
        ("", None),
    ],
)
def test_lookup(model, expected):
    table = PriceTable.default()
    assert table.lookup(model) == (BUILTIN_PRICES[expected] if expected else None)


def test_cost_is_per_million_tokens():
    assert Price(2.5, 10.0).cost(Usage(1_000_000, 100_000)) == pytest.approx(3.5)
    table = PriceTable({"m": Price(1, 2)})
    assert table.cost("m", Usage(500, 250)) == pytest.approx((500 + 500) / 1e6)


def test_an_unknown_model_costs_none_with_one_warning(caplog):
    caplog.set_level(logging.WARNING)
    table = PriceTable({})
    assert table.cost("my-local-model", Usage(10, 10)) is None
    assert table.cost("my-local-model", Usage(10, 10)) is None
    warnings = [r for r in caplog.records if "my-local-model" in r.getMessage()]
    assert len(warnings) == 1 and "prices" in warnings[0].getMessage()


def test_a_user_file_overrides_the_builtin_table(tmp_path, monkeypatch):
    path = tmp_path / "prices.yaml"
    path.write_text("gpt-4o: {input: 1, output: 1}\nqwen2.5:7b: {input: 0, output: 0}\n", encoding="utf-8")
    monkeypatch.setenv("ABBENCH_PRICES", str(path))
    table = PriceTable.default()
    assert table.lookup("gpt-4o") == Price(1, 1)
    assert table.cost("qwen2.5:7b", Usage(100, 100)) == 0.0
    assert table.lookup("gpt-4o-mini") == BUILTIN_PRICES["gpt-4o-mini"]


def test_the_xdg_prices_file_is_found(tmp_path):
    folder = tmp_path / "config" / "abbench"
    folder.mkdir(parents=True)
    (folder / "prices.yaml").write_text("house-model: {input: 3, output: 4}\n", encoding="utf-8")
    assert PriceTable.default().lookup("house-model") == Price(3, 4)


def test_arm_overrides(tmp_path):
    assert price_table({"input": 5, "output": 6}, model="mine").lookup("mine") == Price(5, 6)
    assert price_table({"a": {"input": 1, "output": 2}}).lookup("a") == Price(1, 2)
    json_file = tmp_path / "p.json"
    json_file.write_text('{"b": {"input": 0.5, "output": 0.25}}', encoding="utf-8")
    assert price_table(str(json_file)).lookup("b") == Price(0.5, 0.25)
    table = PriceTable({"x": Price(1, 1)})
    assert price_table(table) is table


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("m: {input: -1, output: 2}", "price of 'm' is invalid.*input"),
        ("m: {input: 1}", "output"),
        ("m: {input: 1, output: 2, cached: 3}", "cached"),
        ("- just a list", "must be a mapping"),
        ("m: {input: [", "does not parse"),
    ],
)
def test_invalid_prices_files_say_what_and_where(tmp_path, text, match):
    message = refused_file(load_prices, tmp_path / "bad.yaml", text, UsageError)
    assert re.search(match, message) and "bad.yaml" in message


def test_missing_files_are_usage_errors(tmp_path, monkeypatch):
    with pytest.raises(UsageError, match="cannot read prices file"):
        load_prices(tmp_path / "missing.yaml")
    monkeypatch.setenv("ABBENCH_PRICES", str(tmp_path / "gone.yaml"))
    with pytest.raises(UsageError, match="ABBENCH_PRICES"):
        PriceTable.default()


def test_a_single_price_needs_a_model():
    with pytest.raises(UsageError, match="needs the arm's model"):
        price_table({"input": 1, "output": 2})

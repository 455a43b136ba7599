"""Money per token: a built-in price table per model, a user's prices file, and per-arm overrides.

Prices are US dollars per million tokens, input and output. The built-in table is a convenience
snapshot (see `BUILTIN_PRICES_AS_OF`); providers change prices, so anything that matters should be
set explicitly, per arm (``prices:``) or in a prices file:

    # ~/.config/abbench/prices.yaml, or the file named by $ABBENCH_PRICES
    gpt-4o: {input: 2.50, output: 10.00}
    qwen2.5:7b: {input: 0, output: 0}      # a local model: free, and no warning

A model with no price gets cost None from `PriceTable.cost` (adapters record 0.0) and one warning
per model and process, naming the model and where to add its price.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from abbench._utf8 import read_utf8
from abbench._yaml import load_yaml

if TYPE_CHECKING:
    from pydantic import ValidationError

from abbench.errors import UsageError
from abbench.types import Usage

log = logging.getLogger(__name__)

PRICES_ENV = "ABBENCH_PRICES"
"""Environment variable naming a prices file (YAML or JSON) that overrides the built-in table."""

BUILTIN_PRICES_AS_OF = "2025-08"
"""When the built-in prices were copied from the providers' public price pages."""


@dataclass(frozen=True, slots=True)
class Price:
    """What one model costs, in USD per million tokens."""

    input: float
    output: float

    def cost(self, usage: Usage) -> float:
        """The cost of `usage` at this price."""
        return (usage.input_tokens * self.input + usage.output_tokens * self.output) / 1_000_000


BUILTIN_PRICES: Mapping[str, Price] = {
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-5": Price(1.25, 10.00),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "o3": Price(2.00, 8.00),
    "o3-mini": Price(1.10, 4.40),
    "o4-mini": Price(1.10, 4.40),
    "deepseek-chat": Price(0.27, 1.10),
    "deepseek-reasoner": Price(0.55, 2.19),
}
"""Prices (USD per million input / output tokens) as of `BUILTIN_PRICES_AS_OF`."""


@functools.cache
def _entry_model() -> Any:
    # pydantic is imported only when a prices file or mapping is read: it costs ~0.1 s at start-up
    from pydantic import BaseModel, ConfigDict, Field

    class PriceEntry(BaseModel):
        model_config = ConfigDict(extra="forbid")
        input: float = Field(ge=0, description="USD per million input tokens")
        output: float = Field(ge=0, description="USD per million output tokens")

    return PriceEntry


def _validation_error() -> type[ValidationError]:
    from pydantic import ValidationError

    return ValidationError


_warned: set[str] = set()
_warned_lock = threading.Lock()


def _boundary_prefix(name: str, key: str) -> bool:
    # "gpt-4o-2024-08-06" is priced as "gpt-4o", but "gpt-4oo" is not
    return name.startswith(key) and (len(name) == len(key) or name[len(key)] in "-:@.")


class PriceTable:
    """Prices per model, looked up forgivingly.

    A model is found by its exact name, then case-insensitively, then without a provider prefix
    (``openai/gpt-4o``), then by the longest known name it starts with at a ``-``/``:``/``@``/``.``
    boundary (so dated snapshots such as ``gpt-4o-2024-08-06`` use ``gpt-4o``).

    Args:
        prices: Model name -> `Price`.
    """

    def __init__(self, prices: Mapping[str, Price]):
        self._prices = {str(k).strip().lower(): v for k, v in prices.items()}

    @classmethod
    def default(cls) -> PriceTable:
        """The built-in table overridden by the user's prices file (``$ABBENCH_PRICES``, else
        ``$XDG_CONFIG_HOME/abbench/prices.yaml``, else ``~/.config/abbench/prices.yaml``), if present."""
        prices = dict(BUILTIN_PRICES)
        path = user_prices_path()
        if path is not None:
            prices.update(load_prices(path))
        return cls(prices)

    def merged(self, overrides: Mapping[str, Price]) -> PriceTable:
        """A new table where `overrides` win."""
        return PriceTable({**self._prices, **overrides})

    def __contains__(self, model: object) -> bool:
        return isinstance(model, str) and self.lookup(model) is not None

    def __len__(self) -> int:
        return len(self._prices)

    def lookup(self, model: str | None) -> Price | None:
        """The price of `model`, or None when the table does not know it."""
        if not model:
            return None
        name = model.strip().lower()
        for candidate in (name, name.rsplit("/", 1)[-1]):
            if candidate in self._prices:
                return self._prices[candidate]
        for candidate in (name, name.rsplit("/", 1)[-1]):
            keys = [k for k in self._prices if _boundary_prefix(candidate, k)]
            if keys:
                return self._prices[max(keys, key=len)]
        return None

    def cost(self, model: str | None, usage: Usage) -> float | None:
        """What `usage` cost on `model`, or None (with one warning per model) when it has no price."""
        price = self.lookup(model)
        if price is not None:
            return price.cost(usage)
        with _warned_lock:
            first = model not in _warned
            _warned.add(model or "")
        if first:
            log.warning(
                "no price for model %r: its cost is recorded as unknown (not zero). Set `prices: {input: ..., "
                "output: ...}` (USD per million tokens) on the arm, or add it to %s",
                model,
                os.environ.get(PRICES_ENV) or "~/.config/abbench/prices.yaml",
            )
        return None


def user_prices_path() -> Path | None:
    """The user's prices file, when one exists (see `PriceTable.default`).

    Raises:
        UsageError: ``$ABBENCH_PRICES`` names a file that does not exist.
    """
    named = os.environ.get(PRICES_ENV)
    if named:
        path = Path(named).expanduser()
        if not path.is_file():
            raise UsageError(f"${PRICES_ENV} names {str(path)!r}, which is not a file; fix or unset it")
        return path
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    path = base / "abbench" / "prices.yaml"
    return path if path.is_file() else None


def _entries(data: Any, where: str) -> dict[str, Price]:
    if not isinstance(data, Mapping):
        raise UsageError(
            f"{where}: prices must be a mapping of model name -> {{input: ..., output: ...}} "
            f"(USD per million tokens), not {type(data).__name__}"
        )
    out: dict[str, Price] = {}
    for model, entry in data.items():
        if isinstance(entry, Price):
            out[str(model)] = entry
            continue
        try:
            parsed = _entry_model().model_validate(entry)
        except _validation_error() as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'value'}: {e['msg']}" for e in exc.errors()
            )
            raise UsageError(
                f"{where}: price of {model!r} is invalid ({problems}); write it as "
                f"{{input: 2.5, output: 10}} in USD per million tokens"
            ) from None
        out[str(model)] = Price(parsed.input, parsed.output)
    return out


def load_prices(path: str | os.PathLike[str]) -> dict[str, Price]:
    """Read a prices file: YAML or JSON, ``model: {input: USD/M, output: USD/M}``.

    Raises:
        UsageError: the file is missing, does not parse, or an entry is invalid (the message names
            the file and the model).
    """
    path = Path(path).expanduser()
    try:
        text = read_utf8(path)
    except OSError as exc:
        raise UsageError(f"cannot read prices file {str(path)!r}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text) if path.suffix.lower() == ".json" else load_yaml(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise UsageError(f"prices file {str(path)!r} does not parse: {exc}") from None
    return _entries(data or {}, str(path))


def price_table(prices: Any = None, *, model: str | None = None) -> PriceTable:
    """The price table an arm uses: the default table with the arm's `prices` on top.

    Args:
        prices: None; a `PriceTable`; a path to a prices file; a mapping of model -> ``{input,
            output}``; or a single ``{input, output}`` mapping, which prices the arm's own `model`.
        model: The arm's model (needed for the single-price form).

    Raises:
        UsageError: the prices cannot be read or are invalid.
    """
    if isinstance(prices, PriceTable):
        return prices
    table = PriceTable.default()
    if prices is None:
        return table
    if isinstance(prices, str | os.PathLike):
        return table.merged(load_prices(prices))
    if isinstance(prices, Mapping) and set(prices) <= {"input", "output"} and prices:
        if not model:
            raise UsageError(
                "a single price {input, output} needs the arm's model; name the model, or key the price by it"
            )
        return table.merged(_entries({model: prices}, "the arm's prices"))
    return table.merged(_entries(prices, "the arm's prices"))

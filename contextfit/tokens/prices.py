"""What a request costs: a model's published prices and the arithmetic on them.

Prices live in the model catalog (``contextfit/data/models.toml``), one
``[models."<id>".prices]`` table per model, in US dollars per million tokens,
with the page they come from and the date they were read::

    [models."gpt-4o".prices]
    input = 2.50           # uncached prompt tokens
    cached_input = 1.25    # prompt tokens read from the provider's prompt cache
    output = 10.00         # generated tokens
    source = "https://openai.com/api/pricing/"
    date = "2026-12-03"

``cache_write`` is the price of prompt tokens written to the cache where the
provider charges for it (Anthropic: 1.25x input for the 5-minute cache);
absent, writing costs the plain input price (OpenAI and Gemini's implicit
caching). A user's catalog file overrides any field, for example a negotiated
rate: ``[models."gpt-4o".prices]`` with ``input = 2.0`` keeps the other fields.

>>> prices = Prices(input=3.0, output=15.0, cached_input=0.30, cache_write=3.75)
>>> cost = prices.cost(input_tokens=10_000, cached_input_tokens=8_000, output_tokens=500)
>>> round(cost.total, 6), round(cost.input, 6), round(cost.cached_input, 6)
(0.0159, 0.006, 0.0024)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields
from typing import Any

__all__ = ["PRICE_FIELDS", "Prices", "RequestCost", "price_problem"]

#: Fields of a ``prices`` table; the four numbers are US dollars per million tokens.
PRICE_FIELDS = ("input", "output", "cached_input", "cache_write", "source", "date")
_PER_TOKEN = 1_000_000
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


@dataclass(frozen=True, slots=True)
class RequestCost:
    """The dollars of one request, by kind of token.

    ``cached_input`` and ``cache_write`` tokens are part of the prompt but are
    billed at their own price; ``input`` is the rest of the prompt.
    """

    input: float
    cached_input: float
    cache_write: float
    output: float

    @property
    def total(self) -> float:
        return self.input + self.cached_input + self.cache_write + self.output

    def to_dict(self) -> dict[str, float]:
        return {**asdict(self), "total": self.total}


@dataclass(frozen=True, slots=True)
class Prices:
    """A model's prices in US dollars per million tokens, with their source and date."""

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None
    source: str = ""
    date: str = ""

    def __post_init__(self) -> None:
        problem = price_problem({f.name: getattr(self, f.name) for f in fields(self)})
        if problem:
            raise ValueError(f"Prices: {problem}")

    def cost(self, input_tokens: int, output_tokens: int = 0, cached_input_tokens: int = 0,
             cache_write_tokens: int = 0) -> RequestCost:
        """The cost of a request whose prompt has ``input_tokens`` tokens in all.

        ``cached_input_tokens`` and ``cache_write_tokens`` are the parts of
        that prompt read from and written to the prompt cache.

        >>> Prices(input=2.5, output=10.0).cost(1_000_000).total
        2.5
        """
        for name, value in (("input_tokens", input_tokens), ("output_tokens", output_tokens),
                            ("cached_input_tokens", cached_input_tokens), ("cache_write_tokens", cache_write_tokens)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"{name} must be a whole number of tokens (0 or more); got {value!r}")
        if cached_input_tokens + cache_write_tokens > input_tokens:
            raise ValueError(
                f"cached ({cached_input_tokens}) and cache-write ({cache_write_tokens}) tokens are part of the "
                f"prompt, so together they cannot exceed input_tokens ({input_tokens})"
            )
        cached_price = self.input if self.cached_input is None else self.cached_input
        write_price = self.input if self.cache_write is None else self.cache_write
        plain = input_tokens - cached_input_tokens - cache_write_tokens
        return RequestCost(
            input=plain * self.input / _PER_TOKEN,
            cached_input=cached_input_tokens * cached_price / _PER_TOKEN,
            cache_write=cache_write_tokens * write_price / _PER_TOKEN,
            output=output_tokens * self.output / _PER_TOKEN,
        )

    def to_dict(self) -> dict[str, Any]:
        return {name: value for name, value in asdict(self).items() if value not in (None, "")}


def price_problem(values: Mapping[str, Any]) -> str | None:
    """What is wrong with a ``prices`` table, or None (shared by code and catalog files).

    >>> price_problem({"input": 1.0})
    'needs output (US dollars per million tokens)'
    >>> price_problem({"input": -1, "output": 1})
    'input must be a price of 0 or more (US dollars per million tokens); got -1'
    """
    unknown = [name for name in values if name not in PRICE_FIELDS]
    if unknown:
        return f"has unknown field(s) {', '.join(map(repr, unknown))}; use {', '.join(PRICE_FIELDS)}"
    for name in ("input", "output"):
        if values.get(name) is None:
            return f"needs {name} (US dollars per million tokens)"
    for name in ("input", "output", "cached_input", "cache_write"):
        value = values.get(name)
        if value is None and name in ("cached_input", "cache_write"):
            continue
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
        if not ok:
            return f"{name} must be a price of 0 or more (US dollars per million tokens); got {value!r}"
    for name in ("source", "date"):
        if not isinstance(values.get(name, ""), str):
            return f"{name} must be a string; got {values[name]!r}"
    date = values.get("date", "")
    if date and not _DATE.fullmatch(date):
        return f"date must be written YYYY-MM-DD; got {date!r}"
    return None

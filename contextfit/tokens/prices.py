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
provider charges for it (Anthropic: 1.25x input for the 5-minute cache;
OpenAI from GPT-5.6 on: 1.25x input for its 30-minute cache); absent, writing
costs the plain input price (OpenAI's earlier models, DeepSeek and Gemini's
implicit caching). ``cache_write_1h`` is Anthropic's 1-hour cache write (2x
input), listed for reference: a replay bills the 5-minute ``cache_write``. A user's catalog file overrides any field, for example a negotiated
rate: ``[models."gpt-4o".prices]`` with ``input = 2.0`` keeps the other fields.

Some providers bill a long prompt at higher prices for the whole request
(Gemini 2.5 Pro over 200,000 prompt tokens, Claude Haiku 5.5 over 100,000).
``long_context_threshold`` is the largest prompt billed at the base prices;
``long_input`` and ``long_output`` (and ``long_cached_input`` /
``long_cache_write`` where the base tier has those) are the prices above it::

    [models."gemini-2.5-pro".prices]
    input = 1.25
    cached_input = 0.125
    output = 10.00
    long_context_threshold = 200000
    long_input = 2.50
    long_cached_input = 0.25
    long_output = 15.00

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

#: Fields of a ``prices`` table; every price is US dollars per million tokens.
PRICE_FIELDS = ("input", "output", "cached_input", "cache_write", "cache_write_1h", "source", "date",
                "long_context_threshold", "long_input", "long_output", "long_cached_input", "long_cache_write",
                "long_cache_write_1h")
_AMOUNTS = ("input", "output", "cached_input", "cache_write", "cache_write_1h", "long_input", "long_output",
            "long_cached_input", "long_cache_write", "long_cache_write_1h")
#: The long-context price that must accompany each base price a table gives.
_LONG_OF = {"input": "long_input", "output": "long_output", "cached_input": "long_cached_input",
            "cache_write": "long_cache_write", "cache_write_1h": "long_cache_write_1h"}
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
    #: Anthropic's 1-hour cache write (the 5-minute one is ``cache_write``); for reference.
    cache_write_1h: float | None = None
    source: str = ""
    date: str = ""
    #: The largest prompt (in tokens, cached and cache-write tokens included) billed at the
    #: prices above; a longer prompt is billed at the ``long_*`` prices. None: one tier.
    long_context_threshold: int | None = None
    long_input: float | None = None
    long_output: float | None = None
    long_cached_input: float | None = None
    long_cache_write: float | None = None
    long_cache_write_1h: float | None = None

    def __post_init__(self) -> None:
        problem = price_problem({f.name: getattr(self, f.name) for f in fields(self)})
        if problem:
            raise ValueError(f"Prices: {problem}")

    def cost(self, input_tokens: int, output_tokens: int = 0, cached_input_tokens: int = 0,
             cache_write_tokens: int = 0) -> RequestCost:
        """The cost of a request whose prompt has ``input_tokens`` tokens in all.

        ``cached_input_tokens`` and ``cache_write_tokens`` are the parts of
        that prompt read from and written to the prompt cache. A prompt longer
        than ``long_context_threshold`` is billed at the long-context prices,
        output included.

        >>> Prices(input=2.5, output=10.0).cost(1_000_000).total
        2.5
        >>> tiered = Prices(input=1.0, output=2.0, long_context_threshold=100, long_input=5.0, long_output=10.0)
        >>> [round(tiered.cost(prompt, output_tokens=10).total * 1e6, 6) for prompt in (100, 101)]
        [120.0, 605.0]
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
        input_price, output_price, cached_price, write_price = self.rates(input_tokens)
        plain = input_tokens - cached_input_tokens - cache_write_tokens
        return RequestCost(
            input=plain * input_price / _PER_TOKEN,
            cached_input=cached_input_tokens * cached_price / _PER_TOKEN,
            cache_write=cache_write_tokens * write_price / _PER_TOKEN,
            output=output_tokens * output_price / _PER_TOKEN,
        )

    def is_long(self, prompt_tokens: int) -> bool:
        """Whether a prompt of ``prompt_tokens`` tokens is billed at the long-context prices.

        >>> Prices(input=1.0, output=2.0, long_context_threshold=100, long_input=5.0, long_output=10.0).is_long(101)
        True
        """
        return self.long_context_threshold is not None and prompt_tokens > self.long_context_threshold

    def rates(self, prompt_tokens: int = 0) -> tuple[float, float, float, float]:
        """The (input, output, cached input, cache write) prices that bill a prompt of that length.

        Without a cache price the provider bills cached and written tokens as
        plain input (OpenAI and Gemini's implicit caching).

        >>> Prices(input=3.0, output=15.0, cached_input=0.3).rates()
        (3.0, 15.0, 0.3, 3.0)
        """
        if self.is_long(prompt_tokens):
            base = (self.long_input, self.long_output, self.long_cached_input, self.long_cache_write)
        else:
            base = (self.input, self.output, self.cached_input, self.cache_write)
        input_price, output_price, cached_price, write_price = base
        return (input_price, output_price, input_price if cached_price is None else cached_price,
                input_price if write_price is None else write_price)

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
    for name in _AMOUNTS:
        value = values.get(name)
        if value is None and name not in ("input", "output"):
            continue
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
        if not ok:
            return f"{name} must be a price of 0 or more (US dollars per million tokens); got {value!r}"
    problem = _tier_problem(values)
    if problem:
        return problem
    for name in ("source", "date"):
        if not isinstance(values.get(name, ""), str):
            return f"{name} must be a string; got {values[name]!r}"
    date = values.get("date", "")
    if date and not _DATE.fullmatch(date):
        return f"date must be written YYYY-MM-DD; got {date!r}"
    return None


def _tier_problem(values: Mapping[str, Any]) -> str | None:
    """What is wrong with a table's long-context tier, or None (no tier is fine)."""
    threshold = values.get("long_context_threshold")
    long_given = [name for name in _LONG_OF.values() if values.get(name) is not None]
    if threshold is None:
        if long_given:
            return (f"gives {', '.join(long_given)} without long_context_threshold "
                    "(the largest prompt billed at the base prices)")
        return None
    if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold <= 0:
        return f"long_context_threshold must be a positive whole number of prompt tokens; got {threshold!r}"
    # A long tier names every kind of token the base tier prices, so no long price is a guess.
    needed = [long for name, long in _LONG_OF.items() if values.get(name) is not None and values.get(long) is None]
    if needed:
        return f"has long_context_threshold but no {', '.join(needed)} (the price above the threshold)"
    return None

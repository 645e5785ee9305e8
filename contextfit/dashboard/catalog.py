"""The model catalog's prices as the faces show them (the Models page, ``contextfit models``).

>>> from contextfit.tokens.models import get_model
>>> row = price_row(get_model("claude-haiku-5-5"))
>>> row["input $/M"], row["cache write $/M"], row["long prompts"]
('$0.10', '$0.125', 'over 100,000 tokens: $0.50 in, $0.05 cached, $0.625 cache write, $2.50 out')
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..amounts import price_per_million
from ..replays import prompt_cache
from ..tokens.models import ModelInfo
from ..tokens.prices import Prices

__all__ = ["dollars", "price_row", "price_rows"]

#: What a missing price shows: the provider publishes none (or the catalog has none).
NO_PRICE = "—"


def dollars(value: float | None) -> str:
    """A price in US dollars per million tokens, with the digits the provider wrote
    (:func:`contextfit.amounts.price_per_million`).

    >>> dollars(2.5), dollars(0.075), dollars(0.0028), dollars(None)
    ('$2.50', '$0.075', '$0.0028', '—')
    """
    return price_per_million(value, NO_PRICE)


def _long_prompts(prices: Prices) -> str:
    if prices.long_context_threshold is None:
        return ""
    parts = [f"{dollars(prices.long_input)} in"]
    if prices.long_cached_input is not None:
        parts.append(f"{dollars(prices.long_cached_input)} cached")
    if prices.long_cache_write is not None:
        parts.append(f"{dollars(prices.long_cache_write)} cache write")
    parts.append(f"{dollars(prices.long_output)} out")
    return f"over {prices.long_context_threshold:,} tokens: " + ", ".join(parts)


def price_row(info: ModelInfo) -> dict[str, Any]:
    """One model's prices as table cells; every cell is ``—`` for a model without prices."""
    prices = info.prices
    if prices is None:
        return {"model": info.id, "input $/M": NO_PRICE, "cached input $/M": NO_PRICE, "cache write $/M": NO_PRICE,
                "output $/M": NO_PRICE, "long prompts": "", "source": "", "date": ""}
    return {
        "model": info.id,
        "input $/M": dollars(prices.input),
        "cached input $/M": dollars(prices.cached_input),
        "cache write $/M": dollars(prices.cache_write),
        "cached from (tokens)": f"{prompt_cache.cache_minimum(info):,}",
        "output $/M": dollars(prices.output),
        "long prompts": _long_prompts(prices),
        "source": prices.source,
        "date": prices.date,
    }


def price_rows(infos: Iterable[ModelInfo]) -> list[dict[str, Any]]:
    """The rows of the priced models, in catalog order."""
    return [price_row(info) for info in infos if info.prices is not None]

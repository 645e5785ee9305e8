"""How money and token counts read, on every face: one module, so a figure reads the same everywhere.

Two registers: **exact** where people read (a table cell, a CSV: every digit
that matters, never ``1.8e-06``) and **compact** where people glance (a
headline, a recommendation: ``"$0.41"``, ``"$1.2K"``, ``"112K of 128K tokens,
87%"``).

>>> money(0.0045), money_short(0.41), money_short(1234.5), tokens_short(112_000), window_text(112_000, 128_000)
('$0.004500', '$0.41', '$1.2K', '112K', '112K of 128K tokens, 88%')
"""

from __future__ import annotations

import math

__all__ = ["NO_PRICE", "csv_dollars", "money", "money_month", "money_short", "percent", "price_per_million", "tokens_short",
           "window_text"]

#: Shown for a model the catalog has no prices for.
NO_PRICE = "no catalog price"


def money(dollars: float | None, missing: str = NO_PRICE) -> str:
    """Dollars for a table cell: cents from a dollar, else four significant figures,
    written out (a short prompt on a cheap model read "$1.2e-06") and kept to four
    (a column read "$0.0456" under "$0.04579"); ``missing`` for no price.

    >>> money(None), money(0.00041), money(2.5), money(1.2e-06), money(0.0456), money(0.0123456), money(0.0)
    ('no catalog price', '$0.0004100', '$2.50', '$0.000001200', '$0.04560', '$0.01235', '$0')
    >>> money(0.99996), money(0.0099996), money(None, "—"), money(12345.678)
    ('$1.00', '$0.01000', '—', '$12,345.68')
    """
    if dollars is None:
        return missing
    if dollars <= 0:
        return "$0"
    rounded = float(f"{dollars:.4g}")  # 0.99996 is "$1.00", 0.0099996 "$0.01000"
    if rounded >= 1:
        return f"${dollars:,.2f}"
    return f"${rounded:.{3 - math.floor(math.log10(rounded))}f}"


#: Compact suffixes, largest first.
_SUFFIXES = ((1e12, "T"), (1e9, "B"), (1e6, "M"), (1e3, "K"))


def money_short(dollars: float | None, missing: str = "—") -> str:
    """Dollars at a glance: ``"$0.41"``, ``"$12.50"``, ``"$412"``, ``"$1.2K"``, ``"$35K"``, ``"$2.4M"``;
    under ten cents, two significant figures (``"$0.0045"``); ``missing`` for no price. A negative
    amount keeps its sign in front (``"-$0.41"``): a sentence says "less" itself.

    >>> [money_short(x) for x in (0.41, 0.4149, 12.5, 412.3, 1234.5, 35_000, 2_400_000, 0.0045, 0.000012, 0, -0.41)]
    ['$0.41', '$0.41', '$12.50', '$412', '$1.2K', '$35K', '$2.4M', '$0.0045', '$0.000012', '$0', '-$0.41']
    >>> money_short(999.6), money_short(9_999.0), money_short(0.0996), money_short(None)
    ('$1.0K', '$10K', '$0.10', '—')
    """
    if dollars is None:
        return missing
    if dollars < 0:
        return "-" + money_short(-dollars, missing)
    if dollars == 0:
        return "$0"
    if dollars >= 999.5:
        return "$" + _compact(dollars)
    if dollars >= 99.5:
        return f"${dollars:,.0f}"
    if dollars >= 0.0995:
        return f"${dollars:.2f}"
    digits = 1 - math.floor(math.log10(float(f"{dollars:.2g}")))  # two significant figures
    return f"${dollars:.{digits}f}"


def money_month(dollars: float | None, missing: str = "—") -> str:
    """A cost at volume (a month of conversations) at a glance, one rule at every size: whole dollars
    from a dollar up (a column read "$93.38 a month" beside "$101 a month"), compact from a thousand
    (:func:`money_short`'s ``"$1.2K"``), two significant figures under a dollar.

    >>> [money_month(x) for x in (93.38, 101.2, 4.9, 999.4, 1234.5, 0.147, 0, None)]
    ['$93', '$101', '$5', '$999', '$1.2K', '$0.15', '$0', '—']
    """
    if dollars is None or dollars < 1 or dollars >= 999.5:
        return money_short(dollars, missing)
    return f"${dollars:,.0f}"


def _compact(value: float) -> str:
    """``value`` (at least 999.5) with a K/M/B/T suffix: one decimal under ten, none above.

    >>> _compact(1234.5), _compact(12_345), _compact(999.6), _compact(99_960), _compact(3e12)
    ('1.2K', '12K', '1.0K', '100K', '3.0T')
    """
    for size, suffix in _SUFFIXES:
        scaled = value / size
        if round(scaled, 1) >= 1 or size == 1e3:
            if round(scaled, 1) >= 999.5 and size < 1e12:
                continue
            return f"{scaled:.1f}{suffix}" if round(scaled, 1) < 9.95 else f"{scaled:,.0f}{suffix}"
    raise AssertionError("unreachable")  # pragma: no cover - 1e3 always answers


def tokens_short(tokens: int | None, missing: str = "—") -> str:
    """A token count at a glance: exact under 1,000, then ``"1.8K"``, ``"112K"``, ``"1.2M"``.

    >>> [tokens_short(n) for n in (850, 999, 1000, 1796, 16_384, 112_000, 999_999, 1_048_576, None)]
    ['850', '999', '1.0K', '1.8K', '16K', '112K', '1.0M', '1.0M', '—']
    """
    if tokens is None:
        return missing
    if abs(tokens) < 1000:
        return f"{tokens:,}"
    return _compact(float(tokens))


def percent(share: float | None, digits: int = 0, missing: str = "—") -> str:
    """A share of 1 as a percent; ``missing`` for none. Never reads 100% short of it, nor 0% above 0.

    >>> percent(0.874), percent(0.9996), percent(0.0004), percent(1.0), percent(0.5, 1), percent(None)
    ('87%', '99%', '<1%', '100%', '50.0%', '—')
    """
    if share is None:
        return missing
    value = 100 * share
    shown = round(value, digits)
    if shown >= 100 and value < 100:  # 99.96% is not all of it
        return f"{100 - 10 ** -digits:.{digits}f}%" if digits else "99%"
    if shown == 0 and value > 0:
        return f"<{10 ** -digits:.{digits}f}%" if digits else "<1%"
    return f"{value:.{digits}f}%"


def window_text(prompt_tokens: int, context_limit: int) -> str:
    """A prompt against its window at a glance.

    >>> window_text(112_000, 128_000), window_text(1_796, 2_200), window_text(50, 1_000_000)
    ('112K of 128K tokens, 88%', '1.8K of 2.2K tokens, 82%', '50 of 1.0M tokens, <1%')
    """
    share = prompt_tokens / context_limit if context_limit else 1.0
    return f"{tokens_short(prompt_tokens)} of {tokens_short(context_limit)} tokens, {percent(share)}"


def price_per_million(value: float | None, missing: str = "—") -> str:
    """A catalog price in US dollars per million tokens, with the digits the provider wrote.

    >>> price_per_million(2.5), price_per_million(0.075), price_per_million(0.0028), price_per_million(None)
    ('$2.50', '$0.075', '$0.0028', '—')
    """
    if value is None:
        return missing
    if round(value, 2) == value:
        return f"${value:.2f}"
    return "$" + f"{value:.6f}".rstrip("0")


def csv_dollars(value: float) -> str:
    """Dollars for a CSV cell, written out (a float's repr wrote 1.215e-05 and 0.0017850000000000001).

    >>> csv_dollars(1.215e-05), csv_dollars(0.0017850000000000001), csv_dollars(12.5), csv_dollars(0.0)
    ('0.00001215', '0.001785', '12.5', '0')
    """
    return f"{value:.12f}".rstrip("0").rstrip(".") or "0"

"""How a count reads where it is shown: exact, or a point estimate with its upper bound.

An approximate profile (Claude, Gemini, an open model without its vocabulary
package) counts every text twice from one exact count: a point estimate (the
typical real count) and the upper end of its measured band, which the fit
holds to the budget. A plan and an audit carry both (``promptTokensEstimate``
next to ``promptTokens``, ``tokensEstimate`` next to each block's ``tokens``);
the CLI, the Audit page and the budget chart's hover show them with
:func:`band_text`, and the provider's own count, when one was asked, with
:func:`provider_count_text`.

>>> import contextfit
>>> band_text(contextfit.plan_prompt([{"role": "user", "content": "Hi"}], model="gpt-4o"))
'8 tokens, exact'
"""

from __future__ import annotations

from typing import Any

__all__ = ["band_text", "provider_count_text", "short_band", "tokens_text"]


def tokens_text(tokens: int | None, estimate: int | None, approximate: bool) -> str:
    """One count as it reads: ``"1,234 tokens, exact"`` or ``"about 1,010 tokens (approximate, up to 1,234)"``.

    >>> tokens_text(135, 116, True)
    'about 116 tokens (approximate, up to 135)'
    >>> tokens_text(135, None, True)
    'approximate, up to 135 tokens'
    >>> tokens_text(None, None, False)
    'not counted'
    """
    if tokens is None:
        return "not counted"
    if not approximate:
        return f"{tokens:,} tokens, exact"
    if estimate is None or estimate >= tokens:
        return f"approximate, up to {tokens:,} tokens"
    return f"about {estimate:,} tokens (approximate, up to {tokens:,})"


def short_band(tokens: int, estimate: int | None, approximate: bool) -> str:
    """A count in a table cell: ``"1,234"`` exact, ``"≈1,010, up to 1,234"`` approximate.

    >>> short_band(1234, 1010, True), short_band(1234, None, False), short_band(1234, None, True)
    ('≈1,010, up to 1,234', '1,234', 'up to 1,234')
    """
    if not approximate:
        return f"{tokens:,}"
    if estimate is None or estimate >= tokens:
        return f"up to {tokens:,}"
    return f"≈{estimate:,}, up to {tokens:,}"


def band_text(plan: Any) -> str:
    """The prompt's count of a :class:`~contextfit.PromptPlan` or an audit, with its band.

    ``prompt_tokens`` is what the fit used (the band's upper end when the
    profile is approximate); ``prompt_tokens_estimate`` is the point estimate.
    """
    return tokens_text(plan.prompt_tokens, getattr(plan, "prompt_tokens_estimate", None), plan.tokenizer.approximate)


def provider_count_text(audit: Any) -> str | None:
    """What the provider's token-count endpoint said of the final request, next to ours; ``None`` when not asked.

    >>> from types import SimpleNamespace as NS
    >>> provider_count_text(NS(provider_count={"provider": "anthropic", "tokens": 120, "cached": False},
    ...                        prompt_tokens=135, provider_prompt_tokens=None))
    'anthropic counted 120 tokens (ours: 135, 0.89x)'
    >>> provider_count_text(NS(provider_count={"provider": "anthropic", "tokens": None, "code": "PROVIDER_COUNT_FAILED",
    ...                        "message": "timed out"}, prompt_tokens=135, provider_prompt_tokens=None))
    'anthropic count failed (PROVIDER_COUNT_FAILED: timed out); ours: 135'
    """
    found = []
    counted = getattr(audit, "provider_count", None)
    ours = audit.prompt_tokens
    if counted:
        name = counted.get("provider", "provider")
        tokens = counted.get("tokens")
        if tokens is None:
            found.append(f"{name} count failed ({counted.get('code')}: {counted.get('message', '')}); ours: {ours}")
        else:
            ratio = f", {tokens / ours:.2f}x" if ours else ""
            found.append(f"{name} counted {tokens:,} tokens (ours: {ours}{ratio})")
    reported = getattr(audit, "provider_prompt_tokens", None)
    if reported is not None:
        ratio = f", {reported / ours:.2f}x" if ours else ""
        found.append(f"the provider reported reading {reported:,} prompt tokens (ours: {ours}{ratio})")
    return "; ".join(found) or None

"""The prompt tokens a provider reports having read, from its reply's ``usage``.

A completed generation records this number in its audit
(``providerPromptTokens``) next to contextfit's own count, so that
``contextfit calibrate`` can show how the two compare per model.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["reported_prompt_tokens"]

# Anthropic bills cached prompt reads and writes apart from input_tokens: all three were read.
_ANTHROPIC = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def _whole(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def reported_prompt_tokens(usage: Any) -> int | None:
    """The prompt tokens in a reply's ``usage``, or ``None`` when it has none.

    OpenAI (and compatible servers): ``prompt_tokens``; Anthropic:
    ``input_tokens`` plus the cache's ``cache_creation_input_tokens`` and
    ``cache_read_input_tokens``; Gemini: ``promptTokenCount``.

    >>> reported_prompt_tokens({"prompt_tokens": 129, "completion_tokens": 12})
    129
    >>> reported_prompt_tokens({"input_tokens": 10, "cache_read_input_tokens": 2000, "output_tokens": 5})
    2010
    >>> reported_prompt_tokens({"messages": 3}) is None   # the echo provider reports no tokens
    True
    """
    if not isinstance(usage, Mapping):
        return None
    openai = _whole(usage.get("prompt_tokens"))
    if openai is not None:
        return openai
    if _whole(usage.get("input_tokens")) is not None:
        return sum(_whole(usage.get(key)) or 0 for key in _ANTHROPIC)
    return _whole(usage.get("promptTokenCount"))

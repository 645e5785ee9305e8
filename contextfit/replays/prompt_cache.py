"""How much of a request a provider reads from its prompt cache.

A replay (``replays/run.py``) sends one request per user turn; the tokens a
request shares with the previous one — counted on the rendered provider
messages, whole messages from the start, tool definitions first — are what
a prompt cache can serve. Two rule sets, by provider:

* **automatic prefix caching** (OpenAI, and every provider that is not
  Anthropic): a prompt of at least 1,024 tokens is cached for free; a later
  request reads the longest cached prefix it shares, in 128-token steps
  past the first 1,024 (``cached = 1024 + 128 * floor((shared - 1024) / 128)``).
  Nothing is charged for writing.
* **Anthropic cache breakpoints**, placed the usual way: one after the tools
  and system text, one on the last message. A request reads the previous
  request's whole prompt when that prompt is a prefix of its own, else the
  tools and system text when they are unchanged, else nothing; what it does
  not read up to its last breakpoint it writes (billed at the cache-write
  price). A prefix shorter than the model's minimum (the catalog's
  ``cache_minimum``: 1,024 tokens; 2,048 for Haiku 3 and 3.5; 4,096 for Haiku
  4.5, Opus 4.5 and 4.6) is neither read nor written.

>>> automatic_cached(1023), automatic_cached(1024), automatic_cached(1300)
(0, 1024, 1280)
>>> anthropic_cache(prompt=5000, head=1500, previous=4000, whole_matches=True, head_matches=True)
CacheUse(read=4000, write=1000)
>>> anthropic_cache(prompt=5000, head=1500, previous=4000, whole_matches=False, head_matches=True)
CacheUse(read=1500, write=3500)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..tokens.models import ModelInfo

AUTOMATIC = "automatic-prefix"
BREAKPOINTS = "anthropic-breakpoints"
AUTOMATIC_MINIMUM = 1024
AUTOMATIC_STEP = 128
ANTHROPIC_MINIMUM = 1024
ANTHROPIC_HAIKU_MINIMUM = 2048


@dataclass(frozen=True, slots=True)
class CacheUse:
    """Prompt tokens read from the cache and written to it by one request."""

    read: int
    write: int


def cache_rule(provider: str) -> str:
    """The rule set a provider's prompt cache follows.

    >>> cache_rule("anthropic"), cache_rule("openai"), cache_rule("google")
    ('anthropic-breakpoints', 'automatic-prefix', 'automatic-prefix')
    """
    return BREAKPOINTS if provider == "anthropic" else AUTOMATIC


def anthropic_minimum(model_id: str, documented: int | None = None) -> int:
    """The shortest prefix an Anthropic model caches: the catalog's ``cache_minimum`` for it
    (``documented``, as Anthropic lists them per model), else 2,048 tokens for a Haiku and
    1,024 for the others.

    >>> anthropic_minimum("claude-sonnet-4"), anthropic_minimum("claude-3-5-haiku"), anthropic_minimum("claude-x", 4096)
    (1024, 2048, 4096)
    """
    if documented is not None:
        return documented
    return ANTHROPIC_HAIKU_MINIMUM if "haiku" in model_id.lower() else ANTHROPIC_MINIMUM


def cache_minimum(info: ModelInfo) -> int:
    """The shortest prompt prefix the model's provider caches, as the replay models it:
    an Anthropic model's :func:`anthropic_minimum`, else the automatic rule's 1,024 tokens.

    >>> from contextfit.tokens.models import get_model
    >>> cache_minimum(get_model("gpt-4o")), cache_minimum(get_model("claude-haiku-4-5"))
    (1024, 4096)
    """
    if cache_rule(info.provider) == BREAKPOINTS:
        return anthropic_minimum(info.id, info.cache_minimum)
    return AUTOMATIC_MINIMUM


def automatic_cached(shared: int) -> int:
    """Tokens an automatic prefix cache serves of ``shared`` tokens in common with an earlier request."""
    if shared < AUTOMATIC_MINIMUM:
        return 0
    return AUTOMATIC_MINIMUM + (shared - AUTOMATIC_MINIMUM) // AUTOMATIC_STEP * AUTOMATIC_STEP


def anthropic_cache(
    prompt: int, head: int, previous: int | None, whole_matches: bool, head_matches: bool,
    minimum: int = ANTHROPIC_MINIMUM,
) -> CacheUse:
    """Reads and writes with breakpoints after the tools and system text
    (``head`` tokens) and on the last message (``prompt`` tokens in all).

    ``previous`` is the previous request's cacheable tokens (``None`` on the
    first turn); ``whole_matches`` says it is a prefix of this request,
    ``head_matches`` that the tools and system text are the same.
    """
    read = 0
    if previous is not None and whole_matches and previous >= minimum:
        read = previous
    elif previous is not None and head_matches and head >= minimum:
        read = head
    read = min(read, prompt)
    write = prompt - read if prompt >= minimum else 0
    return CacheUse(read, write)

"""How much of a request a provider reads from its prompt cache, and why it read no more.

A replay (``replays/run.py``) sends one request per model call; the tokens a
request shares with the previous one — counted on the rendered provider
messages, whole messages from the start, tool definitions first — are what a
prompt cache can serve. Each provider's rules, with the model's own figures
from the catalog (``cache_minimum``, ``cache_unit`` and the ``cache_write``
price; sources in ``contextfit/data/models.toml``):

* **automatic prefix caching** — no markers; a later request reads the
  longest cached prefix it shares, in whole units, once it reaches the
  model's minimum (``cached = floor(shared / unit) * unit`` from the minimum on):

  - **OpenAI**: from 1,024 tokens in 128-token units. Writing is free, except
    on the models that bill cache writes (GPT-5.6 and later: the catalog
    gives them a ``cache_write`` price): what a request caches beyond what it
    read is written at that price.
  - **DeepSeek**: context caching on disk in 64-token units; a prefix under
    64 tokens is not cached; writing is free.
  - **Google** (Gemini implicit caching): from the model's minimum (2,048
    tokens for Gemini 2.5, 4,096 for Gemini 3.x and later), free to write.
  - every other provider (open-weight hosts, a user's own): OpenAI's rules,
    said in a replay's notes.
* **Anthropic cache breakpoints**, placed the usual way: one after the tools
  and system text, one on the last message. A request reads the previous
  request's whole prompt when that prompt is a prefix of its own, else the
  tools and system text when they are unchanged, else nothing; what it does
  not read up to its last breakpoint it writes (billed at the 5-minute
  cache-write price). A prefix shorter than the model's minimum (512, 1,024,
  2,048 or 4,096 tokens by model) is neither read nor written.

A request that read less than the previous request sent carries the reason
(:func:`miss_reason`): ``no-previous-request``, ``below-minimum`` (the shared
prefix is under the minimum), or what changed before the shared point —
``tools-changed``, ``system-changed`` or ``messages-changed`` (a message
before it was dropped, summarized, compressed or edited).

>>> prefix_cached(1023, 1024, 128), prefix_cached(1024, 1024, 128), prefix_cached(1300, 1024, 128)
(0, 1024, 1280)
>>> automatic_cache(prompt=1000, shared=700, minimum=64, unit=64)  # DeepSeek
CacheUse(read=640, write=0)
>>> automatic_cache(prompt=3000, shared=1300, minimum=1024, unit=128, bills_writes=True)  # GPT-5.6 and later
CacheUse(read=1280, write=1664)
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
DEEPSEEK_UNIT = 64
#: Gemini implicit caching's minimum when the catalog gives none: Google lists 2,048 tokens for
#: Gemini 2.5 and 4,096 for every later model (ai.google.dev/gemini-api/docs/caching, 2026-10).
GEMINI_25_MINIMUM = 2048
GEMINI_MINIMUM = 4096
#: Providers whose own caching rules are modelled (the others get OpenAI's, with a note).
MODELLED = frozenset({"openai", "anthropic", "deepseek", "google"})

#: Why a request read less from the cache than the previous request sent (``TurnResult.cache_miss``).
NO_PREVIOUS = "no-previous-request"
BELOW_MINIMUM = "below-minimum"
TOOLS_CHANGED = "tools-changed"
SYSTEM_CHANGED = "system-changed"
MESSAGES_CHANGED = "messages-changed"
MISS_REASONS = (NO_PREVIOUS, BELOW_MINIMUM, TOOLS_CHANGED, SYSTEM_CHANGED, MESSAGES_CHANGED)


@dataclass(frozen=True, slots=True)
class CacheUse:
    """Prompt tokens read from the cache and written to it by one request."""

    read: int
    write: int


@dataclass(frozen=True, slots=True)
class CacheRules:
    """A model's prompt-cache rules as the replay models them.

    >>> from contextfit.tokens.models import get_model
    >>> cache_rules(get_model("deepseek-flash"))
    CacheRules(rule='automatic-prefix', minimum=64, unit=64, bills_writes=False)
    """

    rule: str
    minimum: int
    unit: int
    bills_writes: bool

    def to_dict(self) -> dict:
        return {"rule": self.rule, "minimum": self.minimum, "unit": self.unit, "billsWrites": self.bills_writes}


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


def cache_rules(info: ModelInfo) -> CacheRules:
    """The rules of ``info``'s provider with the model's own figures from the catalog."""
    provider = info.provider
    bills_writes = info.prices is not None and info.prices.cache_write is not None
    if provider == "anthropic":
        return CacheRules(BREAKPOINTS, anthropic_minimum(info.id, info.cache_minimum), info.cache_unit or 1, True)
    if provider == "deepseek":
        unit = info.cache_unit or DEEPSEEK_UNIT
        return CacheRules(AUTOMATIC, info.cache_minimum or unit, unit, bills_writes)
    if provider == "google":
        default = GEMINI_25_MINIMUM if "gemini-2" in info.id.lower() else GEMINI_MINIMUM
        return CacheRules(AUTOMATIC, info.cache_minimum or default, info.cache_unit or 1, bills_writes)
    return CacheRules(AUTOMATIC, info.cache_minimum or AUTOMATIC_MINIMUM, info.cache_unit or AUTOMATIC_STEP,
                      bills_writes)


def cache_minimum(info: ModelInfo) -> int:
    """The shortest prompt prefix the model's provider caches, as the replay models it.

    >>> from contextfit.tokens.models import get_model
    >>> [cache_minimum(get_model(m)) for m in ("gpt-4o", "claude-haiku-4-5", "claude-opus-5", "deepseek-flash")]
    [1024, 4096, 512, 64]
    """
    return cache_rules(info).minimum


def prefix_cached(tokens: int, minimum: int, unit: int) -> int:
    """The part of a ``tokens``-long prefix a cache holds: whole units, from the minimum on.

    >>> prefix_cached(1023, 1024, 128), prefix_cached(1300, 1024, 128), prefix_cached(130, 64, 64)
    (0, 1280, 128)
    """
    if tokens < minimum or tokens <= 0:
        return 0
    return tokens // unit * unit if unit > 1 else tokens


def automatic_cache(prompt: int, shared: int, minimum: int = AUTOMATIC_MINIMUM, unit: int = AUTOMATIC_STEP,
                    bills_writes: bool = False) -> CacheUse:
    """Reads (and, for a model that bills them, writes) of automatic prefix caching: the
    shared prefix in whole units is read; what the ``prompt`` caches beyond it is written."""
    read = min(prefix_cached(shared, minimum, unit), prompt)
    write = max(prefix_cached(prompt, minimum, unit) - read, 0) if bills_writes else 0
    return CacheUse(read, write)


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


def miss_reason(has_previous: bool, whole_matches: bool, read: int, changed: str | None = None) -> str | None:
    """Why a request did not read the whole previous request from the cache, or ``None`` when it did
    (a read rounded down to whole units is no miss). ``changed`` says what differs first when the
    previous request is not a prefix of this one: ``tools-changed``, ``system-changed`` or
    ``messages-changed`` (the default).

    >>> miss_reason(False, False, 0), miss_reason(True, True, 0), miss_reason(True, True, 1280)
    ('no-previous-request', 'below-minimum', None)
    >>> miss_reason(True, False, 1024, SYSTEM_CHANGED), miss_reason(True, False, 0)
    ('system-changed', 'messages-changed')
    """
    if not has_previous:
        return NO_PREVIOUS
    if whole_matches:
        return BELOW_MINIMUM if read == 0 else None
    return changed or MESSAGES_CHANGED

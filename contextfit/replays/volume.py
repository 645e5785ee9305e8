"""What a strategy costs at the user's volume: per request, per conversation, per month.

A request is billed for its prompt and its reply. The prompt's cached part is
priced as the provider bills it (``prompt_cache.py``: what the request shares
with the one before it; ``tokens/prices.py``: cached input, cache writes); the
reply's tokens are the conversation's own (the assistant messages that answer
the request), and a request whose reply the conversation does not hold (the
latest, most often) gets the mean of the replies it does hold (of its latest
100 requests) — or, in a conversation with none, :data:`ESTIMATED_REPLY_TOKENS`,
said as an estimate.

A conversation is what the evidence covers: a replay prices every request of
the conversation; the plans of one request (Compare, ``contextfit fit``) price
that request, as the next turn of a conversation like this one. Per month is
per conversation × conversations a day × :data:`DAYS_PER_MONTH`.

>>> reply = reply_of([120, 0, 80])
>>> reply.tokens, reply.text()
(100, 'replies: the mean of the conversation’s 2 replies, 100 tokens')
>>> volume = Volume(0.0046, 0.0046, 1, reply)
>>> volume.per_1000, volume.per_month
(4.6, 138.0)
>>> volume.text()
'$0.004600 a request (reply included) · $4.60 per 1,000 conversations · $138 a month at 1,000 conversations a day'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..amounts import money, money_month, money_short

__all__ = ["DAYS_PER_MONTH", "DEFAULT_CONVERSATIONS_PER_DAY", "ESTIMATED_REPLY_TOKENS", "Reply", "Volume",
           "reply_of", "request_cost"]

#: The conversations a day a month's cost is shown for, until the user types another number.
DEFAULT_CONVERSATIONS_PER_DAY = 1_000
DAYS_PER_MONTH = 30
#: The reply a conversation without any is priced with (tokens): a few paragraphs.
ESTIMATED_REPLY_TOKENS = 300


@dataclass(frozen=True, slots=True)
class Reply:
    """The reply a request is priced with."""

    tokens: int
    #: how many of the conversation's replies the mean is of (0: an estimate)
    replies: int

    @property
    def estimated(self) -> bool:
        return self.replies == 0

    def text(self) -> str:
        """Where the reply's size comes from, in words."""
        if self.estimated:
            return f"replies: estimated at {self.tokens:,} tokens (the conversation holds no reply)"
        many = "reply" if self.replies == 1 else f"{self.replies:,} replies"
        return f"replies: the mean of the conversation’s {many}, {self.tokens:,} tokens"

    def to_dict(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "replies": self.replies, "estimated": self.estimated, "text": self.text()}


def reply_of(outputs: Sequence[int], estimate: int = ESTIMATED_REPLY_TOKENS) -> Reply:
    """The reply to price a request with: the mean of the conversation's replies (``outputs``: the
    reply tokens of each request, 0 where it holds none), else ``estimate``.

    >>> reply_of([0, 0]).tokens, reply_of([0, 0]).estimated, reply_of([7, 8]).tokens
    (300, True, 8)
    """
    held = [tokens for tokens in outputs if tokens > 0]
    if not held:
        return Reply(estimate, 0)
    return Reply(int(sum(held) / len(held) + 0.5), len(held))


def request_cost(prices: Any, prompt_tokens: int, reply_tokens: int, cached_tokens: int = 0,
                 cache_write_tokens: int = 0) -> float | None:
    """US dollars for one request, reply included; ``None`` without prices.

    >>> from contextfit.tokens.prices import Prices
    >>> request_cost(Prices(input=2.5, output=10.0, cached_input=1.25), 1_000, 100, cached_tokens=512)
    0.00286
    """
    if prices is None:
        return None
    return prices.cost(prompt_tokens, output_tokens=reply_tokens, cached_input_tokens=cached_tokens,
                       cache_write_tokens=cache_write_tokens).total


@dataclass(frozen=True, slots=True)
class Volume:
    """A strategy's costs at volume (US dollars; ``None`` without prices)."""

    per_request: float | None
    per_conversation: float | None
    #: the requests a conversation is priced with (1 for the plans of one request)
    requests: int
    reply: Reply
    conversations_per_day: int = DEFAULT_CONVERSATIONS_PER_DAY

    @property
    def per_1000(self) -> float | None:
        """Per 1,000 conversations."""
        return None if self.per_conversation is None else self.per_conversation * 1000

    @property
    def per_month(self) -> float | None:
        """Per month of :data:`DAYS_PER_MONTH` days at ``conversations_per_day``."""
        if self.per_conversation is None:
            return None
        return self.per_conversation * self.conversations_per_day * DAYS_PER_MONTH

    def at(self, conversations_per_day: int) -> Volume:
        """The same costs for another number of conversations a day.

        >>> Volume(0.01, 0.01, 1, Reply(5, 1)).at(200).per_month
        60.0
        """
        if isinstance(conversations_per_day, bool) or not isinstance(conversations_per_day, int) \
                or conversations_per_day < 0:
            raise ValueError(f"conversations a day must be a whole number of 0 or more, got {conversations_per_day!r}")
        return replace(self, conversations_per_day=conversations_per_day)

    def text(self) -> str:
        """One line at a glance."""
        if self.per_conversation is None:
            return "no catalog price"
        parts = [f"{money(self.per_request)} a request (reply included)"]  # the dashboard's money rules
        if self.requests > 1:
            parts.append(f"{money(self.per_conversation)} a conversation of {self.requests:,} requests")
        parts.append(f"{money_short(self.per_1000)} per 1,000 conversations")
        parts.append(f"{money_month(self.per_month)} a month at {a_day(self.conversations_per_day)}")
        return " · ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {"perRequest": self.per_request, "perConversation": self.per_conversation,
                "per1000Conversations": self.per_1000, "perMonth": self.per_month,
                "conversationsPerDay": self.conversations_per_day, "daysPerMonth": DAYS_PER_MONTH,
                "requests": self.requests, "reply": self.reply.to_dict()}


def a_day(conversations: int) -> str:
    """A volume as a sentence says it.

    >>> a_day(1), a_day(25_000)
    ('1 conversation a day', '25,000 conversations a day')
    """
    return f"{conversations:,} conversation{'' if conversations == 1 else 's'} a day"

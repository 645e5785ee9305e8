"""Scoring a planted fact on what a plan sends — an independent check.

The score reads only the provider messages (the exact payload, and for
Anthropic its system text) and the conversation the plan was made from. It
never reads the plan's blocks, reasons or a strategy's metadata, so a
strategy that claims to keep a fact but does not send it scores *lost*.

A sent message whose text is exactly one of the conversation's messages is
**original**; any other sent text (a summary, a ledger, a cleared
placeholder) is **inserted**. A fact's value is found where it stands between
non-word characters (``42`` is not in ``1423``). Each fact gets one status:

* ``verbatim`` — the current value is in an original message that is sent;
* ``ledger`` — it is only in an inserted block (a summary line or a ledger
  line that quotes it);
* ``stale`` — the current value is not sent but a value it replaced is: the
  model would take the old value for the current one;
* ``recoverable`` — not sent, but an inserted block names the id of a
  message that holds it (``m12``): the message is in the chat's store
  (contextfit keeps every message of a chat; ``GET /api/v2/chats/{id}``
  returns it), so a retrieval step can fetch it on demand;
* ``lost`` — none of these.

A fact is **retained** when it is ``verbatim`` or ``ledger``.

>>> chat = [{"role": "user", "content": "The port is 5433."}, {"role": "assistant", "content": "Noted."},
...         {"role": "user", "content": "Go on."}]
>>> fact = PlantedFact("port", (("5433", 0),), "explicit", "number", 2)
>>> [s.status for s in score_sent([m["content"] for m in chat[1:]], chat, [fact])]
['lost']
>>> [s.status for s in score_sent(["Ledger: port 5433 (m0)", "Go on."], chat, [fact])]
['ledger']
>>> [s.status for s in score_sent(["Ledger: more in m0", "Go on."], chat, [fact])]
['recoverable']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..replays.facts import contains_word, message_ids
from .protocol import PlantedFact

VERBATIM = "verbatim"
LEDGER = "ledger"
STALE = "stale"
RECOVERABLE = "recoverable"
LOST = "lost"
STATUSES = (VERBATIM, LEDGER, STALE, RECOVERABLE, LOST)
RETAINED = frozenset({VERBATIM, LEDGER})


@dataclass(frozen=True, slots=True)
class FactScore:
    """One fact's status in what was sent (module docstring)."""

    key: str
    kind: str
    sort: str
    superseded: bool
    status: str

    @property
    def retained(self) -> bool:
        return self.status in RETAINED


def message_text(message: Any) -> str:
    """The text a provider message carries: its content (string or text parts) and its tool calls' arguments."""
    if not isinstance(message, dict):
        return ""
    content = message.get("content")
    if isinstance(content, str):
        parts = [content]
    elif isinstance(content, list):
        parts = [str(part.get("text") or part.get("content") or "") if isinstance(part, dict) else str(part)
                 for part in content]
    else:
        parts = []
    for call in message.get("tool_calls") or ():
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            parts.append(str(function.get("arguments") or ""))
    return "\n".join(part for part in parts if part)


def sent_texts(provider_messages: Sequence[dict], provider_system: str | None = None) -> list[str]:
    """Each sent message's text, in order (an Anthropic request's system text first)."""
    texts = [provider_system] if provider_system else []
    return texts + [message_text(message) for message in provider_messages]


def score_plan(plan: Any, conversation: Sequence[dict], facts: Sequence[PlantedFact]) -> list[FactScore]:
    """Score ``facts`` on what ``plan`` (a :class:`~contextfit.PromptPlan`) sends for ``conversation``."""
    return score_sent(sent_texts(plan.provider_messages, plan.provider_system), conversation, facts)


def score_sent(sent: Sequence[str], conversation: Sequence[dict], facts: Sequence[PlantedFact]) -> list[FactScore]:
    """Score ``facts`` on the sent texts ``sent`` (module docstring)."""
    originals = {message_text(message) for message in conversation}
    plain = "\n".join(text for text in sent if text in originals)
    inserted = "\n".join(text for text in sent if text not in originals)
    ids = message_ids(list(conversation))
    scores = []
    for fact in facts:
        current = fact.current
        if contains_word(plain, current):
            status = VERBATIM
        elif contains_word(inserted, current):
            status = LEDGER
        elif any(contains_word(plain, old) or contains_word(inserted, old) for old in fact.stale):
            status = STALE
        elif contains_word(inserted, ids[fact.values[-1][1]]):
            status = RECOVERABLE
        else:
            status = LOST
        scores.append(FactScore(fact.key, fact.kind, fact.sort, fact.superseded, status))
    return scores


__all__ = ["FactScore", "LEDGER", "LOST", "RECOVERABLE", "RETAINED", "STALE", "STATUSES", "VERBATIM",
           "message_text", "score_plan", "score_sent", "sent_texts"]

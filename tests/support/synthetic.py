"""Seeded synthetic conversations: the bench's main input, and long chats for the tests.

A synthetic conversation of ``n`` messages is the same for the same ``n`` and
``seed`` on every machine (``random.Random`` is stable across platforms and
Python versions for the calls used here). Its shape:

* a system prompt (~350 tokens), then two lorebook and two memory blocks
  (``role: system`` with ``meta.kind``: droppable, what ``vector-recall``
  ranks);
* user turns, mostly short, sometimes a long paste (logs, code);
* assistant turns of a few sentences to a few paragraphs; about 10% of them
  call 1-3 tools in parallel. The results come back in any order, and about a
  third of the time an assistant message stands between two of them, so a
  call is not always next to its results;
* tool results from a line to a few thousand tokens of JSON-like text;
* a few pinned messages (about 1 in 500) and a few marked
  ``meta.manualExcluded`` (about 1 in 100, what ``manual`` drops first);
* the last message is the user's current input.

``bench/conversations.py`` imports it from here (``tests.support.synthetic``), so the
bench and the tests read the same chats; it imports no other test helper.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from functools import lru_cache

_WORDS = (
    "the of and to in is you that it was for on are as with they at be this have from or one had by "
    "but not what all were we when your can said there use an each which she do how their if will up other "
    "about out many then them these so some her would make like him into time has look two more write go see "
    "number no way could people my than first water been call who now find long down day did get come made "
    "may part router firmware error config deploy cluster request timeout latency database index query "
    "cache token budget model prompt context window summary memory lorebook character castle forest river "
    "wolf sword magic tavern journey dragon village merchant quest ancient library scroll potion"
).split()
_CODE = [
    "def handler(event, context):",
    "    return {'statusCode': 200, 'body': json.dumps(result)}",
    "ERROR 2024-03-11T08:15:02Z worker-3 connection reset by peer (retry 4/5)",
    "SELECT id, name, created_at FROM users WHERE last_seen > now() - interval '7 days';",
    "for (let i = 0; i < items.length; i++) { total += items[i].price * items[i].qty; }",
    "Traceback (most recent call last): File \"app.py\", line 42, in <module>",
]
_TOOLS = ["search_docs", "get_weather", "lookup_ticket", "run_sql", "read_file", "list_calendar"]

SYSTEM_PROMPT_WORDS = 260


@dataclass(frozen=True, slots=True)
class Conversation:
    """One input: a name, where it came from and its messages."""

    name: str
    messages: list[dict] = field(repr=False)
    source: dict = field(default_factory=dict)  # enough to rebuild it in another process


def _text(rng: random.Random, words: int) -> str:
    """Sentences of English-like words, with punctuation and numbers."""
    chosen = rng.choices(_WORDS, k=max(words, 1))
    out, start = [], 0
    while start < len(chosen):
        length = rng.randint(6, 18)
        sentence = chosen[start : start + length]
        if rng.random() < 0.15:
            sentence.append(str(rng.randint(2, 9999)))
        out.append(" ".join(sentence).capitalize() + rng.choice(".....?!"))
        start += length
    return " ".join(out)


def _paste(rng: random.Random, words: int) -> str:
    """A long paste: prose with code and log lines mixed in."""
    lines = []
    while words > 0:
        if rng.random() < 0.4:
            lines.append(rng.choice(_CODE))
            words -= 10
        else:
            chunk = rng.randint(10, 40)
            lines.append(_text(rng, chunk))
            words -= chunk
    return "\n".join(lines)


def _user_words(rng: random.Random) -> tuple[int, bool]:
    roll = rng.random()
    if roll < 0.70:
        return rng.randint(4, 40), False
    if roll < 0.95:
        return rng.randint(40, 200), False
    return rng.randint(300, 1500), True


def _assistant_words(rng: random.Random) -> int:
    return min(int(rng.lognormvariate(4.6, 0.7)), 1400)  # median ~100 words


def _result_text(rng: random.Random, call_number: int) -> str:
    roll = rng.random()
    words = rng.randint(15, 120) if roll < 0.6 else rng.randint(150, 600) if roll < 0.9 else rng.randint(600, 2000)
    rows = []
    while words > 0:
        size = rng.randint(5, 25)
        rows.append({"id": call_number * 1000 + len(rows), "score": round(rng.random(), 3), "text": _text(rng, size)})
        words -= size + 4
    return json.dumps({"ok": True, "results": rows})


def _calls(rng: random.Random, number: int) -> list[dict]:
    calls = []
    for k in range(rng.choices((1, 2, 3), weights=(5, 3, 2))[0]):
        args = {"query": _text(rng, rng.randint(2, 10)), "limit": rng.randint(1, 50)}
        calls.append(
            {
                "id": f"call_{number}_{k}",
                "type": "function",
                "function": {"name": rng.choice(_TOOLS), "arguments": json.dumps(args)},
            }
        )
    return calls


@lru_cache(maxsize=4)
def _synthetic(n: int, seed: int) -> tuple[dict, ...]:
    rng = random.Random(f"contextfit-bench-{seed}-{n}")
    messages: list[dict] = [{"role": "system", "content": _text(rng, SYSTEM_PROMPT_WORDS)}]
    for number, kind in enumerate(("lorebook", "memory", "lorebook", "memory")):
        if len(messages) < n // 10:
            messages.append(
                {"role": "system", "content": _text(rng, rng.randint(30, 90)), "meta": {"kind": kind, "id": f"{kind}-{number}"}}
            )
    call_number = 0
    while len(messages) < n - 1:
        words, paste = _user_words(rng)
        messages.append({"role": "user", "content": _paste(rng, words) if paste else _text(rng, words)})
        if rng.random() < 0.10:
            call_number += 1
            calls = _calls(rng, call_number)
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            results = [
                {"role": "tool", "tool_call_id": call["id"], "content": _result_text(rng, call_number)} for call in calls
            ]
            rng.shuffle(results)
            for position, result in enumerate(results):
                if position == len(results) - 1 and rng.random() < 0.35:
                    # an interim note between results: the call is not next to all of them
                    messages.append({"role": "assistant", "content": _text(rng, rng.randint(5, 25))})
                messages.append(result)
        messages.append({"role": "assistant", "content": _text(rng, _assistant_words(rng))})
    del messages[n - 1 :]  # a turn may overshoot; a cut group just leaves orphans or an unanswered call
    messages.append({"role": "user", "content": _text(rng, rng.randint(8, 40))})  # the current input
    for index in range(5, n - 1):
        roll = rng.random()
        if roll < 0.002 and messages[index]["role"] == "user":
            messages[index] = {**messages[index], "pinned": True}
        elif roll < 0.012 and "meta" not in messages[index]:
            messages[index] = {**messages[index], "meta": {"manualExcluded": True}}
    return tuple(messages)


def synthetic(n: int, seed: int = 6) -> Conversation:
    """A seeded synthetic conversation of exactly ``n`` messages (``n >= 2``).

    >>> chat = synthetic(100)
    >>> len(chat.messages), chat.messages[0]["role"], chat.messages[-1]["role"]
    (100, 'system', 'user')
    """
    if n < 2:
        raise ValueError(f"a synthetic conversation needs at least 2 messages, not {n}")
    return Conversation(f"synthetic-{n}", list(_synthetic(n, seed)), {"kind": "synthetic", "size": n, "seed": seed})


def user_requests(messages: list[dict]) -> list[int]:
    """The positions of a chat's user messages that are requests (its tool rounds left out)."""
    from contextfit.replays.run import model_calls

    return [call.position for call in model_calls(messages) if call.trigger == "user"]


def synthetic_turns(turns: int) -> list[dict]:
    """The synthetic chat cut just after its ``turns``-th user message (a replay also makes a request
    of each tool round the model answers).

    >>> chat = synthetic_turns(3)
    >>> len(user_requests(chat)), chat[-1]["role"]
    (3, 'user')
    """
    size = max(4, turns * 2)
    while True:
        messages = synthetic(size).messages
        requests = user_requests(messages)
        if len(requests) >= turns:
            return messages[: requests[turns - 1] + 1]
        size = int(size * 1.25) + 8

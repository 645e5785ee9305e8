"""The judge: an exact recount and the group and protection checks, made
without contextfit's engine.

* :func:`count_message` counts a message the way an OpenAI chat request is
  billed (OpenAI cookbook: 3 tokens per message plus its role and text, 1 more
  for a ``name``, 3 to prime the reply; a tool call costs 8 plus its name and
  arguments, ids are not text), written out here with tiktoken alone. It is
  the same rule contextfit's ``o200k_base`` counter documents, so every
  contender is judged by one yardstick; :func:`counter_agreement` checks,
  message by message, that the two agree on each input.
* Groups and protection come from the independent oracle of the property
  tests (``tests/support/conversations.py``, SPEC §3.2-3.3 written out without the
  engine's code).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

PER_MESSAGE, PER_NAME, REPLY_PRIMING, PER_CALL, PER_IMAGE = 3, 1, 3, 8, 1_700
#: The counting rules of :func:`count`, as the reports state them.
RULES = (f"o200k_base (tiktoken); per message {PER_MESSAGE} + its role + its text, {PER_NAME} more + the name "
         f"for a name; per tool call {PER_CALL} + its name + its arguments (ids are not text); {PER_IMAGE:,} "
         f"per image; {REPLY_PRIMING} to prime the reply (the OpenAI cookbook's gpt-4o rules)")
_TEXT_PARTS = ("text", "input_text", "output_text")
_IMAGE_PARTS = ("image_url", "image", "input_image", "image_file")


@lru_cache(maxsize=1)
def encoding() -> Any:
    """The exact ``o200k_base`` tiktoken encoding, from contextfit's offline copy."""
    import contextfit

    return contextfit.get_tokenizer("o200k_base").encoding


def _test_oracle() -> Any:
    from tests.support import conversations

    return conversations


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def _part(part: Any, encode: Any) -> int:
    if isinstance(part, str):
        return len(encode(part))
    if not isinstance(part, dict):
        return len(encode(_text(part)))
    kind = part.get("type")
    if kind in _TEXT_PARTS:
        return len(encode(_text(part.get("text"))))
    if kind in _IMAGE_PARTS:
        return PER_IMAGE
    if kind in ("tool_use", "server_tool_use"):
        return PER_CALL + len(encode(_text(part.get("name")))) + len(encode(_text(part.get("input"))))
    if kind == "tool_result":
        inner = part.get("content")
        inner = inner if isinstance(inner, list) else [] if inner is None else [inner]
        return PER_CALL + sum(_part(p, encode) for p in inner)
    if kind in ("thinking", "redacted_thinking", "refusal"):
        return len(encode(_text(part.get({"thinking": "thinking", "refusal": "refusal"}.get(kind, "data")))))
    return len(encode(_text(part)))


def count_message(message: dict) -> int:
    """Tokens one message adds to a ``gpt-4o`` request (``o200k_base``).

    >>> count_message({"role": "user", "content": "Hello world!"})
    7
    """
    encode = encoding().encode_ordinary
    tokens = PER_MESSAGE + len(encode(_text(message.get("role"))))
    content = message.get("content")
    if isinstance(content, list):
        tokens += sum(_part(p, encode) for p in content)
    elif content is not None:
        tokens += len(encode(_text(content)))
    if message.get("name") is not None:
        tokens += PER_NAME + len(encode(_text(message["name"])))
    for key in ("refusal", "reasoning_content", "reasoning", "reasoning_details"):
        if message.get(key) is not None:
            tokens += len(encode(_text(message[key])))
    calls = message.get("tool_calls")
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            tokens += PER_CALL + len(encode(_text(function.get("name")))) + len(encode(_text(function.get("arguments"))))
    function = message.get("function_call")
    if isinstance(function, dict):
        tokens += PER_CALL + len(encode(_text(function.get("name")))) + len(encode(_text(function.get("arguments"))))
    return tokens


def count(messages: Sequence[dict]) -> int:
    """Tokens of a whole request: every message plus the reply priming."""
    return REPLY_PRIMING + sum(map(count_message, messages))


def groups(messages: list[dict]) -> list[set[int]]:
    """Tool-call groups of more than one message (the test oracle's)."""
    return [group for group in _test_oracle().groups(messages) if len(group) > 1]


def protected(messages: list[dict]) -> set[int]:
    """Indices no strategy may drop or alter (the test oracle's SPEC §3.3)."""
    return set(_test_oracle().protected_indices(messages))


def counter_agreement(messages: list[dict], per_message: Sequence[int]) -> int:
    """How many ``messages`` contextfit's counter counts as this judge does
    (``per_message``: the judge's counts)."""
    from .contenders import fresh_counter

    counter = fresh_counter()
    return sum(1 for m, tokens in zip(messages, per_message) if counter.count_message(m) == tokens)


@dataclass(frozen=True, slots=True)
class Facts:
    """What the judge knows about one input, computed once."""

    tokens: int
    protected: frozenset[int]
    protected_tokens: int
    groups: tuple[frozenset[int], ...]
    counter_agrees: int  # messages contextfit's own counter counts the same
    why_protected: dict[int, str]

    @classmethod
    def of(cls, messages: list[dict]) -> "Facts":
        per_message = [count_message(m) for m in messages]
        keep = protected(messages)
        return cls(
            tokens=REPLY_PRIMING + sum(per_message),
            protected=frozenset(keep),
            protected_tokens=REPLY_PRIMING + sum(per_message[i] for i in keep),
            groups=tuple(frozenset(g) for g in groups(messages)),
            counter_agrees=counter_agreement(messages, per_message),
            why_protected=_why_protected(messages, keep),
        )


@dataclass(slots=True)
class Outcome:
    """What a contender decided, in input indices.

    ``kept``: inputs sent unchanged; ``altered``: inputs sent changed
    (shortened, merged); ``sent``: the messages as they would go to the
    provider, for the recount; ``error``: why there is no fit.
    """

    kept: list[int] = field(default_factory=list)
    altered: list[int] = field(default_factory=list)
    sent: list[dict] = field(default_factory=list)
    error: str | None = None
    note: str | None = None  # something the contender said while fitting (a swallowed exception)


@dataclass(frozen=True, slots=True)
class Verdict:
    """The judge's findings for one outcome."""

    tokens: int | None
    over_budget: bool
    split_groups: int
    lost_protected: int
    altered: int
    error: str | None = None
    lost_kinds: dict[str, int] = field(default_factory=dict)  # why the lost blocks were protected
    note: str | None = None



def correct(verdict: dict) -> bool:
    """Whether a verdict (as a dict) found a fit with nothing wrong."""
    return verdict["error"] is None and not (verdict["over_budget"] or verdict["split_groups"] or verdict["lost_protected"])


def judge(facts: Facts, outcome: Outcome, budget: int) -> Verdict:
    """Recount ``outcome.sent`` and check groups and protection."""
    if outcome.error is not None:
        return Verdict(None, False, 0, 0, 0, outcome.error, note=outcome.note)
    tokens = count(outcome.sent)
    present = set(outcome.kept) | set(outcome.altered)
    split = sum(1 for group in facts.groups if group & present and not group <= present)
    lost = sorted(facts.protected - set(outcome.kept))
    kinds: dict[str, int] = {}
    for index in lost:
        kinds[facts.why_protected[index]] = kinds.get(facts.why_protected[index], 0) + 1
    return Verdict(tokens, tokens > budget, split, len(lost), len(outcome.altered), None, kinds, outcome.note)


def _why_protected(messages: list[dict], protected_indices: set[int]) -> dict[int, str]:
    """For each protected index, the plainest reason (for reports, not for checking)."""
    kind_of = _test_oracle()._kind
    chat = [i for i, m in enumerate(messages) if kind_of(m) == "history"]
    current = chat[-1] if chat and messages[chat[-1]].get("role") == "user" else None
    why = {}
    for index in protected_indices:
        message = messages[index]
        meta = message.get("meta") if isinstance(message.get("meta"), dict) else {}
        if index == current:
            why[index] = "current input"
        elif message.get("pinned") is True or meta.get("pinned") is True:
            why[index] = "pinned"
        elif meta.get("required") is True:
            why[index] = "required"
        elif meta.get("kind") in ("character", "persona"):
            why[index] = meta["kind"]
        elif message.get("role") in ("system", "developer"):
            why[index] = "system"
        else:
            why[index] = "in a protected group"
    return why

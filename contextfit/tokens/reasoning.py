"""Reasoning in a request: which of it the provider keeps, and so sends and counts.

Assistant messages can carry the model's reasoning: Anthropic ``thinking`` /
``redacted_thinking`` content parts, OpenAI-style ``reasoning`` parts, or a
``reasoning_content`` / ``reasoning`` / ``reasoning_details`` field (DeepSeek,
vLLM, OpenRouter). The providers document what happens to it in later requests
(sources and quotes in docs/tokenizers.md, "Reasoning"):

* Anthropic: thinking blocks of previous assistant turns are stripped by the
  API and not counted in the context window — ``context_window =
  (input_tokens - previous_thinking_tokens) + current_turn_tokens`` — except
  the current tool-use turn's, which must be sent back with the tool results
  and count. Claude Opus 4.5 and later Opus, Sonnet 4.6 and later Sonnet and
  the 5.5 generation keep the thinking of every earlier turn instead.
* OpenAI (and the rule used for every other provider): reasoning is discarded
  after each turn; within a turn, the reasoning items between function calls
  since the last user message are passed back. DeepSeek likewise drops the
  ``reasoning_content`` of previous turns.

So the *current turn* — every block after the last user message that is not
only tool results — keeps its reasoning; the reasoning of earlier turns is
sent and counted only for a model that keeps it (:func:`keeps_earlier_reasoning`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..inputs.messages import TOOL_RESULT_ROLES, clone, role_of

#: The plan's block kind for reasoning (SPEC 3.2 ``meta.kind``).
REASONING = "reasoning"
#: Content parts that hold reasoning, and message keys that carry it.
REASONING_PARTS = frozenset(("thinking", "redacted_thinking", "reasoning"))
REASONING_KEYS = ("reasoning_content", "reasoning", "reasoning_details")

# claude-opus-4-5, claude-sonnet-4, claude-3-5-haiku, claude-haiku-5-5 ...
_CLAUDE = re.compile(r"claude-(?:(?P<old>\d+(?:-\d+)?)-(?P<oldfamily>opus|sonnet|haiku)|(?P<family>opus|sonnet|haiku)-(?P<version>\d+(?:-\d)?))\b")
#: The first version of each Claude family that keeps earlier turns' thinking.
_KEEPS_FROM = {"opus": (4, 5), "sonnet": (4, 6), "haiku": (5, 5)}


def _is_reasoning_part(part: object) -> bool:
    return type(part) is dict and part.get("type") in REASONING_PARTS


def has_reasoning(message: dict) -> bool:
    """Whether a message carries reasoning (parts or fields).

    >>> has_reasoning({"role": "assistant", "content": "Hi", "reasoning_content": "hmm"})
    True
    """
    content = message.get("content")
    # isinstance, as strip_reasoning reads it: a block has reasoning exactly when that strips some
    if isinstance(content, list) and any(map(_is_reasoning_part, content)):
        return True
    return any(message.get(key) not in (None, "", []) for key in REASONING_KEYS)


def strip_reasoning(message: dict) -> dict | None:
    """A copy of ``message`` without its reasoning, or ``None`` when it has none.

    >>> strip_reasoning({"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"},
    ...                                                   {"type": "text", "text": "Yes."}]})
    {'role': 'assistant', 'content': [{'type': 'text', 'text': 'Yes.'}]}
    """
    content = message.get("content")
    parts = content if isinstance(content, list) else []
    kept = [part for part in parts if not _is_reasoning_part(part)]
    keys = [key for key in REASONING_KEYS if message.get(key) not in (None, "", [])]
    if len(kept) == len(parts) and not keys:
        return None
    copy = {key: value for key, value in message.items() if key not in keys}
    if isinstance(content, list):
        copy["content"] = clone(kept)
    return copy


def reasoning_text(message: dict) -> str:
    """The reasoning a message carries, as readable text (redacted thinking is named, not shown).

    >>> reasoning_text({"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}],
    ...                 "reasoning_content": "Check the date."})
    '[redacted thinking]\\nCheck the date.'
    """
    texts = []
    content = message.get("content")
    for part in content if isinstance(content, list) else ():
        if not _is_reasoning_part(part):
            continue
        if part["type"] == "redacted_thinking":
            texts.append("[redacted thinking]")
        else:
            texts.append(_text_of(part.get("thinking", part.get("summary", part.get("text", part.get("content"))))))
    for key in REASONING_KEYS:
        if message.get(key) not in (None, "", []):
            texts.append(_text_of(message[key]))
    return "\n".join(text for text in texts if text)


def _text_of(value: object) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(_text_of(item) for item in value)
    if isinstance(value, dict):
        return _text_of(value.get("text", value.get("summary", value.get("content", ""))))
    return "" if value is None else str(value)


def keeps_earlier_reasoning(model_id: str, provider: str) -> bool:
    """Whether the model keeps (and counts) the reasoning of earlier turns.

    >>> keeps_earlier_reasoning("claude-sonnet-4", "anthropic"), keeps_earlier_reasoning("claude-opus-4-5", "anthropic")
    (False, True)
    >>> keeps_earlier_reasoning("claude-3-5-haiku", "anthropic"), keeps_earlier_reasoning("o3", "openai")
    (False, False)
    """
    if provider != "anthropic":
        return False
    found = _CLAUDE.search(model_id.lower())
    if found is None:
        return False
    family = found["family"] or found["oldfamily"]
    numbers = tuple(int(n) for n in (found["version"] or found["old"]).split("-"))
    version = (numbers[0], numbers[1] if len(numbers) > 1 else 0)
    return version >= _KEEPS_FROM[family]


def only_tool_results(message: dict) -> bool:
    """Whether a message is only tool results: a ``tool`` / ``function`` message, or a
    user message whose every content part is a ``*tool_result`` (no user input in it).

    >>> only_tool_results({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]})
    True
    """
    if role_of(message) in TOOL_RESULT_ROLES:
        return True
    content = message.get("content")
    return (
        type(content) is list
        and bool(content)
        and all(type(part) is dict and str(part.get("type", "")).endswith("tool_result") for part in content)
    )


def current_turn_start(blocks: Sequence[dict]) -> int:
    """The position of the first block of the current turn: just after the last
    user message that is not only tool results (0 when there is none).

    >>> current_turn_start([{"role": "user", "content": "Fix it."},
    ...                     {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "edit", "input": {}}]},
    ...                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}]}])
    1
    """
    for position in range(len(blocks) - 1, -1, -1):
        block = blocks[position]
        if role_of(block) == "user" and not only_tool_results(block):
            return position + 1
    return 0


def provider_view(blocks: list[dict], keep_earlier: bool) -> tuple[list[dict], dict[int, dict]]:
    """``blocks`` with the reasoning the provider drops taken out (not sent, not
    counted), and the originals of the blocks that lost it, by the id of the copy.

    >>> blocks = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello", "reasoning_content": "greet"},
    ...           {"role": "user", "content": "Bye"}]
    >>> sent, originals = provider_view(blocks, keep_earlier=False)
    >>> sent[1], list(originals.values()) == [blocks[1]]
    ({'role': 'assistant', 'content': 'Hello'}, True)
    """
    if keep_earlier:
        return blocks, {}
    out, originals, _ = extended_view([], {}, blocks, keep_earlier)
    return out, originals


def extended_view(
    sent: list[dict], originals: dict[int, dict], new: Sequence[dict], keep_earlier: bool
) -> tuple[list[dict], dict[int, dict], int]:
    """:func:`provider_view` of a chat that grew: ``sent`` and ``originals``
    are the provider view of its first blocks, ``new`` the blocks added at the
    end. Only the blocks from the old current turn's start on can change (a
    new user message ends that turn, and its reasoning is dropped), so a chat
    with reasoning grows in the time of its new turn, not of its length.

    Returns the view of the whole, its originals (a new dict: the old one is
    not changed) and the first position whose block differs from ``sent``'s
    (``len(sent)`` when only blocks were added).

    >>> turn = [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello", "reasoning_content": "greet"}]
    >>> sent, originals = provider_view(turn, keep_earlier=False)
    >>> grown, grown_originals, changed = extended_view(sent, originals, [{"role": "user", "content": "Bye"}], False)
    >>> grown == provider_view([*turn, {"role": "user", "content": "Bye"}], False)[0], changed
    (True, 1)
    """
    blocks = [*sent, *new]
    if keep_earlier:
        return blocks, originals, len(sent)
    # User blocks are never stripped, so the turn starts are the same in the view and in the originals.
    old_start, start = current_turn_start(sent), current_turn_start(blocks)
    grown, changed = dict(originals), len(sent)
    for position in range(old_start, start):  # before old_start, the view has dropped what it drops
        block = blocks[position]
        if role_of(block) != "assistant":
            continue
        copy = strip_reasoning(block)
        if copy is not None:
            blocks[position] = copy
            grown[id(copy)] = block
            changed = min(changed, position)
    return blocks, grown, changed

"""The template stage: blocks in the provider's own message shape, and their count.

* ``openai`` — Chat Completions messages. contextfit's extras (``meta``,
  ``pinned``, ``id``) are removed; ``toolCallId`` / ``callId`` become
  ``tool_call_id``; Anthropic content parts are translated (``tool_use`` to
  ``tool_calls``, ``tool_result`` to ``tool`` messages; thinking and
  redacted thinking from another provider are not sent).
* ``anthropic`` — Messages API: the system-role blocks go into the separate
  ``system`` text, in prompt order — except a summary block, which stays in
  its place (just before the current input) as user text; OpenAI
  ``tool_calls`` become ``tool_use`` parts and ``tool`` messages
  ``tool_result`` parts; consecutive messages of one role are merged, as the
  API requires alternation. OpenAI ``reasoning`` parts (Responses reasoning
  items) are not sent.

:class:`SentCounter` counts blocks as they are sent: ``counter(blocks)`` is
the count of exactly what :func:`render` makes of them — the provider
messages, plus for Anthropic the system text counted as one system message.
The pipeline fits with it, so ``prompt_tokens`` is the count of what is sent.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..inputs.messages import (
    LINK_KEYS,
    SUMMARY,
    SYSTEM_ROLES,
    TOOL_RESULT_ROLES,
    kind_of,
    message_text,
    part_text,
    role_of,
)
from ..caches import register
from .chat_counter import TokenCounter

SHAPES = ("openai", "anthropic")
_EXTRAS = ("meta", "pinned", "id", "toolCallId", "callId")
_THINKING = ("thinking", "redacted_thinking")
_OPENAI_REASONING = "reasoning"  # a Responses reasoning item (or an OpenAI-style reasoning part)


@dataclass(frozen=True, slots=True)
class ProviderPrompt:
    """What is sent: ``messages``, plus ``system`` for Anthropic (``None`` for OpenAI)."""

    template: str
    messages: list[dict]
    system: str | None = None


@dataclass(frozen=True, slots=True)
class Traced:
    """A rendered prompt and where each part of it came from.

    ``sources[j]`` are the positions (in the blocks rendered) of the blocks
    provider message ``j`` is made of; ``system_sources`` those folded into
    the Anthropic system text; ``unsent`` maps a block position to the part
    types the template left out of it (thinking from another provider).
    """

    prompt: ProviderPrompt
    sources: list[tuple[int, ...]]
    system_sources: tuple[int, ...] = ()
    unsent: dict[int, list[str]] = field(default_factory=dict)


def render(blocks: list[dict], template: str) -> ProviderPrompt:
    """The provider request body's prompt part for ``blocks`` (in prompt order).

    >>> render([{"role": "system", "content": "Be brief.", "meta": {"id": "s"}},
    ...         {"role": "user", "content": "Hi"}], "anthropic")
    ProviderPrompt(template='anthropic', messages=[{'role': 'user', 'content': [{'type': 'text', 'text': 'Hi'}]}], system='Be brief.')
    """
    return trace(blocks, template).prompt


def trace(blocks: list[dict], template: str) -> Traced:
    """:func:`render`, with the blocks each provider message came from."""
    if template == "anthropic":
        return _anthropic(blocks)
    messages: list[dict] = []
    sources: list[tuple[int, ...]] = []
    unsent: dict[int, list[str]] = {}
    for position, block in enumerate(blocks):
        rendered = _openai(block)
        messages.extend(rendered)
        sources.extend([(position,)] * len(rendered))
        dropped = _thinking_parts(block)
        if dropped:
            unsent[position] = dropped
    return Traced(ProviderPrompt("openai", messages), sources, (), unsent)


def _link_id(block: dict) -> Any:
    for key in LINK_KEYS:
        if block.get(key) not in (None, ""):
            return block[key]
    return None


def _thinking_parts(block: dict) -> list[str]:
    content = block.get("content")
    if type(content) is not list:
        return []
    return [part["type"] for part in content if isinstance(part, dict) and part.get("type") in _THINKING]


def _openai(block: dict) -> list[dict]:
    out = {key: value for key, value in block.items() if key not in _EXTRAS}
    link = _link_id(block)
    if link is not None and out.get("role") in TOOL_RESULT_ROLES:
        out["tool_call_id"] = link
    content = out.get("content")
    if not isinstance(content, list) or not any(
        isinstance(part, dict) and str(part.get("type", "")).endswith(("tool_use", "tool_result", "thinking"))
        for part in content
    ):
        return [out]
    # Anthropic parts in an OpenAI request: translate them.
    texts, calls, results = [], [], []
    for part in content:
        kind = str(part.get("type", "")) if isinstance(part, dict) else ""
        if kind.endswith("tool_use"):
            arguments = json.dumps(part.get("input", {}), ensure_ascii=False, sort_keys=True)
            calls.append({"id": part.get("id"), "type": "function", "function": {"name": part.get("name", "tool"), "arguments": arguments}})
        elif kind.endswith("tool_result"):
            results.append({"role": "tool", "tool_call_id": part.get("tool_use_id"), "content": part_text(part)})
        elif kind in _THINKING:
            continue  # reasoning from another provider is not sent
        else:
            texts.append(part_text(part))
    rendered = list(results)
    text = "\n".join(t for t in texts if t)
    if calls or text or not results:
        message = {**out, "content": text or None}
        if calls:
            message["tool_calls"] = calls
        rendered.append(message)
    return rendered


def _in_system(block: dict, role: str) -> bool:
    """Whether an Anthropic request carries the block in its ``system`` text:
    every system-role block but a summary, which keeps its place in the chat."""
    return role in SYSTEM_ROLES and kind_of(block) != SUMMARY


def _anthropic(blocks: list[dict]) -> Traced:
    system: list[str] = []
    system_sources: list[int] = []
    messages: list[dict] = []
    sources: list[tuple[int, ...]] = []
    for position, block in enumerate(blocks):
        role = role_of(block)
        if _in_system(block, role):
            system.append(message_text(block))
            system_sources.append(position)
            continue
        role, parts = _anthropic_parts(block, role)
        if not parts:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(parts)
            sources[-1] = (*sources[-1], position)
        else:
            messages.append({"role": role, "content": parts})
            sources.append((position,))
    prompt = ProviderPrompt("anthropic", messages, "\n\n".join(s for s in system if s) or None)
    return Traced(prompt, sources, tuple(system_sources))


def _anthropic_parts(block: dict, role: str) -> tuple[str, list[dict]]:
    content = block.get("content")
    if role in TOOL_RESULT_ROLES:
        text = content if isinstance(content, str) else message_text(block)
        return "user", [{"type": "tool_result", "tool_use_id": _link_id(block), "content": text}]
    parts: list[dict] = []
    if isinstance(content, str):
        if content:
            parts.append({"type": "text", "text": content})
    elif isinstance(content, list):
        parts.extend(
            dict(part) if isinstance(part, dict) else {"type": "text", "text": str(part)}
            for part in content
            if not (isinstance(part, dict) and part.get("type") == _OPENAI_REASONING)  # OpenAI's reasoning: not Anthropic's to read
        )
    for call in block.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        arguments = function.get("arguments")
        try:
            data = json.loads(arguments) if isinstance(arguments, str) else (arguments or {})
        except ValueError:
            data = {"arguments": arguments}
        parts.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name", "tool"), "input": data})
    return ("assistant" if role == "assistant" else "user"), parts


class SentCounter:
    """``count_tokens(blocks)``: the tokens of what ``template`` sends for ``blocks``.

    ``counter(blocks)`` renders the blocks and counts the provider messages
    (plus, for Anthropic, the system text as one system message) with a
    profile's :class:`~contextfit.tokens.chat_counter.TokenCounter`. ``count_message(block)``
    counts one block the same way, so parts a template drops cost nothing.
    For OpenAI the count of a list is the sum of its blocks' counts
    (``additive``); for Anthropic merged messages and the joined system text
    cost a little less than their parts, and the engine recounts the whole.

    >>> from contextfit.tokens.chat_counter import token_counter
    >>> thinking = {"role": "assistant", "content": [{"type": "thinking", "thinking": "Hmm " * 50},
    ...                                              {"type": "text", "text": "Yes."}]}
    >>> sent, plain = sent_counter(token_counter("gpt-4o"), "openai"), token_counter("gpt-4o")
    >>> sent.count_message(thinking), plain.count_message(thinking)
    (6, 57)
    """

    __slots__ = ("__weakref__", "additive", "base_tokens", "counter", "template")

    def __init__(self, counter: TokenCounter, template: str) -> None:
        if template not in SHAPES:
            raise ValueError(f"template must be one of {', '.join(SHAPES)}, got {template!r}")
        self.counter = counter
        self.template = template
        self.base_tokens: int = counter.base_tokens
        self.additive = template == "openai" and counter.additive

    def __repr__(self) -> str:
        return f"SentCounter({self.counter!r}, {self.template!r})"

    def __call__(self, blocks: Iterable[dict]) -> int:
        """Tokens of the request ``blocks`` make, reply priming included."""
        prompt = render(list(blocks), self.template)
        return self.counter(prompt.messages) + self.system_tokens(prompt.system)

    def system_tokens(self, system: str | None) -> int:
        """What the Anthropic ``system`` text costs: one system message."""
        return self.counter.count_message({"role": "system", "content": system}) if system else 0

    def count_message(self, block: dict) -> int:
        """Tokens one block adds to the request, as the template sends it."""
        count = self.counter.count_message
        content = block.get("content")
        if self.template == "openai":
            if content.__class__ is not list and "toolCallId" not in block and "callId" not in block:
                return count(block)  # sent as it is, less the keys no counter reads
            return sum(map(count, _openai(block)))
        role = role_of(block)
        if _in_system(block, role):
            return self.system_tokens(message_text(block))
        if content.__class__ is str and role not in TOOL_RESULT_ROLES and not block.get("tool_calls"):
            return count({"role": "assistant" if role == "assistant" else "user", "content": content}) if content else 0
        role, parts = _anthropic_parts(block, role)
        return count({"role": role, "content": parts}) if parts else 0


    def count_joined(self, block: dict, parts: Sequence[str]) -> int:
        """``count_message({**block, "content": "".join(parts)})``; for OpenAI, where such a
        block is sent as it is, from the parts' counts (:meth:`TokenCounter.count_joined`)."""
        if self.template == "openai" and "toolCallId" not in block and "callId" not in block:
            return self.counter.count_joined(block, parts)
        return self.count_message({**block, "content": "".join(parts)})


_SENT: "weakref.WeakKeyDictionary[TokenCounter, dict[str, SentCounter]]" = weakref.WeakKeyDictionary()
_SENT_LOCK = threading.Lock()


def _forget_sent() -> None:
    with _SENT_LOCK:
        _SENT.clear()


register("template.sent_counters", _SENT, clear=_forget_sent)


def sent_counter(counter: TokenCounter, template: str) -> SentCounter:
    """The :class:`SentCounter` for ``counter`` and ``template`` (one object per
    pair, so the engine's per-counter caches carry over between fits)."""
    with _SENT_LOCK:
        per_template = _SENT.setdefault(counter, {})
        found = per_template.get(template)
        if found is None:
            found = per_template[template] = SentCounter(counter, template)
        return found

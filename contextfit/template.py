"""The template stage: blocks in the provider's own message shape.

* ``openai`` — Chat Completions messages. contextfit's extras (``meta``,
  ``pinned``, ``id``) are removed; ``toolCallId`` / ``callId`` become
  ``tool_call_id``; Anthropic content parts are translated (``tool_use`` to
  ``tool_calls``, ``tool_result`` to ``tool`` messages; thinking is not sent).
* ``anthropic`` — Messages API: every system-role block goes into the
  separate ``system`` text, in prompt order; OpenAI ``tool_calls`` become
  ``tool_use`` parts and ``tool`` messages ``tool_result`` parts; consecutive
  messages of one role are merged, as the API requires alternation.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from . import messages as msg

TEMPLATES = ("openai", "anthropic")
_EXTRAS = ("meta", "pinned", "id", "toolCallId", "callId")


@dataclass(frozen=True, slots=True)
class ProviderPrompt:
    """What is sent: ``messages``, plus ``system`` for Anthropic (``None`` for OpenAI)."""

    template: str
    messages: list[dict]
    system: str | None = None


def render(blocks: list[dict], template: str) -> ProviderPrompt:
    """The provider request body's prompt part for ``blocks`` (in prompt order)."""
    if template == "anthropic":
        return _anthropic(blocks)
    return ProviderPrompt("openai", [out for block in blocks for out in _openai(block)])


def _link_id(block: dict) -> Any:
    for key in msg.LINK_KEYS:
        if block.get(key) not in (None, ""):
            return block[key]
    return None


def _openai(block: dict) -> list[dict]:
    out = {key: value for key, value in block.items() if key not in _EXTRAS}
    link = _link_id(block)
    if link is not None and out.get("role") in msg.TOOL_RESULT_ROLES:
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
            results.append({"role": "tool", "tool_call_id": part.get("tool_use_id"), "content": msg.part_text(part)})
        elif kind in ("thinking", "redacted_thinking"):
            continue  # reasoning from another provider is not sent
        else:
            texts.append(msg.part_text(part))
    rendered = list(results)
    text = "\n".join(t for t in texts if t)
    if calls or text or not results:
        message = {**out, "content": text or None}
        if calls:
            message["tool_calls"] = calls
        rendered.append(message)
    return rendered


def _anthropic(blocks: list[dict]) -> ProviderPrompt:
    system: list[str] = []
    messages: list[dict] = []
    for block in blocks:
        role = msg.role_of(block)
        if role in msg.SYSTEM_ROLES:
            system.append(msg.message_text(block))
            continue
        role, parts = _anthropic_parts(block, role)
        if not parts:
            continue
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(parts)
        else:
            messages.append({"role": role, "content": parts})
    return ProviderPrompt("anthropic", messages, "\n\n".join(s for s in system if s) or None)


def _anthropic_parts(block: dict, role: str) -> tuple[str, list[dict]]:
    content = block.get("content")
    if role in msg.TOOL_RESULT_ROLES:
        text = content if isinstance(content, str) else msg.message_text(block)
        return "user", [{"type": "tool_result", "tool_use_id": _link_id(block), "content": text}]
    parts: list[dict] = []
    if isinstance(content, str):
        if content:
            parts.append({"type": "text", "text": content})
    elif isinstance(content, list):
        parts.extend(dict(part) if isinstance(part, dict) else {"type": "text", "text": str(part)} for part in content)
    for call in block.get("tool_calls") or []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        arguments = function.get("arguments")
        try:
            data = json.loads(arguments) if isinstance(arguments, str) else (arguments or {})
        except ValueError:
            data = {"arguments": arguments}
        parts.append({"type": "tool_use", "id": call.get("id"), "name": function.get("name", "tool"), "input": data})
    return ("assistant" if role == "assistant" else "user"), parts

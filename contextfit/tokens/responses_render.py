"""A plan's Chat Completions messages as OpenAI Responses API items, to send what was fitted to ``/v1/responses``.

A plan renders provider messages in the Chat Completions shape (its
``provider_messages``); a conversation imported from a Responses request
keeps its current turn's reasoning there as ``reasoning`` content parts.
:func:`responses_input` turns those messages into ``input`` items —
messages, ``reasoning`` items before the assistant turn they belong to,
``function_call`` and ``function_call_output`` items — and
:func:`responses_tools` the tool definitions into the flat Responses form.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from ..inputs.messages import LINK_KEYS, TOOL_RESULT_ROLES, role_of
from .reasoning_items import REASONING_ITEM


def responses_input(messages: Iterable[Mapping]) -> list[dict]:
    """Responses ``input`` items for Chat Completions ``messages``.

    >>> items = responses_input([
    ...     {"role": "user", "content": "Weather in Oslo?"},
    ...     {"role": "assistant", "content": [{"type": "reasoning", "id": "rs_1", "summary": []}],
    ...      "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{}"}}]},
    ...     {"role": "tool", "tool_call_id": "c1", "content": "-3 C"}])
    >>> [item.get("type", "message") for item in items]
    ['message', 'reasoning', 'function_call', 'function_call_output']
    """
    items: list[dict] = []
    for message in messages:
        role = role_of(dict(message))
        if role in TOOL_RESULT_ROLES:
            link = next((message[key] for key in LINK_KEYS if message.get(key) not in (None, "")), None)
            items.append({"type": "function_call_output", "call_id": link, "output": _output(message.get("content"))})
            continue
        content = message.get("content")
        parts = content if isinstance(content, list) else []
        items.extend(dict(part) for part in parts if isinstance(part, Mapping) and part.get("type") == REASONING_ITEM)
        rest = [part for part in parts if not (isinstance(part, Mapping) and part.get("type") == REASONING_ITEM)]
        if isinstance(content, str) and content:
            items.append({"type": "message", "role": role, "content": content})
        elif rest:
            items.append({"type": "message", "role": role, "content": [_part(part, role) for part in rest]})
        for call in message.get("tool_calls") or ():
            function = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(function, Mapping):
                items.append({
                    "type": "function_call", "call_id": call.get("id"),
                    "name": function.get("name"), "arguments": function.get("arguments") or "{}",
                })
    return items


def responses_tools(tools: Iterable[Mapping]) -> list[dict]:
    """Tool definitions in the flat Responses form.

    >>> responses_tools([{"type": "function", "function": {"name": "ping", "parameters": {}}},
    ...                  {"type": "function", "function": {"name": "rates"}, "defer_loading": True}])
    [{'type': 'function', 'name': 'ping', 'parameters': {}}, {'type': 'function', 'name': 'rates', 'defer_loading': True}]
    """
    out = []
    for tool in tools:
        if tool.get("type") == "namespace" and "tools" not in tool:
            continue  # a namespace's own entry (its functions follow it, flattened)
        function = tool.get("function")
        if isinstance(function, Mapping):
            out.append({"type": "function", **function, **({"defer_loading": True} if tool.get("defer_loading") else {})})
        else:
            out.append(dict(tool))
    return out


def _part(part: Any, role: str) -> Any:
    if not isinstance(part, Mapping):
        return {"type": "input_text", "text": str(part)}
    kind = part.get("type")
    if kind == "text":
        return {"type": "output_text" if role == "assistant" else "input_text", "text": part.get("text", "")}
    if kind == "image_url":
        inner = part.get("image_url")
        url, detail = (inner.get("url"), inner.get("detail") or "auto") if isinstance(inner, Mapping) else (inner, "auto")
        return {"type": "input_image", "image_url": url, "detail": detail}
    if kind == "file" and isinstance(part.get("file"), Mapping):
        return {"type": "input_file", **part["file"]}
    return dict(part)


def _output(content: Any) -> Any:
    if isinstance(content, list):
        return [_part(part, "user") for part in content]
    return "" if content is None else content

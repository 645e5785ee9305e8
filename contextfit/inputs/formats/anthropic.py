"""Anthropic Messages: ``{"system": ..., "messages": [...]}`` with content blocks.

The top-level ``system`` (a string or a list of text blocks) becomes a
leading system message; every message keeps its content blocks exactly
(``text``, ``tool_use``, ``tool_result``, ``thinking``, ``server_tool_use``,
``*_tool_result`` ...). Tool calls link by ``tool_use.id`` /
``tool_result.tool_use_id``, which the fitting engine reads itself.
"""

from __future__ import annotations

from typing import Any

from contextfit.errors import InvalidConversation
from contextfit.inputs.messages import SYSTEM

from .conversation import Conversation, with_meta
from .fields import as_model, child, describe, expect_dict, expect_role, wrong_type
from .openai import RESPONSE_WARNING, request_warnings
from .source import Parsed

ROLES = ("user", "assistant", "system")


def import_anthropic(parsed: Parsed) -> Conversation:
    """Read an Anthropic Messages request body (or a bare list of its messages)."""
    value = parsed.value
    root = parsed.root
    if isinstance(value, list):
        body: dict = {}
        items = [(parsed.item_path(index), item) for index, item in enumerate(value)]
    elif isinstance(value, dict) and isinstance(value.get("messages"), list):
        body = value
        base = child(root, "messages")
        items = [(child(base, index), item) for index, item in enumerate(value["messages"])]
    elif isinstance(value, dict) and "role" in value:
        # A single message, or a response body ({"type": "message", "role", "content", "usage", ...}).
        message = {key: value[key] for key in ("role", "content") if key in value}
        check_message(message, root)
        meta_id = value.get("id") if isinstance(value.get("id"), str) and value.get("id") else "m0"
        warnings = [RESPONSE_WARNING] if value.get("type") == "message" else []
        return Conversation(
            messages=[with_meta(message, meta_id)], format="anthropic", model=as_model(value.get("model")), warnings=warnings
        )
    else:
        raise InvalidConversation(
            f'This is not an Anthropic Messages request: expected an object with a "messages" list '
            f"(got {describe(value)}).",
            location=root,
        )
    messages: list[dict] = []
    system = system_text(body.get("system"), child(root, "system"))
    if system:
        messages.append({"role": "system", "content": system, "meta": {"id": "system", "kind": SYSTEM}})
    for index, (path, item) in enumerate(items):
        messages.append(with_meta(check_message(item, path), f"m{index}"))
    warnings = request_warnings(body, root)
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        warnings.append(f"{child(root, 'tools')} is {describe(tools)}, not a list; no tools were read.")
    return Conversation(
        messages=messages,
        tools=[tool for tool in tools if isinstance(tool, dict)] if isinstance(tools, list) else [],
        format="anthropic",
        model=as_model(body.get("model")),
        warnings=warnings,
    )


def system_text(system: Any, path: str) -> str:
    """The text of a top-level ``system``: a string, or text blocks joined by newlines."""
    if system is None or isinstance(system, str):
        return system or ""
    if not isinstance(system, list):
        raise wrong_type(path, "a string or a list of text blocks", system)
    texts = []
    for index, block in enumerate(system):
        block_path = child(path, index)
        expect_dict(block, block_path)
        if block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise InvalidConversation(
                f'{block_path} must be a text block ({{"type": "text", "text": ...}}).', location=block_path
            )
        texts.append(block["text"])
    return "\n".join(texts)


def check_message(message: Any, path: str) -> dict:
    """``message`` when it is a usable Anthropic message, else a clear error."""
    expect_role(expect_dict(message, path), path, ROLES)
    content = message.get("content")
    content_path = child(path, "content")
    if isinstance(content, str):
        return message
    if not isinstance(content, list):
        raise wrong_type(content_path, "a string or a list of content blocks", content)
    for index, block in enumerate(content):
        block_path = child(content_path, index)
        expect_dict(block, block_path)
        if not isinstance(block.get("type"), str):
            raise wrong_type(child(block_path, "type"), "a string", block.get("type"))
    return message

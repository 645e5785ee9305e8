"""Which importer reads a piece of JSON: the detection rules in one place.

Rules, first match wins, on the record to import (for a dataset, its first
record):

- a contextfit bundle (``"contextfit": "conversation"``, or ``messages`` with
  a ``character``, ``persona``, ``lorebook`` or ``memory`` beside them);
- an object with ``messages``: Anthropic when it has a top-level ``system``,
  Anthropic-only content blocks or tools with ``input_schema``;
  ShareGPT when its content parts are LLaMA-Factory ``{"type", "value"}``;
  else OpenAI;
- an OpenAI Responses request (``input`` items, or an ``input`` string beside
  ``model`` / ``instructions``) or response (``object: response`` with ``output``);
- ``conversations``: ShareGPT; a DialogStudio ``log``: ShareGPT;
- ``spec: chara_card_*`` or card fields (``first_mes`` ...): character card;
- a SillyTavern metadata line or ``mes`` messages: SillyTavern chat;
- a response body (``choices``; ``type: message``): its reply, as OpenAI / Anthropic;
- ``entries``: World Info;
- ``chosen`` transcripts (HH-RLHF): text;
- a list holding Responses-only items or parts (``function_call``,
  ``reasoning``, ``input_text`` ...): OpenAI Responses;
- a list of ``role`` messages: OpenAI (or Anthropic, by its blocks);
  a list of ``from``/``value`` turns: ShareGPT.
"""

from __future__ import annotations

from typing import Any

from contextfit.errors import InvalidConversation

from . import responses, sharegpt, sillytavern
from .cards import is_card
from .fields import describe, plural
from .source import Parsed
from .worldinfo import is_world_info

# Keys that make a list item a dataset record (one whole conversation) rather than a message.
RECORD_KEYS = ("messages", "conversations", "conversation", "chosen", "log")
_ANTHROPIC_ONLY_BLOCKS = frozenset({"thinking", "redacted_thinking", "document", "search_result", "container_upload"})


MARKER = "conversation"
PARTS = ("character", "persona", "lorebook", "memory")


def is_bundle(value: Any) -> bool:
    """Whether a JSON object is a contextfit bundle."""
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        return False
    return value.get("contextfit") == MARKER or any(key in value for key in PARTS)


def select_record(parsed: Parsed) -> tuple[Parsed, list[str]]:
    """The first record of a dataset (a list of conversations), with a warning; else ``parsed``."""
    value = parsed.value
    if not isinstance(value, list) or not value:
        return parsed, []
    first = value[0]
    if not isinstance(first, dict) or "role" in first or "from" in first or "mes" in first:
        return parsed, []
    if not any(key in first for key in RECORD_KEYS):
        return parsed, []
    warnings = []
    if len(value) > 1:
        warnings.append(
            f"This file holds {plural(len(value), 'conversation')}; only the first "
            f"({parsed.item_path(0).removesuffix(': $')}) was loaded."
        )
    return parsed.record(0), warnings


def detect_value(value: Any, root: str = "$") -> str:
    """The format name for a JSON value (already narrowed to one record)."""
    if isinstance(value, dict):
        found = _detect_object(value)
    elif isinstance(value, list):
        found = _detect_list(value, root)
    else:
        raise InvalidConversation(
            f"This JSON is {describe(value)}, not a conversation, character card or lorebook.", location=root
        )
    if found is None:
        keys = ", ".join(repr(key) for key in list(value)[:8])
        raise InvalidConversation(
            "This JSON is not a format contextfit knows. Expected a list of messages, "
            '{"messages": [...]}, {"conversations": [...]}, a SillyTavern chat, a character card, '
            f'a Responses request ({{"input": ...}}) or a World Info file ("entries"). Its keys are: {keys or "none"}.',
            location=root,
        )
    return found


def _detect_object(value: dict) -> str | None:
    if is_bundle(value):
        return "contextfit"
    if "messages" in value and isinstance(value["messages"], list):
        return messages_format(value["messages"], value)
    if responses.is_responses_body(value):
        return responses.FORMAT
    if "conversations" in value or "conversation" in value or sharegpt.is_dialogstudio(value):
        return "sharegpt"
    if is_card(value):
        return "character-card"
    if sillytavern.is_header(value) or sillytavern.is_message(value):
        return "sillytavern-chat"
    if isinstance(value.get("choices"), list):
        return "openai"  # a Chat Completions response body
    if value.get("type") == "message" and "role" in value:
        return "anthropic"  # a Messages response body
    if is_world_info(value):
        return "world-info"
    if "chosen" in value:
        return "text"
    if "role" in value and ("content" in value or "tool_calls" in value):
        return messages_format([value], {})
    return None


def _detect_list(value: list, root: str) -> str | None:
    if not value:
        raise InvalidConversation("This JSON list is empty: there are no messages to read.", location=root)
    first = value[0]
    if sillytavern.is_header(first) or any(sillytavern.is_message(item) for item in value[:3]):
        return "sillytavern-chat"
    if responses.is_item_list(value) and messages_format(value, {}) != "anthropic":  # Anthropic bodies say type: message too
        return responses.FORMAT
    if isinstance(first, dict) and "role" in first:
        return messages_format(value, {})
    if isinstance(first, dict) and "from" in first:
        return "sharegpt"
    if not isinstance(first, dict):
        raise InvalidConversation(
            f"This JSON list holds {describe(first)} items, not messages (objects with a role).",
            location=f"{root}[0]",
        )
    return None


def messages_format(messages: list, body: dict) -> str:
    """``anthropic``, ``sharegpt`` (LLaMA-Factory typed parts) or ``openai`` for a messages list."""
    if body.get("system") is not None or "anthropic_version" in body:
        return "anthropic"
    tools = body.get("tools")
    if isinstance(tools, list) and any(isinstance(tool, dict) and "input_schema" in tool for tool in tools):
        return "anthropic"
    if sharegpt.is_typed_messages(messages):
        return "sharegpt"
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list) and any(_is_anthropic_block(part) for part in content):
            return "anthropic"
    return "openai"


def _is_anthropic_block(part: Any) -> bool:
    if not isinstance(part, dict):
        return False
    kind = part.get("type")
    if not isinstance(kind, str):
        return False
    if kind.endswith("tool_use") or kind.endswith("tool_result") or kind in _ANTHROPIC_ONLY_BLOCKS:
        return True
    return kind == "image" and "source" in part

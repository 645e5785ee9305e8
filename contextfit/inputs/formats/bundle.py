"""contextfit's own format: a chat with everything around it, in one document.

The dashboard's samples and its "download" use it, and it is what the
preview endpoint takes inline::

    {"contextfit": "conversation", "model": "gpt-4o",
     "messages": [...],                 OpenAI- or Anthropic-shaped messages
     "character": {...},                a character card (V1, V2 or V3 JSON)
     "persona": "...",                  the user's persona
     "lorebook": {"entries": {...}},    World Info / character_book JSON
     "memory": ["...", {"content": "...", "relevance": 0.8}],
     "tools": [...],
     "settings": {"contextLimit": 8000, "responseReserve": 1000}}

Only ``messages`` is required (with ``"contextfit": "conversation"``, or
with one of ``character``, ``persona``, ``lorebook``, ``memory`` beside it).
"""

from __future__ import annotations

from typing import Any

from contextfit.errors import InvalidConversation

from .anthropic import import_anthropic
from .cards import read_card
from .detect import messages_format
from .conversation import Conversation
from .fields import as_model, child, describe, expect_dict, expect_list
from .openai import import_openai
from .source import Parsed

def import_bundle(parsed: Parsed) -> Conversation:
    """Read a bundle: its messages through the OpenAI or Anthropic importer, the rest field by field."""
    value = expect_dict(parsed.value, parsed.root)
    root = parsed.root
    body = {"messages": expect_list(value.get("messages"), child(root, "messages"))}
    for key in ("tools", "system"):
        if key in value:
            body[key] = value[key]
    inner = Parsed(body, None, root)
    chat = import_anthropic(inner) if messages_format(body["messages"], body) == "anthropic" else import_openai(inner)
    warnings = list(chat.warnings)
    character = None
    lorebook = None
    if value.get("character") is not None:
        character, card_warnings = read_card(value["character"], child(root, "character"))
        warnings.extend(card_warnings)
        lorebook = character.character_book
    if value.get("lorebook") is not None:
        from contextfit.inputs.lorebook import parse_world_info

        lorebook = parse_world_info(value["lorebook"], location=child(root, "lorebook"))
    persona = value.get("persona")
    if persona is not None and not isinstance(persona, str):
        where = child(root, "persona")
        raise InvalidConversation(f"{where} must be a string (got {describe(persona)}).", location=where)
    memory = _memory(value.get("memory"), child(root, "memory"))
    settings = value.get("settings", {})
    expect_dict(settings, child(root, "settings"))
    return Conversation(
        messages=chat.messages,
        character=character,
        persona=persona,
        lorebook=lorebook,
        memory=memory,
        tools=chat.tools,
        format="contextfit",
        model=as_model(value.get("model")) or chat.model,
        warnings=warnings,
        settings=dict(settings),
    )


def _memory(value: Any, path: str) -> list:
    if value is None:
        return []
    items = expect_list(value, path)
    for index, item in enumerate(items):
        ok = isinstance(item, str) or (isinstance(item, dict) and isinstance(item.get("content"), str))
        if not ok:
            where = child(path, index)
            raise InvalidConversation(
                f'{where} must be a string or an object with a "content" string (got {describe(item)}).', location=where
            )
    return list(items)

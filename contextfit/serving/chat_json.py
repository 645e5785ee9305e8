"""A :class:`~contextfit.Conversation` as a stored chat: messages plus JSON settings.

A chat keeps its character, persona, lorebook, memory and tools in its
settings, as the JSON the importers read: the card as a V2 card, the
lorebook as World Info. Reading that JSON back gives the same card and book
(``source_format`` and a V1 card's ``spec`` aside), which the tests check
on every sample.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from ..pipeline.settings import conversation_parts

_ENTRY_FIELDS = (  # LorebookEntry attribute -> World Info key
    ("uid", "uid"), ("keys", "key"), ("secondary_keys", "keysecondary"), ("content", "content"),
    ("comment", "comment"), ("selective", "selective"), ("selective_logic", "selectiveLogic"),
    ("constant", "constant"), ("disabled", "disable"), ("order", "order"), ("position", "position"),
    ("depth", "depth"), ("role", "role"), ("case_sensitive", "caseSensitive"),
    ("match_whole_words", "matchWholeWords"), ("scan_depth", "scanDepth"), ("use_regex", "use_regex"),
    ("probability", "probability"), ("use_probability", "useProbability"), ("group", "group"),
    ("group_override", "groupOverride"), ("group_weight", "groupWeight"),
    ("use_group_scoring", "useGroupScoring"), ("exclude_recursion", "excludeRecursion"),
    ("prevent_recursion", "preventRecursion"), ("delay_until_recursion", "delayUntilRecursion"),
    ("sticky", "sticky"), ("cooldown", "cooldown"), ("delay", "delay"), ("vectorized", "vectorized"),
    ("display_index", "displayIndex"),
)  # fmt: skip
_BOOK_FIELDS = (
    ("name", "name"), ("scan_depth", "scan_depth"), ("case_sensitive", "case_sensitive"),
    ("match_whole_words", "match_whole_words"), ("recursive", "recursive_scanning"), ("token_budget", "token_budget"),
)  # fmt: skip
_CARD_FIELDS = (
    ("name", "name"), ("description", "description"), ("personality", "personality"), ("scenario", "scenario"),
    ("first_message", "first_mes"), ("example_dialogue", "mes_example"), ("system_prompt", "system_prompt"),
    ("post_history_instructions", "post_history_instructions"), ("creator_notes", "creator_notes"),
    ("alternate_greetings", "alternate_greetings"), ("tags", "tags"),
)  # fmt: skip


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple):
        return list(value)
    return value


def _fields(obj: Any, names: Sequence[tuple[str, str]]) -> dict[str, Any]:
    return {key: _plain(getattr(obj, attr)) for attr, key in names if getattr(obj, attr) is not None}


def lorebook_json(book: Any) -> dict[str, Any]:
    """A :class:`~contextfit.inputs.lorebook.Lorebook` as World Info JSON (entries as a list, in order).

    >>> from contextfit.inputs.lorebook import parse_world_info
    >>> book = parse_world_info({"entries": {"0": {"uid": 0, "key": ["wood"], "content": "Trees."}}})
    >>> parse_world_info(lorebook_json(book)) == book
    True
    """
    return {**_fields(book, _BOOK_FIELDS), "entries": [_fields(entry, _ENTRY_FIELDS) for entry in book.entries]}


def card_json(card: Any) -> dict[str, Any]:
    """A :class:`~contextfit.inputs.formats.CharacterCard` as a V2 (or V3) card, its book as World Info.

    >>> from contextfit.inputs.formats.cards import read_card
    >>> card, _ = read_card({"spec": "chara_card_v2", "data": {"name": "Ann", "description": "A guide."}}, "$")
    >>> read_card(card_json(card), "$")[0] == card
    True
    """
    data = _fields(card, _CARD_FIELDS)
    if card.character_book is not None:
        data["character_book"] = lorebook_json(card.character_book)
    spec = card.spec if card.spec != "chara_card_v1" else "chara_card_v2"
    out: dict[str, Any] = {"spec": spec, "data": data}
    if card.spec_version is not None and card.spec != "chara_card_v1":
        out["spec_version"] = card.spec_version
    return out


def conversation_chat(conversation: Any) -> tuple[list[dict], dict[str, Any]]:
    """``(messages, settings)`` for storing a conversation (or a plain message list) as a chat.

    >>> from contextfit import load_conversation
    >>> messages, settings = conversation_chat(load_conversation("User: Hi\\nAssistant: Hello"))
    >>> [m["role"] for m in messages], settings
    (['user', 'assistant'], {})
    """
    if isinstance(conversation, (list, tuple)):
        return list(conversation), {}
    settings = conversation_parts(conversation)
    card = settings.get("character")
    if card is not None:
        # A card's own book is read from the card; store the lorebook only when it is another one.
        if "lorebook" in settings and settings["lorebook"] is card.character_book:
            del settings["lorebook"]
        settings["character"] = card_json(card)
    if "lorebook" in settings:
        settings["lorebook"] = lorebook_json(settings["lorebook"])
    settings = {name: list(value) if name in ("memory", "tools") else value for name, value in settings.items()}
    settings.update(getattr(conversation, "settings", None) or {})  # a bundle's suggested settings
    return list(conversation.messages), settings

"""Character cards: V1 (flat), V2 (``chara_card_v2``) and V3 (``chara_card_v3``) as JSON.

A card alone becomes a conversation whose only message is the character's
first message; its embedded ``character_book`` becomes the lorebook.
PNG cards are unpacked by :mod:`contextfit.inputs.formats.png` and read here.
"""

from __future__ import annotations

from typing import Any

from contextfit.errors import InvalidConversation
from contextfit.inputs.messages import HISTORY

from .conversation import CharacterCard, Conversation
from .fields import child, describe, expect_dict, optional_str, plural
from .source import Parsed

V2_SPECS = ("chara_card_v2", "chara_card_v3")
# Pygmalion / early TavernAI field names for the same V1 fields.
_PYGMALION = {
    "name": "char_name",
    "description": "char_persona",
    "scenario": "world_scenario",
    "first_mes": "char_greeting",
    "mes_example": "example_dialogue",
}


def is_card(value: Any) -> bool:
    """Whether a JSON object looks like a character card (any version)."""
    if not isinstance(value, dict):
        return False
    spec = value.get("spec")
    if isinstance(spec, str) and spec.startswith("chara_card"):
        return True
    data = value.get("data")
    if isinstance(data, dict) and "name" in data and ("first_mes" in data or "description" in data):
        return True
    if "name" in value and any(key in value for key in ("first_mes", "mes_example", "personality")):
        return True
    return "char_name" in value and ("char_greeting" in value or "char_persona" in value)


def import_card(parsed: Parsed) -> Conversation:
    """Read a character card from JSON."""
    card, warnings = read_card(parsed.value, parsed.root)
    return card_conversation(card, warnings)


def card_conversation(card: CharacterCard, warnings: list[str]) -> Conversation:
    """The conversation for a card alone: its first message, its lorebook."""
    messages = []
    if card.first_message.strip():
        meta: dict[str, Any] = {"id": "first_mes", "kind": HISTORY, "speaker": card.name}
        if card.alternate_greetings:
            meta["swipes"] = 1 + len(card.alternate_greetings)
        messages.append({"role": "assistant", "content": card.first_message, "meta": meta})
    return Conversation(
        messages=messages,
        character=card,
        lorebook=card.character_book,
        format="character-card",
        warnings=warnings,
    )


def read_card(value: Any, path: str) -> tuple[CharacterCard, list[str]]:
    """A :class:`CharacterCard` and the warnings about what it holds but we do not use."""
    expect_dict(value, path)
    spec = value.get("spec")
    if spec is not None and not isinstance(spec, str):
        raise InvalidConversation(f"{child(path, 'spec')} must be a string (got {describe(spec)}).", location=child(path, "spec"))
    if spec in V2_SPECS or (spec is None and isinstance(value.get("data"), dict)):
        if "data" not in value:
            raise InvalidConversation(
                f"This {spec} card has no 'data' object, where its fields belong.", location=child(path, "data")
            )
        return _read_v2(value, spec or "chara_card_v2", path)
    if spec is not None and spec.startswith("chara_card"):
        raise InvalidConversation(
            f"Unknown card spec {spec!r}; contextfit reads chara_card_v2, chara_card_v3 and flat V1 cards.",
            location=child(path, "spec"),
        )
    return _read_v1(value, path), []


def _read_v1(value: dict, path: str) -> CharacterCard:
    def text(key: str) -> str:
        if key not in value and _PYGMALION.get(key) in value:
            return optional_str(value, _PYGMALION[key], path)
        return optional_str(value, key, path)

    return CharacterCard(
        name=_name(text("name"), child(path, "name")),
        description=text("description"),
        personality=text("personality"),
        scenario=text("scenario"),
        first_message=text("first_mes"),
        example_dialogue=text("mes_example"),
        creator_notes=optional_str(value, "creatorcomment", path),
        tags=_strings(value.get("tags"), child(path, "tags")),
        spec="chara_card_v1",
        spec_version="1.0",
    )


def _read_v2(value: dict, spec: str, path: str) -> CharacterCard:
    data_path = child(path, "data")
    data = expect_dict(value["data"], data_path)
    version = value.get("spec_version", data.get("spec_version"))
    book_value = data.get("character_book")
    book = None
    if book_value is not None:
        from contextfit.inputs.lorebook import parse_world_info  # lazy: the lorebook module is optional at import time

        book = parse_world_info(book_value, location=child(data_path, "character_book"))
    card = CharacterCard(
        name=_name(optional_str(data, "name", data_path), child(data_path, "name")),
        description=optional_str(data, "description", data_path),
        personality=optional_str(data, "personality", data_path),
        scenario=optional_str(data, "scenario", data_path),
        first_message=optional_str(data, "first_mes", data_path),
        example_dialogue=optional_str(data, "mes_example", data_path),
        system_prompt=optional_str(data, "system_prompt", data_path),
        post_history_instructions=optional_str(data, "post_history_instructions", data_path),
        creator_notes=optional_str(data, "creator_notes", data_path),
        alternate_greetings=_strings(data.get("alternate_greetings"), child(data_path, "alternate_greetings")),
        tags=_strings(data.get("tags"), child(data_path, "tags")),
        spec=spec,
        spec_version=str(version) if isinstance(version, (str, int, float)) and not isinstance(version, bool) else None,
        character_book=book,
    )
    return card, _v2_warnings(data, book_value)


def _name(name: str, path: str) -> str:
    if not name.strip():
        raise InvalidConversation(f"The character card has no name ({path} is missing or empty).", location=path)
    return name


def _strings(value: Any, path: str) -> tuple[str, ...]:
    """A list of strings (other items are skipped; a lone string is one item)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,) if value.strip() else ()
    if not isinstance(value, list):
        raise InvalidConversation(f"{path} must be a list of strings (got {describe(value)}).", location=path)
    return tuple(item for item in value if isinstance(item, str))


def _v2_warnings(data: dict, book_value: Any) -> list[str]:
    warnings = []
    extensions = data.get("extensions")
    extensions = extensions if isinstance(extensions, dict) else {}
    depth_prompt = extensions.get("depth_prompt")
    if isinstance(depth_prompt, dict) and isinstance(depth_prompt.get("prompt"), str) and depth_prompt["prompt"].strip():
        warnings.append("The card's Character's Note (extensions.depth_prompt) is not included.")
    world = extensions.get("world")
    if book_value is None and isinstance(world, str) and world.strip():
        warnings.append(f"The card links the lorebook {world!r}, which is not embedded; load it separately.")
    group_greetings = data.get("group_only_greetings")
    if isinstance(group_greetings, list) and group_greetings:
        warnings.append(f"{plural(len(group_greetings), 'group-only greeting is', 'group-only greetings are')} not used.")
    assets = data.get("assets")
    if isinstance(assets, list) and assets:
        warnings.append(f"{plural(len(assets), 'asset is', 'assets are')} listed on the card (images, sounds); they are not loaded.")
    return warnings

"""SillyTavern World Info (lorebook) files: ``{"entries": {...}}``.

The lorebook itself is read by :func:`contextfit.inputs.lorebook.parse_world_info`;
this importer only wraps it in a :class:`Conversation` with no messages.
"""

from __future__ import annotations

from typing import Any

from contextfit.errors import InvalidConversation

from .conversation import Conversation
from .fields import describe
from .source import Parsed


def is_world_info(value: Any) -> bool:
    """Whether a JSON object looks like a World Info file or a character book."""
    return isinstance(value, dict) and isinstance(value.get("entries"), (dict, list))


def import_world_info(parsed: Parsed) -> Conversation:
    """Read a World Info / lorebook file."""
    if not isinstance(parsed.value, dict) or "entries" not in parsed.value:
        raise InvalidConversation(
            f'This is not a World Info file: expected an object with "entries" (got {describe(parsed.value)}).',
            location=parsed.root,
        )
    from contextfit.inputs.lorebook import parse_world_info  # lazy: the lorebook module is optional at import time

    return Conversation(lorebook=parse_world_info(parsed.value, location=parsed.root), format="world-info")

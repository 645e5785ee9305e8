"""SillyTavern World Info (lorebooks): the model, the parser and activation.

>>> book = parse_world_info({"entries": {"0": {"uid": 0, "key": ["wood"], "content": "Trees."}}})
>>> [block["meta"]["id"] for block in lorebook_blocks(activate(book, ["Into the wood"]))]
['lorebook:0']

- :func:`parse_world_info` reads World Info files (2023 and current field
  sets) and Character Card V2/V3 ``character_book`` objects (see ``parse``).
- :func:`activate` decides which entries a chat wakes, following SillyTavern's
  ``checkWorldInfo``; its docstring lists what is followed and what is left
  out (see ``activation``; key matching in ``matching``).
- :func:`lorebook_blocks` turns activations into ``meta.kind == "lorebook"``
  message blocks for the fitting engine.
"""

from contextfit.inputs.lorebook.activation import activate
from contextfit.inputs.lorebook.blocks import lorebook_blocks
from contextfit.inputs.lorebook.model import (
    DEFAULT_DEPTH,
    DEFAULT_SCAN_DEPTH,
    MAX_SCAN_DEPTH,
    Activation,
    Lorebook,
    LorebookEntry,
    Position,
    SelectiveLogic,
    position_name,
)
from contextfit.inputs.lorebook.parse import parse_world_info

__all__ = [
    "DEFAULT_DEPTH",
    "DEFAULT_SCAN_DEPTH",
    "MAX_SCAN_DEPTH",
    "Activation",
    "Lorebook",
    "LorebookEntry",
    "Position",
    "SelectiveLogic",
    "activate",
    "lorebook_blocks",
    "parse_world_info",
    "position_name",
]

"""The stages before fitting: persona, character, lorebook, memory, history.

:func:`assemble` lays every block out in prompt order, the way SillyTavern's
default chat-completion prompt does::

    main system prompt(s)          protected (kind system)
    card system prompt             protected (kind character)
    lorebook: before the character droppable, constant entries required
    persona                        protected (kind persona)
    character (story string)       protected (kind character)
    lorebook: after the character  (also author's-note and example positions)
    example dialogue               droppable (kind example), one per <START>
    memory                         droppable by relevance (kind memory)
    chat history                   lorebook entries "at depth" inserted here
    post-history instructions      protected (kind character)

``{{char}}`` and ``{{user}}`` are filled in everywhere. Hidden messages
(SillyTavern's ``is_system``) are not part of the prompt. The caller's
messages are never edited: blocks are new dicts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from itertools import chain
from dataclasses import dataclass, field
from typing import Any

from ..inputs.messages import (
    CHARACTER,
    EXAMPLE,
    MEMORY,
    PERSONA,
    SYSTEM,
    chat_blocks,
    check_messages,
    clone,
    kind_of,
    message_id,
    meta_of,
    refuse_lone_surrogates,
)
from ..fitting import results
from ..errors import InvalidSettings
from ..jsonpath import describe
from ..inputs.lorebook import Lorebook, Position, activate, lorebook_blocks, parse_world_info
from ..inputs.lorebook.matching import RegexBudget
from ..inputs.macros import check_growth, check_names

_MACRO = re.compile(r"\{\{\s*(char|user)\s*\}\}|<(BOT|USER)>", re.IGNORECASE)
_START = re.compile(r"^\s*<START>\s*$", re.IGNORECASE | re.MULTILINE)
_AFTER_CHAR = {Position.AFTER_CHAR, Position.AN_TOP, Position.AN_BOTTOM, Position.EM_TOP, Position.EM_BOTTOM}


@dataclass(slots=True)
class Assembly:
    """Blocks in prompt order plus what the stages noticed."""

    blocks: list[dict]
    diagnostics: list[dict] = field(default_factory=list)
    activations: list[Any] = field(default_factory=list)
    #: characters filling in {{user}} and {{char}} added (``contextfit/inputs/macros.py``)
    macro_growth: int = 0


def fill_macros(text: str, names: Mapping[str, str]) -> str:
    """Replace ``{{char}}`` / ``{{user}}`` (and ``<BOT>`` / ``<USER>``).

    >>> fill_macros("{{user}} meets {{char}}.", {"user": "Ann", "char": "Seraphina"})
    'Ann meets Seraphina.'
    """

    def swap(match: re.Match[str]) -> str:
        key = (match.group(1) or ("char" if match.group(2).upper() == "BOT" else "user")).lower()
        return names.get(key, match.group(0))

    return _MACRO.sub(swap, text) if "{{" in text or "<" in text else text


def macro_values(user_name: str, char_name: str | None, card: Any = None) -> dict[str, str]:
    """What ``{{user}}`` and ``{{char}}`` stand for: the user's name, and the character's
    (``char_name``, else the card's name, else "Assistant"); a name that is not a
    string or is over :data:`~contextfit.limits.MAX_NAME_CHARS` is refused
    (:func:`~contextfit.inputs.macros.check_names`).

    >>> macro_values("Ann", None), macro_values("Ann", "Seraphina")["char"]
    ({'user': 'Ann', 'char': 'Assistant'}, 'Seraphina')
    """
    return check_names(user_name, char_name, card.name if card else None)


def macro_texts(messages: Sequence[Any], first: int = 0) -> Any:
    """``(where, text)`` of every text of ``messages`` that :func:`fill_macros` fills in
    (``first``: the position of the first one in the caller's list)."""
    for position, message in enumerate(messages, start=first):
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if isinstance(content, str):
            yield f"messages[{position}].content", content
        elif isinstance(content, list):
            for number, part in enumerate(content):
                if isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                    yield f"messages[{position}].content[{number}].text", part["text"]


def _surrounding_texts(card: Any, persona: Any, memory: Any, books: Sequence[Lorebook]) -> Any:
    """``(where, text)`` of the card, persona, memory and lorebook texts :func:`assemble` fills in."""
    if card:
        for name in ("description", "personality", "scenario", "example_dialogue", "system_prompt",
                     "post_history_instructions"):
            yield f"character.{name}", getattr(card, name) or ""
        if (card.personality or "").strip():
            yield "character.personality", "{{char}}"  # the story string's "{{char}}'s personality:"
    if isinstance(persona, str):
        yield "persona", persona
    for number, item in enumerate(memory or []):
        if isinstance(item, str):
            yield f"memory[{number}]", item
        elif isinstance(item, Mapping) and isinstance(item.get("content"), str):
            yield f"memory[{number}].content", item["content"]
    for book in books:
        where = "character.character_book" if card and book is card.character_book else "lorebook"
        for number, entry in enumerate(book.entries):
            yield f"{where}.entries[{number}].content", entry.content or ""
            for key in (*entry.keys, *entry.secondary_keys):
                yield f"{where}.entries[{number}].keys", key


def apply_overrides(blocks: list[dict], overrides: Mapping[str, Mapping[str, Any]]) -> list[dict]:
    """Blocks with the user's edits applied, by block id: ``pinned``,
    ``manualExcluded``, ``relevance`` and ``required`` go into ``meta``
    (``pinned: False`` also clears a top-level ``pinned``).

    Every edit is checked first, whether or not its block is present, so a
    chat's stored overrides are refused when stored, not at each generation.

    >>> apply_overrides([{"role": "user", "content": "x", "pinned": True, "meta": {"id": "a"}}],
    ...                 {"a": {"pinned": False, "relevance": 0.5}})
    [{'role': 'user', 'content': 'x', 'meta': {'id': 'a', 'pinned': False, 'relevance': 0.5}}]
    >>> apply_overrides([], {"m0": 5})
    Traceback (most recent call last):
    ...
    contextfit.errors.InvalidSettings: overrides["m0"] must be an object such as {"pinned": true}, got a number.
    """
    _check_overrides(overrides)
    if not overrides:
        return blocks
    out = []
    for block in blocks:
        edit = overrides.get(message_id(block, -1))
        if edit:
            block = {key: value for key, value in block.items() if not (key == "pinned" and edit.get("pinned") is False)}
            block["meta"] = {**meta_of(block), **{key: value for key, value in edit.items()}}
        out.append(block)
    return out


_FLAGS = ("pinned", "manualExcluded", "required")


def _check_overrides(overrides: object) -> None:
    if not isinstance(overrides, Mapping):
        raise InvalidSettings(f"overrides must be an object of block ids, got {describe(overrides)}.")
    for ident, edit in overrides.items():
        where = f"overrides[{json.dumps(ident)}]"
        if not isinstance(edit, Mapping):
            raise InvalidSettings(f'{where} must be an object such as {{"pinned": true}}, got {describe(edit)}.')
        unknown = set(edit) - {*_FLAGS, "relevance"}
        if unknown:
            raise InvalidSettings(f"Only pinned, manualExcluded, relevance and required can be edited, not {sorted(map(str, unknown))}.")
        for key, value in edit.items():
            if key in _FLAGS and not isinstance(value, bool):
                raise InvalidSettings(f"{where}.{key} must be true or false, got {describe(value)}.")
            if key == "relevance" and not (
                isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= 1
            ):
                raise InvalidSettings(f"{where}.relevance must be a number from 0 to 1, got {describe(value)}.")


def _block(role: str, content: str, kind: str, ident: str, **meta: Any) -> dict:
    return {"role": role, "content": content, "meta": {"kind": kind, "id": ident, **meta}}


def _story_string(card: Any, names: Mapping[str, str]) -> str:
    """The character block, as SillyTavern's default story string renders it."""
    lines = []
    if card.description.strip():
        lines.append(card.description.strip())
    if card.personality.strip():
        lines.append(f"{{{{char}}}}'s personality: {card.personality.strip()}")
    if card.scenario.strip():
        lines.append(f"Scenario: {card.scenario.strip()}")
    return fill_macros("\n".join(lines), names)


def _examples(card: Any, names: Mapping[str, str]) -> list[dict]:
    chunks = [chunk.strip() for chunk in _START.split(card.example_dialogue or "")]
    return [
        _block("system", "[Example Chat]\n" + fill_macros(chunk, names), EXAMPLE, f"example:{number}")
        for number, chunk in enumerate((c for c in chunks if c), start=1)
    ]


def _memory_blocks(memory: Sequence[Any] | None, names: Mapping[str, str]) -> list[dict]:
    blocks = []
    for number, item in enumerate(memory or [], start=1):
        if isinstance(item, str):
            if item.strip():
                blocks.append(_block("system", fill_macros(item.strip(), names), MEMORY, f"memory:{number}"))
        elif isinstance(item, Mapping) and isinstance(item.get("content"), str):
            extra = {key: item[key] for key in ("relevance", "required", "pinned") if key in item}
            ident = str(item.get("id") or f"memory:{number}")
            blocks.append(_block("system", fill_macros(item["content"], names), MEMORY, ident, **extra))
        else:
            raise InvalidSettings(f"memory[{number - 1}] must be a string or an object with a 'content' string.")
    return blocks


def as_lorebook(lorebook: Any) -> Lorebook | None:
    """A :class:`Lorebook`, or World Info / ``character_book`` JSON parsed into one."""
    if lorebook is None or isinstance(lorebook, Lorebook):
        return lorebook
    return parse_world_info(lorebook, location="$.lorebook")


def as_card(character: Any) -> Any:
    """A :class:`CharacterCard`, or card JSON (V1/V2/V3) read into one."""
    from ..inputs.formats.cards import read_card
    from ..inputs.formats.conversation import CharacterCard

    if character is None or isinstance(character, CharacterCard):
        return character
    card, _warnings = read_card(character, "$.character")
    return card


def assemble(
    messages: Sequence[dict],
    *,
    character: Any = None,
    persona: str | None = None,
    lorebook: Any = None,
    memory: Sequence[Any] | None = None,
    user_name: str = "User",
    char_name: str | None = None,
    scan_depth: int | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    filled: Filled | None = None,
) -> Assembly:
    """Lay out every block of the prompt in order (see the module docstring).

    ``filled`` (a session's): the blocks made of earlier calls' messages, by
    the message dict's ``id``; a message met again at the same position with
    the same names, both still equal to their copies, is not read again
    (see :data:`Filled`), and what is made of the others is added."""
    known = {name: _read_before(filled, name, value)
             for name, value in (("character", character), ("lorebook", lorebook))}
    for name, value in (("persona", persona), ("memory", memory), ("character", character), ("lorebook", lorebook)):
        if known.get(name) is None:  # parsed cards and lorebooks were checked when read, as were those met before
            refuse_lone_surrogates(value, name)
    card = _read(filled, "character", character, as_card, known["character"])
    names = macro_values(user_name, char_name, card)
    book = _read(filled, "lorebook", lorebook, as_lorebook, known["lorebook"])
    books = [book for book in (book, card.character_book if card else None) if book is not None]
    # Before a single macro is filled in: what filling them all would add (macros.py).
    grown = check_growth(chain(_surrounding_texts(card, persona, memory, books), macro_texts(messages)), names)
    diagnostics: list[dict] = []
    named = (names["user"], names["char"])
    made = None if filled is None else filled.blocks
    kept: dict[int, dict | None] = {}  # a session's blocks of messages met again unchanged, by position
    if made is not None:
        for position, message in enumerate(messages):
            entry = made.get(id(message))
            if entry is not None and entry[0] is message and entry[1] == position and entry[2] == named and (
                    _unchanged(message, entry[3]) and (entry[4] is None or _unchanged(entry[4], entry[5]))):
                kept[position] = entry[4]
    fresh = [position for position in range(len(messages)) if position not in kept]
    check_messages(messages, fresh)
    made_now = dict(zip(fresh, chat_blocks(messages, lambda text: fill_macros(text, names), fresh)))
    if made is not None and fresh:
        # Copies, what an edit in place is compared to: the messages and their blocks in one pass each.
        copies = clone([messages[position] for position in fresh])
        block_copies = clone(list(made_now.values()))
        for (position, block), copy, block_copy in zip(made_now.items(), copies, block_copies):
            made[id(messages[position])] = (messages[position], position, named, copy, block, block_copy)
    blocks = kept | made_now
    visible = [blocks[position] for position in range(len(messages)) if blocks[position] is not None]
    hidden = len(messages) - len(visible)
    if hidden:
        diagnostics.append(
            {"code": results.HIDDEN_MESSAGES_SKIPPED, "count": hidden, "message": f"{hidden} hidden message(s) are not part of the prompt."}
        )
    leading = 0
    while leading < len(visible) and kind_of(visible[leading]) == SYSTEM:
        leading += 1
    head, history = visible[:leading], visible[leading:]

    before, after, at_depth, activations = [], [], [], []
    seen_content: set[str] = set()
    seen_ids: set[str] = set()
    budget = RegexBudget()  # one per plan: every book's regex keys share its time
    for book in books:
        found = activate(book, history, scan_depth=scan_depth, names=names, budget=budget)
        for activation, block in zip((a for a in found if a.entry.content), lorebook_blocks(found, names=names)):
            # A card's own book is often also loaded as a world: one copy of an entry is enough.
            if block["content"] in seen_content:
                continue
            seen_content.add(block["content"])
            while block["meta"]["id"] in seen_ids:
                block["meta"]["id"] += "+"
            seen_ids.add(block["meta"]["id"])
            activations.append(activation)
            position = activation.entry.position
            if position == Position.BEFORE_CHAR:
                before.append(block)
            elif position == Position.AT_DEPTH:
                at_depth.append((activation.entry.depth, block))
            else:
                if position not in _AFTER_CHAR:
                    diagnostics.append(_placed_after(block))
                after.append(block)
    diagnostics += budget.diagnostics

    blocks = list(head)
    if card and card.system_prompt.strip():
        blocks.append(_block("system", fill_macros(card.system_prompt.strip(), names), CHARACTER, "character:system_prompt"))
    blocks += before
    if persona and persona.strip():
        blocks.append(_block("system", fill_macros(persona.strip(), names), PERSONA, "persona"))
    if card:
        story = _story_string(card, names)
        if story:
            blocks.append(_block("system", story, CHARACTER, "character", name=card.name))
    blocks += after
    if card:
        blocks += _examples(card, names)
    blocks += _memory_blocks(memory, names)
    for depth, block in sorted(at_depth, key=lambda pair: pair[0], reverse=True):
        history.insert(max(len(history) - max(depth, 0), 0), block)
    blocks += history
    if card and card.post_history_instructions.strip():
        text = fill_macros(card.post_history_instructions.strip(), names)
        blocks.append(_block("system", text, CHARACTER, "character:post_history_instructions"))
    return Assembly(apply_overrides(blocks, overrides or {}), diagnostics, activations, grown)


class Filled:
    """What :func:`assemble` made for a session, for its next assembly.

    ``blocks``: the block made of each message, by the message dict's ``id``:
    ``(message, position, (user name, char name), a copy of the message, its
    block or None when hidden, a copy of the block)``. ``parsed``: the card
    and lorebook read from JSON, by ``(what, id)``: ``(the JSON, a copy, what
    was read)``. What is memoized is held, so its ``id`` names no other
    object, and is used only while it equals its copy (an edit in place is
    seen)."""

    __slots__ = ("blocks", "parsed")

    #: Cards and lorebooks kept (a session's settings and the ones before).
    PARSED_KEPT = 8

    def __init__(self) -> None:
        self.blocks: dict[int, tuple] = {}
        self.parsed: dict[tuple[str, int], tuple] = {}


def _unchanged(value: Any, copy: Any) -> bool:
    try:
        return bool(value == copy)
    except Exception:  # values whose == raises (arrays, odd objects): make it again
        return False


def _read_before(filled: Filled | None, what: str, value: Any) -> tuple[Any] | None:
    """``(what was read,)`` of card or lorebook JSON ``value`` met before and unchanged, else ``None``."""
    if filled is None or type(value) is not dict and type(value) is not list:
        return None
    entry = filled.parsed.get((what, id(value)))
    return (entry[2],) if entry is not None and entry[0] is value and _unchanged(value, entry[1]) else None


def _read(filled: Filled | None, what: str, value: Any, parse: Any, known: tuple[Any] | None) -> Any:
    """``parse(value)``, or what :func:`_read_before` found (``known``); a session keeps what JSON gave."""
    if known is not None:
        return known[0]
    result = parse(value)
    if filled is not None and (type(value) is dict or type(value) is list):
        if len(filled.parsed) >= Filled.PARSED_KEPT:
            filled.parsed.clear()
        filled.parsed[(what, id(value))] = (value, clone(value), result)
    return result


def appended_blocks(
    messages: Sequence[dict], first: int, *, user_name: str, char_name: str | None,
    overrides: Mapping[str, Mapping[str, Any]] | None, grown: int = 0,
) -> tuple[list[dict], int]:
    """The blocks :func:`assemble` makes of visible chat messages that stand at
    positions ``first``, ``first + 1``, ... of the caller's list, when no
    lorebook is given (each message's block then depends on that message alone;
    they go after the history, before a card's post-history instructions).
    ``char_name`` is what ``{{char}}`` stands for: a card's name when it has one.
    ``grown``: what filling in the macros of the prompt's other blocks added;
    returned with what these add (refused past the limit, :func:`~contextfit.inputs.macros.check_growth`).

    >>> appended_blocks([{"role": "user", "content": "I am {{user}}"}], 7, user_name="Ann", char_name=None,
    ...                 overrides={"m7": {"pinned": True}})
    ([{'role': 'user', 'content': 'I am Ann', 'meta': {'id': 'm7', 'pinned': True}}], 0)
    """
    names = macro_values(user_name, char_name)
    grown = check_growth(macro_texts(messages, first), names, already=grown)
    blocks = chat_blocks(messages, lambda text: fill_macros(text, names), first=first)  # all visible: no None
    return apply_overrides(blocks, overrides or {}), grown  # type: ignore[arg-type]


def _placed_after(block: dict) -> dict:
    return {
        "code": results.LOREBOOK_POSITION_APPROXIMATED,
        "id": block["meta"]["id"],
        "message": "This lorebook entry's insertion position is not modelled; it is placed after the character.",
    }
